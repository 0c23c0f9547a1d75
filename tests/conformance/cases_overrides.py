"""Load requests with file overrides: which paths and model names Triton 2.51 takes.

A load request may carry the files of a model (``file:<path>`` parameters, with ``config``):
Triton writes them into a fresh temporary folder that is the model folder, so any non-empty
model name works, paths are relative to that folder (a leading ``/`` included) and normalised,
and a path that leaves the folder, or names a folder, fails the load as a poll failure. The
model these cases upload is ``ens_probe`` (its ``model.py``, under other names and paths).
Runs on the "ensemble" pair; every case unloads what it loaded.
"""

from __future__ import annotations

import base64
import json

import numpy as np

from tests.conformance.cases import Case
from tests.conformance.cases_ensemble import PAIR
from tests.conformance.cases_grpc import _load, _unload, infer_request, tensor
from tests.conformance.cases_http import get, infer, post
from tests.conformance.cases_http import tensor as json_tensor
from tests.conformance.pair import CONFORMANCE_MODELS
from tests.conformance.wire import G, Step
from tritonclient.grpc import service_pb2 as pb

_SOURCE = (CONFORMANCE_MODELS / "ens_probe" / "1" / "model.py").read_bytes()
_CONFIG = json.dumps(
    {
        "backend": "python",
        "max_batch_size": 0,
        "input": [{"name": "IN", "data_type": "TYPE_INT32", "dims": [1]}],
        "output": [
            {"name": "OUT", "data_type": "TYPE_INT32", "dims": [1]},
            {"name": "INFO", "data_type": "TYPE_STRING", "dims": [1]},
        ],
    }
)

#: ``file:`` paths, each the only file of an upload (plus ``1/model.py`` where noted).
PATHS: dict[str, dict[str, bytes]] = {
    "plain": {"file:1/model.py": _SOURCE},
    "leading-slash": {"file:/1/model.py": _SOURCE},
    "absolute-looking": {"file:/1/model.py": _SOURCE, "file:/etc/extra.txt": b"x"},
    "dot-segment": {"file:./1/model.py": _SOURCE},
    "double-slash": {"file:1//model.py": _SOURCE},
    "dot-dot-inside": {"file:1/../1/model.py": _SOURCE},
    "dot-dot-outside": {"file:../escape/1/model.py": _SOURCE},
    "dot-dot-extra-file": {"file:1/model.py": _SOURCE, "file:../../escape.txt": b"x"},
    "empty-path": {"file:1/model.py": _SOURCE, "file:": b"x"},
    "version-as-file": {"file:1": _SOURCE},
    "trailing-slash": {"file:1/model.py": _SOURCE, "file:1/": b"x"},
    "deep-extra-file": {"file:1/model.py": _SOURCE, "file:1/sub/deep/data.bin": b"\0\1"},
    "backslash": {"file:1\\model.py": _SOURCE},
    "config-file-too": {"file:1/model.py": _SOURCE, "file:config.pbtxt": b"not a config"},
    "version-2": {"file:2/model.py": _SOURCE},
}

#: Model names for uploads (sent over gRPC, as they are; Triton 2.51 fails names with white
#: space after their first character in its stub launcher, and hangs on quotes: not here).
NAMES = {
    "leading-space": " lead",
    "hidden": ".hidden",
    "dot": ".",
    "dot-dot": "..",
    "slash": "a/b",
    "traversal": "../up",
    "backslash": "a\\b",
    "colon": "a:b",
    "non-ascii": "modèle",
    "long": "m" * 300,
    "empty": "",
}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _paths() -> list[Case]:
    cases = []
    for what, files in PATHS.items():
        parameters = {"config": _CONFIG, **{key: _b64(data) for key, data in files.items()}}
        steps: list[Step] = [
            post("/v2/repository/models/from_files/load", {"parameters": parameters}),
            get("/v2/models/from_files/ready"),
            get("/v2/models/from_files"),
            infer("from_files", {"inputs": [json_tensor("IN", "INT32", [1], [5])]}),
            post("/v2/repository/models/from_files/unload"),
        ]
        cases.append(Case(f"overrides/http/path/{what}", steps, PAIR))
    return cases


def _names() -> list[Case]:
    cases = []
    for what, name in NAMES.items():
        raw = np.array([3], dtype=np.int32).tobytes()
        steps: list[Step] = [
            _load(name, config=_CONFIG, **{"file:1/model.py": _SOURCE}),
            G("ModelReady", pb.ModelReadyRequest(name=name)),
            G("ModelInfer", infer_request(name, [(tensor("IN", "INT32", [1]), raw)])),
            _unload(name),
            G("ModelReady", pb.ModelReadyRequest(name=name)),
        ]
        cases.append(Case(f"overrides/grpc/name/{what}", steps, PAIR))
    return cases


def cases() -> list[Case]:
    """The file-override cases (on the "ensemble" pair)."""
    return [*_paths(), *_names()]
