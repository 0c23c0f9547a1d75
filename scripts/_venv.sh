# Sourced by scripts/test.sh and scripts/demo.sh: make the project's virtual environment.
# VENV (default .venv) is created if missing, and always anew when CI=true, then the project
# is installed into it in editable mode (which also builds the C accelerator) with EXTRAS.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VENV=${VENV:-.venv}
if [ "${CI:-}" = "true" ] || [ ! -x "$VENV/bin/python" ]; then
    rm -rf "$VENV"
    python3 -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check --quiet)
"${PIP[@]}" install --upgrade pip
"${PIP[@]}" install -e ".[${EXTRAS}]"
