"""POSIX shared memory by key: create, open, map and unlink, with bounds-checked views.

Used by the client helpers (``tritonclient.utils.shared_memory``) and by the server's region
registry.  Keys are POSIX shm names such as ``"/my_region"``.
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
from dataclasses import dataclass, field

try:  # CPython's own binding of shm_open/shm_unlink (what multiprocessing uses)
    import _posixshmem
except ImportError:  # pragma: no cover - non-POSIX platforms
    _posixshmem = None

__all__ = ["MappedRegion", "create", "named_identity", "open_region", "unlink"]


class SharedMemoryError(OSError):
    """A shared-memory object could not be created, opened, mapped or removed."""


def _name(key: str) -> str:
    if not key or "/" in key[1:]:
        raise SharedMemoryError(f"invalid shared memory key {key!r}: expected a name like '/name'")
    return key if key.startswith("/") else "/" + key


def _shm_open(key: str, flags: int, mode: int = 0o600) -> int:
    name = _name(key)
    if _posixshmem is not None:
        return int(_posixshmem.shm_open(name, flags, mode=mode))
    return os.open("/dev/shm" + name, flags, mode)  # pragma: no cover


@dataclass
class MappedRegion:
    """A mapping of ``byte_size`` bytes at ``offset`` of the shared-memory object ``key``.

    Attributes
    ----------
    key : str
        The POSIX shm name.
    offset : int
        Where the region starts in the object.
    byte_size : int
        Length of the region.
    """

    key: str
    offset: int
    byte_size: int
    _map: mmap.mmap | None = field(default=None, repr=False)
    _fd: int | None = field(default=None, repr=False)

    def object_size(self) -> int:
        """The object's size now (it may have been shrunk by its owner since mapping).

        Needs a region opened with ``keep_fd=True``.
        """
        if self._fd is None:
            raise SharedMemoryError(f"shared memory region '{self.key}' keeps no descriptor")
        return os.fstat(self._fd).st_size

    @property
    def buffer(self) -> memoryview:
        """A writable view of the whole region."""
        if self._map is None:
            raise SharedMemoryError(f"shared memory region '{self.key}' is closed")
        return memoryview(self._map)[self.offset : self.offset + self.byte_size]

    def address(self) -> int:
        """The address of the region's first byte in this process (where its mapping put it).

        Another mapping of the same object, in this process or another, has another address:
        this one tells whether an array in this process lies in the region.
        """
        if self._map is None:
            raise SharedMemoryError(f"shared memory region '{self.key}' is closed")
        # A one-byte ctypes view of the mapping, dropped at once: its address is the map's.
        return ctypes.addressof(ctypes.c_char.from_buffer(self._map)) + self.offset

    def identity(self) -> tuple[int, int]:
        """The object's ``(st_dev, st_ino)``: the same object, whatever name it has now.

        Needs a region opened with ``keep_fd=True``.
        """
        if self._fd is None:
            raise SharedMemoryError(f"shared memory region '{self.key}' keeps no descriptor")
        info = os.fstat(self._fd)
        return (info.st_dev, info.st_ino)

    def view(self, offset: int, byte_size: int) -> memoryview:
        """A bounds-checked view of ``byte_size`` bytes at ``offset`` within the region."""
        if offset < 0 or byte_size < 0 or offset + byte_size > self.byte_size:
            raise SharedMemoryError(
                f"{byte_size} bytes at offset {offset} exceed shared memory region "
                f"'{self.key}' of {self.byte_size} bytes"
            )
        return self.buffer[offset : offset + byte_size]

    def close(self) -> None:
        """Unmap the region (views still held elsewhere keep the memory alive until released)."""
        if self._map is not None:
            # With exported views still alive, the mapping goes away with the last of them.
            with contextlib.suppress(BufferError):
                self._map.close()
            self._map = None
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


def _map(fd: int, key: str, offset: int, byte_size: int, keep_fd: bool = False) -> MappedRegion:
    try:
        size = os.fstat(fd).st_size
        if offset < 0 or byte_size < 0 or offset + byte_size > size:
            raise SharedMemoryError(
                f"invalid shared memory region: {byte_size} bytes at offset {offset} exceed "
                f"the {size} bytes of '{key}'"
            )
        mapping = mmap.mmap(fd, offset + byte_size) if offset + byte_size else None
    except BaseException:
        os.close(fd)
        raise
    if not keep_fd:
        os.close(fd)
    return MappedRegion(key, offset, byte_size, mapping, fd if keep_fd else None)


def create(key: str, byte_size: int, create_only: bool = False) -> MappedRegion:
    """Create (or, unless ``create_only``, reuse) the object ``key`` of ``byte_size`` bytes."""
    flags = os.O_RDWR | os.O_CREAT | (os.O_EXCL if create_only else 0)
    try:
        fd = _shm_open(key, flags)
    except FileExistsError as exc:
        raise SharedMemoryError(f"shared memory object '{key}' already exists") from exc
    except OSError as exc:
        raise SharedMemoryError(f"unable to create shared memory object '{key}': {exc}") from exc
    try:
        if os.fstat(fd).st_size < byte_size:
            os.ftruncate(fd, byte_size)
    except OSError as exc:
        os.close(fd)
        raise SharedMemoryError(f"unable to size shared memory object '{key}': {exc}") from exc
    return _map(fd, key, 0, byte_size)


def open_region(key: str, offset: int, byte_size: int, keep_fd: bool = False) -> MappedRegion:
    """Map ``byte_size`` bytes at ``offset`` of the existing object ``key``.

    With ``keep_fd`` the region keeps its descriptor open, so :meth:`MappedRegion.object_size`
    can tell whether the owner has shrunk the object since.
    """
    try:
        fd = _shm_open(key, os.O_RDWR)
    except OSError as exc:
        raise SharedMemoryError(f"unable to open shared memory object '{key}': {exc}") from exc
    return _map(fd, key, offset, byte_size, keep_fd)


def open_existing(key: str) -> MappedRegion:
    """Map the whole existing object ``key``, at the size it has now (never resized)."""
    try:
        fd = _shm_open(key, os.O_RDWR)
    except OSError as exc:
        raise SharedMemoryError(f"unable to open shared memory object '{key}': {exc}") from exc
    try:
        size = os.fstat(fd).st_size
    except OSError as exc:
        os.close(fd)
        raise SharedMemoryError(f"unable to size shared memory object '{key}': {exc}") from exc
    return _map(fd, key, 0, size)


def named_identity(key: str) -> tuple[int, int] | None:
    """The ``(st_dev, st_ino)`` of the object the name ``key`` stands for now, or None when
    no object has that name (compare with :meth:`MappedRegion.identity`)."""
    try:
        fd = _shm_open(key, os.O_RDONLY)
    except (OSError, SharedMemoryError):
        return None
    try:
        info = os.fstat(fd)
    finally:
        os.close(fd)
    return (info.st_dev, info.st_ino)


def unlink(key: str) -> None:
    """Remove the object ``key`` (existing mappings stay valid until unmapped)."""
    try:
        if _posixshmem is not None:
            _posixshmem.shm_unlink(_name(key))
        else:  # pragma: no cover
            os.unlink("/dev/shm" + _name(key))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise SharedMemoryError(f"unable to unlink shared memory object '{key}': {exc}") from exc
