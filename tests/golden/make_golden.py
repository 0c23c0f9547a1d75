"""Produce golden vectors for the BYTES and BF16 codecs with NVIDIA's ``tritonclient``.

Run it with an interpreter where NVIDIA's package is importable (never ours):

    PEER/bin/python tests/golden/make_golden.py bytes "NVIDIA tritonclient 2.73.0" \
        > tests/golden/bytes_vectors.json
    PYTHONPATH=<tritonclient 2.51 purelib> PEER/bin/python tests/golden/make_golden.py bf16 \
        "NVIDIA tritonclient 2.51.0" > tests/golden/bf16_vectors.json

(``serialize_bf16_tensor``/``deserialize_bf16_tensor`` were removed from NVIDIA's package
after 2.5x; 2.51 is used for them.)  The cases are built here, deterministically; the
expected outputs are whatever NVIDIA's functions return for them.  ``tests/test_golden.py``
rebuilds each input with :func:`build_array` and compares our output byte for byte.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

LAYOUTS = ("C", "F", "T", "step2")


def build_array(case: dict[str, Any]) -> np.ndarray:
    """Rebuild a case's input array (shared with the test that replays the vectors)."""
    kind = case["kind"]
    shape = tuple(case["shape"])
    if kind == "object":
        values = [bytes.fromhex(e["b"]) if "b" in e else e["s"] for e in case["elements"]]
        base = np.empty(len(values), dtype=np.object_)
        base[:] = values
    elif kind == "bytes_":
        base = np.array([bytes.fromhex(e) for e in case["elements"]], dtype=np.bytes_)
    elif kind == "float32":
        base = np.array([int(h, 16) for h in case["elements"]], dtype=np.uint32).view(np.float32)
    else:
        raise ValueError(f"unknown case kind {kind!r}")
    layout = case["layout"]
    if layout == "T":
        return base.reshape(shape[::-1]).T
    if layout == "step2":
        # Every second row of a twice-as-tall array: a non-contiguous view.
        doubled = np.repeat(base.reshape(shape), 2, axis=0)
        return doubled[::2]
    arr = base.reshape(shape)
    return np.asfortranarray(arr) if layout == "F" else arr


def _obj(values: list[bytes | str]) -> list[dict[str, str]]:
    return [{"b": v.hex()} if isinstance(v, bytes) else {"s": v} for v in values]


def bytes_cases() -> list[dict[str, Any]]:
    rng = np.random.default_rng(20261122)
    rand = [bytes(rng.integers(0, 256, int(n), dtype=np.uint8)) for n in rng.integers(0, 70, 60)]
    texts = ["", "a", "hello", "héllo wörld", "日本語テキスト", "emoji 🚀", "tab\tnl\n", "\x00mid"]
    cases: list[dict[str, Any]] = [
        {"name": "empty-1d", "kind": "object", "shape": [0], "elements": []},
        {"name": "empty-2d", "kind": "object", "shape": [2, 0], "elements": []},
        {"name": "one-empty-element", "kind": "object", "shape": [1], "elements": _obj([b""])},
        {
            "name": "nuls-kept-in-object",
            "kind": "object",
            "shape": [4],
            "elements": _obj([b"\x00", b"a\x00", b"\x00\x00b\x00\x00", b"\xff\xfe"]),
        },
        {"name": "str-utf8", "kind": "object", "shape": [8], "elements": _obj(list(texts))},
        {
            "name": "mixed-bytes-str",
            "kind": "object",
            "shape": [2, 3],
            "elements": _obj([b"x", "y", b"", "zz", b"\x01\x02\x03", "é"]),
        },
        {
            "name": "long-element",
            "kind": "object",
            "shape": [2],
            "elements": _obj([b"L" * 66000, b"s"]),
        },
        {"name": "random-1d", "kind": "object", "shape": [60], "elements": _obj(rand)},
        {"name": "random-3d", "kind": "object", "shape": [3, 4, 5], "elements": _obj(rand)},
        {
            "name": "bytes_-trailing-nuls",
            "kind": "bytes_",
            "shape": [5],
            "elements": [
                b"abc\x00".hex(),
                b"".hex(),
                b"\x00\x00".hex(),
                b"a\x00b".hex(),
                b"longer text".hex(),
            ],
        },
        {
            "name": "bytes_-2d",
            "kind": "bytes_",
            "shape": [2, 3],
            "elements": [
                b"one".hex(),
                b"two".hex(),
                b"three".hex(),
                b"4".hex(),
                b"".hex(),
                b"six!".hex(),
            ],
        },
    ]
    for layout in ("F", "T", "step2"):
        cases.append(
            {
                "name": f"random-2d-{layout}",
                "kind": "object",
                "shape": [6, 10],
                "elements": _obj(rand),
            }
        )
        cases.append(
            {
                "name": f"bytes_-{layout}",
                "kind": "bytes_",
                "shape": [3, 2],
                "elements": [v.hex() for v in rand[:6]],
            }
        )
    for case in cases:
        case.setdefault("layout", "C")
        if case["name"].endswith(("-F", "-T", "-step2")):
            case["layout"] = case["name"].rsplit("-", 1)[1]
    return cases


