"""The generate extension in both HTTP clients: the SSE parser, the generate codec, and
``generate`` / ``generate_stream`` against the bundled server (``vllm_model``) and against a
raw socket server that frames the event stream exactly as a test needs (splits, comments,
keep-alives, a stream cut short)."""

from __future__ import annotations

import asyncio
import gc
import json
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.http.aio as aioclient
from mock_server.app import BUNDLED_MODELS, FrontendOptions, MockServer
from mock_server.core.server import ServerOptions
from tritonclient._codec.generate import (
    GenerateStreamDecoder,
    decode_generate_event,
    encode_generate_request,
)
from tritonclient._codec.sse import SseEvent, SseParser
from tritonclient.utils import (
    InferenceServerException,
)
from tritonclient.utils._errors import (
    InferenceServerConnectionError,
    InferenceServerDeadlineExceededError,
    InferenceServerInvalidArgumentError,
    InferenceServerNotFoundError,
    InferenceServerProtocolError,
)

CONFORMANCE_MODELS = Path(__file__).resolve().parent / "conformance" / "models"
LONG = 10**7  # tokens: a stream that would run for minutes unless cancelled


# -- the SSE parser ---------------------------------------------------------------------------


STREAM = (
    b"\xef\xbb\xbf: a comment\r\n"
    b"data: one\r\n\r\n"
    b":keep-alive\n\n"
    b"event: note\nid: 7\ndata:two\ndata:  lines\n\n"
    b"retry: 1500\r"
    b"data: three\r\r"
    b"data\n\n"
    b"unknown: x\nid\n\n"
    b'data: {"a": 1}\n\n'
)
EXPECTED = [
    SseEvent("one"),
    SseEvent("two\n lines", "note", "7"),
    SseEvent("three", "message", "7"),
    SseEvent("", "message", "7"),
    SseEvent('{"a": 1}', "message", ""),
]


def feed_all(parser: SseParser, pieces: list[bytes]) -> list[SseEvent]:
    events: list[SseEvent] = []
    for piece in pieces:
        events.extend(parser.feed(piece))
    parser.close()
    return events


def test_sse_whole_stream() -> None:
    parser = SseParser()
    assert feed_all(parser, [STREAM]) == EXPECTED
    assert parser.retry == 1500


def test_sse_every_split_gives_the_same_events() -> None:
    for cut in range(1, len(STREAM)):
        assert feed_all(SseParser(), [STREAM[:cut], STREAM[cut:]]) == EXPECTED, cut
    # one byte at a time: CR LF pairs, the BOM and UTF-8 sequences all split
    assert feed_all(SseParser(), [bytes([b]) for b in STREAM]) == EXPECTED
    text = "data: héllo ✓\n\n".encode()
    assert feed_all(SseParser(), [bytes([b]) for b in text]) == [SseEvent("héllo ✓")]


def test_sse_end_inside_an_event_is_refused() -> None:
    for tail in (b"data: x\n", b"data: x", b"event: a\n", b"id: 3\n"):
        parser = SseParser()
        parser.feed(b"data: ok\n\n" + tail)
        assert parser.pending
        with pytest.raises(InferenceServerProtocolError, match="ended inside an event"):
            parser.close()
    parser = SseParser()
    parser.feed(b"data: ok\n\n: trailing comment\n")
    parser.close()  # a comment line is not part of an event


def test_sse_refuses_data_that_is_not_utf8() -> None:
    with pytest.raises(InferenceServerProtocolError, match="not UTF-8"):
        SseParser().feed(b"data: \xff\xfe\n\n")


# -- the generate codec (client side) ---------------------------------------------------------


def test_encode_generate_request() -> None:
    body = encode_generate_request(
        {"text_input": "hi", "n": np.int32(3), "v": np.array([1.5, 2.0]), "b": b"x"},
        {"stream": np.bool_(True), "t": 0.5},
    )
    assert json.loads(body) == {
        "text_input": "hi",
        "n": 3,
        "v": [1.5, 2.0],
        "b": "x",
        "parameters": {"stream": True, "t": 0.5},
    }
    with pytest.raises(InferenceServerException, match="both in inputs"):
        encode_generate_request({"parameters": {}}, {"a": 1})
    with pytest.raises(InferenceServerException, match="str, number or bool"):
        encode_generate_request({}, {"a": [1]})
    with pytest.raises(InferenceServerException, match="not a JSON number"):
        encode_generate_request({"x": float("nan")})
    with pytest.raises(InferenceServerException, match="mapping"):
        encode_generate_request([("text_input", "x")])  # type: ignore[arg-type]


