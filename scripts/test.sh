#!/usr/bin/env bash
# The whole test suite: install the project with every extra, then ruff, mypy and pytest.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh -m "not slow"`).
set -euo pipefail
EXTRAS="all,test"
source "$(dirname "$0")/_venv.sh"
# A test fails if the C accelerator of the BYTES codec did not build.
export TRITONCLIENT_REQUIRE_SPEEDUPS=1
echo "== ruff"
"$VENV/bin/ruff" check .
"$VENV/bin/ruff" format --check .
echo "== mypy"
"$VENV/bin/mypy" tritonclient shm mock_server
# The conformance peers (NVIDIA's client, the real Triton server); TRITON_PEERS=off skips them
# outside CI (the tests that need them then skip, and the summary says how many).
if [ "${TRITON_PEERS:-}" != "off" ] || [ "${CI:-}" = "true" ]; then
    echo "== peers"
    bash scripts/peers.sh install
fi
echo "== pytest"
"$VENV/bin/python" -m pytest -q "$@"
