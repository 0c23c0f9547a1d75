"""TLS: connect over HTTPS / gRPC with SSL, trusting a CA and presenting a client certificate.

Start a server with a certificate, e.g.
``python -m mock_server --grpc-use-ssl --grpc-server-cert server.pem --grpc-server-key server.key``.

    python examples/tls_client.py -i grpc -u localhost:8001 --ca ca.pem --cert client.pem \\
        --key client.key
"""

from __future__ import annotations

import argparse
import ssl
import sys

import numpy as np


def check(condition: bool, what: str) -> None:
    print(("  ok     " if condition else "  WRONG  ") + what)
    if not condition:
        sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-u", "--url", help="server URL (default localhost:8001 / 8000)")
    parser.add_argument("-i", "--protocol", choices=["grpc", "http"], default="grpc")
    parser.add_argument("--ca", required=True, help="PEM file of the CA that signed the server")
    parser.add_argument("--cert", help="PEM client certificate (for servers that require one)")
    parser.add_argument("--key", help="PEM private key of the client certificate")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    url = args.url or ("localhost:8001" if args.protocol == "grpc" else "localhost:8000")

    if args.protocol == "grpc":
        import tritonclient.grpc as client_module

        client = client_module.InferenceServerClient(
            url,
            verbose=args.verbose,
            ssl=True,
            root_certificates=args.ca,  # file paths, as in NVIDIA's client
            private_key=args.key,
            certificate_chain=args.cert,
        )
    else:
        import tritonclient.http as client_module

        def context() -> ssl.SSLContext:
            ctx = ssl.create_default_context(cafile=args.ca)
            if args.cert:
                ctx.load_cert_chain(args.cert, args.key)
            return ctx

        client = client_module.InferenceServerClient(
            url, verbose=args.verbose, ssl=True, ssl_context_factory=context
        )
    print(f"{args.protocol} client -> {url} over TLS (CA {args.ca})")

    check(client.is_server_live(), "TLS handshake done; server live")
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    inputs = [
        client_module.InferInput("INPUT0", [1, 16], "INT32"),
        client_module.InferInput("INPUT1", [1, 16], "INT32"),
    ]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(a)
    result = client.infer("simple", inputs)
    check(np.array_equal(result.as_numpy("OUTPUT0"), 2 * a), "infer 'simple' over TLS")
    client.close()
    print("PASS: tls_client")


if __name__ == "__main__":
    main()
