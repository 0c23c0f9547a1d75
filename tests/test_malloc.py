"""The command line's allocator settings for large tensors (``mock_server._malloc``).

Each case runs a fresh interpreter: the settings are made once per process, before threads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.test_cli import ROOT

#: Allocates 64 MiB buffers in the main thread and in a new one, then says whether each lies
#: inside the process's ``[heap]`` (the main arena's brk heap) rather than in a mapping of
#: its own.
PROBE = """
import ctypes, json, sys, threading
from mock_server._malloc import retain_large_buffers
made = retain_large_buffers() if sys.argv[1] == "retain" else None
def address():
    buffer = ctypes.create_string_buffer(64 << 20)
    return ctypes.addressof(buffer), buffer
def in_heap(addr):
    for line in open("/proc/self/maps"):
        if line.rstrip().endswith("[heap]"):
            low, high = (int(x, 16) for x in line.split()[0].split("-"))
            if low <= addr < high:
                return True
    return False
main_addr, keep = address()
seen = {}
thread = threading.Thread(target=lambda: seen.update(addr=address()[0]))
thread.start(); thread.join()
print(json.dumps({"made": made, "main": in_heap(main_addr), "thread": in_heap(seen["addr"])}))
"""

GLIBC = sys.platform == "linux" and os.confstr("CS_GNU_LIBC_VERSION") is not None


def _probe(mode: str, **env: str) -> dict[str, object]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUN"))}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.skipif(not GLIBC, reason="glibc's allocator only")
def test_large_buffers_come_from_the_heap_in_every_thread() -> None:
    """Once set, a 64 MiB buffer is carved from the one heap, whichever thread asks; without
    the settings each is a mapping of its own (whose pages fault afresh every time)."""
    assert _probe("plain") == {"made": None, "main": False, "thread": False}
    assert _probe("retain") == {"made": True, "main": True, "thread": True}


@pytest.mark.skipif(not GLIBC, reason="glibc's allocator only")
@pytest.mark.parametrize("variable", ["MALLOC_ARENA_MAX", "GLIBC_TUNABLES"])
def test_a_user_setting_of_the_allocator_is_left_alone(variable: str) -> None:
    value = "4" if variable == "MALLOC_ARENA_MAX" else ""
    assert _probe("retain", **{variable: value}) == {
        "made": False,
        "main": False,
        "thread": False,
    }
