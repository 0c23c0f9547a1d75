"""Copying large tensors into (or out of) shared memory on several cores at once.

One thread's ``memcpy`` does not saturate memory bandwidth on most machines: measured on a
2-core VM, a 64 MiB copy took 6.5-8.9 ms on one thread and 2.8-3.1 ms split over two (numpy
releases the GIL while it copies).  :func:`copy_into` splits a copy of at least
:data:`PARALLEL_MIN_BYTES` into one slice per core the process may use (its affinity and its
control group's CPU quota, :func:`usable_cores`; at most :data:`MAX_THREADS`), runs one on
the calling thread and the others on a small shared pool, and waits for all of them; smaller
copies, and copies between arrays that are not both C-contiguous, are one ``np.copyto``.
"""

from __future__ import annotations

import functools
import math
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "MAX_THREADS",
    "PARALLEL_MIN_BYTES",
    "CpuQuota",
    "affinity",
    "copy_into",
    "cpu_quota",
    "own_cpu_quota",
    "quota_cpus",
    "usable_cores",
]

#: Copies smaller than this run on the calling thread alone.
PARALLEL_MIN_BYTES = 8 << 20
#: At most this many threads share one copy.
MAX_THREADS = 4

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _forget_pool() -> None:
    # A forked child (a stub) inherits the pool object but none of its threads.
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def affinity() -> set[int]:
    """The CPUs this process may run on (``os.sched_getaffinity``); empty where the platform
    does not say."""
    try:
        return os.sched_getaffinity(0)
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return set()


def usable_cores() -> int:
    """How many CPUs this process may run on: its affinity (where the platform has one),
    capped by its control group's CPU quota, rounded up (a container started with
    ``--cpus=1`` on a larger machine has every CPU in its affinity but one CPU's time)."""
    cores = len(affinity()) or os.cpu_count() or 1
    quota = _own_quota()
    return cores if quota is None else max(1, min(cores, math.ceil(quota)))


@functools.cache
def own_cpu_quota() -> CpuQuota | None:
    """This process's :func:`cpu_quota`, read once per process (every parallel copy asks, and a
    container's quota is set when it starts)."""
    return cpu_quota()


def _own_quota() -> float | None:
    quota = own_cpu_quota()
    return None if quota is None else quota.cpus


@dataclass(frozen=True)
class CpuQuota:
    """A control group's CPU quota, and the file that counts the group's CPU time.

    Attributes
    ----------
    cpus : float
        The quota in CPUs (quota / period).
    usage_file : str or None
        cgroup v2's ``cpu.stat`` (``usage_usec``) or v1's ``cpuacct.usage`` (nanoseconds) of
        the group whose quota this is; None where it was not found.
    """

    cpus: float
    usage_file: str | None

    def usage_ns(self) -> int | None:
        """The CPU time the group's processes have used, in nanoseconds (None: unreadable)."""
        if self.usage_file is None:
            return None
        text = _read(self.usage_file)
        if text is None:
            return None
        try:
            if os.path.basename(self.usage_file) == "cpu.stat":
                for line in text.splitlines():
                    key, _, value = line.partition(" ")
                    if key == "usage_usec":
                        return int(value) * 1000
                return None
            return int(text)
        except ValueError:
            return None


def quota_cpus(
    proc_cgroup: str = "/proc/self/cgroup", root: str = "/sys/fs/cgroup"
) -> float | None:
    """The CPU time this process's control group may use, in CPUs: :func:`cpu_quota`'s
    ``cpus``, None without a quota (or off Linux)."""
    quota = cpu_quota(proc_cgroup, root)
    return None if quota is None else quota.cpus


