"""Clients over several replicas, against three real ``mock_server`` processes (and a fourth
whose readiness fails): spread, a replica killed mid-run and started again, draining,
sticky sequences, refusals; HTTP and gRPC, sync and asyncio.

What the servers counted (their inference statistics, read with a single-url client) is the
ground truth: a call answered twice, or replayed silently, would show there.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as grpcaio
import tritonclient.http as httpclient
import tritonclient.http.aio as httpaio
from tests.replicas import Replica
from tritonclient.utils import (
    BalancingPolicy,
    InferenceServerConnectionError,
    InferenceServerException,
    InferenceServerUnavailableError,
    RetryPolicy,
)

pytestmark = pytest.mark.timeout(300)

#: Fast ejection and probes, so that the tests take seconds.
FAST = BalancingPolicy(health_check_interval=0.2, ejection_time=0.2, max_ejection_time=1.0)
RETRY = RetryPolicy(max_attempts=4, initial_backoff=0.01, max_backoff=0.05)
RETRY_INFER = RetryPolicy(max_attempts=4, initial_backoff=0.01, max_backoff=0.05, retry_infer=True)
WAIT = 20.0  # bound of every wait for a state change


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Replica]]:
    root = tmp_path_factory.mktemp("replicas")
    started: list[Replica] = []
    try:
        for i in range(3):
            started.append(Replica(root / f"r{i}").start())
        yield started
    finally:
        for replica in started:
            replica.stop()


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replica]:
    replica = Replica(tmp_path_factory.mktemp("broken"), broken=True).start()
    try:
        yield replica
    finally:
        replica.stop()


@pytest.fixture
def all_up(replicas: list[Replica]) -> Iterator[list[Replica]]:
    """The three replicas, each running (a test that killed one has it started again)."""
    for replica in replicas:
        if replica.process is None or replica.process.poll() is not None:
            replica.start()
    yield replicas
    for replica in replicas:
        if replica.process is None or replica.process.poll() is not None:
            replica.start()


def served(replica: Replica, model: str = "simple") -> int:
    """Successful inferences of ``model`` the replica counted (its own statistics)."""
    with httpclient.InferenceServerClient(replica.http, network_timeout=WAIT) as client:
        stats = client.get_inference_statistics(model)
    return int(stats["model_stats"][0]["inference_stats"]["success"].get("count", 0))


def counts(replicas: list[Replica]) -> list[int]:
    return [served(r) for r in replicas]


def http_inputs(module: Any, value: int) -> tuple[list[Any], np.ndarray]:
    data = np.full((1, 16), value, dtype=np.int32)
    inputs = [
        module.InferInput("INPUT0", [1, 16], "INT32"),
        module.InferInput("INPUT1", [1, 16], "INT32"),
    ]
    for each in inputs:
        each.set_data_from_numpy(data)
    return inputs, data


def check_sum(result: Any, data: np.ndarray) -> None:
    """The answer is the one to *this* call (its own inputs), not another call's."""
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data + data)


def within(spread: list[int], total: int, tolerance: float) -> bool:
    share = total / len(spread)
    return all(abs(n - share) <= tolerance * share for n in spread)


def wait_for(condition: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.05)


# -- HTTP, sync ---------------------------------------------------------------------------------


def test_http_round_robin_spreads_evenly(all_up: list[Replica]) -> None:
    before = counts(all_up)
    with httpclient.InferenceServerClient([r.http for r in all_up]) as client:
        for i in range(300):
            inputs, data = http_inputs(httpclient, i)
            check_sum(client.infer("simple", inputs), data)
        stats = client.replica_stats()
    spread = [a - b for a, b in zip(counts(all_up), before, strict=True)]
    assert spread == [100, 100, 100]  # round robin, nobody out: exact
    assert [s.requests for s in stats] == [100, 100, 100]
    assert [s.address for s in stats] == [r.http for r in all_up]
    assert all(s.in_service and s.failures == 0 and s.outstanding == 0 for s in stats)


