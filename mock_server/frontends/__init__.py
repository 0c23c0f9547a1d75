"""The network frontends of the server: each translates one wire to the core and back.

HTTP (KServe v2 REST and Triton's extensions, on aiohttp): ``http`` (the frontend: routing and
the control endpoints), ``http_infer`` (``/infer``), ``http_generate`` (``/generate``,
``/generate_stream``), ``http_support`` (statuses, error responses, request bodies).  gRPC
(``inference.GRPCInferenceService`` and the health service, on grpc.aio): ``grpc`` (the
service), ``grpc_infer`` (``ModelInfer``, ``ModelStreamInfer``; one stream's state
``grpc_stream``), ``grpc_control`` (repository, shared memory, trace, logging),
``grpc_support``.  ``metrics`` is the Prometheus metrics port, ``groups`` the restricted API
groups, ``_delivery`` how responses move from model threads onto the frontends' event loop.

Inference goes through the core's dataplane (:mod:`mock_server.core.dataplane`); everything
else is a call of :class:`~mock_server.core.server.CoreServer`.  Nothing here is imported by the
core, the in-process API or a backend; :mod:`mock_server.app` starts the frontends.
"""
