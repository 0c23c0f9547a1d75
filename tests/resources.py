"""What a server process and its stub processes hold, read from ``/proc`` (Linux): resident
memory, descriptors, threads, the shared-memory objects of its stubs, the stubs themselves.

Used by the soak (``tests/test_load.py``, ``benchmarks/soak.py``) to show that long traffic
leaves nothing growing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Sample", "SoakResult", "descendants", "sample", "soak"]

MiB = 1 << 20


@dataclass(frozen=True)
class Sample:
    """One reading of a server and its descendants.

    Attributes
    ----------
    server_rss : int
        The server process's resident memory, bytes.
    stub_rss : dict
        Each stub's resident memory by its pid (bytes); the pre-imported helper that forks
        stubs counts as ``"(zygote)"``.
    fds, threads : int
        Open descriptors (other than shared-memory objects) and threads of the server process.
    shm_fds : int
        Its descriptors of shared-memory objects: registered client regions and the blocks its
        stub links pool (at most :data:`POOL_SLACK` more once a block size is first used).
    shm_objects : int
        ``/dev/shm`` entries of the server's stubs (``mockpb_<server pid>_*``).
    processes : int
        Descendants of the server (stubs and their helper).
    """

    server_rss: int
    stub_rss: dict[str, int]
    fds: int
    threads: int
    shm_fds: int
    shm_objects: int
    processes: int


#: How many more shared-memory descriptors a soak's end may hold than its warm-up: the stub
#: links keep up to two free blocks per size (``python_backend._transfer``), so a size first
#: used after the warm-up adds two, bounded, and a leak grows past it.
POOL_SLACK = 4


def _descriptors(pid: int) -> list[str]:
    """What each open descriptor of ``pid`` refers to (those closed meanwhile left out)."""
    targets = []
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            targets.append(os.readlink(f"/proc/{pid}/fd/{name}"))
        except OSError:
            continue
    return targets


def _status(pid: int) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def _rss(status: dict[str, str]) -> int:
    return int(status.get("VmRSS", "0 kB").split()[0]) * 1024


def descendants(pid: int) -> list[tuple[int, int]]:
    """Every process under ``pid`` (children, their children ...), as (pid, parent pid)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found: list[tuple[int, int]] = []
    pending = [pid]
    while pending:
        parent = pending.pop()
        for child in children.get(parent, []):
            found.append((child, parent))
            pending.append(child)
    return found


def sample(server_pid: int) -> Sample:
    """Read the server ``server_pid`` and its descendants now (stubs are named by pid; the
    helper that forks them, the server's own child, is ``"(zygote)"``)."""
    status = _status(server_pid)
    stubs: dict[str, int] = {}
    processes = descendants(server_pid)
    for pid, parent in processes:
        try:
            zygote = (
                parent == server_pid
                and b"_zygote_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
            )
            stubs["(zygote)" if zygote else str(pid)] = _rss(_status(pid))
        except OSError:  # ended meanwhile
            continue
    descriptors = _descriptors(server_pid)
    shm_fds = sum(1 for target in descriptors if target.startswith("/dev/shm/"))
    return Sample(
        server_rss=_rss(status),
        stub_rss=stubs,
        fds=len(descriptors) - shm_fds,
        shm_fds=shm_fds,
        threads=int(status.get("Threads", "0")),
        shm_objects=len(list(Path("/dev/shm").glob(f"mockpb_{server_pid}_*"))),
        processes=len(processes),
    )


