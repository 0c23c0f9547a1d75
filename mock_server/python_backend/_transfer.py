"""How tensors cross between the server and a stub process, copied at most once.

Arrays under :data:`SHM_THRESHOLD` bytes travel inside the message (their bytes, the dtype's
code and the shape: several times quicker to pickle than the array object); object arrays
(BYTES) are pickled as they are.  Larger arrays travel as references to shared memory that
both processes have mapped:

* :class:`RegionRef`: bytes in a client's registered system shared-memory region.  The server
  names the object (its key, and its identity, so that a reused name cannot fool the stub);
  the stub maps it once and keeps the mapping until the server says the region was
  unregistered, and its tensor is a read-only view of the client's bytes (no copy, no page
  fault after the first use).  An output the client placed in a region is written there by
  the stub itself and comes back as a :class:`RegionRef`: the server finds it in place.
* :class:`BlockRef`: bytes in a *block*, a POSIX shared-memory object of one side's pool.  The
  sender copies an array into one of its blocks, unless the array lies in a block already (one
  of its own, or one of the peer's that came to it, such as an input a model returns as its
  output): then it only names it.  The receiver maps a block the first time it sees it, keeps
  the mapping while the block lives (so a reused block costs no page faults) and unlinks its
  name at once (nothing of a pool stays in ``/dev/shm``).

A block goes back to its owner's pool when nobody uses it.  Its owner counts the references it
handed out and the views it made of references that came back; views end when the last array
over them is freed (``weakref.finalize`` on the base array every view of a reference shares).
The peer's views of a block are reported to the owner as released by a ``("release", ...)``
message that :class:`~mock_server.python_backend._ipc.Channel` sends before the next message
(:meth:`Link.pending`); a reference keeps its array alive until its message is sent, so a
release never overtakes a reference to the same block.  A pool keeps at most
:data:`FREE_BLOCKS_PER_SIZE` free blocks of a size and :data:`FREE_BYTES` free bytes; the
blocks it lets go of are reported to the peer (``forgotten`` in the same message), which
unmaps them.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from shm import posix
from shm.copy import copy_into
from tritonclient._codec.types import SharedMemoryRef

from ..core.errors import ServerError
from ..core.shm import RegionShare, current_size
from ._messages import Release, encode
from .runtime import SharedRegions

__all__ = [
    "FREE_BLOCKS_PER_SIZE",
    "FREE_BYTES",
    "SHM_THRESHOLD",
    "BlockRef",
    "Link",
    "MappedRegions",
    "RegionRef",
    "Regions",
    "RegistryRegions",
]

#: Arrays of at least this many bytes cross as references to shared memory.
SHM_THRESHOLD = 64 * 1024
#: A pool keeps at most this many free blocks of one size ...
FREE_BLOCKS_PER_SIZE = 2
#: ... and at most this many free bytes in all; it lets go of the others.
FREE_BYTES = 512 << 20
#: dtype kinds whose ``dtype.str`` names them fully (bool, integers, floats).
_PLAIN_KINDS = frozenset("biuf")


def _code(dtype: np.dtype[Any]) -> Any:
    """What names ``dtype`` in a message (a short string where it says everything)."""
    return dtype.str if dtype.kind in _PLAIN_KINDS else dtype


def _address(array: npt.NDArray[Any]) -> int:
    return int(array.__array_interface__["data"][0])


def _block_size(nbytes: int) -> int:
    """The size of the block that holds ``nbytes`` bytes: the next power of two, so that a
    block is reused for tensors of similar sizes (pages of a shared-memory object are only
    allocated when touched, so the slack costs address space, not memory)."""
    return max(SHM_THRESHOLD, 1 << (nbytes - 1).bit_length())


@dataclass(slots=True, eq=False)
class BlockRef:
    """``nbytes`` bytes at ``offset`` of block ``block`` (``size`` bytes) of side ``owner``,
    as an array of ``dtype`` and ``shape``.  ``keep`` (never sent) holds the sender's array
    until the message is sent."""

    owner: str
    block: int
    size: int
    offset: int
    nbytes: int
    dtype: Any
    shape: tuple[int, ...]
    keep: Any = None

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            BlockRef,
            (self.owner, self.block, self.size, self.offset, self.nbytes, self.dtype, self.shape),
        )


class RegionRef:
    """Bytes in a client's system region (``share``), as an array of ``dtype`` and ``shape``
    (both None for an output placement: where the stub may write an output).  ``keep`` (never
    sent) holds the sender's array until the message is sent."""

    __slots__ = ("dtype", "keep", "shape", "share")

    def __init__(
        self, share: RegionShare, dtype: Any = None, shape: tuple[int, ...] | None = None
    ) -> None:
        self.share = share
        self.dtype = dtype
        self.shape = shape
        self.keep: Any = None

    def __reduce__(self) -> tuple[Any, ...]:
        return (RegionRef, (self.share, self.dtype, self.shape))


