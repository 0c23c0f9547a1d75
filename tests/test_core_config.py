"""mock_server.core.config: parsing, completion, validation and the JSON form of model configs.

Expected completed configurations below were observed on a real Triton 2.51 server
(CPU-only, Python backend) from the config.pbtxt texts next to them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mock_server.core import config as cfg
from mock_server.core import config_checks as checks
from mock_server.core import config_json as cfg_json
from mock_server.core.errors import ErrorKind, ServerError
from tritonclient.grpc import model_config_pb2 as mc

IO = (
    'input [{name: "I" data_type: TYPE_FP32 dims: [4]}] '
    'output [{name: "O" data_type: TYPE_FP32 dims: [4]}]'
)

# protocol.md §3.6, the "trimmed observed example" (a real 2.51 response).
SECTION_3_6_EXAMPLE = json.loads("""
{"name":"identity_fp32","platform":"","backend":"python","runtime":"",
 "version_policy":{"latest":{"num_versions":1}},"max_batch_size":8,
 "input":[{"name":"INPUT0","data_type":"TYPE_FP32","format":"FORMAT_NONE","dims":[4],
   "is_shape_tensor":false,"allow_ragged_batch":false,"optional":false,"is_non_linear_format_io":false}],
 "output":[{"name":"OUTPUT0","data_type":"TYPE_FP32","dims":[4],"label_filename":"labels.txt",
   "is_shape_tensor":false,"is_non_linear_format_io":false}],
 "batch_input":[],"batch_output":[],
 "optimization":{"priority":"PRIORITY_DEFAULT","input_pinned_memory":{"enable":true},
   "output_pinned_memory":{"enable":true},"gather_kernel_buffer_threshold":0,"eager_batching":false},
 "dynamic_batching":{"preferred_batch_size":[8],"max_queue_delay_microseconds":0,"preserve_ordering":false,
   "priority_levels":0,"default_priority_level":0,"priority_queue_policy":{}},
 "instance_group":[{"name":"identity_fp32_0","kind":"KIND_CPU","count":1,"gpus":[],"secondary_devices":[],
   "profile":[],"passive":false,"host_policy":""}],
 "default_model_filename":"model.py","cc_model_filenames":{},"metric_tags":{},
 "parameters":{"foo":{"string_value":"bar"}},"model_warmup":[]}
""")

SECTION_3_6_SOURCE = """
backend: "python"
max_batch_size: 8
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] }]
output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] label_filename: "labels.txt" }]
dynamic_batching { }
instance_group [{ kind: KIND_CPU }]
parameters { key: "foo" value { string_value: "bar" } }
"""

# Observed on Triton 2.51: a config with no instance_group gets one group named after the
# model (not "<model>_0").
NOIG_SOURCE = f'backend: "python" max_batch_size: 8 {IO}'
NOIG_OBSERVED = json.loads(
    '{"name":"noig","platform":"","backend":"python","runtime":"","version_policy":{"latest":'
    '{"num_versions":1}},"max_batch_size":8,"input":[{"name":"I","data_type":"TYPE_FP32",'
    '"format":"FORMAT_NONE","dims":[4],"is_shape_tensor":false,"allow_ragged_batch":false,'
    '"optional":false,"is_non_linear_format_io":false}],"output":[{"name":"O","data_type":'
    '"TYPE_FP32","dims":[4],"label_filename":"","is_shape_tensor":false,'
    '"is_non_linear_format_io":false}],"batch_input":[],"batch_output":[],"optimization":'
    '{"priority":"PRIORITY_DEFAULT","input_pinned_memory":{"enable":true},'
    '"output_pinned_memory":{"enable":true},"gather_kernel_buffer_threshold":0,'
    '"eager_batching":false},"instance_group":[{"name":"noig","kind":"KIND_CPU","count":1,'
    '"gpus":[],"secondary_devices":[],"profile":[],"passive":false,"host_policy":""}],'
    '"default_model_filename":"model.py","cc_model_filenames":{},"metric_tags":{},'
    '"parameters":{},"model_warmup":[]}'
)

# Observed on Triton 2.51: dynamic batching with priorities, a queue-policy map with uint64
# keys, a cuda optimization block and a pinned-memory setting that must not be overridden.
FMT2_SOURCE = f"""backend:"python" max_batch_size:4 {IO}
dynamic_batching {{ priority_levels: 12 default_priority_level: 1 priority_queue_policy [
  {{key: 10 value {{max_queue_size: 3}}}}, {{key: 2 value {{}}}},
  {{key: 1 value {{timeout_action: DELAY}}}}] default_queue_policy {{}} }}
