"""The bundled reference server for the KServe v2 / Triton protocol.

Not implemented yet: the server core, its HTTP and gRPC frontends and the CLI are tracked
in their own issues.
"""
