"""The server's registry of client shared-memory regions (system and CUDA).

System regions are POSIX shared-memory objects mapped with :mod:`shm.posix`; tensors placed
in them are read and written through bounds-checked views.

Inputs are zero-copy: a model reads a large shared-memory input as a read-only view of the
client's mapping, as in Triton.  Inputs under :data:`COPY_BELOW` bytes are copied (a copy that
small costs less than the bookkeeping it saves).

The owner of an object may shrink it (``ftruncate``) after registering it; touching the pages
past the new end of a mapping raises SIGBUS, which would kill the server.  So the registry keeps
a descriptor of every registered object and checks its current size (``os.fstat``) on every
use: an object shrunk before a request gives that request a clear error.  A truncation while a
model is reading its view is the one window left (Triton has it too); a server that must not
trust its clients that far runs with ``copy_inputs=True`` (``--shm-copy-inputs``), which copies
every input out of the mapping right after the size check, shrinking the window to the copy.

CUDA regions are device memory a client exported as a CUDA IPC handle
(``cudaIpcMemHandle_t``).  Registering one opens the handle on its device
(``cudaIpcOpenMemHandle`` through :class:`shm.cuda.ImportedBuffer`; only when the server has a
GPU, ``has_gpu``); unregistering it, or closing the registry, closes the handle.  The models
run on the host, so, as Triton does for CPU models, an input in a CUDA region is copied device
to host (:meth:`SharedMemoryRegistry.read` returns that read-only host copy) and an output is
copied host to device (:meth:`SharedMemoryRegistry.write`), after the same bounds checks as for
system regions.

A request holds the regions its tensors lie in (a :class:`RegionHolds`, Triton's
``shm_regions_info_`` of a request) from the lookup of each tensor until the request is done.
Unregistering a held region is decided by the compatibility profile
(``TritonCompat.deferred_shm_unregister``): Triton 2.73 answers success, keeps the region
registered (listed by status, its name taken) until the last request holding it is done, and
releases it then; Triton 2.51 refuses it.  Either way a held region's mapping and IPC handle
stay open while a request uses them.

Region names share one namespace across system and CUDA regions, as in Triton.

A model instance in a stub process maps a system region itself instead of receiving a copy of
its bytes: :meth:`SharedMemoryRegistry.share` tells whether an array lies in a registered
region and where (a :class:`RegionShare`: the object's key and identity, so that the stub
maps the very object the server registered), :meth:`SharedMemoryRegistry.share_output` where
an output placed in a region goes, :meth:`SharedMemoryRegistry.shared_view` the server's view
of what a stub wrote there, and :meth:`SharedMemoryRegistry.watch` tells the stubs when a
region is unregistered, so that they let go of their mappings.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from shm import cuda as shm_cuda
from shm.copy import copy_into
from shm.posix import MappedRegion, SharedMemoryError, named_identity, open_region
from tritonclient._codec.raw import tensor_to_buffer
from tritonclient._codec.types import SharedMemoryRef

from .compat import DEFAULT_COMPAT, TritonCompat
from .errors import ErrorKind, ServerError

__all__ = [
    "COPY_BELOW",
    "CUDA_IPC_HANDLE_SIZE",
    "CudaRegionStatus",
    "RegionHolds",
    "RegionShare",
    "SharedMemoryRegistry",
    "SystemRegionStatus",
    "current_size",
]

#: Inputs smaller than this many bytes are copied out of the mapping, larger ones are views.
COPY_BELOW = 64 * 1024

#: sizeof(cudaIpcMemHandle_t)
CUDA_IPC_HANDLE_SIZE = 64

_Region = TypeVar("_Region")

#: Keys with this prefix belong to Triton's Python backend and cannot be registered.
_RESERVED_KEY_PREFIX = "triton_python_backend_shm_region_"
#: size_t's largest value, where Triton 2.73's bounds check detects an overflow.
_SIZE_MAX = 2**64 - 1


def current_size(region: MappedRegion, what: str) -> int:
    """The size of ``region``'s object now: its owner may have shrunk it since it was mapped
    (``what`` names the region in the error)."""
    try:
        return region.object_size()
    except OSError as exc:  # pragma: no cover - the descriptor is ours
        raise ServerError.internal(f"{what} is no longer accessible: {exc}") from exc


@dataclass(frozen=True)
class SystemRegionStatus:
    """A registered system region as the status endpoints report it."""

    name: str
    key: str
    offset: int
    byte_size: int


@dataclass(frozen=True)
class CudaRegionStatus:
    """A registered CUDA region as the status endpoints report it."""

    name: str
    device_id: int
    byte_size: int


@dataclass(frozen=True)
class RegionShare:
    """Where bytes lie in a registered system region, for another process to map them.

    Attributes
    ----------
    token : int
        The registration (a region registered again under the same name gets a new one).
    key : str
        The POSIX shm name of the object.
    identity : tuple of int
        The object's ``(st_dev, st_ino)`` when it was registered: a process that opens
        ``key`` checks it has the same object (the name may have been reused since).
    span : int
        How many bytes of the object the server mapped (from its start).
    offset : int
        Where the bytes start in the object.
    nbytes : int
        How many bytes.
    """

    token: int
    key: str
    identity: tuple[int, int]
    span: int
    offset: int
    nbytes: int


@dataclass(frozen=True)
class _Sharing:
    """What a registered system region needs for :meth:`SharedMemoryRegistry.share`."""

    token: int
    address: int
    identity: tuple[int, int]


_tokens = itertools.count(1)


@dataclass
class _CudaRegion:
    """A registered CUDA region: its IPC handle, opened as ``buffer``."""

    name: str
    device_id: int
    byte_size: int
    raw_handle: bytes
    buffer: shm_cuda.ImportedBuffer


def _still_named(share: RegionShare) -> bool:
    """Whether the region's key still names the object the server mapped: a client may unlink
    the name (or reuse it) after registering, and then only the server's mapping reaches it."""
    return named_identity(share.key) == share.identity