def test_http_generate_streams_each_stay_on_one_replica(all_up: list[Replica]) -> None:
    """generate_stream over a url list: each stream is read whole from the replica it was
    opened on (its events in order), and the streams are spread like other calls."""
    before = [served(r, "vllm_model") for r in all_up]
    payload = {
        "text_input": "one two",
        "stream": True,
        "max_tokens": 4,
        "exclude_input_in_output": True,
    }
    with httpclient.InferenceServerClient([r.http for r in all_up]) as client:
        expected = client.generate("vllm_model", {**payload, "stream": False})["text_output"]
        texts = ["".join(e["text_output"] for e in client.generate_stream("vllm_model", payload))]
        texts += [
            "".join(e["text_output"] for e in client.generate_stream("vllm_model", payload))
            for _ in range(5)
        ]
        stats = client.replica_stats()
    assert texts == [expected] * 6
    spread = [served(r, "vllm_model") - b for r, b in zip(all_up, before, strict=True)]
    assert sorted(spread) == [2, 2, 3]  # 7 calls, round robin
    assert sum(s.requests for s in stats) == 7


async def _aio_generate_streams(urls: list[str]) -> list[str]:
    payload = {
        "text_input": "one two",
        "stream": True,
        "max_tokens": 4,
        "exclude_input_in_output": True,
    }
    async with httpaio.InferenceServerClient(urls) as client:
        texts = []
        for _ in range(3):
            stream = client.generate_stream("vllm_model", payload)
            texts.append("".join([e["text_output"] async for e in stream]))
        return texts


def test_http_aio_generate_streams_over_replicas(all_up: list[Replica]) -> None:
    before = [served(r, "vllm_model") for r in all_up]
    texts = asyncio.run(_aio_generate_streams([r.http for r in all_up]))
    assert len(set(texts)) == 1 and texts[0]
    spread = [served(r, "vllm_model") - b for r, b in zip(all_up, before, strict=True)]
    assert spread == [1, 1, 1]


def test_http_least_outstanding_spreads_8_in_flight(all_up: list[Replica]) -> None:
    before = counts(all_up)
    client = httpclient.InferenceServerClient(
        [r.http for r in all_up], load_balancing="least_outstanding"
    )

    def one(i: int) -> None:
        inputs, data = http_inputs(httpclient, i)
        check_sum(client.infer("simple", inputs), data)

    with client, ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(480)))
    spread = [a - b for a, b in zip(counts(all_up), before, strict=True)]
    assert sum(spread) == 480
    assert within(spread, 480, 0.5), spread


def test_http_replica_killed_mid_run(all_up: list[Replica]) -> None:
    """Idempotent calls (metadata, and infer marked safe to repeat) all succeed while a
    replica is killed under them, each answered once; the replica is ejected, started
    again, probed and taken back."""
    client = httpclient.InferenceServerClient(
        [r.http for r in all_up], retry_policy=RETRY_INFER, load_balancing=FAST
    )
    before = counts(all_up)
    done = []
    lock = threading.Lock()
    killed = threading.Event()

    def one(i: int) -> None:
        if i == 150:
            all_up[1].kill()
            killed.set()
        if i % 5 == 0:
            assert client.get_model_metadata("simple")["name"] == "simple"
            return
        inputs, data = http_inputs(httpclient, i)
        check_sum(client.infer("simple", inputs), data)
        with lock:
            done.append(i)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(600)))  # any failure is raised here
    assert killed.is_set()
    assert sorted(done) == sorted(set(done)) and len(done) == 480
    stats = client.replica_stats()
    assert stats[1].ejections >= 1 and stats[1].failures >= 1 and not stats[1].in_service
    after = [served(all_up[0]), served(all_up[2])]
    # Every inference was answered by a live replica, or by the killed one before it died
    # (a call in flight when it died may have run there too: that is what retry_infer
    # accepts); the live ones ran each retried call once.
    live = after[0] - before[0] + after[1] - before[2]
    assert live + stats[1].requests - stats[1].failures >= len(done)

    # Started again on the same ports: probed and taken back.
    all_up[1].start()
    back = served(all_up[1])

    def taken_back() -> bool:
        inputs, data = http_inputs(httpclient, 7)
        check_sum(client.infer("simple", inputs), data)
        return served(all_up[1]) > back

    wait_for(taken_back, "the restarted replica takes calls again")
    assert client.replica_stats()[1].in_service
    client.close()


