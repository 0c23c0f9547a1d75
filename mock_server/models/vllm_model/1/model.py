"""``vllm_model``: a deterministic text "generator" shaped like Triton's vLLM backend.

Inputs and outputs are the vLLM backend's: ``text_input`` (BYTES ``[1]``, the prompt),
optional ``stream`` (BOOL ``[1]``), ``sampling_parameters`` (BYTES ``[1]``, a JSON object) and
``exclude_input_in_output`` (BOOL ``[1]``); output ``text_output`` (BYTES ``[-1]``). Decoupled.

What it generates: the words of a canned text, starting at a place chosen by the prompt
(CRC-32 of its UTF-8 bytes, and of ``seed`` when the sampling parameters have one), one token
per word (each with its leading space), ``max_tokens`` of them (default 16, as vLLM's; from
``sampling_parameters``, or from the request parameters when that input is absent, as the vLLM
backend reads them). The same prompt (and seed) always gives the same text, on any server.
Its "tokenizer" is as plain: a prompt has one token per whitespace-separated word.

As the vLLM backend:

* ``stream`` true: one response per token holding only that token (the delta); the last one
  carries the final flag. ``exclude_input_in_output`` defaults to true then, and false is
  refused ("When streaming, `exclude_input_in_output` = False is not allowed.").
* ``stream`` false (the default): one response with the whole text, the prompt in front of it
  unless ``exclude_input_in_output`` is true.
* ``stop`` (a string or a list of them): generation ends where one first appears in the
  generated text, which is cut before it.
* ``structured_outputs`` (``{"json": schema}``, as a JSON string or object) or ``guided_json``
  (a schema): the text is a JSON object made from the schema (its required properties, or all
  of them; strings from the canned text, numbers 1, booleans true), streamed a few characters
  per token. This is how a named tool choice reaches a vLLM model from an OpenAI frontend.
* ``return_num_input_tokens`` / ``return_num_output_tokens`` true: outputs
  ``num_input_tokens`` / ``num_output_tokens`` (UINT32 ``[1]``; per response when streaming:
  the tokens of that response).
* ``return_logprobs`` true with ``logprobs: k`` in the sampling parameters: output
  ``logprobs``, a JSON list with one object per token, ``{token id: {"logprob", "rank",
  "decoded_token"}}`` for the token and its ``k - 1`` runners-up (made-up, fixed values).
* Other sampling parameters (temperature, top_p, ...) are accepted and make no difference.

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


def _start(prompt, seed):
    key = prompt.encode("utf-8")
    if seed is not None:
        key += b"\0" + str(seed).encode()
    return zlib.crc32(key) % len(_TEXT)


def _tokens(start, count):
    """The ``count`` tokens from ``start``, made one at a time (a long stream costs no
    memory up front)."""
    return ((start + i) % len(_TEXT) for i in range(count))


def _schema_value(schema, word):
    kind = schema.get("type") if isinstance(schema, dict) else None
    if "enum" in (schema or {}) and schema["enum"]:
        return schema["enum"][0]
    if kind == "object":
        properties = schema.get("properties") or {}
        names = schema.get("required") or list(properties)
        return {name: _schema_value(properties.get(name, {}), word) for name in names}
    if kind == "array":
        return [_schema_value(schema.get("items") or {}, word)]
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return word


def _json_schema(params):
    guide = params.get("structured_outputs")
    if isinstance(guide, str):
        guide = json.loads(guide)
    if isinstance(guide, dict) and guide.get("json") is not None:
        schema = guide["json"]
    else:
        schema = params.get("guided_json")
    if isinstance(schema, str):
        schema = json.loads(schema)
    return schema


def _json_tokens(schema, start, count):
    """A JSON object made from ``schema``, cut into tokens of up to 8 characters."""
    text = json.dumps(_schema_value(schema, _TEXT[start]))
    return [text[i : i + 8] for i in range(0, len(text), 8)][:count]


def _logprobs(index, k):
    """Made-up logprobs of one token: the token first, then ``k - 1`` runners-up."""
    return {
        str((index + rank) % len(_TEXT)): {
            "logprob": -0.25 * (rank + 1),
            "rank": rank + 1,
            "decoded_token": " " + _TEXT[(index + rank) % len(_TEXT)],
        }
        for rank in range(max(k, 1))
    }


def _response(text, counts=None, logprobs=None):
    out = np.array([text.encode("utf-8")], dtype=np.object_)
    tensors = [pb_utils.Tensor("text_output", out)]
    for name, value in (counts or {}).items():
        tensors.append(pb_utils.Tensor(name, np.array([value], dtype=np.uint32)))
    if logprobs is not None:
        packed = np.array([json.dumps(logprobs).encode("utf-8")], dtype=np.object_)
        tensors.append(pb_utils.Tensor("logprobs", packed))
    return pb_utils.InferenceResponse(tensors)


def _stops(params):
    stop = params.get("stop") or []
    return [stop] if isinstance(stop, str) else [s for s in stop if s]


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
        start = _start(prompt, params.get("seed"))
        schema = _json_schema(params)
        if schema is not None:
            pieces = [(None, t) for t in _json_tokens(schema, start, max_tokens)]
        else:
            pieces = ((i, " " + _TEXT[i]) for i in _tokens(start, max_tokens))
        want_input = _flag(request, "return_num_input_tokens", False)
        want_output = _flag(request, "return_num_output_tokens", False)
        top = params.get("logprobs") if _flag(request, "return_logprobs", False) else None
        stops = _stops(params)

        def counts(n):
            out = {}
            if want_input:
                out["num_input_tokens"] = len(prompt.split())
            if want_output:
                out["num_output_tokens"] = n
            return out

        def probs(indices):
            if not isinstance(top, int) or isinstance(top, bool):
                return None
            return [_logprobs(i if i is not None else start, top) for i in indices]

        if not stream:
            text, indices = "", []
            for index, token in pieces:
                text, ended = _cut(text + token, stops)
                indices.append(index)
                if ended:
                    break
            body = (prompt if prepend else "") + text
            sender.send(_response(body, counts(len(indices)), probs(indices)), flags=final)
            return
        text = ""
        for number, (index, token) in enumerate(pieces):
            if sender.is_cancelled():
                sender.send(
                    _error("vllm_model: request cancelled", pb_utils.TritonError.CANCELLED),
                    flags=final,
                )
                return
            cut, ended = _cut(text + token, stops)
            delta, text = cut[len(text) :], cut
            last = ended or number == max_tokens - 1
            sender.send(_response(delta, counts(1), probs([index])), flags=final if last else 0)
            if last:
                return
        sender.send(None, flags=final)  # a JSON text shorter than max_tokens ended early


def _cut(text, stops):
    """``text`` cut before the first stop string in it, and whether one was found."""
    found = [text.index(s) for s in stops if s in text]
    if found:
        return text[: min(found)], True
    return text, False
