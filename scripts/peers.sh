#!/usr/bin/env bash
# Install the conformance peers (NVIDIA's tritonclient 2.73 in its own venv, the real Triton 2.51
# from nvidia-pytriton 0.7.0 with a numpy<2 stub venv) into .cache/peers, or TRITON_PEERS_CACHE.
# Parts already installed and complete are reused; broken or partial ones are made again.
# `bash scripts/peers.sh status` says what is there; `bash scripts/peers.sh install --bench` also
# installs KServe's ModelServer for benchmarks/bench_server.py.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 tools/peers.py "${@:-install}"
