"""The datatype table of the KServe v2 / Triton protocol.

This module is the one place that knows how protocol datatype strings ("FP32", "BYTES",
...), numpy dtypes, element sizes and the ``model_config`` enum names (``TYPE_FP32``,
``TYPE_STRING``, ...) correspond.  The clients, the codecs and the bundled server all
read it from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from ._errors import raise_error

__all__ = [
    "DATATYPES",
    "DatatypeInfo",
    "as_numpy_dtype",
    "config_to_triton_dtype",
    "np_to_triton_dtype",
    "triton_dtype_byte_size",
    "triton_to_config_dtype",
    "triton_to_np_dtype",
]


@dataclass(frozen=True)
class DatatypeInfo:
    """One row of the datatype table.

    Attributes
    ----------
    name : str
        Protocol datatype string, e.g. ``"FP32"``.
    numpy_type : type
        The numpy scalar type that :func:`triton_to_np_dtype` returns (``bool`` for BOOL
        and ``numpy.object_`` for BYTES, as NVIDIA's package does).
    byte_size : int or None
        Bytes per element in the raw layout; None for the variable-size BYTES.
    config_name : str
        The ``inference.DataType`` enum name used in ``config.pbtxt``.
    """

    name: str
    numpy_type: Any
    byte_size: int | None
    config_name: str


DATATYPES: dict[str, DatatypeInfo] = {
    info.name: info
    for info in (
        DatatypeInfo("BOOL", bool, 1, "TYPE_BOOL"),
        DatatypeInfo("UINT8", np.uint8, 1, "TYPE_UINT8"),
        DatatypeInfo("UINT16", np.uint16, 2, "TYPE_UINT16"),
        DatatypeInfo("UINT32", np.uint32, 4, "TYPE_UINT32"),
        DatatypeInfo("UINT64", np.uint64, 8, "TYPE_UINT64"),
        DatatypeInfo("INT8", np.int8, 1, "TYPE_INT8"),
        DatatypeInfo("INT16", np.int16, 2, "TYPE_INT16"),
        DatatypeInfo("INT32", np.int32, 4, "TYPE_INT32"),
        DatatypeInfo("INT64", np.int64, 8, "TYPE_INT64"),
        DatatypeInfo("FP16", np.float16, 2, "TYPE_FP16"),
        DatatypeInfo("FP32", np.float32, 4, "TYPE_FP32"),
        DatatypeInfo("FP64", np.float64, 8, "TYPE_FP64"),
        DatatypeInfo("BYTES", np.object_, None, "TYPE_STRING"),
        DatatypeInfo("BF16", ml_dtypes.bfloat16, 2, "TYPE_BF16"),
    )
}

# numpy scalar type -> protocol datatype.  bytes_ and str_ both travel as BYTES.
_NUMPY_TO_TRITON: dict[type, str] = {
    np.dtype(info.numpy_type).type: name for name, info in DATATYPES.items()
}
_NUMPY_TO_TRITON[np.bytes_] = "BYTES"
_NUMPY_TO_TRITON[np.str_] = "BYTES"

_CONFIG_TO_TRITON: dict[str, str] = {info.config_name: name for name, info in DATATYPES.items()}


def np_to_triton_dtype(np_dtype: Any) -> str | None:
    """Map a numpy dtype to the protocol datatype string.

    Parameters
    ----------
    np_dtype : numpy.dtype or type
        A numpy dtype, a numpy scalar type, ``bool``, or ``ml_dtypes.bfloat16``.
        ``numpy.object_``, ``numpy.bytes_`` and ``numpy.str_`` all map to ``"BYTES"``.

    Returns
    -------
    str or None
        The datatype string (e.g. ``"FP32"``), or None if the dtype has no protocol
        equivalent.
    """
    try:
        scalar_type = np.dtype(np_dtype).type
    except TypeError:
        return None
    return _NUMPY_TO_TRITON.get(scalar_type)


def triton_to_np_dtype(dtype: str) -> Any:
    """Map a protocol datatype string to a numpy type.

    Parameters
    ----------
    dtype : str
        The datatype string, e.g. ``"INT32"``; case-sensitive as in the protocol.

    Returns
    -------
    type or None
        The numpy type (``bool`` for BOOL, ``numpy.object_`` for BYTES,
        ``ml_dtypes.bfloat16`` for BF16), or None for an unknown datatype.
    """
    info = DATATYPES.get(dtype)
    return None if info is None else info.numpy_type


def as_numpy_dtype(datatype: Any) -> np.dtype[Any]:
    # The shared-memory readers take a protocol datatype name or anything numpy takes, as
    # NVIDIA's get_contents_as_numpy does.
    if isinstance(datatype, str) and triton_to_np_dtype(datatype) is not None:
        datatype = triton_to_np_dtype(datatype)
    dtype: np.dtype[Any] = np.dtype(datatype)
    return dtype


def triton_dtype_byte_size(dtype: str) -> int | None:
    """Size in bytes of one element of a protocol datatype.

    Parameters
    ----------
    dtype : str
        The datatype string, e.g. ``"FP16"``.

    Returns
    -------
    int or None
        Bytes per element, or None for ``"BYTES"`` whose elements vary in size.

    Raises
    ------
    InferenceServerException
        If ``dtype`` is not a protocol datatype.
    """
    info = DATATYPES.get(dtype)
    if info is None:
        raise_error(f"unknown datatype '{dtype}'; expected one of {', '.join(DATATYPES)}")
    return info.byte_size


def triton_to_config_dtype(dtype: str) -> str | None:
    """Map a protocol datatype (``"BYTES"``) to its model-config enum name (``"TYPE_STRING"``).

    Parameters
    ----------
    dtype : str
        The protocol datatype string.

    Returns
    -------
    str or None
        The ``inference.DataType`` enum name, or None for an unknown datatype.
    """
    info = DATATYPES.get(dtype)
    return None if info is None else info.config_name


def config_to_triton_dtype(config_dtype: str) -> str | None:
    """Map a model-config enum name (``"TYPE_FP32"``) to the protocol datatype (``"FP32"``).

    Parameters
    ----------
    config_dtype : str
        The ``inference.DataType`` enum name.

    Returns
    -------
    str or None
        The protocol datatype string, or None for ``TYPE_INVALID`` and unknown names.
    """
    return _CONFIG_TO_TRITON.get(config_dtype)
