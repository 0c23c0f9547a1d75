"""The OpenAI frontend's answers, with no I/O: response bodies, stream chunks, tool calls.

Shapes follow Triton's OpenAI frontend: non-streamed answers carry every field (``null`` where
unset), stream chunks are Server-Sent Events (``data: {json}``, a blank line) ending with
``data: [DONE]``; the chat stream opens with a chunk that only sets the role; with
``stream_options.include_usage`` a last chunk with no choices carries the usage.

Tool calls (:class:`ToolCalls`) come in Triton's two forms: a named tool choice (or
``"required"``: the first tool) takes the whole text as the named function's arguments, and
``"auto"`` with ``--tool-call-parser llama3`` reads Llama 3's form, JSON objects
``{"name": ..., "parameters": {...}}`` separated by ``;`` (``<|python_tag|>`` in front
allowed).  When streaming with the parser, a text that starts like a tool call is held back
until the model finishes, then sent as tool-call chunks (or as the text, if it was none).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .openai_engine import Generated

__all__ = ["Answer", "ToolCalls", "done_event", "event", "parse_llama3"]

#: The stream's last event.
DONE = b"data: [DONE]\n\n"
_PYTHON_TAG = "<|python_tag|>"


def event(payload: dict[str, Any]) -> bytes:
    """One Server-Sent Event holding ``payload``."""
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def done_event() -> bytes:
    """The event that ends every stream."""
    return DONE


def parse_llama3(text: str) -> list[dict[str, Any]] | None:
    """Llama 3's tool calls in ``text`` (``{"name", "parameters" or "arguments"}`` objects,
    ``;``-separated), as OpenAI ``tool_calls``; None when ``text`` holds none."""
    body = text.strip()
    if body.startswith(_PYTHON_TAG):
        body = body[len(_PYTHON_TAG) :]
    if not body.startswith("{"):
        return None
    decoder = json.JSONDecoder()
    calls: list[dict[str, Any]] = []
    position = 0
    try:
        while position < len(body):
            obj, end = decoder.raw_decode(body, position)
            if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
                return None
            arguments = obj["arguments"] if "arguments" in obj else obj.get("parameters", {})
            calls.append(
                {
                    "id": f"call-{uuid.uuid4().hex}",
                    "type": "function",
                    "function": {"name": obj["name"], "arguments": json.dumps(arguments)},
                }
            )
            position = end
            while position < len(body) and body[position] in "; \n\t":
                position += 1
    except json.JSONDecodeError:
        return None
    return calls or None


@dataclass
class ToolCalls:
    """How a chat request's tools shape its answer.

    Attributes
    ----------
    named : str or None
        The function every answer calls (a named tool choice, or the first tool for
        ``"required"``).
    auto : bool
        Whether the text is parsed for tool calls (``"auto"`` with a parser).
    """

    named: str | None = None
    auto: bool = False
    held: str = ""
    holding: bool = False
    sent_name: bool = False


@dataclass
class Answer:
    """One request's answer being built (its id, time and model name).

    Parameters
    ----------
    model : str
        The model name the request gave (echoed in every body).
    chat : bool
        A chat answer (else a text completion).
    """

    model: str
    chat: bool
    id: str = field(default_factory=lambda: f"cmpl-{uuid.uuid1()}")
    created: int = field(default_factory=lambda: int(time.time()))
    prompt_tokens: int | None = None
    completion_tokens: int = 0

    def count(self, piece: Generated) -> None:
        """Add a response's token counts to the usage."""
        if piece.prompt_tokens is not None and self.prompt_tokens is None:
            self.prompt_tokens = piece.prompt_tokens
        if piece.completion_tokens is not None:
            self.completion_tokens += piece.completion_tokens

    def usage(self) -> dict[str, int] | None:
        """The usage so far, or None when the model reported no counts."""
        if self.prompt_tokens is None:
            return None
        total = self.prompt_tokens + self.completion_tokens
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": total,
        }

    def _head(self, kind: str) -> dict[str, Any]:
        return {"id": self.id, "created": self.created, "model": self.model, "object": kind}

    # -- whole answers -------------------------------------------------------------------
    def completion(self, text: str, logprobs: dict[str, Any] | None) -> dict[str, Any]:
        """``/v1/completions``' body."""
        choice = {"finish_reason": "stop", "index": 0, "logprobs": logprobs, "text": text}
        return {
            **self._head("text_completion"),
            "choices": [choice],
            "system_fingerprint": None,
            "usage": self.usage(),
        }

    def chat_completion(
        self, text: str, tools: ToolCalls, logprobs: dict[str, Any] | None
    ) -> dict[str, Any]:
        """``/v1/chat/completions``' body."""
        message: dict[str, Any] = {
            "content": text,
            "tool_calls": None,
            "role": "assistant",
            "function_call": None,
        }
        finish = "stop"
        if tools.named is not None:
            call = {"name": tools.named, "arguments": text}
            message["content"] = ""
            message["tool_calls"] = [{"id": self.id, "type": "function", "function": call}]
        elif tools.auto:
            calls = parse_llama3(text)
            if calls:
                message["content"], message["tool_calls"], finish = "", calls, "tool_calls"
        choice = {"finish_reason": finish, "index": 0, "message": message, "logprobs": logprobs}
        return {
            **self._head("chat.completion"),
            "choices": [choice],
            "system_fingerprint": None,
            "usage": self.usage(),
        }

    # -- stream chunks -------------------------------------------------------------------
    def completion_chunk(self, piece: Generated, logprobs: dict[str, Any] | None) -> bytes:
        """One streamed completion response."""
        choice = {
            "finish_reason": "stop" if piece.final else None,
            "index": 0,
            "logprobs": logprobs,
            "text": piece.text,
        }
        return event(
            {
                **self._head("text_completion"),
                "choices": [choice],
                "system_fingerprint": None,
                "usage": None,
            }
        )

    def _chat_chunk(self, delta: dict[str, Any], finish: str | None, logprobs: Any = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish}
        return event(
            {
                **self._head("chat.completion.chunk"),
                "choices": [choice],
                "system_fingerprint": None,
                "usage": None,
            }
        )

    def chat_opening(self) -> bytes:
        """The chat stream's first chunk: the role, no content yet."""
        return self._chat_chunk({"role": "assistant", "content": "", "function_call": None}, None)

    def chat_chunks(
        self, piece: Generated, tools: ToolCalls, logprobs: dict[str, Any] | None
    ) -> Iterator[bytes]:
        """The chunks of one streamed chat response (none while a tool call is held)."""
        finish = "stop" if piece.final else None
        if tools.named is not None:
            function: dict[str, Any] = {"arguments": piece.text}
            call: dict[str, Any] = {"index": 0, "function": function}
            if not tools.sent_name:
                tools.sent_name = True
                call.update(id=self.id, type="function")
                function["name"] = tools.named
            yield self._chat_chunk({"tool_calls": [call]}, finish, logprobs)
            return
        if tools.auto:
            if not tools.held.strip() and not tools.holding:
                start = (tools.held + piece.text).lstrip()
                tools.holding = start.startswith(("{", _PYTHON_TAG[:1]))
            if tools.holding:
                tools.held += piece.text
                if not piece.final:
                    return
                calls = parse_llama3(tools.held)
                if calls:
                    chunks = [dict(call, index=i) for i, call in enumerate(calls)]
                    yield self._chat_chunk({"tool_calls": chunks}, "tool_calls")
                    return
                piece = Generated(tools.held, final=True)
            else:
                tools.held += piece.text
        delta = {"role": None, "content": piece.text, "function_call": None}
        yield self._chat_chunk(delta, finish, logprobs)

    def usage_chunk(self) -> bytes | None:
        """The last chunk with ``stream_options.include_usage``: no choices, the usage."""
        usage = self.usage()
        if usage is None:
            return None
        kind = "chat.completion.chunk" if self.chat else "text_completion"
        return event(
            {**self._head(kind), "choices": [], "system_fingerprint": None, "usage": usage}
        )


