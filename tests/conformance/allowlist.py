"""The one list of intended differences between mock_server and the real Triton 2.51.

Every differential case whose records differ between the two servers fails, unless its id is
here with the reason the difference is intended. An entry whose case no longer differs fails
too (a stale entry hides nothing, but it claims a difference that is gone), so this list is
always exactly the set of differences that exist.

Keys are case ids (``tests/conformance/cases_*.py``); values say why we differ on purpose.
"""

from __future__ import annotations

ALLOWED: dict[str, str] = {}