def test_decode_generate_event() -> None:
    assert decode_generate_event('{"text_output": "a", "model_name": "m"}')["text_output"] == "a"
    # an output named "error" is an output, not the extension's error object
    assert decode_generate_event('{"error": [1], "model_name": "m"}')["error"] == [1]
    with pytest.raises(InferenceServerInvalidArgumentError) as caught:
        decode_generate_event('{"error": "boom"}')
    assert caught.value.message() == "boom" and caught.value.status() == "400"
    for bad in ("[1]", "nope", '"text"'):
        with pytest.raises(InferenceServerProtocolError):
            decode_generate_event(bad)


def test_stream_decoder_raises_an_error_event_after_the_events_before_it() -> None:
    decoder = GenerateStreamDecoder()
    decoder.feed(
        b'data: {"i": 0}\n\ndata: {"i": 1}\n\ndata: {"error": "late"}\n\ndata: {"i": 2}\n\n'
    )
    assert decoder.next() == {"i": 0}
    assert decoder.next() == {"i": 1}
    with pytest.raises(InferenceServerInvalidArgumentError, match="late"):
        decoder.next()
    decoder.end()  # nothing after the error is looked at


# -- against the bundled server ---------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockServer]:
    extra = tmp_path_factory.mktemp("models")
    shutil.copytree(CONFORMANCE_MODELS / "fail_after", extra / "fail_after")
    options = ServerOptions(model_repository=[BUNDLED_MODELS, extra])
    frontend = FrontendOptions(http_port=0, grpc_port=0, metrics_port=0, allow_metrics=False)
    with MockServer(options, frontend) as running:
        yield running


@pytest.fixture(scope="module")
def url(server: MockServer) -> str:
    return server.http_url.split("://")[-1]


def stream_text(events: list[dict[str, Any]]) -> str:
    return "".join(e["text_output"] for e in events)


def test_generate_and_stream_agree(url: str) -> None:
    with httpclient.InferenceServerClient(url) as client:
        whole = client.generate(
            "vllm_model",
            {"text_input": "Hello", "exclude_input_in_output": True},
            parameters={"max_tokens": 6},
        )
        assert whole["model_name"] == "vllm_model" and whole["model_version"] == "1"
        events = list(
            client.generate_stream(
                "vllm_model", {"text_input": "Hello", "stream": True, "max_tokens": 6}
            )
        )
        assert len(events) == 6
        assert stream_text(events) == whole["text_output"]
        assert len(whole["text_output"].split()) == 6
        # the prompt comes first unless excluded (as the vLLM backend)
        assert (
            client.generate("vllm_model", {"text_input": "Hello", "max_tokens": 6})["text_output"]
            == "Hello" + whole["text_output"]
        )
        # version in the path, id echoed
        one = client.generate("vllm_model", {"text_input": "x", "id": "r1"}, model_version="1")
        assert one["id"] == "r1"


def test_errors_before_and_in_the_stream(url: str) -> None:
    with httpclient.InferenceServerClient(url) as client:
        with pytest.raises(InferenceServerNotFoundError, match="unknown model"):
            list(client.generate_stream("nope", {"text_input": "x"}))
        with pytest.raises(InferenceServerNotFoundError):
            client.generate("nope", {"text_input": "x"})
        # several responses on /generate: Triton's 200 error object, raised
        with pytest.raises(InferenceServerInvalidArgumentError, match="exactly 1 response"):
            client.generate("vllm_model", {"text_input": "x", "stream": True, "max_tokens": 2})
        # the model refuses at once: the stream opens with 400 and its one event is the error
        with pytest.raises(InferenceServerInvalidArgumentError, match="not allowed"):
            list(
                client.generate_stream(
                    "vllm_model",
                    {"text_input": "x", "stream": True, "exclude_input_in_output": False},
                )
            )
        # an error after two events: both delivered, then the error where it arrived
        stream = client.generate_stream("fail_after", {"IN": 2})
        assert [next(stream)["OUT"], next(stream)["OUT"]] == [0, 1]
        with pytest.raises(InferenceServerInvalidArgumentError, match="failed after 2"):
            next(stream)
        assert list(stream) == []  # ended: no silent restart