def cpu_quota(
    proc_cgroup: str = "/proc/self/cgroup", root: str = "/sys/fs/cgroup"
) -> CpuQuota | None:
    """The least CPU quota along this process's control group's path to the root of the
    hierarchy (a group's limit applies to everything under it), with the file that counts
    that group's CPU time; None without a quota (or off Linux).

    Reads cgroup v2's ``cpu.max`` (``"max 100000"``: none) and v1's ``cpu.cfs_quota_us`` and
    ``cpu.cfs_period_us`` (a quota of -1: none), as container runtimes set them.  The usage is
    v2's ``cpu.stat`` of the same group, or v1's ``cpuacct.usage`` of the group at the same
    place in the ``cpuacct`` controller's hierarchy (mounted with ``cpu`` or apart).

    Parameters
    ----------
    proc_cgroup : str, optional
        The process's cgroup membership file.
    root : str, optional
        Where the cgroup file systems are mounted.
    """
    try:
        with open(proc_cgroup) as membership:
            lines = membership.read().splitlines()
    except OSError:
        return None
    groups: list[tuple[str, list[str], list[str]]] = []  # hierarchy, controllers, path
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        named, _, path = rest.partition(":")
        groups.append((hierarchy, named.split(","), [p for p in path.split("/") if p]))
    cpuacct = next(((c, parts) for h, c, parts in groups if "cpuacct" in c), None)
    found: list[CpuQuota] = []
    for hierarchy, controllers, parts in groups:
        if hierarchy == "0" and controllers == [""]:  # v2: "0::/path"
            base, read = root, _v2_quota
        elif "cpu" in controllers:  # v1: "4:cpu,cpuacct:/path"
            base, read = os.path.join(root, ",".join(controllers)), _v1_quota
        else:
            continue
        for depth in range(len(parts), -1, -1):
            group = os.path.join(base, *parts[:depth])
            quota = read(group)
            if quota is None:
                continue
            if read is _v2_quota:
                usage: str | None = os.path.join(group, "cpu.stat")
            elif cpuacct is not None:
                acct_controllers, acct_parts = cpuacct
                usage = os.path.join(
                    root, ",".join(acct_controllers), *acct_parts[:depth], "cpuacct.usage"
                )
            else:
                usage = None
            found.append(CpuQuota(quota, usage))
    return min(found, key=lambda q: q.cpus) if found else None


def _read(path: str) -> str | None:
    try:
        with open(path) as file:
            return file.read().strip()
    except OSError:
        return None


def _v2_quota(group: str) -> float | None:
    quota, _, period = (_read(os.path.join(group, "cpu.max")) or "").partition(" ")
    return _cpus(quota, period)  # a quota of "max": none


def _v1_quota(group: str) -> float | None:
    return _cpus(*(_read(os.path.join(group, f"cpu.cfs_{n}_us")) for n in ("quota", "period")))


def _cpus(quota: str | None, period: str | None) -> float | None:
    """``quota / period`` when both are positive integers, else None (no quota)."""
    try:
        q, p = int(quota or ""), int(period or "")
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None


def _threads() -> int:
    return max(1, min(usable_cores(), MAX_THREADS))


def _executor(workers: int) -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(workers, thread_name_prefix="shm-copy")
        return _pool


def copy_into(target: npt.NDArray[Any], source: npt.NDArray[Any]) -> None:
    """``np.copyto(target, source, casting="no")``, split over the machine's cores when large.

    Parameters
    ----------
    target : numpy.ndarray
        Where to copy; writable, of ``source``'s dtype and shape.
    source : numpy.ndarray
        What to copy.

    Raises
    ------
    TypeError, ValueError
        As ``np.copyto`` for arrays that do not match.
    """
    nbytes = source.nbytes
    threads = _threads()
    if (
        threads < 2
        or nbytes < PARALLEL_MIN_BYTES
        or target.shape != source.shape
        or target.dtype != source.dtype
        or not target.flags.c_contiguous
        or not source.flags.c_contiguous
        or source.dtype.hasobject
    ):
        np.copyto(target, source, casting="no")
        return
    flat_target = target.reshape(-1).view(np.uint8)
    flat_source = source.reshape(-1).view(np.uint8)
    # Slices aligned to 4 KiB pages, so that no two threads write into one page.
    step = -(-nbytes // threads)
    step = -(-step // 4096) * 4096
    pool = _executor(threads - 1)
    futures: list[Future[None]] = []
    for start in range(step, nbytes, step):
        end = min(start + step, nbytes)
        futures.append(pool.submit(np.copyto, flat_target[start:end], flat_source[start:end]))
    try:
        np.copyto(flat_target[:step], flat_source[:step])
    finally:
        for future in futures:
            future.result()
