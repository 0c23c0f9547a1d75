"""The network frontends of the server: each translates one wire to the core and back.

``http`` (KServe v2 REST and Triton's extensions, on aiohttp; ``http_generate`` the generate
extension, ``http_support`` what its handlers share), ``grpc`` (``inference.GRPCInferenceService``
and the gRPC health service, on grpc.aio; ``grpc_stream`` one ``ModelStreamInfer`` call,
``grpc_support`` what its handlers share), ``metrics`` (the Prometheus metrics port), and
``_delivery`` (responses moved from model threads onto the frontends' event loop).  Inference
goes through the core's dataplane (:mod:`mock_server.core.dataplane`); everything else is a
call of :class:`~mock_server.core.server.CoreServer`.  Nothing here is imported by the core or
the in-process API; :mod:`mock_server.app` starts the frontends.
"""
