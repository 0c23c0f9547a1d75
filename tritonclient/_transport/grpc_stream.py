"""The user's ``ModelStreamInfer`` streams: the sync client's ``start_stream`` (a request queue
and a thread giving each response to a callback) and the asyncio client's ``stream_infer`` (an
async iterator of the responses).

What goes on the stream and what a response means are the client's: it gives these classes
``parse`` (a response's bytes to the parsed message, :func:`tritonclient.grpc._common.parse_stream`)
and ``item`` (the parsed message to the ``(result, error)`` pair the user gets,
:func:`tritonclient.grpc._common.stream_item`).  These classes own the call: its thread or
reads, the requests still waiting for their final response
(:class:`~tritonclient._codec.grpc_client.StreamLedger`), and how each way the stream can end
reaches the user, once.  The unary inferences carried over a stream the client keeps open
(``infer_over_stream``) are :mod:`tritonclient._transport.grpc_infer_stream`.
"""

from __future__ import annotations

import asyncio
import queue
import sys
import threading
import time
import traceback
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Any

import grpc
import grpc.aio

from tritonclient._codec import grpc_client
from tritonclient.utils import InferenceServerException, raise_error
from tritonclient.utils._errors import with_note

from .grpc import cancelled_error, error_from_rpc, error_of_call

__all__ = ["CallbackStream", "ResponseIterator", "StreamState"]

#: ``callback(result=..., error=...)`` of the sync client's stream.
Callback = Callable[..., Any]
#: A stream response's bytes to the parsed message (raises ``InferenceServerException`` for
#: bytes that do not parse: the stream cannot go on).
Parse = Callable[[bytes], Any]
#: A parsed response to the ``(result, error)`` pair given to the user.
Item = Callable[[Any], tuple[Any, InferenceServerException | None]]

#: The grace after a stream's own deadline (``stream_timeout``) that closing it gives gRPC to
#: end it, before it cancels it.
_DEADLINE_GRACE = 1.0
#: How long closing a stream waits for its thread once the call is cancelled.
_CANCEL_WAIT = 5.0


def _pending_note(
    error: InferenceServerException, ledger: grpc_client.StreamLedger
) -> InferenceServerException:
    """``error`` with a note naming the requests still without their final response."""
    pending = ledger.pending()
    return with_note(error, pending and f"requests without a final response: {pending}")


