#!/usr/bin/env bash
# The demo: install the project, then run the tour of what is built so far.
set -euo pipefail
EXTRAS="all"
source "$(dirname "$0")/_venv.sh"
"$VENV/bin/python" examples/tour.py
