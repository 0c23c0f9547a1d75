"""Shared-memory primitives used by both the clients and the bundled server.

POSIX shared memory and CUDA IPC regions, bounds-checked views and DLPack export.
Not implemented yet: tracked in the shared-memory issue.
"""