def bf16_cases() -> list[dict[str, Any]]:
    rng = np.random.default_rng(7)
    special = np.array(
        [
            0.0,
            -0.0,
            1.0,
            -2.5,
            np.pi,
            np.inf,
            -np.inf,
            np.nan,
            1e-40,
            -1e-45,
            3.4028235e38,
            1.17549435e-38,
            65504.0,
            1.00390625,
            1.0078125,
        ],
        dtype=np.float32,
    )
    randoms = rng.standard_normal(48).astype(np.float32) * 1000

    def hexes(a: np.ndarray) -> list[str]:
        return [f"{v:08x}" for v in a.view(np.uint32).tolist()]

    cases = [
        {"name": "special", "kind": "float32", "shape": [15], "elements": hexes(special)},
        {"name": "random-2d", "kind": "float32", "shape": [6, 8], "elements": hexes(randoms)},
        {
            "name": "random-F",
            "kind": "float32",
            "shape": [8, 6],
            "elements": hexes(randoms),
            "layout": "F",
        },
        {
            "name": "random-T",
            "kind": "float32",
            "shape": [4, 12],
            "elements": hexes(randoms),
            "layout": "T",
        },
        {"name": "empty", "kind": "float32", "shape": [0, 3], "elements": []},
    ]
    for case in cases:
        case.setdefault("layout", "C")
    return cases


def _serialized_hex(result: Any) -> str | None:
    """NVIDIA returns a 0-d object array holding bytes, or an empty object array."""
    return result.item().hex() if result.size else None


def main(which: str, producer: str) -> int:
    import tritonclient.utils as nv

    out: dict[str, Any] = {"producer": producer, "cases": []}
    if which == "bytes":
        for case in bytes_cases():
            arr = build_array(case)
            result = nv.serialize_byte_tensor(arr)
            entry = dict(case)
            entry["serialized"] = _serialized_hex(result)
            entry["result_shape"] = list(result.shape)
            if result.size:
                back = nv.deserialize_bytes_tensor(result.item())
                entry["deserialized"] = [b.hex() for b in back.tolist()]
            out["cases"].append(entry)
    elif which == "bf16":
        for case in bf16_cases():
            arr = build_array(case)
            result = nv.serialize_bf16_tensor(arr)
            entry = dict(case)
            entry["serialized"] = _serialized_hex(result)
            if result.size:
                back = np.asarray(nv.deserialize_bf16_tensor(result.item()), dtype=np.float32)
                entry["deserialized"] = [f"{v:08x}" for v in back.ravel().view(np.uint32).tolist()]
            out["cases"].append(entry)
    else:
        raise SystemExit("usage: make_golden.py bytes|bf16 PRODUCER-LABEL")
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: make_golden.py bytes|bf16 PRODUCER-LABEL")
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