class RegionHolds:
    """The registered regions one request's tensors lie in, held until the request is done.

    Triton's frontends keep, per request, a shared pointer to each region a tensor was looked
    up in (``shm_regions_info_``), so that the region counts as in use until the request's
    response is sent (src/http_server.h:287-316, src/grpc/infer_handler.h:1373-1420, 2.73.0).
    A frontend makes one with :meth:`SharedMemoryRegistry.holds` before decoding a request,
    resolves the request's inputs with :meth:`read_input` and checks its outputs with
    :meth:`check_outputs`, and calls :meth:`release` when the request is done.  A request
    collected without a release lets go of its regions at the registry's next call, as Triton
    releases them in a destructor.
    """

    def __init__(self, registry: SharedMemoryRegistry) -> None:
        self._registry = registry
        self._held: list[tuple[str, object]] = []
        # Made with the first hold: most requests use no shared memory.
        self._finalizer: weakref.finalize[..., RegionHolds] | None = None

    def _add(self, name: str, region: object) -> None:
        """Record a hold on ``region`` (registered as ``name``); the registry counts it."""
        if self._finalizer is None:
            self._finalizer = weakref.finalize(self, self._registry._orphaned, self._held)
            self._finalizer.atexit = False
        self._held.append((name, region))

    def read_input(self, input_name: str, ref: SharedMemoryRef) -> memoryview:
        """The bytes of input ``input_name`` placed at ``ref`` (the codec's ``shm_resolver``):
        :meth:`SharedMemoryRegistry.read_input`, holding the region."""
        return self._registry.read_input(ref.region, ref.offset, ref.byte_size, holds=self)

    def check_outputs(self, placements: Iterable[SharedMemoryRef | None]) -> None:
        """:meth:`SharedMemoryRegistry.check_outputs`, holding each output's region."""
        self._registry.check_outputs(placements, holds=self)

    def release(self) -> None:
        """The request is done with its regions: let go of them (once; later calls do
        nothing).  A region unregistered meanwhile that no other request holds is released
        now."""
        if self._finalizer is not None and self._finalizer.detach() is not None:
            self._registry._let_go(self._held)


