"""What the clients check in the arguments they are given, before anything is encoded.

Both protocols' ``InferInput.set_data_from_numpy`` (:func:`check_input_array`), custom request
parameter names (:func:`check_parameter_name`) and model versions
(:func:`check_model_version`), refused with NVIDIA's 2.73 messages (the detail the caller
needs goes to the exception's ``hint``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tritonclient.utils._dtypes import np_to_triton_dtype
from tritonclient.utils._errors import raise_error
from tritonclient.utils._serialize import (
    TRITON_RESERVED_REQUEST_PARAMS,
    TRITON_RESERVED_REQUEST_PARAMS_PREFIX,
)

__all__ = ["check_input_array", "check_model_version", "check_parameter_name"]

_BF16_ADVICE = (
    " Since r26.06, BF16 inputs must use ml_dtypes.bfloat16 instead of np.float32 "
    "truncation; create a numpy array with `np.array(data, dtype=ml_dtypes.bfloat16)`."
)


def check_model_version(model_version: Any) -> str:
    """``model_version`` checked to be a string, as every client call requires.

    Raises
    ------
    InferenceServerException
        With NVIDIA's message, for anything but a ``str`` (``"1"``, not ``1``).
    """
    if not isinstance(model_version, str):
        raise_error(
            "model version must be a string",
            hint=f"got {type(model_version).__name__}: pass the version as text, e.g. '1'",
        )
    return model_version


def check_parameter_name(key: str) -> None:
    """Refuse a custom request parameter that Triton reserves (both protocols).

    Raises
    ------
    InferenceServerException
        With NVIDIA's 2.73 message, for a name in ``TRITON_RESERVED_REQUEST_PARAMS`` or one
        starting with ``TRITON_RESERVED_REQUEST_PARAMS_PREFIX`` (``triton_``).
    """
    if key in TRITON_RESERVED_REQUEST_PARAMS or key.startswith(
        TRITON_RESERVED_REQUEST_PARAMS_PREFIX
    ):
        raise_error(
            f'Parameter "{key}" is a reserved parameter and cannot be specified.',
            hint="sequence, priority and timeout settings are the call's own arguments; "
            "'headers' and names starting with 'triton_' are Triton's",
        )


def check_input_array(name: str, datatype: str, shape: Sequence[int], array: Any) -> None:
    """Check an array given to ``InferInput.set_data_from_numpy`` (both protocols).

    Refuses what NVIDIA's 2.73 clients refuse, with their messages; the input's name goes
    to the exception's ``hint``.

    Parameters
    ----------
    name : str
        The input's name.
    datatype : str
        The input's datatype (``"INT32"``...).
    shape : sequence of int
        The input's shape.
    array : Any
        The value given.

    Raises
    ------
    InferenceServerException
        If ``array`` is not a numpy array, or its datatype or shape is not the input's.
        A ``float32`` array for a BF16 input is refused too, as in NVIDIA's 2.73 (older
        releases truncated it): use ``ml_dtypes.bfloat16``.
    """
    where = f"the array was given to input '{name}'"
    if not isinstance(array, np.ndarray):
        raise_error("input_tensor must be a numpy array", hint=f"{where}: pass a numpy array")
    got = np_to_triton_dtype(array.dtype)
    if got != datatype:
        message = f"got unexpected datatype {got} from numpy array, expected {datatype}."
        if datatype == "BF16":
            message += _BF16_ADVICE
        raise_error(message, hint=where)
    if list(array.shape) != [int(d) for d in shape]:
        raise_error(
            f"got unexpected numpy array shape [{str(array.shape)[1:-1]}], "
            f"expected [{str([int(d) for d in shape])[1:-1]}]",
            hint=f"{where}: set_shape() changes the input's shape",
        )
