"""mock_server.testing: the triton_server fixture (run through pytester) and serve()."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mock_server.app import BUNDLED_MODELS
from mock_server.testing import serve

pytest_plugins = ["pytester"]

TEST_FILE = """
import tritonclient.http as httpclient
import tritonclient.grpc as grpcclient
import pytest

def test_bundled(triton_server):
    assert triton_server.metrics_url
    client = httpclient.InferenceServerClient(triton_server.http_url)
    assert client.is_model_ready("simple")
    client.close()

def test_shared(triton_server):
    client = grpcclient.InferenceServerClient(triton_server.grpc_url)
    assert client.is_server_live()
    client.close()

@pytest.mark.triton_model_repository("mine")
def test_marker(triton_server):
    client = httpclient.InferenceServerClient(triton_server.http_url)
    names = [m["name"] for m in client.get_model_repository_index()]
    assert names == ["simple_identity"]
    client.close()

@pytest.mark.triton_model_repository("mine", model_control_mode="explicit")
def test_marker_explicit(triton_server):
    client = httpclient.InferenceServerClient(triton_server.http_url)
    assert not client.is_model_ready("simple_identity")
    client.close()
"""


@pytest.fixture
def mine(pytester: pytest.Pytester) -> Path:
    repo = pytester.path / "mine"
    repo.mkdir()
    shutil.copytree(BUNDLED_MODELS / "simple_identity", repo / "simple_identity")
    return repo


def test_fixture_and_marker(pytester: pytest.Pytester, mine: Path) -> None:
    pytester.makepyfile(TEST_FILE)
    result = pytester.runpytest_subprocess("-q")
    result.assert_outcomes(passed=4)


def test_command_line_option(pytester: pytest.Pytester, mine: Path) -> None:
    pytester.makepyfile(
        """
        import tritonclient.http as httpclient

        def test_option(triton_server):
            client = httpclient.InferenceServerClient(triton_server.http_url)
            names = [m["name"] for m in client.get_model_repository_index()]
            assert names == ["simple_identity"]
            client.close()
        """
    )
    result = pytester.runpytest_subprocess("-q", f"--triton-model-repository={mine}")
    result.assert_outcomes(passed=1)
    pytester.makeini("[pytest]\ntriton_model_repository = mine\n")
    result = pytester.runpytest_subprocess("-q")
    result.assert_outcomes(passed=1)


def test_help_lists_the_option(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    result.stdout.fnmatch_lines(["*--triton-model-repository*"])


def test_serve(tmp_path: Path) -> None:
    import tritonclient.http as httpclient

    shutil.copytree(BUNDLED_MODELS / "simple_identity", tmp_path / "simple_identity")
    with serve(tmp_path) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_model_ready("simple_identity")
        client.close()
        url = server.http_url
    assert url and not server.http_url
    with pytest.raises(FileNotFoundError, match="not a directory"), serve(tmp_path / "missing"):
        pass