class SharedMemoryRegistry:
    """Registered regions, by name.

    Parameters
    ----------
    has_gpu : bool
        Whether CUDA regions can be registered.
    compat : TritonCompat
        The compatibility profile: its ``shm_bounds_2_73`` (tensor bounds and key checks, see
        :meth:`locate` and :meth:`register_system`), ``deferred_shm_unregister`` (see
        :meth:`unregister_system`) and ``client_shm_off_by_default``.
    allow_client_shm : bool or None
        False refuses every register and unregister of client regions, as Triton does without
        ``--allow-client-shm=true`` (Triton >= 2.68); status then answers as for a registry
        with no region (empty, or not found).  None: the profile's default (refused under
        2.73, allowed under 2.51).
    copy_inputs : bool
        True copies every input out of its region instead of handing the model a zero-copy
        view (see the module docstring).
    """

    def __init__(
        self,
        has_gpu: bool = False,
        *,
        compat: TritonCompat = DEFAULT_COMPAT,
        allow_client_shm: bool | None = None,
        copy_inputs: bool = False,
    ) -> None:
        self._compat = compat
        self._has_gpu = has_gpu
        self._allowed = (
            not compat.client_shm_off_by_default if allow_client_shm is None else allow_client_shm
        )
        self._copy_inputs = copy_inputs
        self._lock = threading.Lock()
        self._system: dict[str, MappedRegion] = {}
        self._cuda: dict[str, _CudaRegion] = {}
        self._sharing: dict[str, _Sharing] = {}
        self._watchers: list[Callable[[int], None]] = []
        #: How many holds (:class:`RegionHolds`) each region has, by name; held regions only.
        self._uses: dict[str, int] = {}
        #: Held regions unregistered under 2.73: released when their last hold goes.
        self._awaiting: set[str] = set()
        #: Holds of requests collected without a release (see :meth:`_orphaned`).
        self._orphans: collections.deque[list[tuple[str, object]]] = collections.deque()

    def holds(self) -> RegionHolds:
        """A new, empty set of holds for one request (see :class:`RegionHolds`)."""
        return RegionHolds(self)

    # -- system --------------------------------------------------------------------------
    @property
    def allowed(self) -> bool:
        """Whether clients may register and unregister regions (``--allow-client-shm``)."""
        return self._allowed

    def check_allowed(self) -> None:
        """Raise Triton's UNSUPPORTED error when client shared memory is disabled (its
        frontends check this first, before anything else of a register or unregister)."""
        if not self._allowed:
            raise ServerError.unsupported(
                "Client shared memory is disabled. Start the server with "
                "'--allow-client-shm=true' to enable."
            )

    def register_system(self, name: str, key: str, offset: int, byte_size: int) -> None:
        """Map ``byte_size`` bytes at ``offset`` of the POSIX object ``key`` as ``name``.

        An empty ``name`` is a name like any other (Triton's gRPC frontend registers it; its
        HTTP routes cannot carry one)."""
        self.check_allowed()
        if self._compat.shm_bounds_2_73:
            # ValidateSharedMemoryKey (src/common.cc:167-199, 2.73.0): a key of slashes only,
            # and the reserved prefix after the leading slashes (#8273, #8336).
            if not key.strip("/"):
                raise ServerError.invalid_arg(
                    f"cannot register shared memory region '{name}' - invalid shm key '{key}'"
                )
            reserved = key.lstrip("/").startswith(_RESERVED_KEY_PREFIX)
        else:
            reserved = key.startswith(_RESERVED_KEY_PREFIX)
        if reserved:
            raise ServerError.invalid_arg(
                f"cannot register shared memory region '{name}' with key '{key}' as the key "
                f"contains the reserved prefix '{_RESERVED_KEY_PREFIX}'"
            )
        with self._locked():
            if name in self._system or name in self._cuda:
                raise ServerError(
                    ErrorKind.ALREADY_EXISTS, f"shared memory region '{name}' already in manager"
                )
            if any(region.key == key for region in self._system.values()):
                # Triton 2.51 reuses the descriptor of the region already registered on this
                # key, which it has closed after mapping, so a second region on a key always
                # fails there; refusing it the same way keeps code that works here working on
                # Triton.
                raise ServerError.internal(f"Invalid shared memory region: '{key}'")
            # Triton's order: open the object, check the bounds, then map.
            try:
                # The region keeps its descriptor: every use checks the object's current size.
                region = open_region(key, offset, byte_size, keep_fd=True)
            except (SharedMemoryError, ValueError, OverflowError) as exc:
                if "exceed" in str(exc):
                    raise ServerError.invalid_arg(
                        f"failed to register shared memory region '{name}': invalid args"
                    ) from exc
                raise ServerError.internal(f"Unable to open shared memory region: '{key}'") from exc
            if byte_size == 0:
                region.close()
                # mmap of zero bytes fails with EINVAL in Triton.
                raise ServerError.invalid_arg(
                    f"failed to register shared memory region '{name}': unable to process "
                    "address spaceInvalid argument"
                )
            self._system[name] = region
            self._sharing[name] = _Sharing(next(_tokens), region.address(), region.identity())

    def unregister_system(self, name: str | None = None) -> None:
        """Unregister one system region, or all of them (unknown names are not an error).

        A region a request in flight holds (see :class:`RegionHolds`) is, under Triton 2.73
        (``deferred_shm_unregister``), marked and released when the last request holding it
        is done: the call succeeds, status still lists the region and its name cannot be
        registered again until then (src/shared_memory_manager.cc:675-719, 2.73.0; #7743).
        Under 2.51 it stays registered and the call fails.

        Raises
        ------
        ServerError
            2.51, a held region: INTERNAL "Cannot unregister shared memory region '<name>', it
            is currently in use." (one region), or "Failed to unregister the following system
            shared memory regions: <name> ,..." (all of them; the others are unregistered).
        """
        self._unregister(self._system, "system", name)

    def system_status(self, name: str | None = None) -> list[SystemRegionStatus]:
        """One system region, or every one in name order (each frontend renders its form)."""
        with self._locked():
            regions = self._listed(self._system, self._cuda, name, "system", "CUDA")
            return [SystemRegionStatus(n, r.key, r.offset, r.byte_size) for n, r in regions]

    # -- CUDA ----------------------------------------------------------------------------
    def register_cuda(self, name: str, raw_handle: bytes, device_id: int, byte_size: int) -> None:
        """Open the CUDA IPC handle ``raw_handle`` of ``byte_size`` bytes on ``device_id`` and
        register it as ``name`` (needs a GPU).

        Raises
        ------
        ServerError
            INVALID_ARG for a malformed handle or a server without GPUs, ALREADY_EXISTS for a
            name in use, INTERNAL when the handle cannot be opened.
        """
        self.check_allowed()
        with self._locked():
            if name in self._system or name in self._cuda:
                raise ServerError(
                    ErrorKind.ALREADY_EXISTS, f"shared memory region '{name}' already in manager"
                )
            if not self._has_gpu or len(raw_handle) != CUDA_IPC_HANDLE_SIZE:
                # What Triton's GPU build (the one users run) answers when the handle cannot
                # be opened: on a machine without a GPU, or when it is not a handle.
                raise ServerError.invalid_arg(
                    "failed to register shared memory region: invalid args"
                )
            if byte_size < 0:
                raise ServerError.invalid_arg(
                    f"failed to register CUDA shared memory region '{name}': invalid args"
                )
            try:
                buffer = shm_cuda.ImportedBuffer(raw_handle, byte_size, device_id)
            except shm_cuda.CudaError as exc:
                raise ServerError.internal(
                    f"failed to register CUDA shared memory region '{name}': failed to open "
                    f"CUDA IPC handle: {exc}"
                ) from exc
            self._cuda[name] = _CudaRegion(name, device_id, byte_size, bytes(raw_handle), buffer)

    def unregister_cuda(self, name: str | None = None) -> None:
        """Unregister one CUDA region, or all of them, closing their IPC handles (unknown
        names are not an error); a held region as :meth:`unregister_system` says.

        Raises
        ------
        ServerError
            INTERNAL if a handle cannot be closed (its region is unregistered all the same);
            under 2.51 the errors of :meth:`unregister_system` for held regions ("cuda shared
            memory regions" when all are unregistered).
        """
        self._unregister(self._cuda, "cuda", name)

    def _unregister(self, table: Mapping[str, object], kind: str, name: str | None) -> None:
        """Unregister region ``name`` of ``table`` (``_system`` or ``_cuda``), or all of its
        regions: Triton's ``Unregister`` and ``UnregisterAll`` over ``UnregisterHelper``."""
        self.check_allowed()
        with self._locked():
            names = [n for n in ([name] if name else sorted(table)) if n in table]
            held = [n for n in names if n in self._uses]
            deferred = self._compat.deferred_shm_unregister
            if deferred:
                self._awaiting.update(held)
            dropped = self._drop(n for n in names if n not in self._uses)
        self._release(*dropped, strict=True)
        if held and not deferred:
            if name:
                raise ServerError.internal(
                    f"Cannot unregister shared memory region '{name}', it is currently in use."
                )
            raise ServerError.internal(
                f"Failed to unregister the following {kind} shared memory regions: "
                + "".join(f"{n} ," for n in held)
            )

    def _drop(
        self, names: Iterable[str]
    ) -> tuple[list[MappedRegion], list[int], list[_CudaRegion]]:
        """Take regions ``names`` out of the registry (call with the lock held); return what
        :meth:`_release` lets go of after the lock is released."""
        system: list[MappedRegion] = []
        tokens: list[int] = []
        cuda: list[_CudaRegion] = []
        for each in names:
            self._awaiting.discard(each)
            region = self._system.pop(each, None)
            if region is not None:
                system.append(region)
                tokens.append(self._sharing.pop(each).token)
            gpu = self._cuda.pop(each, None)
            if gpu is not None:
                cuda.append(gpu)
        return system, tokens, cuda

    def _release(
        self,
        system: list[MappedRegion],
        tokens: list[int],
        cuda: list[_CudaRegion],
        *,
        strict: bool,
    ) -> None:
        """Unmap ``system`` regions, tell the watchers, close the IPC handles of ``cuda``;
        ``strict`` raises the first handle that fails to close (after trying all), else a
        failure is only logged by Triton and ignored here."""
        for region in system:
            region.close()
        self._tell_watchers(tokens)
        if strict:
            self._close_cuda(cuda)
        else:
            with contextlib.suppress(ServerError):
                self._close_cuda(cuda)

    @staticmethod
    def _close_cuda(regions: list[_CudaRegion]) -> None:
        """Close the IPC handles of ``regions``; raise the first failure after trying all."""
        failure: ServerError | None = None
        for region in regions:
            try:
                region.buffer.close()
            except shm_cuda.CudaError as exc:
                failure = failure or ServerError.internal(
                    f"failed to unregister CUDA shared memory region '{region.name}': {exc}"
                )
        if failure is not None:
            raise failure

    def _orphaned(self, held: list[tuple[str, object]]) -> None:
        """The finalizer of a :class:`RegionHolds` collected without a release.  The garbage
        collector may run it on any thread, one that holds ``_lock`` included, so it only
        queues the holds (``deque.append`` takes no lock); the next call that takes the lock
        through :meth:`_locked` lets go of them first."""
        self._orphans.append(held)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """``_lock``, after letting go of the holds of requests collected without a release
        (what status, register, unregister and lookups see is then up to date)."""
        while self._orphans:
            try:
                held = self._orphans.popleft()
            except IndexError:  # another thread took the last one
                break
            self._let_go(held)
        with self._lock:
            yield

    def _let_go(self, held: list[tuple[str, object]]) -> None:
        """A request let go of the regions it ``held`` (:meth:`RegionHolds.release`).

        A region unregistered meanwhile (2.73) that no other request holds is released now,
        as Triton's request releases call ``Unregister`` again for regions marked
        ``awaiting_unregister_`` (src/http_server.h:294-315, src/grpc/infer_handler.h:
        1395-1419, 2.73.0).  Holds on a registration that is gone (server shutdown) count for
        nothing.
        """
        with self._lock:
            done: list[str] = []
            for name, region in held:
                if self._system.get(name, self._cuda.get(name)) is not region:
                    continue
                left = self._uses[name] - 1
                if left:
                    self._uses[name] = left
                    continue
                del self._uses[name]
                if name in self._awaiting:
                    done.append(name)
            held.clear()
            dropped = self._drop(done)
        self._release(*dropped, strict=False)

    def cuda_status(self, name: str | None = None) -> list[CudaRegionStatus]:
        """One CUDA region, or every one in name order (each frontend renders its form)."""
        with self._locked():
            regions = self._listed(self._cuda, self._system, name, "CUDA", "system")
            return [CudaRegionStatus(r.name, r.device_id, r.byte_size) for _, r in regions]

    def _listed(
        self,
        table: Mapping[str, _Region],
        other: Mapping[str, object],
        name: str | None,
        kind: str,
        other_kind: str,
    ) -> list[tuple[str, _Region]]:
        """What a status call lists (call with the lock held): region ``name`` of ``table``
        (``_system`` or ``_cuda``; ``other`` is the other one), or all of them in name order."""
        if not name:
            return sorted(table.items(), key=lambda item: item[0])
        if name in other:
            raise ServerError.not_found(
                f"The region named '{name}' is registered as {other_kind} shared memory, not "
                f"{kind} shared memory"
            )
        if name not in table:
            raise ServerError.not_found(
                f"Unable to find {kind.lower()} shared memory region: '{name}'"
            )
        return [(name, table[name])]

    # -- data path -----------------------------------------------------------------------
    def _region(self, name: str) -> MappedRegion | _CudaRegion:
        """The system or CUDA region ``name`` (call with the lock held)."""
        region: MappedRegion | _CudaRegion | None = self._system.get(name)
        if region is None:
            region = self._cuda.get(name)
        if region is None:
            raise ServerError.not_found(f"Unable to find shared memory region: '{name}'")
        return region

    def locate(
        self, name: str, offset: int, byte_size: int, holds: RegionHolds | None = None
    ) -> None:
        """Triton's lookup of a tensor placed in region ``name`` (``GetMemoryInfo``); with
        ``holds``, the request holds the region from then on (Triton hands out its shared
        pointer at the end of a lookup that passed).

        Raises
        ------
        ServerError
            NOT_FOUND ``Unable to find shared memory region: '<name>'``; INVALID_ARG
            ``Invalid offset for shared memory region: '<name>'`` when ``offset`` is past the
            region's last byte, ``Invalid offset + byte size for shared memory region:
            '<name>'`` when the tensor's last byte is (Triton 2.51: a ``byte_size`` of 0 at
            offset 0 counts as past it, its unsigned arithmetic wraps there; 2.73 compares the
            tensor's end with the region's size, and says "Integer overflow detected: ..."
            where offset plus byte size pass ``SIZE_MAX``: src/shared_memory_manager.cc:447-500
            of 2.73.0, #8330, #8335).
        """
        with self._locked():
            region = self._region(name)
            self._check_bounds(name, region.byte_size, offset, byte_size)
            if holds is not None:
                holds._add(name, region)
                self._uses[name] = self._uses.get(name, 0) + 1

    def _check_bounds(self, name: str, size: int, offset: int, byte_size: int) -> None:
        """:meth:`locate`'s bounds checks, as the profile's release makes them."""
        if self._compat.shm_bounds_2_73:
            if offset >= size:
                raise ServerError.invalid_arg(f"Invalid offset for shared memory region: '{name}'")
            if byte_size > _SIZE_MAX - offset:
                raise ServerError.invalid_arg(
                    f"Integer overflow detected: byte_size ({byte_size}) + offset ({offset}) "
                    f"exceeds maximum value ({_SIZE_MAX}) for region '{name}'"
                )
            if offset + byte_size > size:
                raise ServerError.invalid_arg(
                    f"Invalid offset + byte size for shared memory region: '{name}'"
                )
            return
        last = max(size - 1, 0)
        if offset > last:
            raise ServerError.invalid_arg(f"Invalid offset for shared memory region: '{name}'")
        if offset + byte_size - 1 > last or offset + byte_size == 0:
            raise ServerError.invalid_arg(
                f"Invalid offset + byte size for shared memory region: '{name}'"
            )

    def _checked(self, name: str, offset: int, byte_size: int) -> MappedRegion | _CudaRegion:
        """The region holding ``byte_size`` bytes at ``offset``, after checking the bounds and,
        for a system region, the object's *current* size."""
        with self._lock:
            region = self._region(name)
            if offset < 0 or byte_size < 0 or offset + byte_size > region.byte_size:
                raise ServerError.invalid_arg(
                    f"shared memory region '{name}': {byte_size} bytes at offset {offset} "
                    f"exceed the region's {region.byte_size} bytes"
                )
            if isinstance(region, _CudaRegion):
                return region
            start = region.offset + offset
            current = current_size(region, f"shared memory region '{name}'")
            if start + byte_size > current:
                raise ServerError.invalid_arg(
                    f"shared memory region '{name}' was truncated by its owner: its object "
                    f"'{region.key}' is now {current} bytes, smaller than the "
                    f"{region.offset + region.byte_size} bytes registered"
                )
            return region

    @staticmethod
    def _cuda_failure(region: _CudaRegion, exc: shm_cuda.CudaError) -> ServerError:
        """The error of a copy to or from a CUDA region that failed with ``exc``."""
        if region.buffer.closed:  # unregistered while the request was on its way
            return ServerError.invalid_arg(f"Unable to find shared memory region: '{region.name}'")
        return ServerError.internal(
            f"failed to copy data for CUDA shared memory region '{region.name}': {exc}"
        )

    def check(self, name: str, offset: int, byte_size: int) -> None:
        """Raise :class:`ServerError` unless ``byte_size`` bytes at ``offset`` of the region
        (system or CUDA) exist now (bounds, and a system object's current size)."""
        self._checked(name, offset, byte_size)

    def view(self, name: str, offset: int, byte_size: int) -> memoryview:
        """A writable, bounds-checked view into a registered system region.

        The object's current size is checked, but a view held while its owner shrinks the
        object can still fault: the frontends use :meth:`read` and :meth:`write`.  A CUDA
        region has no host view (INVALID_ARG).
        """
        region = self._checked(name, offset, byte_size)
        if isinstance(region, _CudaRegion):
            raise ServerError.invalid_arg(
                f"shared memory region '{name}' is CUDA shared memory: it has no host view"
            )
        try:
            return region.view(offset, byte_size)
        except SharedMemoryError as exc:
            raise ServerError.invalid_arg(f"shared memory region '{name}': {exc}") from exc

    def read(self, name: str, offset: int, byte_size: int) -> memoryview:
        """A read-only view of ``byte_size`` bytes at ``offset`` of a registered region.

        The bounds and, for a system region, the object's current size are checked first (an
        object shrunk by its owner gives a clear error, not SIGBUS).  For a system region the
        result is then a zero-copy view of the mapping, or a copy of it when the input is
        smaller than :data:`COPY_BELOW` or the registry was made with ``copy_inputs=True``.
        The view keeps the mapping alive, so unregistering a region while a request still
        uses it is safe.  For a CUDA region it is a host copy of the device memory.
        """
        region = self._checked(name, offset, byte_size)
        if isinstance(region, _CudaRegion):
            out = np.empty(byte_size, dtype=np.uint8)  # no zero-fill: the copy writes it all
            try:
                region.buffer.copy_out(out.ctypes.data, byte_size, offset)
            except shm_cuda.CudaError as exc:
                raise self._cuda_failure(region, exc) from exc
            return out.data.toreadonly()
        view = region.view(offset, byte_size)
        if byte_size >= COPY_BELOW and not self._copy_inputs:
            return view.toreadonly()
        out = np.empty(byte_size, dtype=np.uint8)
        copy_into(out, np.frombuffer(view, dtype=np.uint8))
        return out.data.toreadonly()

    def write(self, name: str, offset: int, data: Any) -> None:
        """Copy the bytes-like ``data`` to ``offset`` of a registered region (host to device
        for a CUDA region), after the checks of :meth:`read`."""
        source = np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)
        region = self._checked(name, offset, source.nbytes)
        if isinstance(region, _CudaRegion):
            source = np.ascontiguousarray(source)
            try:
                region.buffer.copy_in(source.ctypes.data, source.nbytes, offset)
            except shm_cuda.CudaError as exc:
                raise self._cuda_failure(region, exc) from exc
            return
        target = np.frombuffer(region.view(offset, source.nbytes), dtype=np.uint8)
        if source.nbytes and source.ctypes.data == target.ctypes.data:
            return  # already there: a model in a stub process wrote it in place
        copy_into(target, source)

    # -- a request's tensors (the dataplane's) --------------------------------------------
    def read_input(
        self, region: str, offset: int, byte_size: int, holds: RegionHolds | None = None
    ) -> memoryview:
        """An input's bytes placed in ``region``: Triton's lookup (:meth:`locate`, holding the
        region in ``holds``), then :meth:`read` (a size-checked view or copy of a system
        region, a host copy of a CUDA one)."""
        self.locate(region, offset, byte_size, holds)
        return self.read(region, offset, byte_size)

    def check_output(
        self, region: str, offset: int, byte_size: int, holds: RegionHolds | None = None
    ) -> None:
        """Check, before the model runs, that an output can be written where the request
        placed it: Triton's lookup (:meth:`locate`, holding the region in ``holds``), then the
        object's current size (its owner may have shrunk it since)."""
        self.locate(region, offset, byte_size, holds)
        self.check(region, offset, byte_size)

    def write_output(
        self, output_name: str, region: str, offset: int, byte_size: int, raw: Any
    ) -> int:
        """Write an output's raw bytes where the request placed it; return how many.

        Raises
        ------
        ServerError
            INTERNAL, in Triton's words, when the output needs more than the ``byte_size`` the
            request gave it; the errors of :meth:`write`.
        """
        data = memoryview(raw).cast("B")
        if data.nbytes > byte_size:
            raise ServerError.internal(
                f"shared memory size specified with the request for output '{output_name}' "
                f"({byte_size} bytes) should be at least {data.nbytes} bytes to hold the results"
            )
        self.write(region, offset, data)
        return data.nbytes

    def check_outputs(
        self, placements: Iterable[SharedMemoryRef | None], holds: RegionHolds | None = None
    ) -> None:
        """:meth:`check_output` for each output a request placed in shared memory."""
        for ref in placements:
            if ref is not None:
                self.check_output(ref.region, ref.offset, ref.byte_size, holds)

    def write_outputs(
        self, outputs: Iterable[Any], placements: Mapping[str, SharedMemoryRef]
    ) -> dict[str, SharedMemoryRef]:
        """Write each output (a core ``Tensor``) that has a placement in its raw layout;
        return, by output name, where it went and how many bytes it took (what both
        protocols' responses report)."""
        written: dict[str, SharedMemoryRef] = {}
        for tensor in outputs:
            ref = placements.get(tensor.name)
            if ref is None:
                continue
            raw = tensor_to_buffer(tensor.datatype, tensor.data)
            size = self.write_output(tensor.name, ref.region, ref.offset, ref.byte_size, raw)
            written[tensor.name] = SharedMemoryRef(ref.region, size, ref.offset)
        return written

    # -- regions mapped by other processes (model instances in stub processes) ------------
    def share(self, address: int, nbytes: int) -> RegionShare | None:
        """Where the ``nbytes`` bytes at ``address`` of this process lie, when they lie in one
        registered system region (a tensor decoded as a view of it) whose key still names the
        object that was registered (another process can map it); else None."""
        with self._lock:
            for name, sharing in self._sharing.items():
                region = self._system[name]
                start = address - sharing.address
                if start >= 0 and start + nbytes <= region.byte_size:
                    found = RegionShare(
                        sharing.token,
                        region.key,
                        sharing.identity,
                        region.offset + region.byte_size,
                        region.offset + start,
                        nbytes,
                    )
                    break
            else:
                return None
        return found if _still_named(found) else None

    def share_output(self, ref: SharedMemoryRef) -> RegionShare | None:
        """Where an output placed at ``ref`` goes, when ``ref`` names a system region (None
        for a CUDA region); the placement was checked (:meth:`check_output`) already."""
        with self._lock:
            region = self._system.get(ref.region)
            if region is None:
                return None
            sharing = self._sharing[ref.region]
            found = RegionShare(
                sharing.token,
                region.key,
                sharing.identity,
                region.offset + region.byte_size,
                region.offset + ref.offset,
                ref.byte_size,
            )
        return found if _still_named(found) else None

    def shared_view(self, token: int, offset: int, nbytes: int) -> memoryview:
        """This process's view of ``nbytes`` bytes at ``offset`` (in the object) of the
        region registered as ``token``, after the checks of :meth:`read`: what a model in a
        stub process wrote there, or an input it hands back.

        Raises
        ------
        ServerError
            NOT_FOUND when the region was unregistered since; the errors of :meth:`check`.
        """
        with self._lock:
            name = next((n for n, s in self._sharing.items() if s.token == token), None)
            if name is None:
                raise ServerError.not_found(
                    "Unable to find shared memory region: the region the model wrote to was "
                    "unregistered while the request ran"
                )
            start = offset - self._system[name].offset
        region = self._checked(name, start, nbytes)
        assert isinstance(region, MappedRegion)
        return region.view(start, nbytes)

    def watch(self, callback: Callable[[int], None]) -> Callable[[], None]:
        """Call ``callback(token)`` for every system region unregistered from now on (after
        the registry let go of it, on the unregistering thread); return the function that
        stops it."""
        with self._lock:
            self._watchers.append(callback)

        def unwatch() -> None:
            with self._lock, contextlib.suppress(ValueError):
                self._watchers.remove(callback)

        return unwatch

    def _tell_watchers(self, tokens: list[int]) -> None:
        if not tokens:
            return
        with self._lock:
            watchers = list(self._watchers)
        for token in tokens:
            for callback in watchers:
                callback(token)

    def close(self) -> None:
        """Unmap every system region and close every CUDA IPC handle, held or not (server
        shutdown; a handle that fails to close is not an error here)."""
        with self._lock:
            self._uses.clear()
            dropped = self._drop(list(self._system) + list(self._cuda))
        self._release(*dropped, strict=False)
