"""Transports: what moves a client's bytes, one object per engine.

Each client is its protocol's shared call logic plus one transport: ``gevent``
(:class:`~tritonclient._transport.gevent.GeventTransport`, the sync HTTP client), ``aiohttp``
(:class:`~tritonclient._transport.aiohttp.AiohttpTransport`, the asyncio HTTP client),
``grpc`` (:class:`~tritonclient._transport.grpc.GrpcTransport` and
:class:`~tritonclient._transport.grpc.GrpcAioTransport`).  HTTP transports take an
:class:`~tritonclient._transport.http.HttpCall` and give back an
:class:`~tritonclient._transport.http.HttpReply`; gRPC transports take encoded requests and
give back the responses' bytes.  Every failure is an ``InferenceServerException`` subclass.
Retries are not a transport's business: :mod:`tritonclient._retry` drives them.
"""
