"""KServe's ``ModelServer`` serving ``simple`` and ``identity_uint8`` as the bundled models do.

Run by ``bench_server.py`` with the interpreter of a virtual environment holding the ``kserve``
package (the peers' cache's ``kserve`` venv; see ``bench_server.py --help``), never this project's:
``python kserve_simple.py HTTP_PORT GRPC_PORT``.  ``simple`` answers OUTPUT0 = INPUT0 + INPUT1
and OUTPUT1 = INPUT0 - INPUT1 (INT32 [-1, 16]); ``identity_uint8`` answers its input.  Both
over KServe's v2 REST (binary tensor extension included) and gRPC endpoints.  Per-request
latency logging and the access log are off, as the other servers log nothing per request, and
gRPC messages may be as large as the other servers allow (KServe's default limit is 8 MiB;
it reads that setting from the command line when imported).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

_LIMIT = str(2**31 - 1)
_PORTS = sys.argv[1:3]
sys.argv[1:] = [
    "--grpc_max_send_message_length",
    _LIMIT,
    "--grpc_max_receive_message_length",
    _LIMIT,
]

import kserve  # type: ignore[import-not-found]  # noqa: E402  (after the arguments it reads)
from kserve import InferOutput, InferRequest, InferResponse, Model, ModelServer  # noqa: E402


class _Simple(Model):  # type: ignore[misc]
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.ready = True

    def _outputs(self, inputs: list[Any]) -> list[tuple[str, Any]]:
        a, b = inputs[0].as_numpy(), inputs[1].as_numpy()
        return [("OUTPUT0", a + b), ("OUTPUT1", a - b)]

    async def predict(
        self, payload: InferRequest, headers: Any = None, response_headers: Any = None
    ) -> InferResponse:
        outputs = []
        for name, value in self._outputs(payload.inputs):
            output = InferOutput(name, list(value.shape), payload.inputs[0].datatype)
            # Raw data here; KServe renders each output as the request asks (binary or JSON)
            # when it writes the REST response.  Not binary, it would list every element.
            output.set_data_from_numpy(value, binary_data=True)
            outputs.append(output)
        return InferResponse(
            response_id=payload.id or "",
            model_name=self.name,
            infer_outputs=outputs,
            requested_outputs=payload.request_outputs,
            use_binary_outputs=payload.use_binary_outputs,
        )


class _Identity(_Simple):
    def _outputs(self, inputs: list[Any]) -> list[tuple[str, Any]]:
        return [("OUTPUT0", inputs[0].as_numpy())]


def main() -> None:
    http_port, grpc_port = int(_PORTS[0]), int(_PORTS[1])
    logging.getLogger().setLevel(logging.WARNING)
    server = ModelServer(
        http_port=http_port,
        grpc_port=grpc_port,
        enable_latency_logging=False,
        access_log_format=None,
    )
    kserve.logging.logger.setLevel(logging.WARNING)
    server.start([_Simple("simple"), _Identity("identity_uint8")])


if __name__ == "__main__":
    main()
