"""Transports: what moves a client's bytes, one object per engine.

Each client is its protocol's shared call logic plus one transport: ``gevent``
(:class:`~tritonclient._transport.gevent.GeventTransport`, the sync HTTP client, with its lean
path on blocking sockets in ``blocking``), ``aiohttp``
(:class:`~tritonclient._transport.aiohttp.AiohttpTransport`, the asyncio HTTP client, with its
lean path on asyncio protocols in ``asyncio_http``; both lean paths write and parse HTTP/1.1
with ``http11``),
``grpc`` (:class:`~tritonclient._transport.grpc.GrpcTransport` and
:class:`~tritonclient._transport.grpc.GrpcAioTransport`).  HTTP transports take an
:class:`~tritonclient._transport.http.HttpCall` and give back an
:class:`~tritonclient._transport.http.HttpReply`; gRPC transports take encoded requests and
give back the responses' bytes.  Every failure is an ``InferenceServerException`` subclass.
Retries are not a transport's business: :mod:`tritonclient._retry` drives them.
"""
