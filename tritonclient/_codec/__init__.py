"""Sans-I/O protocol codecs shared by the clients and the bundled server, a package by role.

Pure functions and plain data, no I/O (the style of h11 and h2); every piece of protocol
knowledge is written once, here:

``types``         shared types: ``Buffer``, ``ParamValue``, ``SharedMemoryRef``, ``InferOptions``
``errors``        one error hierarchy (``CodecError``; ``HttpCodecError``, ``GrpcCodecError``)
``numbers``       integers read as Triton's C++ reads them; the protocol's integer ranges
``raw``           the raw tensor layout of both protocols (section 2.2)
``checks``        what both clients check in a response before handing it out
``jsontext``      JSON as Triton reads and writes it; tensors in JSON form
``settings``      trace and log setting values, both protocols
``http_body``     HTTP framing: headers, chunked bodies, compression, paths
``http_client``   HTTP client side: request bodies, response decoding, error mapping
``http_server``   HTTP server side: the inference request and response
``http_control``  HTTP server side: the other endpoints' request bodies
``generate``      the generate extension and Server-Sent Events
``grpc_common``   gRPC, both sides: status codes, parameters, typed contents
``grpc_framing``  gRPC framing: messages with their raw contents outside protobuf
``grpc_client``   gRPC client side: requests, response checks, the stream ledger
``grpc_server``   gRPC server side: request decoding, response encoding

Import the module you need; this package imports nothing by itself.  The codecs never import
a client package, a transport or the server.
"""
