"""How tensors cross between the server and a stub process (``python_backend._transfer``).

The unit tests drive two :class:`Link` ends in this process, passing messages by pickling
them as the channel does; the integration tests run a model in a real stub process of a
``MockServer`` and look at where its tensors live (``/proc/<stub>/maps``).
"""

from __future__ import annotations

import os
import pickle
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm_helpers
from mock_server.app import FrontendOptions, MockServer
from mock_server.compose import build_core
from mock_server.core.errors import ErrorKind, ServerError
from mock_server.core.server import ModelControlMode, ServerOptions
from mock_server.core.shm import RegionShare
from mock_server.core.types import InferRequest, RequestedOutput, Tensor
from mock_server.python_backend import _transfer
from mock_server.python_backend._transfer import BlockRef, Link, MappedRegions, RegionRef
from shm import posix
from tritonclient._codec.types import SharedMemoryRef

TIMEOUT = 30.0
MiB = 1 << 20


def _entries(prefix: str) -> list[str]:
    return sorted(p.name for p in Path("/dev/shm").glob(f"{prefix}*"))


@pytest.fixture
def pair() -> Iterator[tuple[Link, Link, str]]:
    prefix = f"tcng_link_{uuid.uuid4().hex[:8]}_"
    server = Link("p", prefix + "p", "s", prefix + "s")
    stub = Link("s", prefix + "s", "p", prefix + "p")
    yield server, stub, prefix
    server.close()
    stub.close()
    assert _entries(prefix) == []


def wire(packed: Any) -> Any:
    """A packed array as the peer receives it (pickled and unpickled, as the channel does)."""
    return pickle.loads(pickle.dumps(packed, protocol=pickle.HIGHEST_PROTOCOL))


def news(sender: Link, receiver: Link) -> None:
    """Deliver the sender's pending release message, if any."""
    message = sender.pending()
    if message is not None:
        message = wire(message)
        receiver.on_release(message[1], message[2])


def address(array: np.ndarray[Any, Any]) -> int:
    return int(array.__array_interface__["data"][0])


def test_small_arrays_travel_in_the_message(pair: tuple[Link, Link, str]) -> None:
    server, stub, prefix = pair
    small = np.arange(100, dtype=np.int32)
    packed = wire(server.pack(small))
    assert isinstance(packed, tuple)
    got = stub.unpack(packed)
    assert np.array_equal(got, small) and got.flags.writeable
    assert server.blocks() == (0, 0) and _entries(prefix) == []


