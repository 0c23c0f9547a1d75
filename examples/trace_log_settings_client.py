"""Trace and log settings: read them, change them (globally and per model), and restore them.

python examples/trace_log_settings_client.py -i grpc -u localhost:8001
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def check(condition: bool, what: str) -> None:
    print(("  ok     " if condition else "  WRONG  ") + what)
    if not condition:
        sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-u", "--url", help="server URL (default localhost:8001 / 8000)")
    parser.add_argument("-i", "--protocol", choices=["grpc", "http"], default="grpc")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    if args.protocol == "grpc":
        import tritonclient.grpc as client_module
    else:
        import tritonclient.http as client_module
    url = args.url or ("localhost:8001" if args.protocol == "grpc" else "localhost:8000")
    client = client_module.InferenceServerClient(url, verbose=args.verbose)
    grpc = args.protocol == "grpc"
    print(f"{args.protocol} client -> {url}")

    def trace_rate(reply: dict[str, Any]) -> str:
        # gRPC (as_json): {"settings": {"trace_rate": {"value": ["1000"]}}}; HTTP: flat dict.
        return reply["settings"]["trace_rate"]["value"][0] if grpc else reply["trace_rate"]

    def log_settings(reply: dict[str, Any]) -> dict[str, Any]:
        # gRPC (as_json): {"settings": {"log_info": {"bool_param": true}}}; HTTP: flat dict.
        if not grpc:
            return reply
        return {k: next(iter(v.values())) for k, v in reply["settings"].items()}

    extra = {"as_json": True} if grpc else {}
    global_rate = trace_rate(client.get_trace_settings(**extra))
    print(f"  global trace_rate = {global_rate}")
    reply = client.update_trace_settings(model_name="simple", settings={"trace_rate": "7"}, **extra)
    check(trace_rate(reply) == "7", "trace_rate of 'simple' set to 7")
    check(trace_rate(client.get_trace_settings(**extra)) == global_rate, "global setting unchanged")
    reply = client.update_trace_settings(
        model_name="simple", settings={"trace_rate": None}, **extra
    )
    check(trace_rate(reply) == global_rate, "cleared: 'simple' follows the global setting again")

    before = log_settings(client.get_log_settings(**extra))
    print(f"  log settings: {before}")
    after = log_settings(client.update_log_settings({"log_verbose_level": 1}, **extra))
    check(int(after["log_verbose_level"]) == 1, "log_verbose_level set to 1")
    restore = {"log_verbose_level": int(before["log_verbose_level"])}
    restored = log_settings(client.update_log_settings(restore, **extra))
    check(restored == before, "log settings restored")
    client.close()
    print("PASS: trace_log_settings_client")


if __name__ == "__main__":
    main()
