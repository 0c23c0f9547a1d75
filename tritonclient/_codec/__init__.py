"""Sans-I/O protocol codecs shared by the clients and the bundled server.

Each submodule holds one protocol's mapping between tensors and the wire, as pure functions
with no I/O: ``http`` (JSON + binary tensor extension bodies) and ``grpc``
(``ModelInferRequest``/``ModelInferResponse``).  Import the submodule you need; this package
imports nothing by itself.
"""
