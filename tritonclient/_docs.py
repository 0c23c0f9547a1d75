"""Docstrings shared between a sync client and its asyncio twin (written once, on the sync
method)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["doc_from"]

F = TypeVar("F", bound=Callable[..., Any])


def doc_from(sync_method: Callable[..., Any]) -> Callable[[F], F]:
    """Give a coroutine method the docstring of the sync client's method of the same name.

    Parameters
    ----------
    sync_method : callable
        The sync client's method (same parameters).

    Returns
    -------
    callable
        A decorator setting ``__doc__`` to the sync docstring plus a line saying that the
        method is a coroutine.
    """

    def decorate(method: F) -> F:
        method.__doc__ = (sync_method.__doc__ or "") + (
            "\n        This is a coroutine: ``await`` it.\n"
        )
        return method

    return decorate