def test_a_large_array_crosses_once_and_comes_back_by_reference(
    pair: tuple[Link, Link, str],
) -> None:
    server, stub, prefix = pair
    data = np.random.default_rng(1).random(MiB // 4, dtype=np.float32).reshape(512, -1)
    ref = server.pack(data)
    assert isinstance(ref, BlockRef) and ref.owner == "p"
    received = stub.unpack(wire(ref))
    assert np.array_equal(received, data) and received.shape == data.shape
    # The receiver mapped the block and removed its name: nothing stays in /dev/shm.
    assert _entries(prefix) == []
    assert stub.blocks() == (0, 1)
    # A model returning its input: the stub names the server's block, copying nothing.
    back = stub.pack(received[128:])
    assert isinstance(back, BlockRef) and back.owner == "p" and back.block == ref.block
    assert back.keep is not None and "keep" not in repr(pickle.loads(pickle.dumps(back)).keep)
    returned = server.unpack(wire(back))
    assert np.array_equal(returned, data[128:])
    assert stub.blocks() == (0, 1) and server.blocks() == (1, 0)
    del back, received
    news(stub, server)  # the stub's view is gone: released
    # The server's own view still holds the block: a new array gets a new block.
    other = server.pack(data + 1)
    assert isinstance(other, BlockRef) and other.block != ref.block
    del returned
    # Now the first block is free again and is reused (no new object, no page faults).
    other_view = stub.unpack(wire(other))
    del other_view, other
    news(stub, server)
    again = server.pack(data * 2)
    assert isinstance(again, BlockRef) and again.block in (ref.block, ref.block + 1)
    assert server.blocks()[0] == 2


def test_the_pool_keeps_a_few_free_blocks_and_the_peer_unmaps_the_others(
    pair: tuple[Link, Link, str],
) -> None:
    server, stub, _ = pair
    data = np.ones(MiB, dtype=np.uint8)
    views = [stub.unpack(wire(server.pack(data))) for _ in range(5)]
    assert server.blocks() == (5, 0) and stub.blocks() == (0, 5)
    del views
    news(stub, server)  # releases: 2 blocks kept free, 3 let go of
    assert server.blocks() == (_transfer.FREE_BLOCKS_PER_SIZE, 0)
    news(server, stub)  # ... and the stub unmaps those
    assert stub.blocks() == (0, _transfer.FREE_BLOCKS_PER_SIZE)


def test_a_reference_nobody_unpacks_is_released(pair: tuple[Link, Link, str]) -> None:
    server, stub, _ = pair
    ref = wire(server.pack(np.zeros(MiB, dtype=np.uint8)))
    stub.discard(ref)
    news(stub, server)
    assert server.pack(np.ones(MiB, dtype=np.uint8)).block == ref.block  # free again


def test_bytes_and_non_contiguous_arrays(pair: tuple[Link, Link, str]) -> None:
    server, stub, _ = pair
    objects = np.array([b"a", b"bc"], dtype=object)
    assert stub.unpack(wire(server.pack(objects))).tolist() == [b"a", b"bc"]
    strided = np.arange(MiB, dtype=np.int32).reshape(1024, 1024)[:, ::2]
    got = stub.unpack(wire(server.pack(strided)))
    assert np.array_equal(got, strided)


# -- client regions as the stub maps them ---------------------------------------------------


@pytest.fixture
def client_region() -> Iterator[tuple[str, posix.MappedRegion]]:
    key = f"/tcng_region_{uuid.uuid4().hex[:8]}"
    region = posix.create(key, 4 * MiB, create_only=True)
    try:
        yield key, region
    finally:
        region.close()
        posix.unlink(key)


def _share(key: str, offset: int, nbytes: int, token: int = 7) -> RegionShare:
    info = os.stat(f"/dev/shm{key}")
    return RegionShare(token, key, (info.st_dev, info.st_ino), 4 * MiB, offset, nbytes)


def test_a_stub_views_a_client_region_and_writes_outputs_in_place(
    client_region: tuple[str, posix.MappedRegion],
) -> None:
    key, region = client_region
    source = np.frombuffer(region.buffer, np.float32)
    source[: MiB // 4] = np.arange(MiB // 4, dtype=np.float32)
    regions = MappedRegions()
    stub = Link("s", f"tcng_link_{uuid.uuid4().hex[:8]}_s", "p", "none", regions)
    try:
        ref = RegionRef(_share(key, 0, MiB), "<f4", (MiB // 4,))
        received = stub.unpack(wire(ref), writable=False)
        assert not received.flags.writeable
        assert np.array_equal(received, source[: MiB // 4])
        # Handed back as an output over the wire: named, not copied.
        back = stub.pack(received)
        assert isinstance(back, RegionRef) and back.share.offset == 0
        # An output placed at 2 MiB: written there, reported in place.
        placement = RegionRef(_share(key, 2 * MiB, MiB))
        written = stub.write_placed(received * 2, placement)
        assert isinstance(written, RegionRef) and written.share.nbytes == MiB
        assert np.array_equal(source[MiB // 2 : 3 * MiB // 4], source[: MiB // 4] * 2)
        # One that does not fit is left to the server (which says so in Triton's words).
        assert stub.write_placed(np.zeros(MiB + 4, np.uint8), placement) is None
        # Unregistered: the mapping goes (the view still held keeps its memory).
        regions.forget(7)
        assert np.array_equal(received[:4], [0, 1, 2, 3])
    finally:
        stub.close()
        regions.close()


def test_a_shrunk_or_replaced_region_is_a_clear_error(
    client_region: tuple[str, posix.MappedRegion],
) -> None:
    key, _ = client_region
    regions = MappedRegions()
    try:
        share = _share(key, 0, 4 * MiB)
        assert regions.view(share).nbytes == 4 * MiB
        fd = os.open(f"/dev/shm{key}", os.O_RDWR)
        os.ftruncate(fd, MiB)
        os.close(fd)
        with pytest.raises(ServerError, match="truncated by its owner") as info:
            regions.view(share)
        assert info.value.kind is ErrorKind.INVALID_ARG
        # The name reused for another object: refused, not mapped.
        stale = _share(key, 0, MiB, token=8)
        posix.unlink(key)
        posix.create(key, 4 * MiB, create_only=True).close()
        with pytest.raises(ServerError, match="not the object that was registered"):
            regions.view(stale)
    finally:
        regions.close()


# -- a real stub process ---------------------------------------------------------------------

WHERE_CONFIG = """
name: "where"
backend: "python"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_UINT8 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_UINT8 dims: [ -1 ] } ]
output [ { name: "WHERE" data_type: TYPE_STRING dims: [ 1 ] } ]
"""

# Returns its input as OUT, and in WHERE the file behind the input's memory in this process
# (from /proc/self/maps) and whether the array is writable.
WHERE_MODEL = """
import os

import numpy as np
import triton_python_backend_utils as pb_utils


def backing(address):
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if start <= address < end:
                return fields[5] if len(fields) > 5 else "(anonymous)"
    return "(none)"


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            where = "%s %d %s" % (
                backing(data.__array_interface__["data"][0]), os.getpid(), data.flags.writeable
            )
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("OUT", data),
                        pb_utils.Tensor("WHERE", np.array([where.encode()], dtype=object)),
                    ]
                )
            )
        return responses
"""


@pytest.fixture
def where_repo(tmp_path: Path) -> Path:
    folder = tmp_path / "repo" / "where"
    (folder / "1").mkdir(parents=True)
    (folder / "config.pbtxt").write_text(WHERE_CONFIG)
    (folder / "1" / "model.py").write_text(WHERE_MODEL)
    return tmp_path / "repo"


def _mapped(pid: int, key: str) -> bool:
    return f"/dev/shm{key}" in Path(f"/proc/{pid}/maps").read_text()


def test_the_stub_reads_the_clients_region_and_lets_go_when_unregistered(
    where_repo: Path,
) -> None:
    nbytes = 4 * MiB
    key_in = f"/tcng_where_in_{uuid.uuid4().hex[:8]}"
    key_out = f"/tcng_where_out_{uuid.uuid4().hex[:8]}"
    options = ServerOptions(model_repository=[where_repo], allow_client_shm=True)
    frontends = FrontendOptions(http_port=0, grpc_port=0, metrics_port=0)
    with MockServer(options, frontends) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        region_in = shm_helpers.create_shared_memory_region("in", key_in, nbytes)
        region_out = shm_helpers.create_shared_memory_region("out", key_out, nbytes)
        try:
            data = np.random.default_rng(3).integers(0, 256, nbytes, dtype=np.uint8)
            shm_helpers.set_shared_memory_region(region_in, [data])
            client.register_system_shared_memory("in", key_in, nbytes)
            client.register_system_shared_memory("out", key_out, nbytes)
            stub_pid = 0
            for _ in range(2):  # the second time, the stub's mappings are reused
                given = httpclient.InferInput("IN", [nbytes], "UINT8")
                given.set_shared_memory("in", nbytes)
                out = httpclient.InferRequestedOutput("OUT", binary_data=True)
                out.set_shared_memory("out", nbytes)
                result = client.infer(
                    "where", [given], outputs=[out, httpclient.InferRequestedOutput("WHERE")]
                )
                backing, pid, writable = result.as_numpy("WHERE")[0].decode().split()
                stub_pid = int(pid)
                # The model's input is a read-only view of the client's object, in the stub.
                assert stub_pid != os.getpid()
                assert backing == f"/dev/shm{key_in}" and writable == "False"
                got = shm_helpers.get_contents_as_numpy(region_out, np.uint8, [nbytes])
                assert np.array_equal(got, data)
                assert "data" not in result.get_output("OUT")
            assert _mapped(stub_pid, key_in) and _mapped(stub_pid, key_out)
            client.unregister_system_shared_memory()
            deadline = time.monotonic() + TIMEOUT
            while (_mapped(stub_pid, key_in) or _mapped(stub_pid, key_out)) and (
                time.monotonic() < deadline
            ):
                time.sleep(0.02)
            assert not _mapped(stub_pid, key_in) and not _mapped(stub_pid, key_out)
            # Over the wire, the same model sees a block of the pool, never a client object.
            given = httpclient.InferInput("IN", [nbytes], "UINT8")
            given.set_data_from_numpy(data)
            result = client.infer("where", [given])
            assert np.array_equal(result.as_numpy("OUT"), data)
            assert result.as_numpy("WHERE")[0].decode().startswith("/dev/shm/mockpb_")
        finally:
            client.close()
            shm_helpers.destroy_shared_memory_region(region_in)
            shm_helpers.destroy_shared_memory_region(region_out)


def test_the_server_finds_an_output_in_place(tmp_path: Path) -> None:
    """The core's view of an output the stub wrote into a client region is that region's own
    memory: the server copies nothing (identity model, 8 MiB, input and output in shm)."""
    repo = Path(__file__).resolve().parents[1] / "mock_server" / "models"
    nbytes = 8 * MiB
    key_in = f"/tcng_inplace_in_{uuid.uuid4().hex[:8]}"
    key_out = f"/tcng_inplace_out_{uuid.uuid4().hex[:8]}"
    core = build_core(
        ServerOptions(
            model_repository=[repo],
            model_control_mode=ModelControlMode.EXPLICIT,
            startup_models=["identity_uint8"],
            python_backend_isolation="process",
            allow_client_shm=True,
        )
    )
    core.start()
    region_in = posix.create(key_in, nbytes, create_only=True)
    region_out = posix.create(key_out, nbytes, create_only=True)
    try:
        data = np.frombuffer(region_in.buffer, np.uint8)
        data[:] = np.random.default_rng(5).integers(0, 256, nbytes, dtype=np.uint8)
        core.shm.register_system("in", key_in, 0, nbytes)
        core.shm.register_system("out", key_out, 0, nbytes)
        placed = SharedMemoryRef("out", nbytes, 0)
        given = np.frombuffer(core.shm.read_input("in", 0, nbytes), np.uint8).reshape(1, -1)
        request = InferRequest(
            "identity_uint8",
            inputs=[Tensor("INPUT0", "UINT8", (1, nbytes), given)],
            outputs=[RequestedOutput("OUTPUT0", {}, placed)],
        )
        (response,) = list(core.infer_iter(request, timeout_s=TIMEOUT))
        assert response.error is None, response.error
        output = response.outputs[0].data
        target = np.frombuffer(core.shm.view("out", 0, nbytes), np.uint8)
        assert address(output) == address(target)  # the region itself, not a copy of it
        assert np.array_equal(target, data)
        assert core.shm.write_outputs(response.outputs, {"OUTPUT0": placed})["OUTPUT0"] == placed
        del output, target, given, response, request
        core.shm.unregister_system()
    finally:
        core.stop()
        region_in.close()
        region_out.close()
        posix.unlink(key_in)
        posix.unlink(key_out)


def test_a_region_whose_name_the_client_removed_still_serves(where_repo: Path) -> None:
    """A client may unlink its object's name once the server has registered it (only the
    server's mapping reaches it then): its tensors cross as copies, and outputs placed there
    are written by the server."""
    nbytes = MiB
    keys = [f"/tcng_unnamed_{uuid.uuid4().hex[:8]}" for _ in range(2)]
    options = ServerOptions(model_repository=[where_repo], allow_client_shm=True)
    frontends = FrontendOptions(http_port=0, grpc_port=0, metrics_port=0)
    with MockServer(options, frontends) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        regions = [posix.create(key, nbytes, create_only=True) for key in keys]
        try:
            data = np.random.default_rng(9).integers(0, 256, nbytes, dtype=np.uint8)
            np.frombuffer(regions[0].buffer, np.uint8)[:] = data
            client.register_system_shared_memory("in", keys[0], nbytes)
            client.register_system_shared_memory("out", keys[1], nbytes)
            for key in keys:
                posix.unlink(key)
            given = httpclient.InferInput("IN", [nbytes], "UINT8")
            given.set_shared_memory("in", nbytes)
            out = httpclient.InferRequestedOutput("OUT", binary_data=True)
            out.set_shared_memory("out", nbytes)
            result = client.infer(
                "where", [given], outputs=[out, httpclient.InferRequestedOutput("WHERE")]
            )
            assert result.as_numpy("WHERE")[0].decode().startswith("/dev/shm/mockpb_")
            assert np.array_equal(np.frombuffer(regions[1].buffer, np.uint8), data)
            client.unregister_system_shared_memory()
        finally:
            client.close()
            for region in regions:
                region.close()