def instance_is_free(client: httpclient.InferenceServerClient, limit: float = 10.0) -> float:
    """How long a new vllm_model request waits: the model has one instance, so a request
    that was not cancelled would hold it for minutes."""
    start = time.monotonic()
    answer = client.generate("vllm_model", {"text_input": "after", "max_tokens": 1})
    assert answer["text_output"].startswith("after")
    took = time.monotonic() - start
    assert took < limit
    return took


@pytest.mark.parametrize("how", ["close", "break", "gc", "with"])
def test_leaving_early_cancels_the_request(url: str, how: str) -> None:
    with httpclient.InferenceServerClient(url, network_timeout=20) as client:
        payload = {"text_input": "x", "stream": True, "max_tokens": LONG}
        if how == "close":
            stream = client.generate_stream("vllm_model", payload)
            next(stream)
            stream.close()
            stream.close()  # any number of times
            with pytest.raises(StopIteration):
                next(stream)
        elif how == "break":
            for count, _ in enumerate(client.generate_stream("vllm_model", payload)):
                if count == 2:
                    break
            gc.collect()
        elif how == "gc":
            stream = client.generate_stream("vllm_model", payload)
            next(stream)
            del stream
        else:
            with client.generate_stream("vllm_model", payload) as stream:
                next(stream)
        instance_is_free(client)


def test_timeout_applies_between_events(url: str) -> None:
    # 4 events 0.4 s apart: 1.6 s in all, more than the 1 s network timeout
    payload = {"IN": [1, 2, 3, 4], "DELAY": [400], "WAIT": 0}
    with httpclient.InferenceServerClient(url, connection_timeout=5, network_timeout=1) as client:
        assert [e["OUT"] for e in client.generate_stream("repeat_int32", payload)] == [1, 2, 3, 4]
        slow = {"IN": [1, 2], "DELAY": [0, 3000], "WAIT": 0}
        stream = client.generate_stream("repeat_int32", slow)
        assert next(stream)["OUT"] == 1
        start = time.monotonic()
        with pytest.raises(InferenceServerDeadlineExceededError):
            next(stream)
        assert time.monotonic() - start < 2.5


def test_streams_from_many_threads_at_once(url: str) -> None:
    with httpclient.InferenceServerClient(url) as client:
        results: dict[int, Any] = {}

        def work(index: int) -> None:
            try:
                prompt = f"thread {index}"
                events = list(
                    client.generate_stream(
                        "vllm_model", {"text_input": prompt, "stream": True, "max_tokens": 20}
                    )
                )
                plain = client.generate(
                    "vllm_model",
                    {"text_input": prompt, "max_tokens": 20, "exclude_input_in_output": True},
                )
                results[index] = stream_text(events) == plain["text_output"]
            except Exception as exc:  # reported below
                results[index] = exc

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert results == {i: True for i in range(4)}
        # made in one thread, read in another: the request goes out from the reader
        stream = client.generate_stream("vllm_model", {"text_input": "x", "stream": True})
        got: list[Any] = []
        reader = threading.Thread(target=lambda: got.extend(stream))
        reader.start()
        reader.join(30)
        assert len(got) == 16
        # once started, it stays with its thread (the second event comes 0.3 s after the
        # first, so the other thread's next() must read from the connection)
        stream = client.generate_stream(
            "repeat_int32", {"IN": [1, 2], "DELAY": [0, 300], "WAIT": 0}
        )
        next(stream)
        failure: list[BaseException] = []

        def other() -> None:
            try:
                next(stream)
            except BaseException as exc:
                failure.append(exc)

        thread = threading.Thread(target=other)
        thread.start()
        thread.join(30)
        assert isinstance(failure[0], InferenceServerException)
        assert "thread that started it" in str(failure[0])
        stream.close()
        # another call of this thread while a stream is open does not wait for it
        stream = client.generate_stream("vllm_model", {"text_input": "x", "stream": True})
        next(stream)
        assert client.is_server_live()
        stream.close()


