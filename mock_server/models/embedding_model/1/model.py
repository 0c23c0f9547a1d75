"""``embedding_model``: deterministic text embeddings shaped like Triton's vLLM backend's.

Input ``embedding_request`` (BYTES ``[1]``): a JSON object ``{"input": text or a list of token
ids, "pooling_params": {"dimensions": [d]}}``, as Triton's OpenAI frontend sends it for
``/v1/embeddings``.  Output ``text_output`` (BYTES ``[1]``): the embedding as a JSON list of
floats, of length ``d`` (default: the config parameter ``dimensions``, 32), unit length.
Optional ``return_num_input_tokens`` / ``return_num_output_tokens`` (BOOL ``[1]``) add the
outputs ``num_input_tokens`` (the words of the text, or its token ids) and
``num_output_tokens`` (0), UINT32 ``[1]``.

The vector is the normalised sum of one pseudo-random vector per token (seeded by the
token's CRC-32): the same text always gives the same vector, and texts that share words get
close vectors (a cosine similarity above zero), which is what a demo of search needs.
"""

import json
import zlib

import numpy as np
import triton_python_backend_utils as pb_utils


def _flag(request, name):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    return tensor is not None and bool(tensor.as_numpy().reshape(-1)[0])


def embed(tokens, dimensions):
    """The unit vector of ``tokens`` (strings or ints) with ``dimensions`` entries."""
    total = np.zeros(dimensions)
    for token in tokens:
        seed = zlib.crc32(str(token).lower().encode("utf-8"))
        total += np.random.default_rng(seed).standard_normal(dimensions)
    norm = np.linalg.norm(total)
    return total / norm if norm else total


class TritonPythonModel:
    """Deterministic embeddings (see the module)."""

    def initialize(self, args):
        config = json.loads(args["model_config"])
        value = config.get("parameters", {}).get("dimensions", {}).get("string_value", "32")
        self.dimensions = int(value)

    def execute(self, requests):
        return [self._one(request) for request in requests]

    def _one(self, request):
        raw = pb_utils.get_input_tensor_by_name(request, "embedding_request").as_numpy()
        try:
            body = json.loads(raw.reshape(-1)[0])
            text = body["input"]
            tokens = text.split() if isinstance(text, str) else list(text)
            dims = (body.get("pooling_params") or {}).get("dimensions") or [self.dimensions]
            dimensions = int(dims[0])
            if dimensions < 1:
                raise ValueError(f"dimensions must be at least 1, got {dimensions}")
        except (ValueError, KeyError, TypeError) as exc:
            error = pb_utils.TritonError(f"embedding_model: bad embedding_request: {exc}")
            return pb_utils.InferenceResponse(error=error)
        vector = embed(tokens, dimensions)
        text_out = np.array([json.dumps(vector.tolist()).encode()], dtype=np.object_)
        outputs = [pb_utils.Tensor("text_output", text_out)]
        if _flag(request, "return_num_input_tokens"):
            count = np.array([len(tokens)], dtype=np.uint32)
            outputs.append(pb_utils.Tensor("num_input_tokens", count))
        if _flag(request, "return_num_output_tokens"):
            outputs.append(pb_utils.Tensor("num_output_tokens", np.array([0], dtype=np.uint32)))
        return pb_utils.InferenceResponse(outputs)