def chat_logprobs(raw: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """The vLLM backend's logprobs as a chat choice's ``logprobs``."""
    if not raw:
        return None
    content = []
    for position in raw:
        ranked = sorted(position.values(), key=lambda item: item.get("rank", 1 << 30))
        if not ranked:
            continue
        top = [
            {
                "token": item["decoded_token"],
                "logprob": item["logprob"],
                "bytes": list(item["decoded_token"].encode()),
            }
            for item in ranked
        ]
        content.append({**top[0], "top_logprobs": top})
    return {"content": content}


def completion_logprobs(raw: list[dict[str, Any]] | None, offset: int = 0) -> dict[str, Any] | None:
    """The vLLM backend's logprobs as a completion choice's ``logprobs`` (text offsets from
    ``offset``)."""
    if not raw:
        return None
    out: dict[str, list[Any]] = {
        "text_offset": [],
        "token_logprobs": [],
        "tokens": [],
        "top_logprobs": [],
    }
    for position in raw:
        ranked = sorted(position.values(), key=lambda item: item.get("rank", 1 << 30))
        if not ranked:
            continue
        token = ranked[0]["decoded_token"]
        out["text_offset"].append(offset)
        out["token_logprobs"].append(ranked[0]["logprob"])
        out["tokens"].append(token)
        out["top_logprobs"].append({item["decoded_token"]: item["logprob"] for item in ranked})
        offset += len(token)
    return out
