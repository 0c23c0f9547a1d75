"""Which Triton release the server behaves as: the compatibility profile.

This server copies Triton's behaviour down to its error texts.  Where Triton 2.51 (the newest
release that runs on a CPU-only machine, which the differential suite compares with) and
Triton 2.73 (the release that pairs with the client this project replaces) differ in what a
client can observe, the difference is decided here, once: a :class:`TritonCompat` holds one
field per behaviour, and the core and the frontends read that field instead of a version
number.  ``--triton-compat 2.73`` (the default) or ``--triton-compat 2.51`` on the command line,
``ServerOptions.triton_compat`` or the in-process API's ``Options.triton_compat`` choose it.

Each field names where its 2.73 behaviour is written in Triton's server repository (``src/``
at the 2.73.0 branch point); the 2.51 behaviour is what the real Triton 2.51 answers (the
differential suite in ``tests/conformance`` runs this server with ``--triton-compat 2.51``
against it).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

#: ``--http-max-input-size`` when it is not given, where the profile limits HTTP bodies:
#: 64 MiB (``HTTP_DEFAULT_MAX_INPUT_SIZE`` of src/common.h, 2.73.0).
HTTP_DEFAULT_MAX_INPUT_SIZE = 1 << 26

#: How many non-empty chunks a chunked HTTP body may have where the profile limits inputs
#: (``kMaxChunkedChunks`` of src/http_server.cc, 2.73.0).
HTTP_MAX_CHUNKED_CHUNKS = 1 << 16

#: How deep an input's JSON ``data`` may nest where the profile limits it
#: (``HTTP_MAX_JSON_NESTING_DEPTH`` of src/common.h, 2.73.0).
HTTP_MAX_JSON_NESTING_DEPTH = 100

__all__ = [
    "DEFAULT_COMPAT",
    "HTTP_DEFAULT_MAX_INPUT_SIZE",
    "HTTP_MAX_CHUNKED_CHUNKS",
    "HTTP_MAX_JSON_NESTING_DEPTH",
    "TRITON_2_51",
    "TRITON_2_73",
    "TritonCompat",
    "compat_profile",
]


@dataclass(frozen=True)
class TritonCompat:
    """The behaviours that differ between the Triton releases this server can act as.

    Every field but ``version`` is True where the server behaves as Triton 2.73.

    Attributes
    ----------
    version : str
        ``"2.73"`` or ``"2.51"``.
    client_shm_off_by_default : bool
        Whether client shared memory is refused when ``--allow-client-shm`` is not given:
        register and unregister answer UNSUPPORTED "Client shared memory is disabled..."
        (``src/command_line_parser.h``, ``allow_client_shm_{false}``; ``src/http_server.cc``
        ``HandleSystemSharedMemory``; #8721).  2.51 has no such gate.
    refuse_reserved_parameters : bool
        Whether a request parameter with a reserved name (``triton_*`` but the allowed ones,
        ``sequence_id`` ... ``timeout``) that reaches the core as a custom parameter is refused
        (the generate endpoint's unknown keys, in-process and BLS requests).  2.51 delivers
        them to the model.
    refuse_reserved_headers : bool
        Whether a forwarded header (``--http-header-forward-pattern``,
        ``--grpc-header-forward-pattern``) named like a reserved parameter is refused with
        "Header 'X' is reserved for Triton usage and cannot be forwarded." (``src/common.h``
        ``kReservedParameterKeys``; ``src/http_server.cc`` ``ForEachHeader``;
        ``src/grpc/infer_handler.h``; #8763).  2.51 forwards it.
    refuse_duplicate_outputs : bool
        Whether a request that names an output twice is refused ("output 'X' already exists
        in request", #8741).  2.51 keeps requested outputs in a set: the output comes back
        once.
    http_input_limits : bool
        Whether ``--http-max-input-size`` (default 64 MiB) limits HTTP request bodies, with the
        texts of ``src/http_server.cc`` (``EVBufferToJson``, ``EVBufferToRawInput``,
        ``ParseJsonTritonIO``, ``ExactMappingInput``) and ``src/data_compressor.h``; and
        whether a chunked body may have at most 65,536 non-empty chunks
        (``kMaxChunkedChunks``, ``HTTPServer::ChunkCountIncrement``).  2.51 has neither.
    json_depth_limit : bool
        Whether an input's JSON ``data`` may nest at most ``HTTP_MAX_JSON_NESTING_DEPTH`` (100)
        arrays deep: "JSON nesting depth exceeds maximum allowed limit (100)"
        (``src/common.h``; ``src/http_server.cc`` ``ReadDataFromJsonHelper``).
    http_checks_2_73 : bool
        The HTTP frontend's newer request checks and words (``src/http_server.cc``): a
        non-boolean ``ready`` in a repository index request is a 400, a bad
        ``Inference-Header-Content-Length`` or ``Content-Length`` is refused (``std::stoi``),
        JSON tensor data errors say "Failed to parse 'data' field: ...".  2.51 has the older
        ones.
    shm_bounds_2_73 : bool
        The shared-memory bounds of 2.73 (``src/shared_memory_manager.cc``
        ``GetMemoryInfo``: an offset must lie inside the region, an offset plus size that
        overflows is "Integer overflow detected: ..."; #8330, #8335) and its key checks
        (``ValidateSharedMemoryKey`` in ``src/common.cc``: a key of only slashes, the reserved
        prefix after leading slashes; #8273, #8336).  2.51 checks the last byte with unsigned
        arithmetic (an empty tensor at offset 0 is refused) and only the reserved prefix.
    deferred_shm_unregister : bool
        Whether unregistering a system or CUDA region that an in-flight request uses (an
        input or output placed in it) succeeds and takes effect when the last such request
        completes: the region stays listed by status and its name taken ("already in
        manager") until then, new requests may still use it, and it is unmapped (its IPC
        handle closed) once the last one's response is sent (``UnregisterHelper``,
        ``awaiting_unregister_``: src/shared_memory_manager.cc:675-719; the releases in
        src/http_server.h:294-315 and src/grpc/infer_handler.h:1395-1419; #7743, 2.53).
        2.51 refuses it with INTERNAL "Cannot unregister shared memory region 'x', it is
        currently in use." (unregistering all: "Failed to unregister the following system
        shared memory regions: x ,", the others unregistered).  Decided in
        ``SharedMemoryRegistry`` (``core/shm.py``).
    grpc_graceful_shutdown : bool
        Whether the gRPC frontend, once the server is stopping, refuses new requests on open
        streams with UNAVAILABLE "GRPC server is shutting down and has stopped accepting new
        requests." and new calls (``src/grpc/infer_handler.cc``,
        ``src/grpc/stream_infer_handler.cc``, ``Server::GracefulStop``; #7969) while the
        requests in flight finish.  2.51 keeps serving gRPC until the models are unloaded.
    endpoint_load_metrics : bool
        Whether a generate request with the ``endpoint-load-metrics-format`` header (``text``
        or ``json``) is answered with an ``endpoint-load-metrics`` header computed from the
        ``nv_trt_llm_kv_cache_block_metrics`` family (``src/orca_http.cc``; #7839).
    element_count_2_73 : bool
        How the HTTP frontend counts a JSON-data input's elements (``ParseJsonTritonIO`` of
        ``src/http_server.cc``:2701-2767 over ``GetElementCount`` of ``src/common.cc``:
        109-135).  2.73 refuses a shape with a negative dimension ("invalid shape for input
        'X': shape [..] contains one or more invalid dimensions", -2), one whose element
        count passes ``INT64_MAX`` ("... causes total element count to exceed maximum size
        of 9223372036854775807", -3) and a typed input whose byte size does ("byte size
        overflow for input 'X': element count (N) * data type size (S) exceeds maximum
        allowed size (9223372036854775807)"), and checks the input's byte size against
        ``--http-max-input-size`` ("JSON input 'X' has a byte_size (N bytes) that exceeds the
        maximum allowed value of M bytes. ...", a wildcard shape counting -1 and so wrapping
        round: ``[-1, 0]`` is refused so, while ``[0, -1]`` counts 0 elements and is left to
        the core's shape check); 2.51 multiplies the shape out, wrapping round, and reports
        the byte-size mismatch ("Expected -16, got 16"), or aborts on a typed input that
        counts -1 (``std::length_error``).  Both read no data for a shape of no dimension.
    generate_input_sizes : bool
        Whether the generate endpoints size each input before converting it
        (``ExactMappingInput``, src/http_server.cc:3690-3741; #8676): an input of no bytes
        (``[]``) is added with no dimension and no data (the core then refuses that shape),
        and the inputs' bytes, added up in document order (``parameters`` apart), may not
        pass ``--http-max-input-size``: "request size of N bytes with input 'X' of size M
        bytes exceeds the maximum allowed input size of L. Use --http-max-input-size to
        increase the limit." (400).  2.51 spreads an empty input over the model's dims
        (``[0]``) and has no limit.
    """

    version: str
    client_shm_off_by_default: bool
    refuse_reserved_parameters: bool
    refuse_reserved_headers: bool
    refuse_duplicate_outputs: bool
    http_input_limits: bool
    json_depth_limit: bool
    http_checks_2_73: bool
    shm_bounds_2_73: bool
    deferred_shm_unregister: bool
    grpc_graceful_shutdown: bool
    endpoint_load_metrics: bool
    element_count_2_73: bool
    generate_input_sizes: bool

    @property
    def http_max_chunks(self) -> int | None:
        """How many non-empty chunks a chunked HTTP request body may have:
        ``HTTP_MAX_CHUNKED_CHUNKS`` (65,536) where ``http_input_limits``, else no limit."""
        return HTTP_MAX_CHUNKED_CHUNKS if self.http_input_limits else None

    @property
    def http_json_depth(self) -> int | None:
        """How deep an HTTP input's JSON ``data`` may nest: ``HTTP_MAX_JSON_NESTING_DEPTH``
        (100) where ``json_depth_limit``, else no limit."""
        return HTTP_MAX_JSON_NESTING_DEPTH if self.json_depth_limit else None


def _release(version: str, newer: bool) -> TritonCompat:
    """The profile whose every behaviour is the newer release's (2.73) or the older one's."""
    return TritonCompat(
        version, **{f.name: newer for f in fields(TritonCompat) if f.name != "version"}
    )


#: Triton 2.73 (the 2.73.0 branch point of the server repository): the default.
TRITON_2_73 = _release("2.73", newer=True)

#: Triton 2.51, as the real server answers (the differential suite's peer).
TRITON_2_51 = _release("2.51", newer=False)

#: The profile a server gets unless told otherwise.
DEFAULT_COMPAT = TRITON_2_73

_PROFILES = {profile.version: profile for profile in (TRITON_2_73, TRITON_2_51)}


def compat_profile(version: str | TritonCompat) -> TritonCompat:
    """The profile of a Triton release.

    Parameters
    ----------
    version : str or TritonCompat
        ``"2.73"`` or ``"2.51"`` (a profile is returned as it is).

    Returns
    -------
    TritonCompat

    Raises
    ------
    ValueError
        For a release this server cannot act as.
    """
    if isinstance(version, TritonCompat):
        return version
    profile = _PROFILES.get(str(version).strip())
    if profile is None:
        raise ValueError(
            f"unknown Triton compatibility version {version!r}; expected one of "
            f"{', '.join(sorted(_PROFILES, reverse=True))}"
        )
    return profile
