"""A request with both ``Content-Length`` and ``Transfer-Encoding: chunked``, as Triton 2.51
reads it (seen on the real server; the differential cases ``http/framing/*`` compare the two):
the chunked framing wins (RFC 9112 section 6.3), the request is answered as any other, and the
connection stays open for the next request, whichever header comes first.  aiohttp's parser
alone answers 400 (``mock_server/frontends/http_framing.py``)."""

from __future__ import annotations

import asyncio
import http.client
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from mock_server.frontends.http_framing import lenient_setter
from tests.conformance.pair import Endpoint, run_mock_server

MODELS = Path(__file__).resolve().parent.parent / "mock_server" / "models"
IN0 = list(range(16))
IN1 = [1] * 16
BODY = json.dumps(
    {
        "inputs": [
            {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": IN0},
            {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": IN1},
        ]
    }
).encode()


def chunked(body: bytes, pieces: int) -> bytes:
    step = -(-len(body) // pieces)
    parts = [body[i : i + step] for i in range(0, len(body), step)]
    return b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\n\r\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    repo = tmp_path_factory.mktemp("framing") / "repo"
    shutil.copytree(MODELS / "simple", repo / "simple")
    with run_mock_server(repo) as endpoint:
        yield endpoint


def send(conn: http.client.HTTPConnection, headers: list[tuple[str, str]], body: bytes) -> None:
    conn.putrequest("POST", "/v2/models/simple/infer")
    for name, value in headers:
        conn.putheader(name, value)
    conn.endheaders(body)


@pytest.mark.parametrize("length_first", [True, False])
@pytest.mark.parametrize("pieces", [1, 3])
def test_content_length_beside_chunked_is_read_by_its_chunks(
    server: Endpoint, length_first: bool, pieces: int
) -> None:
    host, port = server.http.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        headers = [("Content-Length", str(len(BODY))), ("Transfer-Encoding", "chunked")]
        send(conn, headers if length_first else headers[::-1], chunked(BODY, pieces))
        response = conn.getresponse()
        answer = json.loads(response.read())
        assert response.status == 200, answer
        outputs = {o["name"]: o["data"] for o in answer["outputs"]}
        assert outputs["OUTPUT0"] == [a + b for a, b in zip(IN0, IN1, strict=True)]
        assert outputs["OUTPUT1"] == [a - b for a, b in zip(IN0, IN1, strict=True)]
        # The framing stayed in step: the next request on the connection is answered.
        conn.request("GET", "/v2/health/ready")
        again = conn.getresponse()
        again.read()
        assert again.status == 200
    finally:
        conn.close()


def test_the_installed_aiohttp_parser_can_be_made_lenient() -> None:
    """The pinned aiohttp is one this works with (another one answers 400, as before)."""

    async def find() -> object:
        return lenient_setter(asyncio.get_running_loop())

    assert asyncio.run(find()) is not None
