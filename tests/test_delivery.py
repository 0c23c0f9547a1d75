"""The hand-off of responses from model threads to a frontend's loop
(mock_server.frontends._delivery)."""

from __future__ import annotations

import asyncio
import sys
import threading

import pytest

from mock_server.app import _new_event_loop
from mock_server.frontends._delivery import Delivery, Responses, delivery_for


def count_wakes(loop: asyncio.AbstractEventLoop) -> list[None]:
    """Count the loop's wake-ups from now on: one entry per ``call_soon_threadsafe``."""
    wakes: list[None] = []
    real = loop.call_soon_threadsafe

    def counting(callback, *args):  # type: ignore[no-untyped-def]
        wakes.append(None)
        return real(callback, *args)

    loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
    return wakes


def test_calls_from_many_threads_all_arrive_in_each_threads_order() -> None:
    async def main() -> dict[int, list[int]]:
        loop = asyncio.get_running_loop()
        delivery = Delivery(loop)
        seen: dict[int, list[int]] = {t: [] for t in range(4)}
        done = asyncio.Event()
        total = 4 * 2000

        def record(thread: int, n: int) -> None:
            seen[thread].append(n)
            if sum(len(v) for v in seen.values()) == total:
                done.set()

        def produce(thread: int) -> None:
            for n in range(2000):
                delivery.call(record, thread, n)

        threads = [threading.Thread(target=produce, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        await asyncio.wait_for(done.wait(), 30)
        for t in threads:
            t.join()
        return seen

    seen = asyncio.run(main())
    for values in seen.values():
        assert values == list(range(2000))


def test_a_burst_wakes_the_loop_once() -> None:
    async def main() -> int:
        loop = asyncio.get_running_loop()
        delivery = Delivery(loop)
        wakes = count_wakes(loop)
        got: list[int] = []
        thread = threading.Thread(target=lambda: [delivery.call(got.append, i) for i in range(100)])
        thread.start()
        thread.join()  # the loop is not running meanwhile: the whole burst waits for one drain
        while len(got) < 100:
            await asyncio.sleep(0.01)
        assert got == list(range(100))
        return len(wakes)

    assert asyncio.run(main()) == 1


def test_a_failing_callback_does_not_strand_the_rest(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> list[int]:
        delivery = Delivery(asyncio.get_running_loop())
        got: list[int] = []

        def boom() -> None:
            raise RuntimeError("boom")

        delivery.call(got.append, 1)
        delivery.call(boom)
        delivery.call(got.append, 2)
        while len(got) < 2:
            await asyncio.sleep(0.01)
        return got

    assert asyncio.run(main()) == [1, 2]
    assert "delivering a response failed" in caplog.text


def test_a_closed_loop_drops_calls() -> None:
    loop = asyncio.new_event_loop()
    delivery = Delivery(loop)
    loop.close()
    delivery.call(print, "never")  # no exception: nobody waits any more
    delivery.call(print, "never")


def test_responses_are_awaited_in_order() -> None:
    async def main() -> list[int]:
        responses: Responses[int] = Responses(delivery_for(asyncio.get_running_loop()))
        thread = threading.Thread(target=lambda: [responses.put(i) for i in range(50)])
        thread.start()
        got = [await asyncio.wait_for(responses.get(), 30) for _ in range(50)]
        thread.join()
        return got

    assert asyncio.run(main()) == list(range(50))


def test_one_delivery_per_loop() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        assert delivery_for(loop) is delivery_for(loop)

    asyncio.run(main())


def test_threads_asking_at_once_get_the_same_delivery() -> None:
    """Stub readers and the loop ask for a loop's delivery from their own threads; two
    deliveries for one loop would be two queues, whose calls need not run in order."""
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # thread switches everywhere, between a lookup and its store too
    try:
        for _ in range(200):
            loop = asyncio.new_event_loop()
            try:
                got: list[Delivery] = []
                start = threading.Barrier(8)

                def ask(
                    loop: asyncio.AbstractEventLoop = loop,
                    got: list[Delivery] = got,
                    start: threading.Barrier = start,
                ) -> None:
                    start.wait(10)
                    got.append(delivery_for(loop))

                threads = [threading.Thread(target=ask) for _ in range(8)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join(10)
                assert len(got) == 8
                assert all(delivery is got[0] for delivery in got)
            finally:
                loop.close()
    finally:
        sys.setswitchinterval(switch)


def test_event_loop_choice() -> None:
    with pytest.raises(ValueError, match="unknown event loop"):
        _new_event_loop("trio")
    loop = _new_event_loop("asyncio")
    try:
        assert type(loop).__module__.startswith("asyncio")
    finally:
        loop.close()
    uvloop = pytest.importorskip("uvloop")
    for kind in ("auto", "uvloop"):
        loop = _new_event_loop(kind)
        try:
            assert isinstance(loop, uvloop.Loop)
        finally:
            loop.close()


def test_calls_made_on_the_loop_itself_need_no_wake_up() -> None:
    async def main() -> tuple[int, list[int]]:
        loop = asyncio.get_running_loop()
        delivery = Delivery(loop)
        wakes = count_wakes(loop)
        got: list[int] = []
        delivery.call(got.append, 0)  # the loop's thread is not known before a first drain
        while not got:
            await asyncio.sleep(0.01)
        for i in range(1, 4):  # a stub's reply read by the loop: delivered without a wake-up
            delivery.call(got.append, i)
            await asyncio.sleep(0)
        thread = threading.Thread(target=delivery.call, args=(got.append, 4))
        thread.start()  # another thread still wakes the loop
        thread.join()
        while len(got) < 5:
            await asyncio.sleep(0.01)
        return len(wakes), got

    wakes, got = asyncio.run(main())
    assert got == [0, 1, 2, 3, 4]
    assert wakes == 2


def test_run_on_the_loop_itself_runs_at_once_unless_a_call_is_queued_before_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Delivery.run: a result the loop's own thread produced (a stub's reply it read) is handed
    over at once; one from another thread, or behind a queued call, waits its turn."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        delivery = Delivery(loop)
        got: list[tuple[str, int]] = []
        me = threading.get_ident()

        def record(tag: str) -> None:
            got.append((tag, threading.get_ident()))

        delivery.run(record, "first")  # the loop's thread is not known before a first drain
        assert got == []
        while not got:
            await asyncio.sleep(0.01)

        delivery.run(record, "inline")
        assert got[-1] == ("inline", me)  # ran before this coroutine yielded

        def boom() -> None:
            raise RuntimeError("boom")

        delivery.run(boom)  # logged, not raised into the producer
        assert "delivering a response failed" in caplog.text

        # A call queued by another thread and not yet drained stays ahead of a later one.
        thread = threading.Thread(target=delivery.call, args=(record, "queued"))
        thread.start()
        thread.join()
        delivery.run(record, "after")
        assert [tag for tag, _ in got][-1] == "inline"
        while len(got) < 4:
            await asyncio.sleep(0.01)
        assert [tag for tag, _ in got] == ["first", "inline", "queued", "after"]
        assert all(ident == me for _, ident in got)

        # From another thread, run is call: it runs on the loop, not on the producer.
        thread = threading.Thread(target=delivery.run, args=(record, "other"))
        thread.start()
        thread.join()
        while len(got) < 5:
            await asyncio.sleep(0.01)
        assert got[-1] == ("other", me)

    asyncio.run(main())


def test_a_response_put_by_the_loop_itself_is_there_without_waiting() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        responses: Responses[int] = Responses(delivery_for(loop))
        responses.put(0)  # a first drain makes the loop's thread known
        assert await asyncio.wait_for(responses.get(), 30) == 0
        responses.put(1)  # e.g. the loop read the stub's reply while submitting the request
        step = responses.get().__await__()
        with pytest.raises(StopIteration) as finished:
            step.send(None)  # completes without suspending
        assert finished.value.value == 1

    asyncio.run(main())
