"""Chat prompts and tokenizers for the OpenAI frontend, all from local files.

A chat request's messages become one prompt through a Jinja chat template, as Hugging Face's
``apply_chat_template`` renders them (the variables ``messages``, ``tools``,
``add_generation_prompt``, ``bos_token``, ``eos_token``; ``raise_exception``).  The template
is, in this order:

1. the file given on the command line (``--chat-template``), for every model;
2. ``chat_template.jinja`` in the model's own folder;
3. the ``chat_template`` of the tokenizer folder given with ``--tokenizer``
   (``tokenizer_config.json``, or ``chat_template.jinja`` beside it);
4. the plain fallback :data:`PLAIN_TEMPLATE`: one ``role: content`` line per message, tools
   as a JSON line, then ``assistant:``.

Triton's frontend needs a tokenizer for every chat request (it answers 500 "Unknown
tokenizer" without one); here the fallback serves instead.  A tokenizer folder
(``tokenizer.json``) also counts tokens when a model reports no counts of its own, through
the optional ``tokenizers`` package (the ``tokenizers`` extra).  Nothing is downloaded: a
``--tokenizer`` that is not a local folder is refused at start.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2
import jinja2.sandbox

from .openai_schema import ChatRequest

__all__ = ["PLAIN_TEMPLATE", "ChatError", "Templates", "Tokenizer", "conversation"]

#: The template used when no other is found (see the module's list).
PLAIN_TEMPLATE = (
    "{% if tools %}tools: {{ tools | tojson }}\n{% endif %}"
    "{% for message in messages %}"
    "{{ message.role }}: "
    "{% if message.content is string %}{{ message.content }}"
    "{% elif message.content %}{% for part in message.content %}{{ part.text }}{% endfor %}"
    "{% endif %}"
    # Newlines as expressions: templates render with trim_blocks, as Hugging Face's do.
    '{% if message.tool_calls %}{{ message.tool_calls | tojson }}{% endif %}{{ "\\n" }}'
    "{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)

#: The template file looked for in a model's folder.
MODEL_TEMPLATE = "chat_template.jinja"


class ChatError(Exception):
    """A chat request that cannot be turned into a prompt (the client's fault: 400)."""


def _raise(message: str) -> None:
    raise ChatError(message)


def _compile(source: str) -> jinja2.Template:
    # Templates come from files the operator chose, but render what clients send: a sandbox
    # keeps a template's expressions away from Python internals all the same.
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = _raise
    env.filters["tojson"] = lambda value, indent=None: json.dumps(value, indent=indent)
    return env.from_string(source)


class Tokenizer:
    """A tokenizer folder: its chat template and special tokens, and token counts.

    Parameters
    ----------
    folder : str or Path
        A local folder with ``tokenizer_config.json`` and/or ``tokenizer.json`` (a Hugging
        Face tokenizer's files).

    Raises
    ------
    ValueError
        When ``folder`` is not a local folder (nothing is downloaded).
    """

    def __init__(self, folder: str | Path) -> None:
        path = Path(folder)
        if not path.is_dir():
            raise ValueError(
                f"--tokenizer {folder}: not a local folder (a tokenizer folder holds "
                "tokenizer.json and tokenizer_config.json; nothing is downloaded)"
            )
        config_file = path / "tokenizer_config.json"
        config = json.loads(config_file.read_text()) if config_file.exists() else {}
        template = config.get("chat_template")
        if isinstance(template, list):  # named templates: take the default one
            named = {t.get("name"): t.get("template") for t in template}
            template = named.get("default") or next(iter(named.values()), None)
        if (path / MODEL_TEMPLATE).exists():
            template = (path / MODEL_TEMPLATE).read_text()
        self.chat_template: str | None = template
        self.special = {key: _token_text(config.get(key)) for key in ("bos_token", "eos_token")}
        self._encoder: Any = None
        if (path / "tokenizer.json").exists():
            try:
                import tokenizers
            except ImportError:
                pass  # counts come from the models then (the `tokenizers` extra adds them)
            else:
                self._encoder = tokenizers.Tokenizer.from_file(str(path / "tokenizer.json"))

    def count(self, text: str) -> int | None:
        """The number of tokens of ``text``, or None without ``tokenizer.json``."""
        if self._encoder is None:
            return None
        return len(self._encoder.encode(text, add_special_tokens=False).ids)


def _token_text(value: Any) -> str:
    if isinstance(value, dict):  # an AddedToken's fields
        return str(value.get("content", ""))
    return "" if value is None else str(value)


class Templates:
    """Which chat template each model uses (see the module's list), compiled once.

    Parameters
    ----------
    chat_template : str or Path, optional
        ``--chat-template``: a template file for every model.
    tokenizer : Tokenizer, optional
        ``--tokenizer``: its template (and special tokens) when a model has none.
    """

    def __init__(self, chat_template: str | Path | None, tokenizer: Tokenizer | None) -> None:
        self._forced = _compile(Path(chat_template).read_text()) if chat_template else None
        self._tokenizer = tokenizer
        fallback = tokenizer.chat_template if tokenizer and tokenizer.chat_template else None
        self._fallback = _compile(fallback or PLAIN_TEMPLATE)
        self._by_folder: dict[Path, jinja2.Template] = {}

    def for_model(self, folder: Path | None) -> jinja2.Template:
        """The template of the model in ``folder``."""
        if self._forced is not None:
            return self._forced
        if folder is None:
            return self._fallback
        template = self._by_folder.get(folder)
        if template is None:
            file = folder / MODEL_TEMPLATE
            template = _compile(file.read_text()) if file.exists() else self._fallback
            self._by_folder[folder] = template
        return template

    def render(self, folder: Path | None, request: ChatRequest) -> str:
        """The prompt of ``request`` for the model in ``folder``.

        Raises
        ------
        ChatError
            For content this frontend does not take (an image) or a template that refuses
            the conversation (``raise_exception``).
        """
        special = self._tokenizer.special if self._tokenizer else {}
        tools = [t.model_dump() for t in request.tools] if request.tools else None
        try:
            return self.for_model(folder).render(
                messages=conversation(request),
                tools=tools,
                add_generation_prompt=True,
                bos_token=special.get("bos_token", ""),
                eos_token=special.get("eos_token", ""),
            )
        except jinja2.TemplateError as exc:
            raise ChatError(f"chat template failed: {exc}") from None


def conversation(request: ChatRequest) -> list[dict[str, Any]]:
    """The messages as chat templates take them (Triton's conversion): text parts only, tool
    call arguments as objects rather than JSON strings."""
    out: list[dict[str, Any]] = []
    for message in request.messages:
        item = message.model_dump(exclude_none=True)
        content = item.get("content")
        if isinstance(content, list):
            for part in content:
                if part["type"] != "text":
                    raise ChatError(f"only text message is supported, but got {part['type']}")
        item.setdefault("content", None)
        for call in item.get("tool_calls") or []:
            try:
                call["function"]["arguments"] = json.loads(call["function"]["arguments"])
            except json.JSONDecodeError:
                raise ChatError(
                    f"tool call {call['id']}: arguments are not JSON: "
                    f"{call['function']['arguments']!r}"
                ) from None
        out.append(item)
    return out