def test_other_greenlets_run_while_a_stream_waits(url: str) -> None:
    """A thread with greenlets of its own: while the stream waits for its next event the
    others run (the stream waits in the hub then, not in the OS: see _thread_is_idle)."""
    import gevent

    ticks: list[float] = []
    failure: list[BaseException] = []

    def ticker() -> None:
        for _ in range(40):
            ticks.append(time.monotonic())
            gevent.sleep(0.02)

    def main() -> None:
        try:
            background = gevent.spawn(ticker)
            gevent.sleep(0)
            with httpclient.InferenceServerClient(url) as client:
                paced = {"IN": [1, 2, 3], "DELAY": [200], "WAIT": 0}
                arrivals = []
                got = []
                for event in client.generate_stream("repeat_int32", paced):
                    arrivals.append(time.monotonic())
                    got.append(event["OUT"])
            assert got == [1, 2, 3]
            # between the first and the last event the stream waited twice 0.2 s
            during = [t for t in ticks if arrivals[0] < t < arrivals[-1]]
            assert len(during) >= 10, (len(during), arrivals)
            background.kill()
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=main)
    thread.start()
    thread.join(30)
    assert not failure, failure


def test_aio_client(url: str) -> None:
    async def main() -> None:
        async with aioclient.InferenceServerClient(url, conn_timeout=1) as client:
            whole = await client.generate(
                "vllm_model",
                {"text_input": "Hi", "exclude_input_in_output": True, "max_tokens": 5},
            )
            events = [
                e
                async for e in client.generate_stream(
                    "vllm_model", {"text_input": "Hi", "stream": True}, {"max_tokens": 5}
                )
            ]
            assert stream_text(events) == whole["text_output"]
            with pytest.raises(InferenceServerNotFoundError):
                await client.generate("nope", {"text_input": "x"})
            with pytest.raises(InferenceServerNotFoundError):
                async for _ in client.generate_stream("nope", {"text_input": "x"}):
                    pass
            stream = client.generate_stream("fail_after", {"IN": 1})
            assert (await stream.__anext__())["OUT"] == 0
            with pytest.raises(InferenceServerInvalidArgumentError, match="failed after 1"):
                await stream.__anext__()
            # leaving early: aclose(), async with, break + garbage collection
            payload = {"text_input": "x", "stream": True, "max_tokens": LONG}
            stream = client.generate_stream("vllm_model", payload)
            await stream.__anext__()
            await stream.aclose()
            async with client.generate_stream("vllm_model", payload) as stream:
                await stream.__anext__()
            async for _ in client.generate_stream("vllm_model", payload):
                break
            gc.collect()
            start = time.monotonic()
            await client.generate("vllm_model", {"text_input": "x", "max_tokens": 1})
            assert time.monotonic() - start < 10
            # conn_timeout is between events: 3 events 0.4 s apart pass a 1 s timeout...
            paced = {"IN": [1, 2, 3], "DELAY": [400], "WAIT": 0}
            assert [e["OUT"] async for e in client.generate_stream("repeat_int32", paced)] == [
                1,
                2,
                3,
            ]
            # ...a 3 s gap does not
            slow = client.generate_stream(
                "repeat_int32", {"IN": [1, 2], "DELAY": [0, 3000], "WAIT": 0}
            )
            assert (await slow.__anext__())["OUT"] == 1
            with pytest.raises(InferenceServerDeadlineExceededError):
                await slow.__anext__()

    asyncio.run(asyncio.wait_for(main(), 60))


