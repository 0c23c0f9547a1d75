r"""Dump protobuf file descriptors as canonical, diff-friendly JSON.

The output describes every message (nested ones included, keyed by their
fully-qualified names), every field, oneof, enum and service method of the
selected ``.proto`` files.  It is used to check that the protos in this
directory are wire-identical to the ones NVIDIA ships inside ``tritonclient``.

Descriptors come from one of two places:

* importable ``*_pb2`` modules (positional arguments), whose ``DESCRIPTOR``
  attribute holds the compiled file; or
* a ``FileDescriptorSet`` written by ``protoc --descriptor_set_out``
  (``--descriptor-set FILE``).

Examples
--------
Regenerate the golden file from NVIDIA's package (run with the Python of an
environment where ``tritonclient`` is installed)::

    python proto/dump_descriptors.py --out tests/golden/proto_descriptors.json

Dump this repository's protos the same way (``grpcio-tools`` needed only for
the compile step)::

    python -m grpc_tools.protoc -I proto --include_imports \
        --descriptor_set_out=/tmp/ours.pb proto/grpc_service.proto
    python proto/dump_descriptors.py --descriptor-set /tmp/ours.pb

Notes
-----
Only ``protobuf`` is required.  The JSON is written with sorted keys and a
two-space indent, so two dumps of equivalent descriptors are byte-identical.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2

DEFAULT_MODULES: tuple[str, ...] = (
    "tritonclient.grpc.service_pb2",
    "tritonclient.grpc.model_config_pb2",
)

_Field = descriptor_pb2.FieldDescriptorProto


def _qualify(prefix: str, name: str) -> str:
    """Join a package/message prefix and a simple name with a dot."""
    return f"{prefix}.{name}" if prefix else name


def _dump_enum(enum: descriptor_pb2.EnumDescriptorProto) -> dict[str, int]:
    """Map each enum value name to its number."""
    return {value.name: value.number for value in enum.value}


def _dump_field(
    field: descriptor_pb2.FieldDescriptorProto, oneof_names: Sequence[str]
) -> dict[str, Any]:
    """Describe a single field; the oneof is given by name, not index."""
    oneof = oneof_names[field.oneof_index] if field.HasField("oneof_index") else None
    return {
        "number": field.number,
        "label": _Field.Label.Name(field.label),
        "type": _Field.Type.Name(field.type),
        "type_name": field.type_name,
        "oneof": oneof,
        "proto3_optional": field.proto3_optional,
    }


def _walk_messages(
    messages: Iterable[descriptor_pb2.DescriptorProto],
    prefix: str,
    out_messages: dict[str, Any],
    out_enums: dict[str, Any],
) -> None:
    """Record messages and their nested messages/enums under qualified names."""
    for message in messages:
        full_name = _qualify(prefix, message.name)
        oneof_names = [oneof.name for oneof in message.oneof_decl]
        out_messages[full_name] = {
            "fields": {field.name: _dump_field(field, oneof_names) for field in message.field},
            "oneofs": oneof_names,
            "map_entry": message.options.map_entry,
        }
        for enum in message.enum_type:
            out_enums[_qualify(full_name, enum.name)] = _dump_enum(enum)
        _walk_messages(message.nested_type, full_name, out_messages, out_enums)


def dump_file(proto: descriptor_pb2.FileDescriptorProto) -> dict[str, Any]:
    """Convert one ``FileDescriptorProto`` into a plain JSON-ready dict."""
    messages: dict[str, Any] = {}
    enums: dict[str, Any] = {}
    _walk_messages(proto.message_type, proto.package, messages, enums)
    for enum in proto.enum_type:
        enums[_qualify(proto.package, enum.name)] = _dump_enum(enum)
    services: dict[str, Any] = {}
    for service in proto.service:
        services[_qualify(proto.package, service.name)] = {
            method.name: {
                "input": method.input_type,
                "output": method.output_type,
                "client_streaming": method.client_streaming,
                "server_streaming": method.server_streaming,
            }
            for method in service.method
        }
    return {
        "syntax": proto.syntax,
        "package": proto.package,
        "dependencies": list(proto.dependency),
        "messages": messages,
        "enums": enums,
        "services": services,
    }


def load_from_modules(
    module_names: Sequence[str],
) -> list[descriptor_pb2.FileDescriptorProto]:
    """Import each module and parse its ``DESCRIPTOR.serialized_pb``."""
    protos = []
    for name in module_names:
        module = importlib.import_module(name)
        serialized = module.DESCRIPTOR.serialized_pb
        protos.append(descriptor_pb2.FileDescriptorProto.FromString(serialized))
    return protos


def load_from_descriptor_set(path: str) -> list[descriptor_pb2.FileDescriptorProto]:
    """Read every file contained in a serialized ``FileDescriptorSet``."""
    data = Path(path).read_bytes()
    return list(descriptor_pb2.FileDescriptorSet.FromString(data).file)


def render(
    protos: Iterable[descriptor_pb2.FileDescriptorProto],
    only: Sequence[str] = (),
) -> str:
    """Render the canonical JSON text, optionally keeping only some files."""
    files = {proto.name: dump_file(proto) for proto in protos if not only or proto.name in only}
    return json.dumps({"files": files}, indent=2, sort_keys=True) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the process exit status."""
    parser = argparse.ArgumentParser(
        description="Dump protobuf file descriptors as canonical JSON."
    )
    parser.add_argument(
        "modules",
        nargs="*",
        help=f"importable modules exposing DESCRIPTOR (default: {' '.join(DEFAULT_MODULES)})",
    )
    parser.add_argument(
        "--descriptor-set",
        metavar="FILE",
        help="read a compiled FileDescriptorSet instead of importing modules",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME",
        help="keep only this .proto file name (repeatable)",
    )
    parser.add_argument("--out", metavar="FILE", help="write JSON here instead of stdout")
    args = parser.parse_args(argv)

    if args.descriptor_set and args.modules:
        parser.error("give either modules or --descriptor-set, not both")
    if args.descriptor_set:
        protos = load_from_descriptor_set(args.descriptor_set)
    else:
        protos = load_from_modules(args.modules or DEFAULT_MODULES)

    text = render(protos, args.only)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
