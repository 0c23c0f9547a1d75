"""Shared-memory primitives used by both the clients and the bundled server.

:mod:`shm.posix` maps POSIX shared-memory objects (bounds-checked views, the object's current
size checked on use); :mod:`shm.cuda` allocates device memory, exports and opens CUDA IPC
handles through cuda-python and exports tensors through DLPack, whose ctypes structures are
:mod:`shm.dlpack` (the Python backend's BF16 capsules use them too); :mod:`shm.copy` splits
large copies over the cores.  ``tritonclient.utils.
shared_memory`` / ``cuda_shared_memory`` and ``mock_server.core.shm`` build on them.
"""
