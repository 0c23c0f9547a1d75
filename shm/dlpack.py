"""The DLPack ABI in :mod:`ctypes`: its structures, codes and the capsule calls, written once.

Both sides of the project hand tensors over through DLPack capsules: :class:`shm.cuda.
DLPackTensor` exports device (or host) memory, and the Python backend
(``mock_server.python_backend._dlpack``) rewrites the dtype of host capsules for BF16 and
reads the tensor inside a capsule it is given.  The layouts follow ``dlpack.h`` (v1.0): the
legacy ``DLManagedTensor`` (capsule name ``"dltensor"``) and ``DLManagedTensorVersioned``
(``"dltensor_versioned"``).

The capsule functions are private prototypes of the C API: setting ``argtypes`` on the shared
``ctypes.pythonapi`` functions would change them for every other user in the process.
"""

from __future__ import annotations

import ctypes

__all__ = [
    "DELETER",
    "KDL_BFLOAT",
    "KDL_CPU",
    "KDL_CUDA",
    "KDL_CUDA_HOST",
    "LEGACY",
    "NUMPY_KIND_CODES",
    "VERSIONED",
    "DLDataType",
    "DLDevice",
    "DLManagedTensor",
    "DLManagedTensorVersioned",
    "DLPackVersion",
    "DLTensor",
    "capsule_name",
    "capsule_new",
    "capsule_pointer",
    "capsule_valid",
    "raw_capsule_pointer",
    "raw_capsule_valid",
]

# DLDeviceType
KDL_CPU = 1
KDL_CUDA = 2
KDL_CUDA_HOST = 3

# DLDataTypeCode
KDL_INT = 0
KDL_UINT = 1
KDL_FLOAT = 2
KDL_BFLOAT = 4
KDL_COMPLEX = 5
KDL_BOOL = 6

#: numpy dtype kind -> DLDataTypeCode (BF16 has no numpy kind of its own: see the backend).
NUMPY_KIND_CODES = {"i": KDL_INT, "u": KDL_UINT, "f": KDL_FLOAT, "b": KDL_BOOL, "c": KDL_COMPLEX}

#: Capsule names: an unconsumed legacy and versioned tensor.
LEGACY = b"dltensor"
VERSIONED = b"dltensor_versioned"


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


#: ``void (*deleter)(DLManagedTensor*)``.
DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", DELETER),
]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


# Capsules as Python objects.
capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)
capsule_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi)
)
capsule_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(
    ("PyCapsule_GetName", ctypes.pythonapi)
)
capsule_new = ctypes.PYFUNCTYPE(
    ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p
)(("PyCapsule_New", ctypes.pythonapi))
# Capsules as raw addresses: a capsule's destructor gets the one being deallocated, which must
# not be turned into an object again.
raw_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)
raw_capsule_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi)
)
