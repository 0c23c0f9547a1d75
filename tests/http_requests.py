"""HTTP inference request bodies for tests, made with the clients' encoder."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tritonclient._codec import http_body, http_client, types


def encode_request(
    inputs: Iterable[http_client.RequestInput],
    outputs: Iterable[http_client.RequestOutput] | None = None,
    **options: Any,
) -> http_body.EncodedBody:
    """:func:`http_client.encode_infer_request` with the options as keyword arguments."""
    return http_client.encode_infer_request(inputs, outputs, types.InferOptions(**options))
