"""Client plugins: add credentials to every request.

HTTP uses the ``BasicAuth`` plugin (header ``authorization: Basic <base64>``).  Triton's gRPC
frontend reads restricted-API credentials from metadata ``triton-grpc-protocol-<key>``, so for gRPC
this shows a small custom plugin that sets that key.  The server restricts the model-repository
API, e.g. ``--http-restricted-api model-repository:authorization=Basic <base64>``.

    python examples/auth_plugin_client.py -i http -u localhost:8000 --username u --password p
"""

from __future__ import annotations

import argparse
import base64
import sys

from tritonclient.utils import InferenceServerException


def check(condition: bool, what: str) -> None:
    print(("  ok     " if condition else "  WRONG  ") + what)
    if not condition:
        sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-u", "--url", help="server URL (default localhost:8001 / 8000)")
    parser.add_argument("-i", "--protocol", choices=["grpc", "http"], default="grpc")
    parser.add_argument("--username", default="triton")
    parser.add_argument("--password", default="secret")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    url = args.url or ("localhost:8001" if args.protocol == "grpc" else "localhost:8000")

    if args.protocol == "grpc":
        import tritonclient.grpc as client_module

        class GrpcBasicAuth(client_module.InferenceServerClientPlugin):
            """Send Basic credentials as the gRPC metadata Triton checks."""

            def __init__(self, username: str, password: str) -> None:
                token = base64.b64encode(f"{username}:{password}".encode()).decode()
                self.value = f"Basic {token}"

            def __call__(self, request: client_module.Request) -> None:
                request.headers["triton-grpc-protocol-authorization"] = self.value

        plugin = GrpcBasicAuth(args.username, args.password)
    else:
        import tritonclient.http as client_module
        from tritonclient.http.auth import BasicAuth

        plugin = BasicAuth(args.username, args.password)

    client = client_module.InferenceServerClient(url, verbose=args.verbose)
    print(f"{args.protocol} client -> {url}")
    check(client.is_server_live(), "unrestricted API (health) works without credentials")
    try:
        client.get_model_repository_index()
    except InferenceServerException as ex:
        check(True, f"restricted API without credentials refused: {ex.message()}")
    else:
        check(False, "restricted API without credentials was allowed (is the server restricted?)")

    client.register_plugin(plugin)
    print(f"  registered plugin {type(plugin).__name__} for user '{args.username}'")
    index = client.get_model_repository_index()
    check(index is not None, "restricted API with credentials works")
    client.unregister_plugin()
    client.close()
    print("PASS: auth_plugin_client")


if __name__ == "__main__":
    main()
