"""glibc's allocator set up for large tensors, in the server's own process.

A 64 MiB request or response passes through several buffers of its full size (the bytes gRPC
hands over, the serialized response, the transport's copy of it).  glibc gives every
allocation above its mmap threshold (at most 32 MiB) a fresh mapping and unmaps it when it is
freed, and a thread other than the main one allocates from an arena of its own, where such a
size is always mapped: every page of every such buffer then faults on first touch (16,384
faults and as many zeroed pages per 64 MiB).  ``benchmarks/bench_grpc_knobs.py
--malloc-no-mmap`` showed those faults to be a large part of the per-byte cost.

:func:`retain_large_buffers` makes the process allocate from one arena, without mappings of
its own, and keep up to :data:`TRIM_THRESHOLD` bytes of freed heap for the next buffer:
``bench_server.py``'s 64 MiB round trip over gRPC then costs the server about 140 ms of CPU
instead of 220-240 ms.  The price is resident memory: the heap keeps the freed buffers (about
1.1 GiB after 64 MiB round trips over gRPC, against 0.5 GiB without).  Small requests cost the
same either way (measured at one request in flight, both protocols).

Only the command line (``python -m mock_server``, ``mock-server``) calls it, before any thread
starts; a process that embeds the server keeps its own allocator settings, and so does one
started with any of glibc's ``MALLOC_*`` variables or ``GLIBC_TUNABLES`` set (those are the way
to opt out, e.g. ``MALLOC_ARENA_MAX=8``).  Elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import os

#: ``mallopt`` parameters (glibc's malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
M_ARENA_MAX = -8

#: Freed heap kept at the top of the heap for the next large buffer (beyond it, the heap is
#: trimmed): four 64 MiB tensors.
TRIM_THRESHOLD = 256 << 20

#: Variables through which a user sets glibc's allocator himself: any of them present and
#: :func:`retain_large_buffers` leaves the allocator alone.
USER_SETTINGS = (
    "GLIBC_TUNABLES",
    "MALLOC_ARENA_MAX",
    "MALLOC_MMAP_MAX_",
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
)


def retain_large_buffers() -> bool:
    """Set glibc's allocator up for large tensors (see the module's docstring).

    Call it before the process starts a thread: an arena a thread already has stays its own.

    Returns
    -------
    bool
        Whether the settings were made (False: not glibc, or the user set the allocator).
    """
    if any(name in os.environ for name in USER_SETTINGS):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018  (only glibc has it: musl's mallopt does nothing)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    settings = ((M_ARENA_MAX, 1), (M_MMAP_MAX, 0), (M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return all(mallopt(param, value) == 1 for param, value in settings)
