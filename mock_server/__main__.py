"""Command line: ``python -m mock_server [--model-repository DIR ...] [options]``.

Flags follow ``tritonserver``'s where they exist (``--model-repository``,
``--model-control-mode``, ``--load-model``, ``--http-port``, ``--grpc-port``,
``--metrics-port``, ``--http-restricted-api``, ``--grpc-restricted-protocol``,
``--grpc-use-ssl`` ...).  Without ``--model-repository`` the bundled repository is served.
The process runs until SIGINT or SIGTERM, then unloads every model and exits.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from ._malloc import retain_large_buffers
from .app import BUNDLED_MODELS, FrontendOptions, MockServer, parse_restricted
from .core.errors import ServerError
from .core.server import ModelControlMode, ServerOptions
from .core.settings import TraceSettings
from .frontends.openai_groups import parse_openai_restricted


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    p = argparse.ArgumentParser(
        prog="python -m mock_server",
        description="Serve a Triton model repository of Python-backend models over HTTP and "
        "gRPC (KServe v2 / Triton protocol).",
    )
    p.add_argument(
        "--model-repository",
        "--model-store",
        action="append",
        default=[],
        metavar="DIR",
        help="model repository folder (repeatable; default: the bundled repository)",
    )
    p.add_argument(
        "--model-control-mode", choices=[m.value for m in ModelControlMode], default="none"
    )
    p.add_argument(
        "--load-model",
        action="append",
        default=[],
        metavar="NAME",
        help="model to load at start in explicit mode ('*' for all; repeatable)",
    )
    p.add_argument("--repository-poll-secs", type=float, default=15.0)
    p.add_argument("--strict-readiness", type=_bool, default=True)
    p.add_argument(
        "--strict-model-config",
        type=_bool,
        default=False,
        help="require complete config.pbtxt files (no auto-completion)",
    )
    p.add_argument(
        "--triton-compat",
        choices=["2.73", "2.51"],
        default="2.73",
        help="which Triton release to behave as where releases differ in what a client sees "
        "(default 2.73: client shared memory off unless allowed, reserved headers and "
        "duplicate outputs refused, HTTP input limits, graceful gRPC shutdown, ...; 2.51: as "
        "the real Triton 2.51 answers)",
    )
    p.add_argument(
        "--allow-client-shm",
        type=_bool,
        default=None,
        help="allow clients to register system and CUDA shared-memory regions (default: false "
        "as in Triton 2.73; true with --triton-compat 2.51, which has no such gate)",
    )
    p.add_argument(
        "--shm-copy-inputs",
        type=_bool,
        default=False,
        help="copy shared-memory inputs instead of zero-copy views (for untrusted clients "
        "that might shrink a registered object while a model reads it; default false)",
    )
    p.add_argument(
        "--exit-on-error",
        type=_bool,
        default=True,
        help="exit when a model fails to load at start-up, as tritonserver does (default "
        "true; false keeps serving the models that did load)",
    )
    p.add_argument(
        "--python-backend-isolation",
        choices=["process", "thread"],
        default="process",
        help="how Python-backend model instances run: 'process' (default), each in a stub "
        "process of its own as in Triton (a crash or os._exit in model code fails only that "
        "model; the model file is the module 'model'), or 'thread', in the server's process "
        "(faster to load, easier to debug); a model's config parameter "
        "'python_backend_isolation' overrides it",
    )
    p.add_argument("--exit-timeout-secs", type=float, default=30.0)
    p.add_argument("--id", dest="server_id", default="triton", help="server name in metadata")
    p.add_argument(
        "--host",
        "--address",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; 0.0.0.0 for all interfaces)",
    )
    p.add_argument("--http-address", help="address of the HTTP service (default: --host)")
    p.add_argument("--grpc-address", help="address of the gRPC service (default: --host)")
    p.add_argument("--metrics-address", help="address of the metrics service (default: --host)")
    p.add_argument("--http-port", type=int, default=8000)
    p.add_argument("--grpc-port", type=int, default=8001)
    p.add_argument("--metrics-port", type=int, default=8002)
    p.add_argument("--allow-http", type=_bool, default=True)
    p.add_argument("--allow-grpc", type=_bool, default=True)
    p.add_argument("--allow-metrics", type=_bool, default=True)
    p.add_argument(
        "--http-restricted-api", action="append", default=[], metavar="API[,API...]:KEY=VALUE"
    )
    p.add_argument(
        "--grpc-restricted-protocol", action="append", default=[], metavar="API[,API...]:KEY=VALUE"
    )
    p.add_argument(
        "--http-header-forward-pattern",
        metavar="REGEX",
        help="forward matching HTTP headers to models as request parameters",
    )
    p.add_argument(
        "--grpc-header-forward-pattern",
        metavar="REGEX",
        help="forward matching gRPC request metadata to models as request parameters",
    )
    p.add_argument("--http-ssl-cert", help="PEM certificate: serve HTTPS")
    p.add_argument("--http-ssl-key", help="PEM private key for --http-ssl-cert")
    p.add_argument("--http-ssl-root-cert", help="PEM CA: require client certificates on HTTPS")
    p.add_argument("--grpc-use-ssl", type=_bool, default=False)
    p.add_argument("--grpc-use-ssl-mutual", type=_bool, default=False)
    p.add_argument("--grpc-server-cert")
    p.add_argument("--grpc-server-key")
    p.add_argument("--grpc-root-cert")
    p.add_argument("--trace-file", default="", help="trace file (older tritonserver flag)")
    p.add_argument(
        "--trace-config",
        action="append",
        default=[],
        metavar="[triton,]KEY=VALUE",
        help="tritonserver's trace options: file=PATH, level=OFF|TIMESTAMPS|TENSORS (repeat "
        "for both), rate=N, count=N, log-frequency=N, mode=triton (repeatable)",
    )
    p.add_argument("--log-file", default="")
    p.add_argument("--log-verbose", type=int, default=0)
    p.add_argument(
        "--port-file",
        metavar="FILE",
        help="once ready, write the bound ports there as JSON (useful with port 0)",
    )
    p.add_argument(
        "--http-max-input-size",
        type=int,
        default=None,
        help="largest HTTP request body (after decompression), bytes (default 64 MiB under "
        "--triton-compat 2.73, no limit under 2.51)",
    )
    p.add_argument("--http-thread-count", type=int, default=8, help="HTTP frontend worker threads")
    _openai_arguments(p)
    p.add_argument(
        "--disable-auto-complete-config",
        action="store_true",
        help="as --strict-model-config=true: no auto-completion of model configurations",
    )
    p.add_argument("--log-info", type=_bool, default=True, help="log INFO records")
    p.add_argument("--log-warning", type=_bool, default=True, help="log WARNING records")
    p.add_argument("--log-error", type=_bool, default=True, help="log ERROR records")
    for name in ("level", "rate", "count", "log-frequency"):
        p.add_argument(
            f"--trace-{name}",
            action="append",
            default=[],
            help=f"older tritonserver flag: as --trace-config {name}=VALUE",
        )
    ignored = p.add_argument_group(
        "accepted for tritonserver compatibility",
        "tritonserver's other flags are taken (so that scripts and tests that start "
        "tritonserver can start mock_server) and have no effect here; each one given is "
        "logged at start-up: " + ", ".join(f"--{flag}" for flag in _IGNORED_FLAGS) + ".",
    )
    for flag, kind in _IGNORED_FLAGS.items():
        if kind == "none":
            ignored.add_argument(f"--{flag}", action="store_true", help=argparse.SUPPRESS)
        elif kind == "append":
            ignored.add_argument(f"--{flag}", action="append", help=argparse.SUPPRESS)
        else:
            ignored.add_argument(f"--{flag}", help=argparse.SUPPRESS)
    return p


def _openai_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of the OpenAI-compatible frontend (Triton's ``openai_frontend/main.py``)."""
    group = p.add_argument_group(
        "OpenAI-compatible frontend",
        "Triton's OpenAI frontend's routes (/v1/models, /v1/completions, /v1/chat/completions, "
        "/v1/embeddings) over the same models; see mock_server/frontends/openai.py.",
    )
    group.add_argument(
        "--openai-port", type=int, help="serve the OpenAI API on this port (0: a free one)"
    )
    group.add_argument("--openai-address", help="address of the OpenAI API (default: --host)")
    group.add_argument(
        "--openai-restricted-api",
        nargs=3,
        action="append",
        default=[],
        metavar=("APIs", "KEY", "VALUE"),
        help="restrict OpenAI API groups (inference, model-repository, metrics, health; "
        "comma-separated) to requests with header KEY: VALUE (repeatable)",
    )
    group.add_argument(
        "--tokenizer",
        metavar="DIR",
        help="local tokenizer folder (tokenizer_config.json's chat template, tokenizer.json's "
        "token counts); nothing is downloaded",
    )
    group.add_argument(
        "--chat-template", metavar="FILE", help="Jinja chat template for every model"
    )
    group.add_argument(
        "--default-max-tokens",
        type=int,
        default=16,
        help="max_tokens of a request that gives none (default 16)",
    )
    group.add_argument(
        "--tool-call-parser",
        choices=["llama3"],
        help="parse tool calls out of generated text (Llama 3's JSON form)",
    )


