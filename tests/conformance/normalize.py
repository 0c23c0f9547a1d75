"""What must differ between two correct servers, replaced before the records are compared.

Only measurements and each server's own internals are normalised: durations and timestamps
(two servers never take the same nanoseconds; whether a value is zero or not is kept, because
a server that reports 0 ns where Triton reports time is a difference), the byte offsets in
JSON parser messages, and the frames of a Python traceback quoted in an error (its first line,
the exception, is compared). Everything else, error texts included, is compared as it comes.
"""

from __future__ import annotations

import re
from typing import Any

#: Keys whose values are measured times: kept only as "0" or ">0".
TIMING_KEYS = frozenset({"ns", "last_inference"})

_JSON_OFFSET = re.compile(r"(failed to parse the request JSON buffer: [^\"]*?) at \d+")
# A Python traceback quoted in an error ("At:" and one "  file(line): function" line per
# frame): the files and frames are each server's own (temporary folders, import machinery).
_TRACEBACK = re.compile(r"\n\nAt:\n(?:  [^\n]*\n)+")


def _timing(value: Any) -> Any:
    try:
        return "0" if int(value) == 0 else ">0"
    except (TypeError, ValueError):
        return value


def normalize_json(data: Any) -> Any:
    """Return ``data`` with measured times replaced (see the module docstring)."""
    if isinstance(data, dict):
        return {k: _timing(v) if k in TIMING_KEYS else normalize_json(v) for k, v in data.items()}
    if isinstance(data, list):
        return [normalize_json(v) for v in data]
    if isinstance(data, str):
        return normalize_text(data)
    return data


def normalize_text(text: str) -> str:
    """Return an error text with JSON parser offsets and quoted tracebacks replaced."""
    return _TRACEBACK.sub("\n\nAt:\n<traceback>\n", _JSON_OFFSET.sub(r"\1 at <offset>", text))