def test_vllm_model_over_grpc_stream(server: MockServer) -> None:
    """The same model through gRPC stream_infer, as vLLM-on-Triton clients call it."""
    import queue

    got: queue.Queue[Any] = queue.Queue()
    with grpcclient.InferenceServerClient(server.grpc_url.split("://")[-1]) as client:
        client.start_stream(callback=lambda result, error: got.put(error or result))
        inputs = []
        for name, datatype, value in (
            ("text_input", "BYTES", np.array([b"Hello"], dtype=np.object_)),
            ("stream", "BOOL", np.array([True])),
            ("sampling_parameters", "BYTES", np.array([b'{"max_tokens": 3}'], dtype=np.object_)),
        ):
            tensor = grpcclient.InferInput(name, [1], datatype)
            tensor.set_data_from_numpy(value)
            inputs.append(tensor)
        client.async_stream_infer("vllm_model", inputs, enable_empty_final_response=True)
        pieces = []
        while True:
            result = got.get(timeout=30)
            assert not isinstance(result, Exception), result
            if result.get_response().outputs:
                pieces.append(result.as_numpy("text_output")[0].decode())
            if result.get_response().parameters["triton_final_response"].bool_param:
                break
        client.stop_stream()
    with httpclient.InferenceServerClient(server.http_url.split("://")[-1]) as http:
        whole = http.generate(
            "vllm_model", {"text_input": "Hello", "max_tokens": 3, "exclude_input_in_output": True}
        )
    assert "".join(pieces) == whole["text_output"]


# -- against a raw server that frames the stream as the test says ----------------------------


class RawSse:
    """Answers one request per connection with an event stream sent in the given pieces (as
    HTTP chunks, ``pause`` seconds apart), then the last chunk, or a cut connection."""

    def __init__(self, pieces: list[bytes], *, cut: bool = False, pause: float = 0.02) -> None:
        self.pieces, self.cut, self.pause = pieces, cut, pause
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(10)
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(10)
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                while len(body) < length:
                    body += conn.recv(65536)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n"
                )
                for piece in self.pieces:
                    conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                    time.sleep(self.pause)
                if not self.cut:
                    conn.sendall(b"0\r\n\r\n")
                    time.sleep(0.2)

    def __enter__(self) -> str:
        self.thread.start()
        return f"127.0.0.1:{self.sock.getsockname()[1]}"

    def __exit__(self, *exc: object) -> None:
        self.sock.close()
        self.thread.join(10)


SPLIT = [
    b": keep-alive\n\nda",
    b'ta: {"n": 1',
    b"}\r",
    b'\n\r\n: ping\n\ndata: {"n":\n',
    b'data: 2}\n\ndata: {"n": 3}\n',
    b"\n",
]


def raw_sync(address: str) -> list[Any]:
    with httpclient.InferenceServerClient(address, network_timeout=5) as client:
        got: list[Any] = []
        try:
            for event in client.generate_stream("m", {"text_input": "x"}):
                got.append(event["n"])
        except InferenceServerException as exc:
            got.append(exc)
        return got


def raw_aio(address: str) -> list[Any]:
    async def main() -> list[Any]:
        async with aioclient.InferenceServerClient(address, conn_timeout=5) as client:
            got: list[Any] = []
            try:
                async for event in client.generate_stream("m", {"text_input": "x"}):
                    got.append(event["n"])
            except InferenceServerException as exc:
                got.append(exc)
            return got

    return asyncio.run(asyncio.wait_for(main(), 30))


@pytest.mark.parametrize("read", [raw_sync, raw_aio], ids=["sync", "aio"])
def test_events_split_across_reads_with_comments(read: Any) -> None:
    with RawSse(SPLIT) as address:
        assert read(address) == [1, 2, 3]


@pytest.mark.parametrize("read", [raw_sync, raw_aio], ids=["sync", "aio"])
def test_a_stream_cut_short_is_a_connection_error(read: Any) -> None:
    with RawSse([b'data: {"n": 1}\n\n', b'data: {"n": 2}\n\ndata: {"n"'], cut=True) as address:
        got = read(address)
    assert got[:2] == [1, 2]
    assert isinstance(got[2], InferenceServerConnectionError), got


@pytest.mark.parametrize("read", [raw_sync, raw_aio], ids=["sync", "aio"])
def test_a_stream_ending_inside_an_event_is_refused(read: Any) -> None:
    with RawSse([b'data: {"n": 1}\n\n', b'data: {"n": 2}\n']) as address:
        got = read(address)
    assert got[0] == 1
    assert isinstance(got[1], InferenceServerProtocolError), got