class Regions(Protocol):
    """The client regions one side can name and view (the server's registry, or the regions
    a stub has mapped)."""

    def share(self, address: int, nbytes: int) -> RegionShare | None:
        """Where the ``nbytes`` bytes at ``address`` lie, when in one region."""
        ...

    def view(self, share: RegionShare) -> memoryview:
        """A writable view of the bytes ``share`` names (checked; ServerError if not there)."""
        ...


class MappedRegions:
    """The client regions a stub has mapped, by registration token (see :class:`Regions`).

    A region is mapped the first time a request names it, by its key, and kept until the server
    says it was unregistered (:meth:`forget`); the object behind the key must be the one the
    server registered, and its current size is checked on every use (an object its owner
    shrank gives a clear error, not SIGBUS).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._maps: dict[int, tuple[posix.MappedRegion, int, RegionShare]] = {}

    def share(self, address: int, nbytes: int) -> RegionShare | None:
        with self._lock:
            for region, base, share in self._maps.values():
                start = address - base
                if start >= 0 and start + nbytes <= region.byte_size:
                    return RegionShare(
                        share.token, share.key, share.identity, share.span, start, nbytes
                    )
        return None

    def view(self, share: RegionShare) -> memoryview:
        with self._lock:
            entry = self._maps.get(share.token)
            if entry is None:
                entry = self._map(share)
                self._maps[share.token] = entry
        region = entry[0]
        end = share.offset + share.nbytes
        size = current_size(region, f"shared memory object '{share.key}'")
        if end > size or end > region.byte_size:
            raise ServerError.invalid_arg(
                f"shared memory object '{share.key}' was truncated by its owner: it is now "
                f"{size} bytes, {end} are needed"
            )
        return region.view(share.offset, share.nbytes)

    @staticmethod
    def _map(share: RegionShare) -> tuple[posix.MappedRegion, int, RegionShare]:
        try:
            region = posix.open_region(share.key, 0, share.span, keep_fd=True)
        except (posix.SharedMemoryError, ValueError, OverflowError) as exc:
            raise ServerError.invalid_arg(
                f"the stub process cannot map shared memory object '{share.key}': {exc}"
            ) from exc
        if region.identity() != tuple(share.identity):
            region.close()
            raise ServerError.invalid_arg(
                f"shared memory object '{share.key}' is not the object that was registered "
                "(its name was reused)"
            )
        return region, region.address(), share

    def forget(self, token: int) -> None:
        """Let go of the mapping of an unregistered region (views still held keep it)."""
        with self._lock:
            entry = self._maps.pop(token, None)
        if entry is not None:
            entry[0].close()

    def close(self) -> None:
        with self._lock:
            entries, self._maps = list(self._maps.values()), {}
        for region, _, _ in entries:
            region.close()


class RegistryRegions:
    """The server's registered regions (see :class:`Regions`), and where outputs go."""

    def __init__(self, registry: SharedRegions) -> None:
        self.registry = registry
        #: The regions named to the stub (told when one is unregistered).
        self.seen: set[int] = set()

    def share(self, address: int, nbytes: int) -> RegionShare | None:
        share = self.registry.share(address, nbytes)
        if share is not None:
            self.seen.add(share.token)
        return share

    def view(self, share: RegionShare) -> memoryview:
        return self.registry.shared_view(share.token, share.offset, share.nbytes)

    def placement(self, ref: SharedMemoryRef | None) -> RegionRef | None:
        """Where a stub may write an output the client placed at ``ref`` (None: nowhere, as
        for a CUDA region: the server writes it)."""
        if ref is None:
            return None
        share = self.registry.share_output(ref)
        if share is None:
            return None
        self.seen.add(share.token)
        return RegionRef(share)