#: tritonserver flags (2.73) with no meaning here, by how they take a value: one ("value"),
#: none ("none"), or repeatable KEY=VALUE settings ("append").
_IGNORED_FLAGS = {
    "allow-cpu-metrics": "value",
    "allow-gpu-metrics": "value",
    "allow-sagemaker": "value",
    "allow-vertex-ai": "value",
    "backend-config": "append",
    "backend-directory": "value",
    "buffer-manager-thread-count": "value",
    "cache-config": "append",
    "cache-directory": "value",
    "cuda-memory-pool-byte-size": "append",
    "cuda-virtual-address-size": "append",
    "enable-peer-access": "value",
    "grpc-infer-thread-count": "value",
    "grpc-keepalive-time": "value",
    "grpc-keepalive-timeout": "value",
    "grpc-max-connection-age": "value",
    "grpc-max-response-pool-size": "value",
    "host-policy": "append",
    "log-format": "value",
    "metrics-config": "append",
    "metrics-interval-ms": "value",
    "model-config-name": "value",
    "model-load-gpu-limit": "append",
    "model-load-retry-count": "value",
    "model-load-thread-count": "value",
    "model-namespacing": "value",
    "pinned-memory-pool-byte-size": "value",
    "rate-limit": "value",
    "rate-limit-resource": "append",
    "repoagent-directory": "value",
    "response-cache-byte-size": "value",
    "reuse-grpc-port": "value",
    "reuse-http-port": "value",
    "sagemaker-port": "value",
    "sagemaker-safe-port-range": "value",
    "sagemaker-thread-count": "value",
    "vertex-ai-default-model": "value",
    "vertex-ai-port": "value",
    "vertex-ai-thread-count": "value",
}


