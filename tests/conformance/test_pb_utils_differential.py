"""The pb_utils differential test: the same ``triton_python_backend_utils`` calls made by the
same model on real Triton 2.51 and on mock_server, with the same outcome.

The conformance model ``pb_utils_probe`` runs the probes a request names (one per request, so
that one probe's failure cannot disturb the next) and answers what each returned or raised.
Both servers must answer the same, but for the text of a ``TypeError`` that pybind11 writes
for arguments no overload accepts: its first sentence (``__init__(): incompatible constructor
arguments.``) is compared, not the signature listing that follows, which names Triton's C++
types. Differences kept on purpose are allow-listed as ``pb_utils/<probe>``.
"""

from __future__ import annotations

import http.client
import json
import re
from typing import Any

import pytest

from tests.conformance.allowlist import ALLOWED
from tests.conformance.conftest import PairPool
from tests.conformance.pair import Endpoint
from tests.conformance.wire import TIMEOUT

pytestmark = pytest.mark.triton_peer

_PYBIND_TYPE_ERROR = re.compile(
    r"^(err TypeError: \w+\(\): incompatible (?:constructor|function) arguments\.).*", re.S
)


def probe(server: Endpoint, names: list[str]) -> Any:
    """What ``pb_utils_probe`` answers for ``names`` on ``server``."""
    body = {
        "inputs": [{"name": "NAMES", "datatype": "BYTES", "shape": [len(names)], "data": names}]
    }
    conn = http.client.HTTPConnection(server.http, timeout=TIMEOUT)
    try:
        conn.request("POST", "/v2/models/pb_utils_probe/infer", json.dumps(body))
        response = conn.getresponse()
        answer = json.loads(response.read())
    finally:
        conn.close()
    assert response.status == 200, f"{server.name}: {answer}"
    return json.loads(answer["outputs"][0]["data"][0])


def normalize(outcome: str) -> str:
    """An outcome with pybind11's signature listing cut off (see the module docstring)."""
    return _PYBIND_TYPE_ERROR.sub(r"\1", outcome)


def test_pb_utils_calls_as_on_triton(pairs: PairPool) -> None:
    pair = pairs["pb_utils"]
    names = probe(pair.triton, ["list"])
    assert names == probe(pair.mock, ["list"])
    differ: dict[str, tuple[str, str]] = {}
    for name in names:
        triton = normalize(probe(pair.triton, [name])[name])
        mock = normalize(probe(pair.mock, [name])[name])
        if triton != mock:
            differ[name] = (triton, mock)
    allowed = {key.removeprefix("pb_utils/") for key in ALLOWED if key.startswith("pb_utils/")}
    assert not allowed - set(names), "allow-list entries without a probe"
    stale = sorted(allowed - set(differ))
    assert not stale, f"allow-listed but no longer different, remove: {stale}"
    unexpected = {name: both for name, both in differ.items() if name not in allowed}
    assert not unexpected, f"{len(unexpected)} of {len(names)} probes differ:\n" + "\n".join(
        f"{name}\n  triton 2.51: {t}\n  mock_server: {m}" for name, (t, m) in unexpected.items()
    )