def test_http_non_idempotent_call_fails_naming_the_replica(all_up: list[Replica]) -> None:
    with httpclient.InferenceServerClient(
        [r.http for r in all_up], retry_policy=RETRY, load_balancing=FAST
    ) as client:
        for i in range(3):  # a connection to each replica in the pool
            client.infer("simple", http_inputs(httpclient, i)[0])
        before = counts([all_up[0], all_up[2]])
        all_up[1].kill()
        failures = []
        answered = 0
        for i in range(6):
            inputs, data = http_inputs(httpclient, i)
            try:
                check_sum(client.infer("simple", inputs), data)
                answered += 1
            except InferenceServerConnectionError as error:
                failures.append(str(error))
        # Not retried (infer is not marked safe to repeat): exactly one call hit the dead
        # replica and failed, naming it; the others went to live replicas, once each.
        assert len(failures) == 1, failures
        assert f"replica {all_up[1].http}" in failures[0]
        assert answered == 5
        after = counts([all_up[0], all_up[2]])
        assert sum(after) - sum(before) == 5
        # Idempotent calls still succeed: retried on a live replica if need be.
        assert client.is_server_ready()
        assert client.get_model_metadata("simple")["name"] == "simple"


def test_http_replica_failing_readiness_is_drained(all_up: list[Replica], broken: Replica) -> None:
    urls = [all_up[0].http, all_up[1].http, broken.http]
    with httpclient.InferenceServerClient(urls, load_balancing=FAST) as client:
        inputs, data = http_inputs(httpclient, 3)
        check_sum(client.infer("simple", inputs), data)  # starts the first probes
        wait_for(lambda: not client.replica_stats()[2].in_service, "the broken replica is out")
        sent = client.replica_stats()[2].requests
        for _ in range(60):
            check_sum(client.infer("simple", inputs), data)
        stats = client.replica_stats()
        assert stats[2].requests == sent  # nothing more went there
        assert stats[2].ejections == 1  # probed again and again, still the same ejection
        assert stats[0].requests + stats[1].requests >= 60


def test_http_sequences_stay_on_their_replica(all_up: list[Replica]) -> None:
    def step(client: Any, sequence: int, value: int, start: bool, end: bool) -> int:
        data = np.array([[value]], dtype=np.int32)
        each = httpclient.InferInput("INPUT", [1, 1], "INT32")
        each.set_data_from_numpy(data)
        result = client.infer(
            "simple_sequence",
            [each],
            sequence_id=sequence,
            sequence_start=start,
            sequence_end=end,
        )
        return int(result.as_numpy("OUTPUT")[0][0])

    with httpclient.InferenceServerClient([r.http for r in all_up]) as client:
        # Interleaved: round robin would scatter them, and a replica that did not see a
        # sequence start refuses its next call ("must specify the START flag").
        for round_ in range(5):
            for sequence in (1001, 1002, 1003, 1004):
                value = sequence % 10 + round_
                got = step(client, sequence, value, round_ == 0, round_ == 4)
                assert got == value + (round_ == 0)  # simple_sequence: INPUT + START
        # A sequence whose replica goes away fails clearly; it is not moved.
        before = [served(r, "simple_sequence") for r in all_up]
        step(client, 2001, 1, True, False)
        after = [served(r, "simple_sequence") for r in all_up]
        pinned = next(i for i in range(3) if after[i] > before[i])  # where the sequence runs
        all_up[pinned].kill()
        with pytest.raises(InferenceServerException, match=f"replica {all_up[pinned].http}"):
            step(client, 2001, 2, False, False)
        with pytest.raises(InferenceServerUnavailableError, match="sequence 2001 runs on replica"):
            step(client, 2001, 3, False, True)
        # A new sequence starts on a live replica.
        assert step(client, 2002, 4, True, True) == 5  # INPUT + START


