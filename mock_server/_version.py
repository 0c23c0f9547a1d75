"""The server's version, in a module of its own: the core reports it (server metadata) without
importing the package's ``__init__``, which re-exports the in-process API built on the core."""

__version__ = "0.1.0"
