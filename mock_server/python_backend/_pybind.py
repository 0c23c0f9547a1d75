"""Argument conversion as the Python backend's pybind11 bindings do it.

Triton's ``triton_python_backend_utils`` is mostly a pybind11 extension
(``c_python_backend_utils``): what its functions accept is what pybind11's type casters accept.
A ``std::string`` parameter takes ``str`` and also ``bytes``/``bytearray`` (and their
subclasses, such as ``numpy.bytes_``), and hands back a ``str``; a number takes what
``float()``/``int()`` would, never text; a ``List[...]`` takes any sequence but a string; an enum
takes only that enum.  Anything else fails the call with a ``TypeError`` naming the accepted
signature.  The helpers here apply those rules, so that a model that runs on this server runs on
Triton and the other way round (checked by ``tests/conformance/test_pb_utils_differential.py``).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "CAST_ERROR",
    "incompatible",
    "int_arg",
    "is_text",
    "number_arg",
    "sequence_arg",
    "text_arg",
]

#: pybind11's message when a value cannot be cast to a C++ type (e.g. a negative unsigned).
CAST_ERROR = (
    "Unable to cast Python instance to C++ type (#define PYBIND11_DETAILED_ERROR_MESSAGES or "
    "compile in debug mode for details)"
)


def incompatible(
    function: str,
    signature: str,
    args: Sequence[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    constructor: bool = False,
) -> TypeError:
    """The ``TypeError`` pybind11 raises when no overload accepts the arguments.

    Parameters
    ----------
    function : str
        The function's name (``__init__`` for a constructor).
    signature : str
        The accepted signature, as pybind11 prints it.
    args, kwargs
        The arguments of the failed call, listed after ``Invoked with:``.
    constructor : bool, optional
        Whether the call is a constructor's (pybind11 words those differently).

    Returns
    -------
    TypeError
    """
    what = "constructor" if constructor else "function"
    invoked = [repr(a) for a in args]
    if kwargs:
        invoked.append("kwargs: " + ", ".join(f"{k}={v!r}" for k, v in kwargs.items()))
    return TypeError(
        f"{function}(): incompatible {what} arguments. The following argument types are "
        f"supported:\n    1. {signature}\n\nInvoked with: {', '.join(invoked)}"
    )


def is_text(value: object) -> bool:
    """Whether pybind11 casts ``value`` to a ``std::string`` (str, bytes or bytearray)."""
    return isinstance(value, (str, bytes, bytearray))


def text_arg(value: object) -> str | None:
    """``value`` as the ``str`` a ``std::string`` parameter receives, or None when it is not
    text: ``str`` as is (a subclass as a plain ``str``), ``bytes``/``bytearray`` decoded as
    UTF-8 (invalid sequences replaced)."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    return None


def number_arg(value: object) -> float | None:
    """``value`` as the ``double`` a float parameter receives, or None: any number (bool
    and numpy scalars included) or object with ``__float__``/``__index__``, never text."""
    if is_text(value) or value is None:
        return None
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def int_arg(value: object, *, unsigned: bool = False) -> int | None:
    """``value`` as the integer an integer parameter receives, or None: ``int`` (bool
    included) or an object with ``__index__``; never a float or text.  With ``unsigned``,
    negative values are refused too."""
    if isinstance(value, float) or is_text(value):
        return None
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None
    if unsigned and number < 0:
        return None
    return number


def sequence_arg(value: object) -> list[Any] | None:
    """``value`` as the list a ``List[...]`` parameter receives, or None: any sequence but
    text (pybind11 refuses to read a string as a list of characters)."""
    if is_text(value) or isinstance(value, Mapping):
        return None
    if not isinstance(value, Sequence) and not (
        hasattr(value, "__getitem__") and hasattr(value, "__len__")  # e.g. a numpy array
    ):
        return None
    items: list[Any] = list(value)  # type: ignore[call-overload]
    return items
