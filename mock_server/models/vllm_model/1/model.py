"""``vllm_model``: a deterministic text "generator" shaped like Triton's vLLM backend.

Inputs and outputs are the vLLM backend's: ``text_input`` (BYTES ``[1]``, the prompt),
optional ``stream`` (BOOL ``[1]``), ``sampling_parameters`` (BYTES ``[1]``, a JSON object) and
``exclude_input_in_output`` (BOOL ``[1]``); output ``text_output`` (BYTES ``[-1]``). Decoupled.

What it generates: the words of a canned text, starting at a place chosen by the prompt
(CRC-32 of its UTF-8 bytes), one token per word (each with its leading space), ``max_tokens``
of them (default 16, as vLLM's; from ``sampling_parameters``, or from the request parameters
when that input is absent, as the vLLM backend reads them). The same prompt always gives the
same text, on any server.

As the vLLM backend:

* ``stream`` true: one response per token holding only that token (the delta); the last one
  carries the final flag. ``exclude_input_in_output`` defaults to true then, and false is
  refused ("When streaming, `exclude_input_in_output` = False is not allowed.").
* ``stream`` false (the default): one response with the whole text, the prompt in front of it
  unless ``exclude_input_in_output`` is true.
* Other sampling parameters (temperature, top_p, ...) are accepted and make no difference.

When the request is cancelled (the client went away) it stops and ends the stream with a
CANCELLED error. Used by the generate examples, tests and benchmark (``generate_stream`` with
``{"text_input": ..., "stream": true, "max_tokens": N}`` streams N events), and over gRPC
``stream_infer`` as any decoupled model.
"""

import json
import zlib

import numpy as np
import triton_python_backend_utils as pb_utils

_SENTENCE = (
    "the quick brown fox jumps over the lazy dog while a small server streams one word at a "
    "time so that clients can be tested without a GPU and every answer is the same each time "
    "it is asked for in the same words by anyone anywhere"
)
_TEXT = _SENTENCE.split()


def _flag(request, name, default):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    if tensor is None:
        return default
    return bool(tensor.as_numpy().reshape(-1)[0])


def _sampling(request):
    tensor = pb_utils.get_input_tensor_by_name(request, "sampling_parameters")
    if tensor is not None:
        raw = tensor.as_numpy().reshape(-1)[0]
        text = raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
    else:
        text = request.parameters() or "{}"
    params = json.loads(text) if text.strip() else {}
    if not isinstance(params, dict):
        raise ValueError("sampling_parameters must be a JSON object")
    return params


def _tokens(prompt, count):
    """The ``count`` tokens for ``prompt``, made one at a time (a long stream costs no
    memory up front)."""
    start = zlib.crc32(prompt.encode("utf-8")) % len(_TEXT)
    return (" " + _TEXT[(start + i) % len(_TEXT)] for i in range(count))


def _response(text):
    out = np.array([text.encode("utf-8")], dtype=np.object_)
    return pb_utils.InferenceResponse([pb_utils.Tensor("text_output", out)])


def _error(message, code=None):
    code = pb_utils.TritonError.INVALID_ARG if code is None else code
    return pb_utils.InferenceResponse(error=pb_utils.TritonError(message, code))


class TritonPythonModel:
    """Deterministic vLLM-shaped text model."""

    def execute(self, requests):
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        for request in requests:
            sender = request.get_response_sender()
            try:
                self._generate(request, sender, final)
            except Exception as exc:  # the vLLM backend reports request errors this way
                sender.send(_error(f"Error generating stream: {exc}"), flags=final)
        return None

    def _generate(self, request, sender, final):
        raw = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy().reshape(-1)[0]
        prompt = raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
        stream = _flag(request, "stream", False)
        prepend = not _flag(request, "exclude_input_in_output", stream)
        if prepend and stream:
            raise ValueError("When streaming, `exclude_input_in_output` = False is not allowed.")
        params = _sampling(request)
        max_tokens = params.get("max_tokens", 16)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}.")
        tokens = _tokens(prompt, max_tokens)
        if not stream:
            sender.send(_response((prompt if prepend else "") + "".join(tokens)), flags=final)
            return
        for index, token in enumerate(tokens):
            if sender.is_cancelled():
                sender.send(
                    _error("vllm_model: request cancelled", pb_utils.TritonError.CANCELLED),
                    flags=final,
                )
                return
            sender.send(_response(token), flags=final if index == max_tokens - 1 else 0)