class CallbackStream:
    """One ``ModelStreamInfer`` call: a request queue and a thread delivering responses.

    Every failure reaches the callback once: a message that does not parse or a server that
    ends the stream early ends it with one error (the call is cancelled); a failed call gives
    its status; nothing is delivered after that.

    Parameters
    ----------
    callback : callable
        ``callback(result=..., error=...)``, called for each response from the thread.
    verbose : bool
        Print each response and the stream's start and stop.
    parse, item : callable
        The client's reading of a response (see the module's docstring).
    """

    def __init__(self, callback: Callback, verbose: bool, parse: Parse, item: Item) -> None:
        self._callback = callback
        self._verbose = verbose
        self._parse, self._item = parse, item
        # SimpleQueue: C locking, no Python Condition per put and get (a stream of small
        # requests is mostly that).
        self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._call: Any = None
        self._thread: threading.Thread | None = None
        self._ledger = grpc_client.StreamLedger()
        self._deadline: float | None = None
        self._active = True
        self._closed = False
        self._failed = False

    def start(self, method: Any, metadata: Any, timeout: float | None, compression: Any) -> None:
        """Open the call with ``method`` (the transport's ``stream``) and start the thread."""
        if timeout is not None:
            self._deadline = time.monotonic() + timeout
        # The queue's own iterator (C, no generator frame per request) until the None that
        # closes the sending side.
        self._call = method(
            iter(self._queue.get, None),
            metadata=metadata,
            timeout=timeout,
            compression=compression,
        )
        self._thread = threading.Thread(
            target=self._process_responses, name="tritonclient-grpc-stream", daemon=True
        )
        self._thread.start()
        if self._verbose:
            print("stream started...")

    def enqueue(self, data: bytes, request_id: str, enable_empty_final_response: bool) -> None:
        """Send a request's wire bytes on the stream.

        Raises
        ------
        InferenceServerException
            If the stream is stopped or has failed.
        """
        if self._closed:
            raise_error("the stream is stopped; start a new stream with start_stream()")
        if not self._active:
            raise_error(
                "The stream is no longer in valid state, the error detail is reported through "
                "provided callback. A new stream should be started after stopping the current "
                "stream."
            )
        self._ledger.sent(request_id, enable_empty_final_response)
        self._queue.put(data)

    def _deliver(self, result: Any, error: InferenceServerException | None) -> None:
        try:
            self._callback(result=result, error=error)
        except Exception:
            # A failing callback must not kill the stream: report it and go on.
            print("Exception in the stream callback (the stream goes on):", file=sys.stderr)
            traceback.print_exc()

    def _fail(self, error: InferenceServerException) -> None:
        """End the stream with ``error``: cancel the call and tell the callback, once."""
        self._active = False
        if self._failed:
            return
        self._failed = True
        if self._call is not None:
            self._call.cancel()
        self._deliver(None, error)

    def _process_responses(self) -> None:
        try:
            for data in self._call:
                parsed = self._parse(data)
                if self._verbose:
                    print(parsed[0])
                self._ledger.received(parsed[0])
                self._deliver(*self._item(parsed))
        except grpc.RpcError as rpc_error:
            self._fail(_pending_note(error_of_call(rpc_error), self._ledger))
        except InferenceServerException as error:  # a message that does not parse
            self._fail(error)
        except Exception as unexpected:  # never end the thread without telling the callback
            self._fail(InferenceServerException(f"the stream failed in the client: {unexpected!r}"))
        else:
            ended = self._ledger.ended(self._closed, "stop_stream() was called")
            if ended is not None:
                self._fail(ended)
        finally:
            self._active = False
            self._queue.put(None)  # release the request consumer if it still waits

    def close(
        self,
        cancel_requests: bool,
        timeout: float | None = None,
        wait: bool = True,
        default_timeout: float = 60.0,
    ) -> None:
        """Close the client's side of the stream and wait (bounded) for the server to end it.

        Parameters
        ----------
        cancel_requests : bool
            Cancel the call at once instead of waiting for the pending requests.
        timeout : float, optional
            The longest wait for the pending requests, then the call is cancelled. None: until
            the stream's own deadline (and a grace) when it has one, else
            ``default_timeout``.
        wait : bool, optional
            False: cancel and return without joining the thread (garbage collection).
        default_timeout : float, optional
            The wait of a stream without a deadline (the client's ``STOP_STREAM_TIMEOUT``).
        """
        if self._closed:
            return
        self._closed = True
        if (cancel_requests or not wait) and self._call is not None:
            self._call.cancel()
        self._queue.put(None)  # half-close: the server ends the stream once all is done
        thread = self._thread
        if not wait or thread is None or thread is threading.current_thread():
            return
        if timeout is None:
            if self._deadline is None:
                timeout = default_timeout
            else:
                timeout = max(self._deadline - time.monotonic(), 0.0) + _DEADLINE_GRACE
        thread.join(timeout)
        if thread.is_alive() and self._call is not None:
            # The server did not end the stream in time (stalled): cancel it; the callback
            # gets the CANCELLED error, naming what was still pending.
            self._call.cancel()
            thread.join(_CANCEL_WAIT)
        if self._verbose:
            print("stream stopped...")