def ignored_flags(args: argparse.Namespace) -> list[str]:
    """The flags of :data:`_IGNORED_FLAGS` that were given."""
    return [
        f"--{flag}"
        for flag in _IGNORED_FLAGS
        if getattr(args, flag.replace("-", "_")) not in (None, False, [])
    ]


def _trace_config(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The trace file and initial trace settings from ``--trace-file``/``--trace-config``."""
    trace_file = args.trace_file
    settings: dict[str, Any] = {}
    levels: list[str] = []
    keys = {"rate": "trace_rate", "count": "trace_count", "log-frequency": "log_frequency"}
    older = [
        f"{name}={value}"
        for name in ("level", "rate", "count", "log-frequency")
        for value in getattr(args, f"trace_{name.replace('-', '_')}")
    ]
    for item in [*older, *args.trace_config]:
        mode, _, setting = item.rpartition(",")
        if mode and mode != "triton":
            raise ValueError(f"--trace-config {item}: only the 'triton' trace mode is supported")
        key, sep, value = setting.partition("=")
        if not sep:
            raise ValueError(f"--trace-config {item}: expected KEY=VALUE")
        if key == "file":
            trace_file = value
        elif key == "level":
            levels.append(value.upper())
        elif key == "mode":
            if value != "triton":
                raise ValueError(f"--trace-config {item}: only the 'triton' mode is supported")
        elif key in keys:
            settings[keys[key]] = value
        else:
            raise ValueError(f"--trace-config {item}: unknown trace setting '{key}'")
    if levels:
        settings["trace_level"] = levels
    if settings:
        try:  # the same checks as over the network, reported as a usage error
            TraceSettings(trace_file).update(settings)
        except ServerError as exc:
            raise ValueError(f"--trace-config: {exc.message}") from None
    return trace_file, settings


def options_from_args(args: argparse.Namespace) -> tuple[ServerOptions, FrontendOptions]:
    """Turn parsed arguments into the options of :class:`MockServer`."""
    repos = [Path(r) for r in args.model_repository] or [BUNDLED_MODELS]
    trace_file, trace_settings = _trace_config(args)
    core = ServerOptions(
        model_repository=repos,
        model_control_mode=ModelControlMode(args.model_control_mode),
        startup_models=list(args.load_model),
        repository_poll_secs=args.repository_poll_secs,
        strict_readiness=args.strict_readiness,
        exit_timeout_secs=args.exit_timeout_secs,
        server_id=args.server_id,
        trace_file=trace_file,
        trace_settings=trace_settings,
        log_file=args.log_file,
        strict_model_config=args.strict_model_config or args.disable_auto_complete_config,
        triton_compat=args.triton_compat,
        allow_client_shm=args.allow_client_shm,
        shm_copy_inputs=args.shm_copy_inputs,
        python_backend_isolation=args.python_backend_isolation,
    )
    use_grpc_ssl = args.grpc_use_ssl or args.grpc_use_ssl_mutual
    if use_grpc_ssl and not (args.grpc_server_cert and args.grpc_server_key):
        raise ValueError("--grpc-use-ssl needs --grpc-server-cert and --grpc-server-key")
    if bool(args.http_ssl_cert) != bool(args.http_ssl_key):
        raise ValueError("--http-ssl-cert and --http-ssl-key go together")
    frontends = FrontendOptions(
        host=args.host,
        http_host=args.http_address,
        grpc_host=args.grpc_address,
        metrics_host=args.metrics_address,
        http_port=args.http_port,
        grpc_port=args.grpc_port,
        metrics_port=args.metrics_port,
        allow_http=args.allow_http,
        allow_grpc=args.allow_grpc,
        allow_metrics=args.allow_metrics,
        http_ssl_cert=args.http_ssl_cert,
        http_ssl_key=args.http_ssl_key,
        http_ssl_ca=args.http_ssl_root_cert,
        grpc_ssl_cert=args.grpc_server_cert if use_grpc_ssl else None,
        grpc_ssl_key=args.grpc_server_key if use_grpc_ssl else None,
        grpc_ssl_ca=args.grpc_root_cert if use_grpc_ssl else None,
        grpc_ssl_mutual=args.grpc_use_ssl_mutual,
        http_restricted_api=parse_restricted(args.http_restricted_api),
        grpc_restricted_protocol=parse_restricted(args.grpc_restricted_protocol, "protocol"),
        http_header_forward_pattern=args.http_header_forward_pattern,
        grpc_header_forward_pattern=args.grpc_header_forward_pattern,
        http_max_input_size=args.http_max_input_size,
        http_thread_count=args.http_thread_count,
        openai_port=args.openai_port,
        openai_host=args.openai_address,
        openai_restricted_api=parse_openai_restricted(args.openai_restricted_api),
        tokenizer=args.tokenizer,
        chat_template=args.chat_template,
        default_max_tokens=args.default_max_tokens,
        tool_call_parser=args.tool_call_parser,
    )
    return core, frontends


def main(argv: list[str] | None = None) -> int:
    """Run the server until interrupted; returns the exit status."""
    if threading.active_count() == 1:
        # The command line's own process, no thread started yet (mock_server._malloc).
        retain_large_buffers()
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.DEBUG if args.log_verbose else logging.INFO
    if not args.log_info:
        level = logging.WARNING if args.log_warning else logging.ERROR
        if not args.log_error and not args.log_warning:
            level = logging.CRITICAL
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname).1s %(name)s] %(message)s",
        filename=args.log_file or None,
    )
    try:
        core_options, frontend_options = options_from_args(args)
    except ValueError as exc:
        parser.error(str(exc))
    for flag in ignored_flags(args):
        logging.getLogger("mock_server").info("%s has no effect in mock_server", flag)
    server = MockServer(core_options, frontend_options)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        server.start()
    except (OSError, ServerError) as exc:
        print(f"mock_server: failed to start: {exc}", file=sys.stderr)
        server.stop()
        return 1
    failures = server.core.startup_failures()
    if failures and args.exit_on_error:
        # tritonserver's default (--exit-on-error=true): the reasons are in the log above.
        for name, reason in failures.items():
            print(f"mock_server: failed to load '{name}': {reason}", file=sys.stderr, flush=True)
        print(
            "error: creating server: Internal - failed to load all models",
            file=sys.stderr,
            flush=True,
        )
        server.stop()
        return 1
    for row in server.core.repository_index():
        if "state" in row:
            print(
                f"model {row['name']} version {row['version']}: {row['state']} "
                f"{row['reason']}".rstrip(),
                flush=True,
            )
    if server.http_port is not None:
        print(f"Started HTTPService at {server.http_url}", flush=True)
    if server.grpc_port is not None:
        print(f"Started GRPCInferenceService at {server.grpc_url}", flush=True)
    if server.metrics_port is not None:
        print(f"Started Metrics Service at {server.metrics_url}", flush=True)
    if server.openai_port is not None:
        print(f"Started OpenAI-compatible API at http://{server.openai_url}/v1", flush=True)
    # One parseable line with every bound port (useful with port 0).
    print(
        f"mock_server ready: http={server.http_port or '-'} grpc={server.grpc_port or '-'} "
        f"metrics={server.metrics_port or '-'} ready={str(server.core.ready()).lower()}",
        flush=True,
    )
    # What start-up made (libraries, models, the frontends) lives as long as the server: the
    # collector's full passes need not walk it again and again under load.
    gc.freeze()
    if args.port_file:
        Path(args.port_file).write_text(
            json.dumps(
                {
                    "http": server.http_port,
                    "grpc": server.grpc_port,
                    "metrics": server.metrics_port,
                    "openai": server.openai_port,
                    "ready": server.core.ready(),
                }
            )
        )
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