@dataclass
class SoakResult:
    """The samples taken after each chunk, the requests answered, what went wrong."""

    samples: list[Sample] = field(default_factory=list)
    requests: list[int] = field(default_factory=list)  # answered, cumulative, per chunk
    problems: list[str] = field(default_factory=list)

    def verdict(self, tolerance: float, warmup: int = 1) -> list[str]:
        """What grew beyond ``tolerance`` (resident sizes) or at all (counts), and the other
        problems.  The reference is the highest reading of the ``warmup`` first chunks (the
        working set's high-water mark: a server's resident size swings with the large
        buffers in flight when it is read); the end is the lower of the last two readings
        (what leaks stays, a connection closing at the moment of a reading does not)."""
        problems = list(self.problems)
        if len(self.samples) <= warmup:
            return problems + ["no chunk after the warm-up: nothing to compare"]
        start = _highest(self.samples[:warmup])
        end = _lowest(self.samples[warmup:][-2:])
        if end.server_rss > start.server_rss * (1 + tolerance):
            problems.append(
                f"server RSS grew {start.server_rss / MiB:.1f} -> {end.server_rss / MiB:.1f} MiB"
            )
        for name, rss in end.stub_rss.items():
            before = start.stub_rss.get(name)
            if before is None:
                problems.append(f"a new process under the server: {name}")
            elif rss > before * (1 + tolerance):
                problems.append(f"stub {name} RSS grew {before / MiB:.1f} -> {rss / MiB:.1f} MiB")
        for what in ("fds", "threads", "shm_objects", "processes"):
            if getattr(end, what) > getattr(start, what):
                problems.append(f"{what} grew {getattr(start, what)} -> {getattr(end, what)}")
        if end.shm_fds > start.shm_fds + POOL_SLACK:
            problems.append(f"shared-memory descriptors grew {start.shm_fds} -> {end.shm_fds}")
        return problems


def _combine(samples: Sequence[Sample], pick: Callable[[Sequence[int]], int]) -> Sample:
    """One reading made of ``pick`` (max or min) of each measure over ``samples``."""
    names = set(samples[0].stub_rss).intersection(*(s.stub_rss for s in samples[1:]))
    return Sample(
        server_rss=pick([s.server_rss for s in samples]),
        stub_rss={n: pick([s.stub_rss[n] for s in samples]) for n in names},
        fds=pick([s.fds for s in samples]),
        shm_fds=pick([s.shm_fds for s in samples]),
        threads=pick([s.threads for s in samples]),
        shm_objects=pick([s.shm_objects for s in samples]),
        processes=pick([s.processes for s in samples]),
    )


def _highest(samples: Sequence[Sample]) -> Sample:
    return _combine(samples, max)


def _lowest(samples: Sequence[Sample]) -> Sample:
    return _combine(samples, min)


def soak(
    http: str,
    grpc: str,
    server_pid: int,
    requests: int,
    chunk_seconds: float,
    big: int,
    workloads: Sequence[str],
    report: Callable[[str], None] = print,
    min_chunks: int = 2,
) -> SoakResult:
    """Run ``workloads`` (:mod:`tests.loadgen`) in chunks of ``chunk_seconds`` until
    ``requests`` were answered, sampling the server after each (see ``benchmarks/soak.py``)."""
    from tests.loadgen import run_workloads

    result = SoakResult()
    answered = 0
    chunk = 0
    while answered < requests or len(result.samples) < min_chunks:
        chunk += 1
        outcomes = run_workloads(http, grpc, workloads, seconds=chunk_seconds, big=big)
        time.sleep(0.5)  # responses' last releases reach the stubs
        for outcome in outcomes:
            result.problems.extend(outcome.errors[:3])
        answered += sum(o.count - len(o.errors) for o in outcomes)
        result.requests.append(answered)
        taken = sample(server_pid)
        result.samples.append(taken)
        stub_mib = sorted(rss / MiB for rss in taken.stub_rss.values())
        report(
            f"chunk {chunk}: {answered} requests; server RSS {taken.server_rss / MiB:.1f} MiB, "
            f"stubs {len(stub_mib)} ({stub_mib[0]:.1f}-{stub_mib[-1]:.1f} MiB), "
            f"fds {taken.fds} (+{taken.shm_fds} shm), "
            f"threads {taken.threads}, /dev/shm {taken.shm_objects}"
            if stub_mib
            else f"chunk {chunk}: {answered} requests; no stub processes"
        )
        if result.problems:
            break
    return result