class StreamState:
    """What the request side of an ``aio`` stream tells its response side."""

    def __init__(self) -> None:
        self.ledger = grpc_client.StreamLedger()
        #: Exceptions raised by the caller's inputs iterator (reported instead of CANCELLED).
        self.failure: list[BaseException] = []
        #: Whether the inputs iterator ended (the client closed its side of the stream).
        self.done_sending = False

    async def requests(
        self,
        inputs_iterator: AsyncIterable[dict[str, Any]],
        encode: Callable[[Any], bytes],
        verbose: bool,
    ) -> AsyncIterator[bytes]:
        """The stream's requests: each dict of ``inputs_iterator`` as ``encode`` writes it,
        noted in the ledger; what the iterator raises is kept for the response side."""
        try:
            async for item in inputs_iterator:
                parts = encode(item)
                if verbose:
                    print(f"stream_infer\n{parts[0]}")
                self.ledger.sent(
                    item.get("request_id", ""), bool(item.get("enable_empty_final_response"))
                )
                yield parts
        except Exception as error:
            self.failure.append(error)
            raise
        self.done_sending = True


#: Python 3.10 has no ``Task.cancelling()``.
_NO_CANCELLING = sys.version_info < (3, 11)


def _task_cancelling() -> bool:
    """Whether the running task is being cancelled (Python >= 3.11; False before)."""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)
    return bool(cancelling is not None and cancelling())


class ResponseIterator:
    """The async iterator of (result, error) pairs returned by ``stream_infer``.

    A failure of the stream (its status, a message that does not parse, a server ending it
    early) is raised once, as an ``InferenceServerException``; iteration then ends.

    Parameters
    ----------
    call : grpc.aio.StreamStreamCall
        The stream.
    state : StreamState
        What its request side tells.
    verbose : bool
        Print each response.
    parse, item : callable
        The client's reading of a response (see the module's docstring).
    """

    def __init__(
        self, call: Any, state: StreamState, verbose: bool, parse: Parse, item: Item
    ) -> None:
        self._call = call
        self._state = state
        self._verbose = verbose
        self._parse, self._item = parse, item
        self._cancelled = False
        self._finished = False

    def __aiter__(self) -> ResponseIterator:
        return self

    def _end(self, error: BaseException | None) -> BaseException:
        """Finish the iteration with ``error`` (the inputs iterator's own first), once.

        After :meth:`cancel` succeeded it is ``asyncio.CancelledError``, as NVIDIA's
        iterator raises it (grpc.aio's read of a cancelled call); later reads end the
        iteration."""
        self._finished = True
        if self._cancelled:
            return asyncio.CancelledError()
        if self._state.failure:
            return self._state.failure[0]
        if error is None:
            return StopAsyncIteration()
        return error

    async def __anext__(self) -> tuple[Any, InferenceServerException | None]:
        if self._finished:
            raise StopAsyncIteration
        try:
            data = await self._call.read()
        except asyncio.CancelledError:
            if _task_cancelling():
                raise  # the caller's task is cancelled: let it go
            if _NO_CANCELLING and not (
                self._state.failure or self._cancelled or self._call.cancelled()
            ):
                raise  # Python 3.10 cannot tell the caller's cancellation from the call's
            # The call was cancelled under the iterator (the client was closed).
            raise self._end(
                cancelled_error("the stream was cancelled (the client was closed)")
            ) from None
        except grpc.RpcError as rpc_error:
            raise self._end(_pending_note(error_from_rpc(rpc_error), self._state.ledger)) from None
        if data is grpc.aio.EOF:
            raise self._end(
                self._state.ledger.ended(
                    self._state.done_sending, "the inputs iterator was exhausted"
                )
            )
        try:
            parsed = self._parse(data)
        except InferenceServerException as error:
            self._call.cancel()
            raise self._end(error) from None
        if self._verbose:
            print(parsed[0])
        self._state.ledger.received(parsed[0])
        return self._item(parsed)

    def cancel(self) -> bool:
        """Cancel the stream and every request still running on it; the next read of the
        iterator then raises ``asyncio.CancelledError`` (as NVIDIA's), and iteration ends.

        Returns
        -------
        bool
            True if the stream was cancelled, False if it had already finished (the
            responses it received can still be read).
        """
        cancelled = bool(self._call.cancel())
        if cancelled and not self._finished:
            self._cancelled = True
        return cancelled