def test_http_shared_memory_registration_is_refused(all_up: list[Replica]) -> None:
    with httpclient.InferenceServerClient([r.http for r in all_up]) as client:
        with pytest.raises(InferenceServerException, match="registered per server"):
            client.register_system_shared_memory("region", "/key", 64)
        with pytest.raises(InferenceServerException, match="registered per server"):
            client.unregister_system_shared_memory()
        assert client.get_system_shared_memory_status() == []
    with httpclient.InferenceServerClient(all_up[0].http) as single:
        assert single.replica_stats() == []  # one server: as before, no counters


def test_http_url_list_checks() -> None:
    with pytest.raises(InferenceServerException, match="url list is empty"):
        httpclient.InferenceServerClient([])
    with pytest.raises(InferenceServerException, match="same base path"):
        httpclient.InferenceServerClient(["a:1/x", "b:2/y"])
    with pytest.raises(InferenceServerException, match="unknown load balancing policy"):
        httpclient.InferenceServerClient(["a:1", "b:2"], load_balancing="random")


# -- HTTP, asyncio ------------------------------------------------------------------------------


def test_http_aio_spread_kill_and_restart(all_up: list[Replica]) -> None:
    async def main() -> None:
        before = counts(all_up)
        client = httpaio.InferenceServerClient(
            [r.http for r in all_up], retry_policy=RETRY_INFER, load_balancing=FAST
        )
        semaphore = asyncio.Semaphore(8)

        async def one(i: int) -> None:
            async with semaphore:
                inputs, data = http_inputs(httpaio, i)
                check_sum(await client.infer("simple", inputs), data)

        await asyncio.gather(*(one(i) for i in range(240)))
        spread = [a - b for a, b in zip(counts(all_up), before, strict=True)]
        assert sum(spread) == 240 and within(spread, 240, 0.25), spread

        results = []

        async def killer() -> None:
            await asyncio.sleep(0.05)
            all_up[2].kill()

        async def two(i: int) -> None:
            async with semaphore:
                if i % 4 == 0:
                    assert (await client.get_model_config("simple"))["name"] == "simple"
                    return
                inputs, data = http_inputs(httpaio, i)
                check_sum(await client.infer("simple", inputs), data)
                results.append(i)

        await asyncio.gather(killer(), *(two(i) for i in range(400)))
        assert len(results) == len(set(results)) == 300
        assert not client.replica_stats()[2].in_service
        all_up[2].start()
        back = served(all_up[2])
        deadline = time.monotonic() + WAIT
        while served(all_up[2]) == back:
            assert time.monotonic() < deadline, "the restarted replica was not taken back"
            await one(1)
            await asyncio.sleep(0.02)
        await client.close()

    asyncio.run(main())


def test_http_aio_drain_and_sequences(all_up: list[Replica], broken: Replica) -> None:
    async def main() -> None:
        urls = [all_up[0].http, all_up[1].http, broken.http]
        async with httpaio.InferenceServerClient(urls, load_balancing=FAST) as client:
            inputs, data = http_inputs(httpaio, 1)
            check_sum(await client.infer("simple", inputs), data)
            deadline = time.monotonic() + WAIT
            while client.replica_stats()[2].in_service:
                assert time.monotonic() < deadline
                await client.is_server_live()
                await asyncio.sleep(0.05)
            sent = client.replica_stats()[2].requests
            for _ in range(30):
                check_sum(await client.infer("simple", inputs), data)
            assert client.replica_stats()[2].requests == sent
            for k in range(6):  # two replicas in service: scattered, the 2nd call fails
                each = httpaio.InferInput("INPUT", [1, 1], "INT32")
                each.set_data_from_numpy(np.array([[k + 1]], dtype=np.int32))
                result = await client.infer(
                    "simple_sequence",
                    [each],
                    sequence_id=77,
                    sequence_start=k == 0,
                    sequence_end=k == 5,
                )
                assert int(result.as_numpy("OUTPUT")[0][0]) == k + 1 + (k == 0)

    asyncio.run(main())


