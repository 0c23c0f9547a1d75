"""The dataplane: one inference request from its decoded form through the core and back.

Both frontends, and both HTTP endpoints that run a model (``/infer``, ``/generate``), hand their
requests to the core here, so that what an inference does besides the wire is written once:

1. A frontend takes a request's :meth:`Dataplane.holds` first: while the codec decodes the
   request, inputs placed in shared memory are resolved and checked through its
   ``read_input`` (the codec's ``shm_resolver``), which holds their regions.
2. :meth:`Dataplane.prepare` checks, before the model runs, that every output placed in shared
   memory can be written there, and builds the core's :class:`~mock_server.core.types.
   InferRequest` (with the parameters a frontend forwards from headers); :meth:`Dataplane.
   submit` queues it in the core, and its responses go to the caller's callback, on whichever
   thread produced them.
3. :meth:`Dataplane.reply` writes a response's outputs placed in shared memory and returns the
   protocol-neutral :class:`Reply`, which each frontend encodes in its wire form.
4. Once the request is done (its last response encoded, or it failed before running), the
   frontend calls :meth:`Call.release` (or the holds' ``release``): a region unregistered
   while the request held it is released then (see :class:`~mock_server.core.shm.
   RegionHolds`).

What stays with the frontends is their protocol's own: decoding and encoding, which thread
moves a response onto their event loop, and which response answers a request that is not
decoupled (HTTP answers with the first error or the response with outputs, gRPC's unary call
counts the responses before the final one, as Triton's two frontends do).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tritonclient._codec.types import DecodedInferRequest, ParamValue, SharedMemoryRef

from .shm import RegionHolds
from .types import InferRequest, InferResponse

if TYPE_CHECKING:
    from .server import CoreServer

__all__ = ["Call", "Dataplane", "Forwarded", "Reply"]

#: Parameters forwarded from a request's headers, or the function that reads them.
Forwarded = dict[str, ParamValue] | Callable[[], dict[str, ParamValue]]


@dataclass(frozen=True)
class Reply:
    """A response as both protocols encode it.

    Attributes
    ----------
    response : InferResponse
        The core's response.
    shm_outputs : dict of str to SharedMemoryRef
        The outputs written to shared memory, by name: their region, offset and the bytes
        written (their data is not in the response's body).
    """

    response: InferResponse
    shm_outputs: dict[str, SharedMemoryRef]


@dataclass(frozen=True)
class Call:
    """A request submitted through the dataplane.

    Attributes
    ----------
    request : InferRequest
        The core's request (cancel it with :meth:`cancel`).
    placements : dict of str to SharedMemoryRef
        Where the client placed outputs in shared memory, by output name.
    holds : RegionHolds
        The shared-memory regions the request's tensors lie in, held until :meth:`release`.
    """

    request: InferRequest
    placements: dict[str, SharedMemoryRef]
    holds: RegionHolds

    def cancel(self) -> None:
        """Stop the request (the client went away): models see ``is_cancelled()``."""
        self.request.cancel()

    def release(self) -> None:
        """The request is done: let go of its shared-memory regions (once)."""
        self.holds.release()


class Dataplane:
    """Runs decoded inference requests on a core (see the module's steps).

    Parameters
    ----------
    core : CoreServer
        The core the requests run on.
    """

    def __init__(self, core: CoreServer) -> None:
        self.core = core

    def holds(self) -> RegionHolds:
        """The holds of one new request: its ``read_input`` is the codec's ``shm_resolver``
        (each input's region looked up and bounds-checked as Triton does, then a view or a
        copy of it, see :meth:`~mock_server.core.shm.SharedMemoryRegistry.read`)."""
        return self.core.shm.holds()

    def prepare(
        self,
        decoded: DecodedInferRequest,
        forwarded: Forwarded | None = None,
        holds: RegionHolds | None = None,
    ) -> Call:
        """Check where outputs go, then build the core's request for ``decoded``.

        Parameters
        ----------
        decoded : DecodedInferRequest
            The request, as the codec decoded it (inputs resolved through ``holds``).
        forwarded : dict or callable, optional
            Parameters forwarded from the request's headers (they win over the request's own),
            or the function that reads them from the headers: it is called after the output
            checks, in the order Triton's frontends check a request.
        holds : RegionHolds, optional
            The holds the inputs were resolved with (a new one by default); the outputs'
            regions are held in it too.

        Returns
        -------
        Call
            The request, ready for :meth:`submit`.

        Raises
        ------
        ServerError
            When an output's shared-memory placement is unknown or too small, or a forwarded
            header is reserved.
        """
        holds = holds if holds is not None else self.holds()
        holds.check_outputs(o.shared_memory for o in decoded.outputs)
        parameters = forwarded() if callable(forwarded) else forwarded
        return Call(
            InferRequest.from_decoded(decoded, parameters), decoded.output_placements(), holds
        )

    def submit(self, call: Call, on_response: Callable[[InferResponse], None]) -> None:
        """Queue ``call`` in the core.

        Parameters
        ----------
        call : Call
            From :meth:`prepare`.
        on_response : callable
            Called with each response, in order, on the thread that produced it (possibly
            before this method returns); the last one is final.

        Raises
        ------
        ServerError
            When the model is unknown or not ready, or the request is invalid; nothing is
            queued then, ``on_response`` is not called and the call is released.
        """
        call.request.response_callback = on_response
        try:
            self.core.infer(call.request)
        except BaseException:
            call.release()
            raise

    def reply(self, call: Call, response: InferResponse) -> Reply:
        """Write ``response``'s outputs the request placed in shared memory; return what both
        protocols encode.

        Raises
        ------
        ServerError
            When an output does not fit its placement, or its region went away or shrank.
        """
        placements = call.placements
        if not placements:
            return Reply(response, {})
        return Reply(response, self.core.shm.write_outputs(response.outputs, placements))
