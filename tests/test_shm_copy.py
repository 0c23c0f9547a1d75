"""shm.copy.copy_into: large copies split over the cores, small or strided ones in one go."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import numpy as np
import pytest

from shm import copy as shm_copy


@pytest.mark.parametrize(
    "nbytes", [shm_copy.PARALLEL_MIN_BYTES - 1, shm_copy.PARALLEL_MIN_BYTES, (24 << 20) + 4099]
)
def test_every_byte_is_copied_once_in_place(nbytes: int) -> None:
    source = np.random.default_rng(nbytes).integers(0, 256, nbytes, dtype=np.uint8)
    target = np.zeros(nbytes + 2, dtype=np.uint8)
    shm_copy.copy_into(target[1:-1], source)
    assert np.array_equal(target[1:-1], source)
    assert target[0] == 0 and target[-1] == 0  # nothing written outside the target


def test_typed_and_strided_arrays() -> None:
    source = np.arange(3 << 20, dtype=np.float32).reshape(1024, -1)
    target = np.empty_like(source)
    shm_copy.copy_into(target, source)
    assert np.array_equal(target, source)
    strided = source[:, ::2]
    narrow = np.empty(strided.shape, np.float32)
    shm_copy.copy_into(narrow, strided)
    assert np.array_equal(narrow, strided)
    with pytest.raises(TypeError):
        shm_copy.copy_into(np.empty(source.shape, np.int32), source)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_copies_with_a_pool_of_its_own() -> None:
    source = np.ones(16 << 20, dtype=np.uint8)
    target: Any = np.zeros_like(source)
    shm_copy.copy_into(target, source)  # the parent's pool exists now
    pid = os.fork()
    if pid == 0:  # the child: the inherited pool has no threads; a hang would time out
        child_target = np.zeros_like(source)
        shm_copy.copy_into(child_target, source)
        os._exit(0 if np.array_equal(child_target, source) else 1)
    deadline = time.monotonic() + 30
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    if not done:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert done and os.waitstatus_to_exitcode(status) == 0


def _write(path: Any, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_cgroup_v2_quota_is_the_least_along_the_groups_path(tmp_path: Any) -> None:
    membership = tmp_path / "cgroup"
    membership.write_text("0::/outer/inner\n")
    root = tmp_path / "fs"
    _write(root / "cpu.max", "max 100000\n")  # the root: no quota
    _write(root / "outer" / "cpu.max", "150000 100000\n")  # 1.5 CPUs
    _write(root / "outer" / "inner" / "cpu.max", "400000 100000\n")  # 4, but its parent's 1.5
    assert shm_copy.quota_cpus(str(membership), str(root)) == 1.5
    _write(root / "outer" / "cpu.max", "max 100000\n")
    assert shm_copy.quota_cpus(str(membership), str(root)) == 4.0
    _write(root / "outer" / "inner" / "cpu.max", "max 100000\n")
    assert shm_copy.quota_cpus(str(membership), str(root)) is None


def test_a_cgroup_v1_quota_is_read_from_the_cpu_controllers_hierarchy(tmp_path: Any) -> None:
    membership = tmp_path / "cgroup"
    membership.write_text("5:memory:/x\n4:cpu,cpuacct:/docker/abc\n0::/\n")
    group = tmp_path / "fs" / "cpu,cpuacct"
    _write(group / "cpu.cfs_quota_us", "-1\n")
    _write(group / "cpu.cfs_period_us", "100000\n")
    assert shm_copy.quota_cpus(str(membership), str(tmp_path / "fs")) is None
    _write(group / "docker" / "abc" / "cpu.cfs_quota_us", "50000\n")
    _write(group / "docker" / "abc" / "cpu.cfs_period_us", "100000\n")
    assert shm_copy.quota_cpus(str(membership), str(tmp_path / "fs")) == 0.5
    assert shm_copy.quota_cpus(str(tmp_path / "absent"), str(tmp_path / "fs")) is None


def test_a_quota_comes_with_the_file_that_counts_its_groups_cpu_time(tmp_path: Any) -> None:
    root = tmp_path / "fs"
    # v2: the binding group's own cpu.stat.
    membership = tmp_path / "cgroup"
    membership.write_text("0::/outer/inner\n")
    _write(root / "outer" / "cpu.max", "150000 100000\n")
    _write(root / "outer" / "inner" / "cpu.max", "400000 100000\n")
    _write(root / "outer" / "cpu.stat", "usage_usec 1234\nuser_usec 1000\n")
    quota = shm_copy.cpu_quota(str(membership), str(root))
    assert quota is not None and quota.cpus == 1.5
    assert quota.usage_file == str(root / "outer" / "cpu.stat")
    assert quota.usage_ns() == 1_234_000
    # v1 with cpu and cpuacct mounted together: cpuacct.usage beside the quota.
    membership.write_text("4:cpu,cpuacct:/docker/abc\n0::/\n")
    group = root / "cpu,cpuacct" / "docker" / "abc"
    _write(group / "cpu.cfs_quota_us", "250000\n")
    _write(group / "cpu.cfs_period_us", "100000\n")
    _write(group / "cpuacct.usage", "987654321\n")
    quota = shm_copy.cpu_quota(str(membership), str(root))
    assert quota is not None and quota.cpus == 2.5 and quota.usage_ns() == 987_654_321
    # v1 with cpuacct a hierarchy of its own: the group at the same place in it.
    membership.write_text("2:cpuacct:/pod/c1\n1:cpu:/pod/c1\n0::/\n")
    _write(root / "cpu" / "pod" / "cpu.cfs_quota_us", "120000\n")
    _write(root / "cpu" / "pod" / "cpu.cfs_period_us", "100000\n")
    _write(root / "cpuacct" / "pod" / "cpuacct.usage", "42\n")
    quota = shm_copy.cpu_quota(str(membership), str(root))
    assert quota is not None and quota.cpus == 1.2
    assert quota.usage_file == str(root / "cpuacct" / "pod" / "cpuacct.usage")
    assert quota.usage_ns() == 42
    # A usage that cannot be read or parsed is None, not an error.
    _write(root / "cpuacct" / "pod" / "cpuacct.usage", "garbage\n")
    assert quota.usage_ns() is None
    (root / "cpuacct" / "pod" / "cpuacct.usage").unlink()
    assert quota.usage_ns() is None
    assert shm_copy.CpuQuota(1.0, None).usage_ns() is None


def test_usable_cores_are_the_affinity_capped_by_the_quota_rounded_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    affinity = len(os.sched_getaffinity(0))
    monkeypatch.setattr(shm_copy, "_own_quota", lambda: None)
    assert shm_copy.usable_cores() == affinity
    monkeypatch.setattr(shm_copy, "_own_quota", lambda: 0.5)
    assert shm_copy.usable_cores() == 1  # a half CPU's quota: one, never none
    monkeypatch.setattr(shm_copy, "_own_quota", lambda: affinity + 0.25)
    assert shm_copy.usable_cores() == affinity  # the quota never adds CPUs
    if affinity > 1:
        monkeypatch.setattr(shm_copy, "_own_quota", lambda: 1.5)
        assert shm_copy.usable_cores() == 2
