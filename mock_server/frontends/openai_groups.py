"""The API groups of the OpenAI frontend's ``--openai-restricted-api`` (Triton's OpenAI
frontend's), and the parser of that flag.

A module of its own, importing nothing: the command line checks its arguments against it
without loading the frontend (aiohttp, pydantic, jinja2)."""

from __future__ import annotations

__all__ = ["OPENAI_API_GROUPS", "parse_openai_restricted", "restriction_of"]

#: Each API group: the method and path prefix of its endpoints (Triton's frontend's table).
OPENAI_API_GROUPS: dict[str, tuple[tuple[str, str], ...]] = {
    "inference": (
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/completions"),
        ("POST", "/v1/embeddings"),
    ),
    "model-repository": (("GET", "/v1/models"), ("POST", "/v1/models/")),
    "metrics": (("GET", "/metrics"),),
    "health": (("GET", "/health/ready"),),
}


def parse_openai_restricted(groups: list[list[str]]) -> dict[str, tuple[str, str]]:
    """``--openai-restricted-api APIS KEY VALUE`` (repeatable) as ``{api: (key, value)}``.

    Raises
    ------
    ValueError
        With Triton's words: ``Unknown API 'x'. Available APIs: [...]``, ``restricted api 'x'
        can not be specified in multiple config groups``.
    """
    out: dict[str, tuple[str, str]] = {}
    for apis, key, value in groups:
        for api in apis.split(","):
            if api not in OPENAI_API_GROUPS:
                raise ValueError(f"Unknown API '{api}'. Available APIs: {list(OPENAI_API_GROUPS)}")
            if api in out:
                raise ValueError(
                    f"restricted api '{api}' can not be specified in multiple config groups"
                )
            out[api] = (key, value)
    return out


def restriction_of(
    restricted: dict[str, tuple[str, str]], method: str, path: str
) -> tuple[str, str] | None:
    """The (header, value) a request to ``method path`` must carry, or None."""
    for api, auth in restricted.items():
        for group_method, prefix in OPENAI_API_GROUPS[api]:
            if method == group_method and path.startswith(prefix):
                return auth
    return None