# -- gRPC ---------------------------------------------------------------------------------------


def grpc_inputs(module: Any, value: int) -> tuple[list[Any], np.ndarray]:
    return http_inputs(module, value)


def test_grpc_round_robin_spreads_and_counts(all_up: list[Replica]) -> None:
    before = counts(all_up)
    with grpcclient.InferenceServerClient([r.grpc for r in all_up]) as client:
        assert client.is_server_ready()
        wait_for(lambda: len([s for s in client.replica_stats() if s.in_service]) == 3, "3 READY")
        for i in range(300):
            inputs, data = grpc_inputs(grpcclient, i)
            check_sum(client.infer("simple", inputs), data)
        stats = client.replica_stats()
    spread = [a - b for a, b in zip(counts(all_up), before, strict=True)]
    assert sum(spread) == 300 and within(spread, 300, 0.1), spread
    assert sorted(s.address for s in stats) == sorted(r.grpc for r in all_up)
    assert all(s.requests >= 90 for s in stats), stats


def test_grpc_replica_killed_mid_run(all_up: list[Replica]) -> None:
    client = grpcclient.InferenceServerClient([r.grpc for r in all_up], retry_policy=RETRY_INFER)
    plain = grpcclient.InferenceServerClient([r.grpc for r in all_up], retry_policy=RETRY)
    for c in (client, plain):
        for i in range(6):
            c.infer("simple", grpc_inputs(grpcclient, i)[0])
    done = []
    plain_ok = []
    plain_failed: list[str] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        if i == 100:
            all_up[0].kill()
        if i % 5 == 0:
            assert client.get_model_metadata("simple").name == "simple"
            return
        inputs, data = grpc_inputs(grpcclient, i)
        if i % 5 == 1:  # not marked safe to repeat: succeeds or fails clearly, never replayed
            try:
                check_sum(plain.infer("simple", inputs), data)
                with lock:
                    plain_ok.append(i)
            except InferenceServerUnavailableError as error:
                with lock:
                    plain_failed.append(str(error))
            return
        check_sum(client.infer("simple", inputs), data)
        with lock:
            done.append(i)

    before = counts(all_up[1:])
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(500)))
    assert len(done) == len(set(done)) == 300
    assert len(plain_ok) + len(plain_failed) == 100
    after = counts(all_up[1:])
    # The live replicas ran at least every call that succeeded after the kill, and no
    # non-idempotent call more than once (gRPC only retries what never left the client).
    assert sum(after) - sum(before) <= len(done) + len(plain_ok)
    # Started again on the same ports: gRPC reconnects (backoff at most 10 s) and uses it.
    all_up[0].start()
    back = served(all_up[0])

    def taken_back() -> bool:
        client.infer("simple", grpc_inputs(grpcclient, 1)[0])
        return served(all_up[0]) > back

    wait_for(taken_back, "the restarted replica takes calls again", timeout=30)
    client.close()
    plain.close()


def test_grpc_replica_failing_readiness_gets_no_calls(
    all_up: list[Replica], broken: Replica
) -> None:
    before = served(broken)
    targets = [all_up[0].grpc, all_up[1].grpc, broken.grpc]
    with grpcclient.InferenceServerClient(targets) as client:
        for i in range(60):
            inputs, data = grpc_inputs(grpcclient, i)
            check_sum(client.infer("simple", inputs), data)
    # gRPC's health checking saw NOT_SERVING before the replica was ever used.
    assert served(broken) == before


