"""``tool_model``: a deterministic chat model that calls tools, shaped like a vLLM model.

Tensors are the vLLM backend's (``text_input``, optional ``stream``, ``sampling_parameters``,
``exclude_input_in_output``, ``return_num_input_tokens``, ``return_num_output_tokens`` ->
``text_output``, ``num_input_tokens``, ``num_output_tokens``); decoupled.  Its prompt is what
its ``chat_template.jinja`` renders: ``<tools>[...]</tools>`` (the request's tools as JSON),
then one ``<role>content</role>`` line per message.

What it answers, to the last message:

* a user's, with tools given: a call of the first tool in Llama 3's form,
  ``{"name": ..., "parameters": {...}}``; the parameters follow the tool's JSON schema
  (required ones, or all): an ``enum`` gives its first value, a number 1, a boolean true, and
  a string the last word of the user's message (``"What is the weather in Dallas?"`` ->
  ``"Dallas"``).  The OpenAI frontend, started with ``--tool-call-parser llama3``, turns it
  into ``tool_calls``.
* a tool's: ``The tool says: <its content>``.
* anything else: ``You said: <the message>``.

Text goes out one word per token (streamed one per response), a tool call whole words at a
time too; ``max_tokens`` cuts text answers but never a tool call. Token counts: one per
whitespace-separated word.
"""

import json
import re

import numpy as np
import triton_python_backend_utils as pb_utils

_TOOLS = re.compile(r"<tools>(.*?)</tools>", re.S)
_MESSAGE = re.compile(r"<(system|user|assistant|tool|function)>(.*?)</\1>", re.S)


def _input(request, name, default=None):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    if tensor is None:
        return default
    value = tensor.as_numpy().reshape(-1)[0]
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _value(schema, word):
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties") or {}
        names = schema.get("required") or list(properties)
        return {name: _value(properties.get(name) or {}, word) for name in names}
    return {"integer": 1, "number": 1, "boolean": True, "array": []}.get(kind, word)


def answer(prompt):
    """The text this model answers ``prompt`` with, and whether it is a tool call."""
    found = _TOOLS.search(prompt)
    tools = json.loads(found.group(1)) if found else []
    messages = _MESSAGE.findall(prompt) or [("user", prompt)]
    role, content = messages[-1]
    if role == "user" and tools:
        words = re.findall(r"[\w-]+", content)
        function = tools[0].get("function", {})
        parameters = _value(function.get("parameters") or {}, words[-1] if words else "")
        return json.dumps({"name": function.get("name"), "parameters": parameters}), True
    if role == "tool":
        return f"The tool says: {content}", False
    return f"You said: {content}", False


def _response(text, counts):
    tensors = [pb_utils.Tensor("text_output", np.array([text.encode()], dtype=np.object_))]
    for name, value in counts.items():
        tensors.append(pb_utils.Tensor(name, np.array([value], dtype=np.uint32)))
    return pb_utils.InferenceResponse(tensors)


class TritonPythonModel:
    """Answers with tool calls (see the module)."""

    def execute(self, requests):
        for request in requests:
            self._reply(request, request.get_response_sender())
        return None

    def _reply(self, request, sender):
        # A decoupled model answers through the sender; a failure ends the stream with it.
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        try:
            self._answer(request, sender, final)
        except Exception as exc:
            error = pb_utils.TritonError(f"tool_model: {exc}")
            sender.send(pb_utils.InferenceResponse(error=error), flags=final)

    def _answer(self, request, sender, final):
        prompt = _input(request, "text_input", "")
        stream = bool(_input(request, "stream", False))
        params = json.loads(_input(request, "sampling_parameters", "{}") or "{}")
        text, is_call = answer(prompt)
        tokens = re.findall(r"\S+\s*", text)
        if not is_call:
            tokens = tokens[: max(int(params.get("max_tokens", 16)), 1)]
        counts = {}
        if _input(request, "return_num_input_tokens", False):
            counts["num_input_tokens"] = len(prompt.split())
        want_output = bool(_input(request, "return_num_output_tokens", False))
        if not stream:
            if want_output:
                counts["num_output_tokens"] = len(tokens)
            sender.send(_response("".join(tokens), counts), flags=final)
            return
        if want_output:
            counts["num_output_tokens"] = 1
        for index, token in enumerate(tokens):
            if sender.is_cancelled():
                cancelled = pb_utils.TritonError.CANCELLED
                error = pb_utils.TritonError("tool_model: cancelled", cancelled)
                sender.send(pb_utils.InferenceResponse(error=error), flags=final)
                return
            last = index == len(tokens) - 1
            sender.send(_response(token, counts), flags=final if last else 0)