optimization {{ input_pinned_memory {{ enable: false }} cuda {{ graphs: true }} }}
"""
FMT2_OBSERVED = json.loads(
    '{"name":"fmt2","platform":"","backend":"python","runtime":"","version_policy":{"latest":'
    '{"num_versions":1}},"max_batch_size":4,"input":[{"name":"I","data_type":"TYPE_FP32",'
    '"format":"FORMAT_NONE","dims":[4],"is_shape_tensor":false,"allow_ragged_batch":false,'
    '"optional":false,"is_non_linear_format_io":false}],"output":[{"name":"O","data_type":'
    '"TYPE_FP32","dims":[4],"label_filename":"","is_shape_tensor":false,'
    '"is_non_linear_format_io":false}],"batch_input":[],"batch_output":[],"optimization":'
    '{"priority":"PRIORITY_DEFAULT","cuda":{"graphs":true,"busy_wait_events":false,'
    '"graph_spec":[],"output_copy_stream":false},"input_pinned_memory":{"enable":false},'
    '"output_pinned_memory":{"enable":true},"gather_kernel_buffer_threshold":0,'
    '"eager_batching":false},"dynamic_batching":{"preferred_batch_size":[4],'
    '"max_queue_delay_microseconds":0,"preserve_ordering":false,"priority_levels":12,'
    '"default_priority_level":1,"default_queue_policy":{"timeout_action":"REJECT",'
    '"default_timeout_microseconds":0,"allow_timeout_override":false,"max_queue_size":0},'
    '"priority_queue_policy":{"10":{"timeout_action":"REJECT","default_timeout_microseconds":0,'
    '"allow_timeout_override":false,"max_queue_size":3},"1":{"timeout_action":"DELAY",'
    '"default_timeout_microseconds":0,"allow_timeout_override":false,"max_queue_size":0},'
    '"2":{"timeout_action":"REJECT","default_timeout_microseconds":0,'
    '"allow_timeout_override":false,"max_queue_size":0}}},"instance_group":[{"name":"fmt2",'
    '"kind":"KIND_CPU","count":1,"gpus":[],"secondary_devices":[],"profile":[],"passive":false,'
    '"host_policy":""}],"default_model_filename":"model.py","cc_model_filenames":{},'
    '"metric_tags":{},"parameters":{},"model_warmup":[]}'
)

# Observed on Triton 2.51: sequence batcher with the oldest strategy (defaults filled in).
SEQ_OLDEST_SOURCE = f'backend:"python" max_batch_size:4 {IO} sequence_batching{{oldest{{}}}}'
SEQ_OLDEST_OBSERVED_SEQUENCE = {
    "oldest": {
        "max_candidate_sequences": 0,
        "preferred_batch_size": [4],
        "max_queue_delay_microseconds": 0,
        "preserve_ordering": False,
    },
    "max_sequence_idle_microseconds": 1000000,
    "control_input": [],
    "state": [],
    "iterative_sequence": False,
}


def parse(text: str, source: str = "config.pbtxt") -> mc.ModelConfig:
    return cfg.parse_config_text(text, source)


def completed(text: str, name: str = "m", **kwargs: Any) -> mc.ModelConfig:
    return cfg.complete_config(parse(text), name, **kwargs)


def raises(kind: ErrorKind, *fragments: str) -> Any:
    """Context manager asserting a ServerError of ``kind`` whose message has every fragment."""

    class _Check:
        def __enter__(self) -> None:
            return None

        def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
            assert exc_type is not None, "expected a ServerError"
            assert isinstance(exc, ServerError), exc
            assert exc.kind is kind, (exc.kind, exc.message)
            for fragment in fragments:
                assert fragment in exc.message, (fragment, exc.message)
            return True

    return _Check()


# ---------------------------------------------------------------------------------------------
# parse_config_text
# ---------------------------------------------------------------------------------------------


def test_parse_text_reads_every_field_kind() -> None:
    config = parse(SECTION_3_6_SOURCE)
    assert config.backend == "python"
    assert config.max_batch_size == 8
    assert config.input[0].data_type == mc.TYPE_FP32
    assert list(config.input[0].dims) == [4]
    assert config.HasField("dynamic_batching")
    assert config.parameters["foo"].string_value == "bar"
    assert not config.name  # nothing is completed by parsing


def test_parse_text_accepts_bytes() -> None:
    assert parse_bytes(b'name: "x" max_batch_size: 2').max_batch_size == 2


def parse_bytes(data: bytes) -> mc.ModelConfig:
    return cfg.parse_config_text(data, "/repo/x/config.pbtxt")


def test_parse_text_error_names_file_and_position() -> None:
    with raises(
        ErrorKind.INVALID_ARG,
        "failed to read text proto from /repo/bad/config.pbtxt",
        "2:1",
        'no field named "bogus_field"',
    ):
        cfg.parse_config_text('backend: "python"\nbogus_field: 3\n', "/repo/bad/config.pbtxt")


def test_parse_text_error_on_bad_value() -> None:
    with raises(ErrorKind.INVALID_ARG, "cfg.pbtxt", "3:"):
        cfg.parse_config_text('name: "a"\ninput [{\n data_type: TYPE_NOPE }]', "cfg.pbtxt")


def test_parse_text_error_on_repeated_singular_field() -> None:
    with raises(ErrorKind.INVALID_ARG, "c.pbtxt", "1:"):
        cfg.parse_config_text('name: "a" name: "b"', "c.pbtxt")


def test_parse_text_error_on_invalid_utf8() -> None:
    with raises(ErrorKind.INVALID_ARG, "/r/m/config.pbtxt", "UTF-8"):
        cfg.parse_config_text(b'name: "\xff"', "/r/m/config.pbtxt")


# ---------------------------------------------------------------------------------------------
# config_from_json
# ---------------------------------------------------------------------------------------------


def test_json_accepts_snake_camel_enum_case_and_int64_strings() -> None:
    text = json.dumps(
        {
            "backend": "python",
            "maxBatchSize": 4,
            "input": [{"name": "I", "dataType": "type_fp32", "dims": ["4", -1]}],
            "output": [{"name": "O", "data_type": "TYPE_FP32", "dims": [4]}],
            "instance_group": [{"kind": "kind_cpu", "count": 2}],
            "dynamic_batching": {"max_queue_delay_microseconds": "100"},
        }
    )
    config = cfg_json.config_from_json(text, "load request")
    assert config.max_batch_size == 4
    assert config.input[0].data_type == mc.TYPE_FP32
    assert list(config.input[0].dims) == [4, -1]
    assert config.instance_group[0].kind == mc.ModelInstanceGroup.KIND_CPU
    assert config.dynamic_batching.max_queue_delay_microseconds == 100


def test_json_accepts_enum_numbers() -> None:
    config = cfg_json.config_from_json({"input": [{"data_type": 11}, {"data_type": "13"}]}, "m")
    assert [i.data_type for i in config.input] == [mc.TYPE_FP32, mc.TYPE_STRING]


def test_json_accepts_dict_and_bytes() -> None:
    assert cfg_json.config_from_json({"name": "a"}, "x").name == "a"
    assert cfg_json.config_from_json(b'{"name": "b"}', "x").name == "b"


def test_json_unknown_field_is_named_with_its_path() -> None:
    with raises(ErrorKind.INVALID_ARG, "override of m", "input[1].bogus: Cannot find field"):
        cfg_json.config_from_json(
            {"input": [{"name": "a"}, {"name": "b", "bogus": 1}]}, "override of m"
        )
    with raises(ErrorKind.INVALID_ARG, "bogus: Cannot find field"):
        cfg_json.config_from_json('{"backend": "python", "bogus": 1}', "m")


def test_json_unknown_field_inside_map_value() -> None:
    with raises(ErrorKind.INVALID_ARG, "parameters[k].nope: Cannot find field"):
        cfg_json.config_from_json({"parameters": {"k": {"nope": "x"}}}, "m")


def test_json_syntax_error() -> None:
    with raises(ErrorKind.INVALID_ARG, "the load request", "line 1 column 1"):
        cfg_json.config_from_json("not json", "the load request")


def test_json_must_be_an_object() -> None:
    with raises(ErrorKind.INVALID_ARG, "expected a JSON object, got list"):
        cfg_json.config_from_json("[1, 2]", "m")


def test_json_bad_enum_name() -> None:
    with raises(ErrorKind.INVALID_ARG, "input[0].data_type", "TYPE_NOPE", "inference.DataType"):
        cfg_json.config_from_json({"input": [{"data_type": "TYPE_NOPE"}]}, "m")


def test_json_wrong_value_type() -> None:
    with raises(ErrorKind.INVALID_ARG, "max_batch_size"):
        cfg_json.config_from_json({"max_batch_size": "lots"}, "m")
    with raises(ErrorKind.INVALID_ARG, "m:"):
        cfg_json.config_from_json({"input": {"name": "x"}}, "m")


def test_json_round_trip_of_completed_configs() -> None:
    for text in (SECTION_3_6_SOURCE, FMT2_SOURCE, SEQ_OLDEST_SOURCE, NOIG_SOURCE):
        config = completed(text, "x")
        assert (
            cfg_json.config_from_json(json.dumps(cfg_json.config_to_json(config)), "rt") == config
        )


# ---------------------------------------------------------------------------------------------
# complete_config + config_to_json against observed Triton output
# ---------------------------------------------------------------------------------------------


def test_completed_config_matches_section_3_6_example() -> None:
    result = cfg_json.config_to_json(completed(SECTION_3_6_SOURCE, "identity_fp32"))
    assert result == SECTION_3_6_EXAMPLE
    assert list(result) == list(SECTION_3_6_EXAMPLE)  # declaration order, as Triton prints
    for key in ("input", "output", "instance_group"):
        assert list(result[key][0]) == list(SECTION_3_6_EXAMPLE[key][0])
    assert list(result["optimization"]) == list(SECTION_3_6_EXAMPLE["optimization"])
    assert list(result["dynamic_batching"]) == list(SECTION_3_6_EXAMPLE["dynamic_batching"])
    # 64-bit integers are numbers, not strings, once serialized.
    body = json.dumps(result)
    assert '"dims": [4]' in body
    assert '"max_queue_delay_microseconds": 0' in body


def test_completed_config_matches_observed_implicit_instance_group() -> None:
    assert cfg_json.config_to_json(completed(NOIG_SOURCE, "noig")) == NOIG_OBSERVED


def test_completed_config_matches_observed_priorities_and_optimization() -> None:
    result = cfg_json.config_to_json(completed(FMT2_SOURCE, "fmt2"))
    assert result == FMT2_OBSERVED
    assert list(result["optimization"]) == list(FMT2_OBSERVED["optimization"])
    assert list(result["dynamic_batching"]["priority_queue_policy"]) == ["1", "2", "10"]


def test_completed_sequence_batching_matches_observed() -> None:
    result = cfg_json.config_to_json(completed(SEQ_OLDEST_SOURCE, "seq_oldest"))
    assert result["sequence_batching"] == SEQ_OLDEST_OBSERVED_SEQUENCE
    assert "dynamic_batching" not in result
    assert "model_transaction_policy" not in result


def test_completed_config_of_an_empty_config() -> None:
    """A Python model without config.pbtxt (Triton 2.51 loads it with no inputs/outputs)."""
    result = cfg_json.config_to_json(cfg.complete_config(mc.ModelConfig(), "noconfig"))
    assert result["name"] == "noconfig"
    assert result["backend"] == "python"
    assert result["input"] == [] and result["output"] == []
    assert result["default_model_filename"] == "model.py"
    assert result["instance_group"][0]["name"] == "noconfig"
    assert result["instance_group"][0]["kind"] == "KIND_CPU"


def test_complete_returns_a_new_config_and_leaves_the_input_alone() -> None:
    raw = parse(NOIG_SOURCE)
    before = raw.SerializeToString()
    done = cfg.complete_config(raw, "noig")
    assert done is not raw
    assert raw.SerializeToString() == before
    assert done.name == "noig"


def test_complete_rejects_a_name_that_differs_from_the_folder() -> None:
    with raises(
        ErrorKind.INVALID_ARG,
        "unexpected directory name 'mismatch' for model 'other', directory name must equal "
        "model name",
    ):
        completed(f'name: "other" {IO}', "mismatch")


def test_complete_keeps_a_matching_name() -> None:
    assert completed(f'name: "same" {IO}', "same").name == "same"


def test_complete_fills_backend_from_platform_and_filename() -> None:
    onnx = completed(f'platform: "onnxruntime_onnx" {IO}')
    assert (onnx.backend, onnx.default_model_filename) == ("onnxruntime", "model.onnx")
    by_file = completed(f'default_model_filename: "model.pt" {IO}')
    assert (by_file.backend, by_file.platform) == ("pytorch", "pytorch_libtorch")
    custom = completed(f'backend: "python" default_model_filename: "main.py" {IO}')
    assert custom.default_model_filename == "main.py"


def test_complete_version_policy_default_and_kept() -> None:
    assert completed(IO).version_policy.latest.num_versions == 1
    kept = completed(f"{IO} version_policy {{ all {{ }} }}")
    assert kept.version_policy.WhichOneof("policy_choice") == "all"
    specific = completed(f"{IO} version_policy {{ specific {{ versions: [3, 1] }} }}")
    assert list(specific.version_policy.specific.versions) == [3, 1]


def test_complete_preferred_batch_sizes() -> None:
    default = completed(f"max_batch_size: 8 {IO} dynamic_batching {{}}")
    assert list(default.dynamic_batching.preferred_batch_size) == [8]
    given = completed(f"max_batch_size: 8 {IO} dynamic_batching {{ preferred_batch_size: [2] }}")
    assert list(given.dynamic_batching.preferred_batch_size) == [2]
    # Observed: a non-batching model with dynamic batching keeps an empty list.
    unbatched = completed(f"{IO} dynamic_batching {{}}")
    assert list(unbatched.dynamic_batching.preferred_batch_size) == []
    assert not completed(IO).HasField("dynamic_batching")


def test_complete_sequence_batching_defaults() -> None:
    plain = completed(f"{IO} sequence_batching {{}}")
    assert plain.sequence_batching.max_sequence_idle_microseconds == 1_000_000
    assert plain.sequence_batching.WhichOneof("strategy_choice") is None
    kept = completed(f"{IO} sequence_batching {{ max_sequence_idle_microseconds: 5 }}")
    assert kept.sequence_batching.max_sequence_idle_microseconds == 5


def test_complete_pinned_memory_defaults_do_not_override() -> None:
    default = completed(IO)
    assert default.optimization.input_pinned_memory.enable
    assert default.optimization.output_pinned_memory.enable
    off = completed(f"{IO} optimization {{ output_pinned_memory {{ enable: false }} }}")
    assert not off.optimization.output_pinned_memory.enable
    assert off.optimization.input_pinned_memory.enable


def test_complete_instance_groups_names_counts_kinds() -> None:
    config = completed(
        f"{IO} instance_group [{{kind: KIND_CPU}}, {{count: 2}}, {{name: 'g' count: -3}},"
        " {kind: KIND_MODEL}]",
        "igs",
    )
    groups = [(g.name, g.kind, g.count) for g in config.instance_group]
    assert groups == [
        ("igs_0", mc.ModelInstanceGroup.KIND_CPU, 1),
        ("igs_1", mc.ModelInstanceGroup.KIND_CPU, 2),
        ("g", mc.ModelInstanceGroup.KIND_CPU, 1),
        ("igs_3", mc.ModelInstanceGroup.KIND_MODEL, 1),
    ]


def test_complete_instance_count_default_for_onnxruntime_cpu() -> None:
    config = completed(f'backend: "onnxruntime" {IO} instance_group [{{kind: KIND_CPU}}]')
    assert config.instance_group[0].count == 2


def test_complete_auto_kind_resolves_by_gpu_presence() -> None:
    cpu = completed(IO, "m")
    assert cpu.instance_group[0].kind == mc.ModelInstanceGroup.KIND_CPU
    assert list(cpu.instance_group[0].gpus) == []
    gpu = completed(IO, "m", has_gpu=True)
    assert gpu.instance_group[0].kind == mc.ModelInstanceGroup.KIND_GPU
    assert list(gpu.instance_group[0].gpus) == [0]
    two = completed(IO, "m", has_gpu=True, gpu_ids=[1, 0])
    assert list(two.instance_group[0].gpus) == [0, 1]
    # KIND_AUTO listing a GPU that does not exist falls back to the CPU.
    missing = completed(f"{IO} instance_group [{{gpus: [3]}}]", "m", has_gpu=True)
    assert missing.instance_group[0].kind == mc.ModelInstanceGroup.KIND_CPU
    assert list(missing.instance_group[0].gpus) == []


def test_complete_gpu_kind_without_gpu() -> None:
    text = f"{IO} instance_group [{{kind: KIND_GPU gpus: [0]}}]"
    relaxed = completed(text, "gpu")
    assert relaxed.instance_group[0].kind == mc.ModelInstanceGroup.KIND_CPU
    assert list(relaxed.instance_group[0].gpus) == []
    checks.validate_config(relaxed)
    with raises(
        ErrorKind.INVALID_ARG,
        "instance group gpu_0 of model gpu has kind KIND_GPU but no GPUs are available",
    ):
        completed(text, "gpu", strict_gpu=True)


def test_complete_gpu_kind_with_gpu() -> None:
    filled = completed(f"{IO} instance_group [{{kind: KIND_GPU count: 2}}]", "m", has_gpu=True)
    assert filled.instance_group[0].kind == mc.ModelInstanceGroup.KIND_GPU
    assert list(filled.instance_group[0].gpus) == [0]
    assert filled.instance_group[0].count == 2
    checks.validate_config(filled)
    with raises(ErrorKind.INVALID_ARG, "specifies invalid or unsupported gpu id 5"):
        completed(f"{IO} instance_group [{{kind: KIND_GPU gpus: [5]}}]", "m", has_gpu=True)


def test_complete_ensemble_gets_no_instances_or_optimization() -> None:
    text = (
        f'platform: "ensemble" {IO} ensemble_scheduling {{ step [{{ model_name: "a" '
        'model_version: -1 input_map { key: "X" value: "I" } output_map { key: "Y" value: "O" }'
        " }] }"
    )
    config = completed(text, "ens")
    assert not config.instance_group
    assert not config.HasField("optimization")
    assert config.backend == "" and config.default_model_filename == ""
    checks.validate_config(config)


# ---------------------------------------------------------------------------------------------
# validate_config
# ---------------------------------------------------------------------------------------------

INVALID_CASES = [
    ("max_batch_size: -1 " + IO, "'max_batch_size' must be non-negative value for m"),
    (
        'input [{name: "I" data_type: TYPE_FP32 dims: []}] '
        'output [{name: "O" data_type: TYPE_FP32 dims: [1]}]',
        "model input 'I' must specify 'dims' for m",
    ),
    (
        'max_batch_size: 4 input [{name: "I" data_type: TYPE_FP32}] '
        'output [{name: "O" data_type: TYPE_FP32 dims: [1]}]',
        "model input 'I' must specify 'dims' for m",
    ),
    (
        'input [{name: "I" data_type: TYPE_FP32 dims: [0]}] '
        'output [{name: "O" data_type: TYPE_FP32 dims: [1]}]',
        "model input 'I' dimension must be integer >= 1, or -1 to indicate a variable-size "
        "dimension for m",
    ),
    (
        'input [{name: "I" data_type: TYPE_FP32 dims: [1]}] '
        'output [{name: "O" data_type: TYPE_FP32 dims: [-1, -3]}]',
        "model output 'O' dimension must be integer >= 1",
    ),
    (
        'input [{name: "I" dims: [1]}] output [{name: "O" data_type: TYPE_FP32 dims: [1]}]',
        "model input 'I' must specify 'data_type' for m",
    ),
    (
        'input [{name: "I" data_type: TYPE_FP32 dims: [1]}] output [{name: "O" dims: [1]}]',
        "model output 'O' must specify 'data_type' for m",
    ),
    (
        'input [{data_type: TYPE_FP32 dims: [1]}] output [{name: "O" data_type: TYPE_FP32 '
        "dims: [1]}]",
        "model input must specify 'name' for m",
    ),
    (
        'input [{name: "I" data_type: TYPE_FP32 dims: [1]}, {name: "I" data_type: TYPE_INT32 '
        'dims: [1]}] output [{name: "O" data_type: TYPE_FP32 dims: [1]}]',
        "model input 'I' is specified more than once for m",
    ),
    (
        'input [{name: "I" data_type: TYPE_FP32 dims: [1]}] output [{name: "O" data_type: '
        'TYPE_FP32 dims: [1]}, {name: "O" data_type: TYPE_FP32 dims: [2]}]',
        "model output 'O' is specified more than once for m",
    ),
    (
        f"max_batch_size: 4 {IO} dynamic_batching {{ preferred_batch_size: [8] }}",
        "dynamic batching preferred size must be <= max batch size for m",
    ),
    (
        f"{IO} dynamic_batching {{ preferred_batch_size: [2] }}",
        "dynamic batching preferred size must be <= max batch size for m",
    ),
    (
        f"max_batch_size: 4 {IO} dynamic_batching {{ preferred_batch_size: [0] }}",
        "dynamic batching preferred size must be positive for m",
    ),
    (
        f"max_batch_size: 4 {IO} dynamic_batching {{ priority_levels: 2 "
        "default_priority_level: 3 }",
        "default priority level must be in range [1, 2] for m",
    ),
    (
        f"max_batch_size: 4 {IO} dynamic_batching {{ priority_levels: 2 "
        "default_priority_level: 1 priority_queue_policy [{key: 5 value {}}] }",
        "priority queue policy must have priority level in range [1, 2] for m",
    ),
    (
        f"max_batch_size: 4 {IO} dynamic_batching {{ preserve_ordering: true priority_levels: 2 "
        "default_priority_level: 1 }",
        "Only one priority level is allowed when 'preserve_ordering' is true for m",
    ),
    (
        f"max_batch_size: 4 {IO} dynamic_batching {{ preserve_ordering: true "
        "default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 5 } }",
        "Queue policy can not have DELAY as timeout action",
    ),
    (
        f"{IO} sequence_batching {{ control_input [{{name: 'S' control [{{kind: "
        "CONTROL_SEQUENCE_START}]}] }",
        "sequence batching must specify either 'int32_false_true', 'fp32_false_true' or "
        "'bool_false_true' for CONTROL_SEQUENCE_START for m",
    ),
    (
        f"{IO} sequence_batching {{ control_input [{{name: 'S' control [{{kind: "
        "CONTROL_SEQUENCE_END int32_false_true: [0, 1, 2]}]}] }",
        "sequence batching control 'int32_false_true' must have exactly 2 entries for "
        "CONTROL_SEQUENCE_END for m",
    ),
    (
        f"{IO} sequence_batching {{ control_input [{{name: 'S' control [{{kind: "
        "CONTROL_SEQUENCE_READY int32_false_true: [0, 1] bool_false_true: [false, true]}]}] }",
        "sequence batching specifies more than one from",
    ),
    (
        f"{IO} sequence_batching {{ control_input [{{name: 'S' control [{{kind: "
        "CONTROL_SEQUENCE_START int32_false_true: [0, 1]}]}, {name: 'S' control [{kind: "
        "CONTROL_SEQUENCE_END int32_false_true: [0, 1]}]}] }",
        "sequence batching control tensor 'S' is specified for multiple control kinds for m",
    ),
    (
        f"{IO} sequence_batching {{ control_input [{{name: 'A' control [{{kind: "
        "CONTROL_SEQUENCE_START int32_false_true: [0, 1]}]}, {name: 'B' control [{kind: "
        "CONTROL_SEQUENCE_START fp32_false_true: [0, 1]}]}] }",
        "sequence batching specifies multiple CONTROL_SEQUENCE_START tensors for m",
    ),
    (
        f"{IO} sequence_batching {{ control_input [{{name: 'C' control [{{kind: "
        "CONTROL_SEQUENCE_CORRID data_type: TYPE_FP32}]}] }",
        "unexpected data type for control CONTROL_SEQUENCE_CORRID for m. Allowed data types "
        "are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING",
    ),
    (
        f"{IO} sequence_batching {{ control_input [{{name: 'C' control [{{kind: "
        "CONTROL_SEQUENCE_CORRID}]}] }",
        "unexpected data type for control CONTROL_SEQUENCE_CORRID",
    ),
    (
        f"{IO} sequence_batching {{ control_input [{{name: 'C' control [{{kind: "
        "CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 int32_false_true: [0, 1]}]}] }",
        "sequence batching must not specify either 'int32_false_true'",
    ),
    (
        f"{IO} sequence_batching {{ control_input [{{control [{{kind: "
        "CONTROL_SEQUENCE_START int32_false_true: [0, 1]}]}] }",
        "sequence batching control tensor must have a name for m",
    ),
    (
        f"max_batch_size: 2 {IO} sequence_batching {{ oldest {{ preferred_batch_size: [4] }} }}",
        "sequence batching preferred batch size must be <= max batch size for m",
    ),
    (
        f"{IO} sequence_batching {{ direct {{ minimum_slot_utilization: 1.5 }} }}",
        "sequence batching minimum slot utilization must be in range (0.0, 1.0] for m",
    ),
    (
        f"{IO} sequence_batching {{ state [{{input_name: 'A' output_name: 'B' dims: [1]}}] }}",
        "sequence batching state 'A' must specify a valid 'data_type' for m",
    ),
    (
        f"{IO} sequence_batching {{ state [{{input_name: 'A' data_type: TYPE_INT32 dims: [1]}}] }}",
        "sequence batching state must specify 'input_name' and 'output_name' for m",
    ),
    (
        'input [{name: "I" data_type: TYPE_FP32 dims: [2, 3] reshape { shape: [5] }}] '
        'output [{name: "O" data_type: TYPE_FP32 dims: [1]}]',
        "model input 'I' has different size for dims and reshape for m",
    ),
    (
        'input [{name: "I" data_type: TYPE_FP32 dims: [2, -1] reshape { shape: [-1, -1] }}] '
        'output [{name: "O" data_type: TYPE_FP32 dims: [1]}]',
        "has different number of variable-size dimensions for dims and reshape for m",
    ),
    (
        'input [{name: "I" data_type: TYPE_FP32 dims: [1] reshape { shape: [] }}] '
        'output [{name: "O" data_type: TYPE_FP32 dims: [1]}]',
        "model input 'I' cannot have empty reshape for non-batching model as scalar tensors are "
        "not supported for m",
    ),
    (
        'input [{name: "I" data_type: TYPE_FP32 format: FORMAT_NHWC dims: [4]}] '
        'output [{name: "O" data_type: TYPE_FP32 dims: [1]}]',
        "model input NHWC/NCHW require 3 dims for m",
    ),
    (
        'input [{name: "I" data_type: TYPE_INT32 dims: [1] is_shape_tensor: true}] '
        'output [{name: "O" data_type: TYPE_FP32 dims: [1]}]',
        "shape tensors are only supported for TensorRT platform for m",
    ),
    (
        f"max_batch_size: 2 {IO} batch_input [{{kind: BATCH_ELEMENT_COUNT target_name: 'T' "
        "data_type: TYPE_INT32 source_input: 'NOPE'}]",
        "unknown source input name 'NOPE' for m",
    ),
    (
        f"max_batch_size: 2 {IO} batch_input [{{kind: BATCH_ELEMENT_COUNT target_name: 'T' "
        "data_type: TYPE_INT64 source_input: 'I'}]",
        "batch input data type must be TYPE_INT32 or TYPE_FP32 for m",
    ),
    (
        f"max_batch_size: 2 {IO} batch_output [{{kind: BATCH_SCATTER_WITH_INPUT_SHAPE "
        "target_name: 'X' source_input: 'I'}]",
        "unknown target output name 'X' for m",
    ),
    (
        f"{IO} instance_group [{{kind: KIND_MODEL gpus: [0]}}]",
        "instance group m_0 of model m has kind KIND_MODEL but specifies one or more GPUs",
    ),
    (
        f"{IO} instance_group [{{kind: KIND_CPU gpus: [0]}}]",
        "instance group m_0 of model m has kind KIND_CPU but specifies one or more GPUs",
    ),
    (
        f"{IO} instance_group [{{kind: KIND_CPU profile: '0'}}]",
        "specifies profile field which is only supported for TensorRT models",
    ),
    (
        f"{IO} model_transaction_policy {{ decoupled: true }} response_cache {{ enable: true }}",
        "Response Cache does not currently support model m with 'decoupled' transaction policy",
    ),
    (
        f'platform: "ensemble" {IO}',
        "ensemble scheduling must be set for ensemble m whose platform is ensemble",
    ),
    (
        f'platform: "ensemble" {IO} ensemble_scheduling {{ }}',
        "must specify 'step' for ensemble 'm'",
    ),
    (
        f'platform: "ensemble" {IO} ensemble_scheduling {{ step [{{model_name: "a"}}] }}',
        "must specify 'input_map' in step 0 of ensemble 'm'",
    ),
    (
        f'platform: "mystery_platform" {IO}',
        "unexpected platform type 'mystery_platform' for m",
    ),
    (
        f"{IO} model_metrics {{ metric_control [{{ metric_identifier {{ family: 'f' }} }}] }}",
        "metric control must specify 'histogram_options'",
    ),
]


@pytest.mark.parametrize(("text", "message"), INVALID_CASES)
def test_validate_rejects(text: str, message: str) -> None:
    config = completed(text, "m")
    with raises(ErrorKind.INVALID_ARG, message):
        checks.validate_config(config)


POLL_STAGE = [
    "max_batch_size: -1 " + IO,
    f"max_batch_size: 4 {IO} dynamic_batching {{ preferred_batch_size: [8] }}",
    f"{IO} sequence_batching {{ control_input [{{name: 'C' control [{{kind: "
    "CONTROL_SEQUENCE_CORRID}]}] }",
]
LOAD_STAGE = [
    'input [{name: "I" data_type: TYPE_FP32 dims: [0]}] '
    'output [{name: "O" data_type: TYPE_FP32 dims: [1]}]',
    f"{IO} instance_group [{{kind: KIND_CPU gpus: [0]}}]",
]


@pytest.mark.parametrize("text", POLL_STAGE)
def test_poll_stage_errors_are_found_on_poll(text: str) -> None:
    config = completed(text)
    with pytest.raises(ServerError):
        checks.validate_config_on_poll(config)
    checks.validate_config_on_load(config)  # not a load-stage problem


@pytest.mark.parametrize("text", LOAD_STAGE)
def test_load_stage_errors_are_found_on_load(text: str) -> None:
    config = completed(text)
    checks.validate_config_on_poll(config)
    with pytest.raises(ServerError):
        checks.validate_config_on_load(config)


def test_validate_rejects_unresolved_auto_kind_as_internal() -> None:
    config = completed(IO)
    config.instance_group[0].kind = mc.ModelInstanceGroup.KIND_AUTO
    with raises(ErrorKind.INTERNAL, "has unexpected kind KIND_AUTO"):
        checks.validate_config(config)


def test_validate_requires_completion() -> None:
    with raises(ErrorKind.INVALID_ARG, "model configuration must specify 'name'"):
        checks.validate_config(parse(IO))
    named = parse(f'name: "m" backend: "python" {IO}')
    with raises(ErrorKind.INVALID_ARG, "must specify 'version policy' for m"):
        checks.validate_config(named)
    named.version_policy.latest.num_versions = 1
    with raises(ErrorKind.INVALID_ARG, "must specify one or more 'instance group's for m"):
        checks.validate_config(named)


VALID_CASES = [
    IO,
    f"max_batch_size: 8 {IO}",
    f"{IO} model_transaction_policy {{ decoupled: true }}",
    f"{IO} model_transaction_policy {{ decoupled: true }} dynamic_batching {{ }}",
    f"max_batch_size: 4 {IO} model_transaction_policy {{ decoupled: true }} "
    "sequence_batching { oldest { } }",
    f"{IO} sequence_batching {{ control_input [{{name: 'S' control [{{kind: "
    "CONTROL_SEQUENCE_START fp32_false_true: [0, 1]}]}, {name: 'R' control [{kind: "
    "CONTROL_SEQUENCE_READY bool_false_true: [false, true]}]}, {name: 'C' control [{kind: "
    "CONTROL_SEQUENCE_CORRID data_type: TYPE_STRING}]}] }",
    # A per-item scalar: dims [1] reshaped to [] (allowed for batching models).
    'max_batch_size: 4 input [{name: "I" data_type: TYPE_FP32 dims: [1] reshape { shape: [] }}] '
    'output [{name: "O" data_type: TYPE_STRING dims: [-1]}]',
    'input [{name: "I" data_type: TYPE_FP32 dims: [2, 4, -1, 6] reshape { shape: [8, -1, 1, 6] }}]'
    ' output [{name: "O" data_type: TYPE_BF16 dims: [-1, -1]}]',
    f"max_batch_size: 4 {IO} dynamic_batching {{ priority_levels: 3 default_priority_level: 2 "
    "priority_queue_policy [{key: 3 value {max_queue_size: 1}}] }",
    # Triton accepts default_priority_level without priority_levels (observed).
    f"max_batch_size: 2 {IO} dynamic_batching {{ default_priority_level: 1 }}",
    f"max_batch_size: 2 {IO} batch_input [{{kind: BATCH_ELEMENT_COUNT target_name: 'T' "
    "data_type: TYPE_INT32 source_input: 'I'}]",
]


@pytest.mark.parametrize("text", VALID_CASES)
def test_validate_accepts(text: str) -> None:
    checks.validate_config(completed(text))


# ---------------------------------------------------------------------------------------------
# config_to_json details
# ---------------------------------------------------------------------------------------------


def test_json_numbers_floats_enums_oneofs() -> None:
    config = completed(
        f"max_batch_size: 4 {IO} sequence_batching {{ direct {{ minimum_slot_utilization: 0.1 "
        "max_queue_delay_microseconds: 18446744073709551615 } control_input [{name: 'S' "
        "control [{kind: CONTROL_SEQUENCE_START fp32_false_true: [0, 1.5]}]}] state [{"
        "input_name: 'A' output_name: 'B' data_type: TYPE_INT32 dims: [1] initial_state [{"
        "name: 'i' data_type: TYPE_INT32 dims: [1] zero_data: true}]}] }"
    )
    result = cfg_json.config_to_json(config)
    sequence = result["sequence_batching"]
    assert sequence["direct"] == {
        "max_queue_delay_microseconds": 18446744073709551615,
        "minimum_slot_utilization": 0.1,
    }
    assert "oldest" not in sequence
    control = sequence["control_input"][0]["control"][0]
    assert control["fp32_false_true"] == [0, 1.5]
    assert control["data_type"] == "TYPE_INVALID"
    initial = sequence["state"][0]["initial_state"][0]
    assert initial["dims"] == [1]  # Triton 2.51 prints ["1"] here (a bug not reproduced)
    assert initial["zero_data"] is True
    assert "data_file" not in initial  # unset oneof member
    assert json.dumps(result).count("18446744073709551615") == 1


def test_json_transaction_policy_printed_last_when_set() -> None:
    """Observed on Triton 2.51 for a decoupled model: the key comes after model_warmup."""
    result = cfg_json.config_to_json(
        completed(f"{IO} model_transaction_policy {{ decoupled: true }}")
    )
    assert list(result)[-2:] == ["model_warmup", "model_transaction_policy"]
    assert result["model_transaction_policy"] == {"decoupled": True}


def test_json_unset_messages_are_omitted_and_defaults_printed() -> None:
    result = cfg_json.config_to_json(parse(IO))
    assert "version_policy" not in result and "optimization" not in result
    assert result["name"] == "" and result["max_batch_size"] == 0
    assert result["cc_model_filenames"] == {} and result["model_warmup"] == []
    assert "reshape" not in result["input"][0]


def test_json_unknown_enum_number_is_printed_as_number() -> None:
    config = parse(IO)
    config.input[0].data_type = 99  # type: ignore[assignment]
    assert cfg_json.config_to_json(config)["input"][0]["data_type"] == 99


def test_json_of_any_message() -> None:
    group = mc.ModelInstanceGroup(name="g", count=2)
    assert cfg_json.config_to_json(group) == {
        "name": "g",
        "kind": "KIND_AUTO",
        "count": 2,
        "gpus": [],
        "secondary_devices": [],
        "profile": [],
        "passive": False,
        "host_policy": "",
    }


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def test_io_by_name_and_decoupled() -> None:
    config = completed(
        'input [{name: "A" data_type: TYPE_FP32 dims: [1]}, {name: "B" data_type: TYPE_STRING '
        'dims: [1]}] output [{name: "C" data_type: TYPE_INT8 dims: [2]}]'
    )
    inputs, outputs = cfg.io_by_name(config)
    assert list(inputs) == ["A", "B"] and inputs["B"].data_type == mc.TYPE_STRING
    assert list(outputs) == ["C"]
    assert not cfg.is_decoupled(config)
    assert cfg.is_decoupled(completed(f"{IO} model_transaction_policy {{ decoupled: true }}"))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (mc.TYPE_STRING, "BYTES"),
        (mc.TYPE_FP32, "FP32"),
        (mc.TYPE_BF16, "BF16"),
        (mc.TYPE_BOOL, "BOOL"),
        (mc.TYPE_UINT64, "UINT64"),
    ],
)
def test_datatype_of(value: int, expected: str) -> None:
    assert cfg.datatype_of(value) == expected


@pytest.mark.parametrize("value", [mc.TYPE_INVALID, 99])
def test_datatype_of_rejects_invalid(value: int) -> None:
    with raises(ErrorKind.INVALID_ARG, "unsupported model configuration data type"):
        cfg.datatype_of(value)


def test_model_metadata_matches_section_3_5() -> None:
    config = completed(
        'backend: "python" max_batch_size: 8 input [{name: "INPUT0" data_type: TYPE_FP32 '
        'dims: [4]}] output [{name: "OUTPUT0" data_type: TYPE_FP32 dims: [4]}]',
        "identity_fp32",
    )
    expected = json.loads(
        '{"name":"identity_fp32","versions":["1"],"platform":"python",'
        '"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[-1,4]}],'
        '"outputs":[{"name":"OUTPUT0","datatype":"FP32","shape":[-1,4]}]}'
    )
    result = cfg.model_metadata(config, [1])
    assert result == expected
    assert list(result) == list(expected)


def test_model_metadata_non_batching_versions_and_platform() -> None:
    config = completed(
        'input [{name: "S" data_type: TYPE_STRING dims: [-1, 2]}] '
        'output [{name: "O" data_type: TYPE_FP32 dims: [4]}]'
    )
    result = cfg.model_metadata(config, [10, 2, 1])
    assert result["versions"] == ["1", "2", "10"]
    assert result["inputs"] == [{"name": "S", "datatype": "BYTES", "shape": [-1, 2]}]
    assert result["outputs"][0]["shape"] == [4]
    onnx = completed(f'platform: "onnxruntime_onnx" {IO}')
    assert cfg.model_metadata(onnx, [1])["platform"] == "onnxruntime_onnx"