@dataclass
class _Block:
    """One block of this side's pool."""

    id: int
    size: int
    region: posix.MappedRegion
    address: int
    refs: int = 0


class Link:
    """One side's end of the tensor traffic with one peer: its pool of blocks, the peer's
    blocks it has mapped, and the client regions it can name.

    Parameters
    ----------
    side : str
        This side's tag in :class:`BlockRef` (the server's and the stub's differ).
    prefix : str
        Names of this side's blocks: ``/<prefix><n>``.
    peer_side, peer_prefix : str
        The same for the peer.
    regions : Regions or None
        The client regions this side can name and view (None: none).
    """

    def __init__(
        self,
        side: str,
        prefix: str,
        peer_side: str,
        peer_prefix: str,
        regions: Regions | None = None,
    ) -> None:
        self.side = side
        self.regions = regions
        self._prefix = prefix
        self._peer_side = peer_side
        self._peer_prefix = peer_prefix
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._own: dict[int, _Block] = {}
        self._free: dict[int, list[_Block]] = {}
        self._free_bytes = 0
        self._peer: dict[int, tuple[posix.MappedRegion, int]] = {}
        # Appended to by finalizers, on whichever thread frees an array: no lock there.
        self._dropped: collections.deque[int] = collections.deque()  # own blocks' local views
        self._released: collections.deque[int] = collections.deque()  # the peer's, for it
        self._forgotten: collections.deque[int] = collections.deque()  # own blocks let go
        self._closed = False

    # -- sending ---------------------------------------------------------------------------
    def pack(self, array: npt.NDArray[Any]) -> Any:
        """What to put in a message for ``array`` (see the module docstring)."""
        dtype = array.dtype
        if dtype.hasobject:
            return array  # BYTES: only pickling carries it
        nbytes = array.nbytes
        if nbytes < SHM_THRESHOLD:
            # A bytearray unpickles as one: the receiver's array is writable, as a model may want.
            flat = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
            return (_code(dtype), array.shape, bytearray(flat.data))
        code = _code(dtype)
        if array.flags.c_contiguous:
            ref = self._name(array, _address(array), nbytes, code)
            if ref is not None:
                return ref
        block = self._allocate(nbytes)
        try:
            target: npt.NDArray[Any] = np.frombuffer(
                block.region.buffer, dtype=dtype, count=array.size
            ).reshape(array.shape)
            copy_into(target, array)
            del target
        except BaseException:
            self._settle([block.id])
            raise
        return BlockRef(self.side, block.id, block.size, 0, nbytes, code, array.shape)

    def _name(self, array: npt.NDArray[Any], address: int, nbytes: int, code: Any) -> Any:
        """A reference to where ``array`` lies already (a region or a block), or None."""
        if self.regions is not None:
            share = self.regions.share(address, nbytes)
            if share is not None:
                ref = RegionRef(share, code, array.shape)
                ref.keep = array
                return ref
        with self._lock:
            for block in self._own.values():
                offset = address - block.address
                if block.refs and offset >= 0 and offset + nbytes <= block.size:
                    block.refs += 1  # one more reference handed out
                    return BlockRef(
                        self.side, block.id, block.size, offset, nbytes, code, array.shape, array
                    )
            for block_id, (region, base) in self._peer.items():
                offset = address - base
                if offset >= 0 and offset + nbytes <= region.byte_size:
                    # The owner counts it when it arrives; ``keep`` holds this side's view
                    # (and so its release) until the message is sent.
                    return BlockRef(
                        self._peer_side,
                        block_id,
                        region.byte_size,
                        offset,
                        nbytes,
                        code,
                        array.shape,
                        array,
                    )
        return None

    def write_placed(self, array: npt.NDArray[Any], placement: RegionRef) -> RegionRef | None:
        """Write an output where the client placed it (``placement``, a region); return the
        reference that says it is there, or None when it cannot be written here (it does not
        fit, the region cannot be mapped): then it is sent as any output and the server writes
        it, or reports why not in Triton's words."""
        if self.regions is None or array.dtype.hasobject or not array.nbytes:
            return None
        share = placement.share
        if array.nbytes > share.nbytes:
            return None
        try:
            view = self.regions.view(
                RegionShare(
                    share.token, share.key, share.identity, share.span, share.offset, array.nbytes
                )
            )
        except ServerError:
            return None
        target = np.frombuffer(view, dtype=array.dtype).reshape(array.shape)
        if _address(target) != _address(array) or not array.flags.c_contiguous:
            copy_into(target, array)
        del target
        written = RegionShare(
            share.token, share.key, share.identity, share.span, share.offset, array.nbytes
        )
        return RegionRef(written, _code(array.dtype), array.shape)

    # -- receiving -------------------------------------------------------------------------
    def unpack(self, packed: Any, writable: bool = True) -> npt.NDArray[Any]:
        """The array of :meth:`pack`'s result.  An array in a region is a view of it, read-only
        unless ``writable``; an array in a block is a view of the block.

        Raises
        ------
        ServerError
            When a region cannot be viewed (unregistered, truncated, not mappable).
        """
        if isinstance(packed, tuple):
            code, shape, data = packed
            small: npt.NDArray[Any] = np.frombuffer(data, dtype=code).reshape(shape)
            return small
        if isinstance(packed, BlockRef):
            base = self._block_view(packed)
            typed: npt.NDArray[Any] = base.view(packed.dtype).reshape(packed.shape)
            return typed
        if isinstance(packed, RegionRef):
            assert self.regions is not None, "a region reference on a side without regions"
            view = self.regions.view(packed.share)
            array = np.frombuffer(view, dtype=packed.dtype).reshape(packed.shape)
            if not writable:
                array.flags.writeable = False
            return array
        objects: npt.NDArray[Any] = packed  # an object array, pickled as itself
        return objects

    def _block_view(self, ref: BlockRef) -> npt.NDArray[Any]:
        """A uint8 view of a block's bytes, whose end is counted (see the module docstring)."""
        if ref.owner == self.side:
            with self._lock:
                block = self._own[ref.block]
                block.refs += 1
            base = np.frombuffer(block.region.buffer, np.uint8, ref.nbytes, ref.offset)
            weakref.finalize(base, self._dropped.append, ref.block)
            return base
        region = self._map_peer(ref.block, ref.size)
        base = np.frombuffer(region.buffer, np.uint8, ref.nbytes, ref.offset)
        weakref.finalize(base, self._released.append, ref.block)
        return base

    def _map_peer(self, block_id: int, size: int) -> posix.MappedRegion:
        with self._lock:
            entry = self._peer.get(block_id)
            if entry is not None:
                return entry[0]
            key = f"/{self._peer_prefix}{block_id}"
            try:
                region = posix.open_region(key, 0, size)
            except (posix.SharedMemoryError, ValueError) as exc:
                raise ServerError.internal(f"cannot map a tensor's shared memory: {exc}") from exc
            finally:
                # Both sides have it mapped now: the name has done its work.
                posix.unlink(key)
            self._peer[block_id] = (region, region.address())
            return region

    def discard(self, packed: Any) -> None:
        """Give up a reference that arrived and will never be unpacked (a response nobody
        reads): the peer's block is released at once."""
        if isinstance(packed, BlockRef) and packed.owner != self.side:
            self._released.append(packed.block)

    # -- the peer's news -------------------------------------------------------------------
    def pending(self) -> tuple[Any, ...] | None:
        """The :class:`~._messages.Release` message to send before the next one, encoded
        (``("release", released, forgotten)``), or None: the peer's blocks this side is done
        with, and the blocks of this side's pool it let go of."""
        if not self._released and not self._forgotten:
            return None
        released = _drain(self._released)
        forgotten = _drain(self._forgotten)
        return encode(Release(released, forgotten))

    def on_release(self, released: list[int], forgotten: list[int]) -> None:
        """The peer is done with these blocks of this side, and let go of these of its own."""
        self._settle(released)
        for block_id in forgotten:
            with self._lock:
                entry = self._peer.pop(block_id, None)
            if entry is not None:
                entry[0].close()

    # -- the pool --------------------------------------------------------------------------
    def _allocate(self, nbytes: int) -> _Block:
        """A block of at least ``nbytes`` bytes, free or new, counted as one reference."""
        self._settle(())
        size = _block_size(nbytes)
        with self._lock:
            if self._closed:
                raise BrokenPipeError("the channel is closed")
            free = self._free.get(size)
            if free:
                block = free.pop()
                self._free_bytes -= size
                block.refs = 1
                return block
            block_id = next(self._ids)
        region = posix.create(f"/{self._prefix}{block_id}", size, create_only=True)
        block = _Block(block_id, size, region, region.address(), refs=1)
        with self._lock:
            self._own[block_id] = block
        return block

    def _settle(self, ended: Any) -> None:
        """Count down the references that ended (``ended``, and local views since freed);
        a block nobody uses goes back to the pool, or is let go of."""
        ends = list(ended) + _drain(self._dropped)
        if not ends:
            return
        gone: list[_Block] = []
        with self._lock:
            for block_id in ends:
                block = self._own.get(block_id)
                if block is None:
                    continue
                block.refs -= 1
                if block.refs:
                    continue
                free = self._free.setdefault(block.size, [])
                if (
                    not self._closed
                    and len(free) < FREE_BLOCKS_PER_SIZE
                    and self._free_bytes + block.size <= FREE_BYTES
                ):
                    free.append(block)
                    self._free_bytes += block.size
                else:
                    del self._own[block_id]
                    gone.append(block)
        for block in gone:
            self._let_go(block)

    def _let_go(self, block: _Block) -> None:
        block.region.close()
        with contextlib.suppress(posix.SharedMemoryError):
            posix.unlink(f"/{self._prefix}{block.id}")  # if the peer never mapped it
        self._forgotten.append(block.id)

    def blocks(self) -> tuple[int, int]:
        """(blocks of this side's pool, peer blocks mapped here): for tests and statistics."""
        with self._lock:
            return len(self._own), len(self._peer)

    def close(self) -> None:
        """Let go of every block and mapping (the channel is gone; views still held keep
        their memory until freed)."""
        with self._lock:
            self._closed = True
            own, self._own, self._free = list(self._own.values()), {}, {}
            peer, self._peer = list(self._peer.values()), {}
        for block in own:
            self._let_go(block)
        for region, _ in peer:
            region.close()
        self._forgotten.clear()
        self._released.clear()


def _drain(queue: collections.deque[int]) -> list[int]:
    items = []
    while True:
        try:
            items.append(queue.popleft())
        except IndexError:
            return items