def test_grpc_channel_args_win() -> None:
    from tritonclient._transport.grpc import channel_options, channel_target

    target, options = channel_target(["127.0.0.1:1", "127.0.0.1:2"])
    merged = dict(
        channel_options(
            None, [*options, ("grpc.lb_policy_name", "pick_first"), ("grpc.service_config", "{}")]
        )
    )
    assert target == "ipv4:127.0.0.1:1,127.0.0.1:2"
    assert merged["grpc.lb_policy_name"] == "pick_first"
    assert merged["grpc.service_config"] == "{}"
    assert dict(options)["grpc.max_reconnect_backoff_ms"] == 10_000
    assert channel_target("127.0.0.1:1") == ("127.0.0.1:1", [])  # one server: as before


def grpc_step(client: Any, sequence: int, value: int, start: bool, end: bool) -> int:
    item = grpcclient.InferInput("INPUT", [1, 1], "INT32")
    item.set_data_from_numpy(np.array([[value]], dtype=np.int32))
    result = client.infer(
        "simple_sequence", [item], sequence_id=sequence, sequence_start=start, sequence_end=end
    )
    return int(result.as_numpy("OUTPUT")[0][0])


def test_grpc_unary_sequences_stay_on_their_replica(all_up: list[Replica]) -> None:
    with grpcclient.InferenceServerClient([r.grpc for r in all_up]) as client:
        before = [served(r, "simple_sequence") for r in all_up]
        # Interleaved: gRPC's round robin would scatter them, and a replica that did not see
        # a sequence start refuses its next call ("must specify the START flag").
        for round_ in range(5):
            for sequence in (21, 22, 23):
                value = sequence + round_
                got = grpc_step(client, sequence, value, round_ == 0, round_ == 4)
                assert got == value + (round_ == 0)
        spread = [served(r, "simple_sequence") - b for r, b in zip(all_up, before, strict=True)]
        assert spread == [5, 5, 5]  # one sequence per replica, round robin at the start
        with pytest.raises(InferenceServerException, match="registered per server"):
            client.register_system_shared_memory("region", "/key", 64)
        # The replica of a sequence goes away: its next call fails naming it, not moved.
        before = [served(r, "simple_sequence") for r in all_up]
        grpc_step(client, 31, 1, True, False)
        after = [served(r, "simple_sequence") for r in all_up]
        home = next(i for i in range(3) if after[i] > before[i])
        all_up[home].kill()
        with pytest.raises(
            InferenceServerUnavailableError, match=f"replica {all_up[home].grpc} \\(sequence 31"
        ):
            grpc_step(client, 31, 2, False, True)
        assert grpc_step(client, 32, 4, True, True) == 5  # a new sequence: a live replica


def test_grpc_stream_sequences_stay_on_their_replica(all_up: list[Replica]) -> None:
    with grpcclient.InferenceServerClient([r.grpc for r in all_up]) as client:
        answers: list[Any] = []
        got = threading.Event()

        def callback(result: Any, error: Any) -> None:
            answers.append(error if error is not None else int(result.as_numpy("OUTPUT")[0][0]))
            if len(answers) == 20:
                got.set()

        client.start_stream(callback)
        expected = []
        for round_ in range(5):
            for sequence in (11, 12, 13, 14):
                value = sequence + round_
                expected.append(value + (round_ == 0))
                item = grpcclient.InferInput("INPUT", [1, 1], "INT32")
                item.set_data_from_numpy(np.array([[value]], dtype=np.int32))
                client.async_stream_infer(
                    "simple_sequence",
                    [item],
                    sequence_id=sequence,
                    sequence_start=round_ == 0,
                    sequence_end=round_ == 4,
                )
        assert got.wait(WAIT)
        client.stop_stream()
        assert answers == expected


def test_grpc_aio_spread_and_failover(all_up: list[Replica], broken: Replica) -> None:
    async def main() -> None:
        before = counts(all_up)
        broken_before = served(broken)
        targets = [r.grpc for r in all_up] + [broken.grpc]
        client = grpcaio.InferenceServerClient(targets, retry_policy=RETRY_INFER)
        semaphore = asyncio.Semaphore(8)
        results = []

        async def one(i: int) -> None:
            async with semaphore:
                inputs, data = grpc_inputs(grpcaio, i)
                check_sum(await client.infer("simple", inputs), data)
                results.append(i)

        await asyncio.gather(*(one(i) for i in range(240)))
        spread = [a - b for a, b in zip(counts(all_up), before, strict=True)]
        assert sum(spread) == 240 and within(spread, 240, 0.5), spread
        assert served(broken) == broken_before

        async def killer() -> None:
            await asyncio.sleep(0.05)
            all_up[1].kill()

        results.clear()
        await asyncio.gather(killer(), *(one(i) for i in range(240)))
        assert len(results) == len(set(results)) == 240
        assert (await client.get_model_metadata("simple")).name == "simple"
        for k in range(6):  # a sequence stays on one of the replicas left
            item = grpcaio.InferInput("INPUT", [1, 1], "INT32")
            item.set_data_from_numpy(np.array([[k]], dtype=np.int32))
            result = await client.infer(
                "simple_sequence", [item], sequence_id=9, sequence_start=k == 0, sequence_end=k == 5
            )
            assert int(result.as_numpy("OUTPUT")[0][0]) == k + (k == 0)
        assert len(client.replica_stats()) == 4
        await client.close()

    asyncio.run(main())


def test_grpc_sequence_replicas_of_each_target_form() -> None:
    from tritonclient._transport.grpc import pinned_args
    from tritonclient._transport.grpc_replicas import target_addresses

    assert target_addresses("ipv4:127.0.0.1:1,127.0.0.1:2") == ["127.0.0.1:1", "127.0.0.1:2"]
    assert target_addresses("ipv6:[::1]:5") == ["[::1]:5"]
    assert "127.0.0.1:8001" in target_addresses("dns:///localhost:8001")
    assert "127.0.0.1:8001" in target_addresses("dns:localhost:8001")
    with pytest.raises(InferenceServerException, match="cannot resolve"):
        target_addresses("dns:///no-such-host.invalid:8001")
    # A channel to one IP of a DNS name keeps the name for TLS; the user's setting wins.
    assert pinned_args("dns:///triton.ns:8001", None) == [
        ("grpc.ssl_target_name_override", "triton.ns")
    ]
    assert pinned_args("dns:///t:1", [("grpc.ssl_target_name_override", "x")]) == [
        ("grpc.ssl_target_name_override", "x")
    ]
    assert pinned_args(["127.0.0.1:1", "127.0.0.1:2"], None) == []


@pytest.fixture
def stalled() -> Iterator[str]:
    """``host:port`` of a listener that accepts connections and never answers."""
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections complete in the backlog; nothing ever reads them
    try:
        yield f"127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()


def test_http_replica_that_never_answers_its_probe_is_taken_out(
    all_up: list[Replica], stalled: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tritonclient._transport import replicas as replicas_module

    monkeypatch.setattr(replicas_module, "PROBE_TIMEOUT", 0.3)
    with httpclient.InferenceServerClient([all_up[0].http, stalled], load_balancing=FAST) as c:
        assert c.is_server_live()  # replica 0 answers; the first probes start
        wait_for(lambda: not c.replica_stats()[1].in_service, "the stalled replica is out")
        for _ in range(10):
            assert c.is_server_live()
        assert c.replica_stats()[1].requests == 0

    async def main() -> None:
        async with httpaio.InferenceServerClient(
            [all_up[0].http, stalled], load_balancing=FAST
        ) as ac:
            assert await ac.is_server_live()
            deadline = time.monotonic() + WAIT
            while ac.replica_stats()[1].in_service:
                assert time.monotonic() < deadline, "the stalled replica is still in service"
                await asyncio.sleep(0.05)
            for _ in range(10):
                assert await ac.is_server_live()
            assert ac.replica_stats()[1].requests == 0

    asyncio.run(main())
