"""Bad input: clustersim.InputError with the CLI's message, and the file, line, column and key the
C++ error carries; a wrong Python type: clustersim.InputTypeError."""

import pytest

import clustersim
from conftest import SOURCE_DIR

LLAMA3_8B = SOURCE_DIR / "scenarios" / "llama3-8b-dgx-h100.yaml"


def scenario_file(tmp_path, replace, by):
    """A copy of the Llama-3-8B scenario with the line `replace` changed to `by`, and the line
    number (1-based) of that line."""
    lines = LLAMA3_8B.read_text().splitlines()
    line = lines.index(replace)
    lines[line] = by
    path = tmp_path / "scenario.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path, line + 1


def raised_by(*args, **kwargs):
    with pytest.raises(clustersim.InputError) as raised:
        clustersim.run(*args, **kwargs)
    return raised.value


def test_input_error_is_a_value_error():
    assert issubclass(clustersim.InputError, ValueError)
    assert issubclass(clustersim.InputTypeError, clustersim.InputError)
    assert issubclass(clustersim.InputTypeError, TypeError)
    assert clustersim.InputError.__module__ == "clustersim"


def test_an_unknown_key_in_the_file(cli, tmp_path):
    path, line = scenario_file(tmp_path, "  global_batch: 128", "  globl_batch: 128")
    error = raised_by(path)
    assert str(error) == cli.error("run", path)
    assert (error.file, error.line, error.column, error.key) == (str(path), line, 3, "training.globl_batch")
    assert 'did you mean "global_batch"?' in str(error)


def test_a_bad_value_in_the_file(cli, tmp_path):
    path, line = scenario_file(tmp_path, "  seq_len: 8192", "  seq_len: 8k")
    error = raised_by(path)
    assert str(error) == cli.error("run", path)
    assert (error.file, error.line, error.key) == (str(path), line, "training.seq_len")


def test_a_yaml_syntax_error_names_the_file_and_line(cli, tmp_path):
    path, line = scenario_file(tmp_path, "  micro_batch: 1", "  micro_batch: [1")
    error = raised_by(path)
    assert str(error) == cli.error("run", path)
    assert error.file == str(path) and error.line is not None and error.line >= line and error.key is None


def test_a_layout_that_does_not_divide_the_cluster(cli):
    error = raised_by(LLAMA3_8B, overrides={"parallelism.tp": 3})
    assert str(error) == cli.error("run", LLAMA3_8B, "--set", "parallelism.tp=3")


def test_a_scenario_without_a_model_names_the_section(cli, tmp_path):
    path = tmp_path / "nomodel.yaml"
    path.write_text("cluster: {node: dgx-h100, nodes: 1}\ntraining: {seq_len: 1024, global_batch: 8}\n")
    error = raised_by(path)
    assert str(error) == cli.error("run", path)
    assert (error.file, error.line, error.key) == (str(path), None, "model")


def test_a_rule_between_two_keys_is_placed_at_the_one_the_file_gives(cli):
    error = raised_by(LLAMA3_8B, overrides={"cluster.storage.bandwidth": "1 TB/s", "training.tokens": 1e12,
                                            "campaign.relaunch_time": "10 min", "campaign.spare_nodes": 2})
    assert error.key == "campaign.spare_nodes" and error.file is None
    assert str(error).startswith("--set campaign.spare_nodes: spare nodes need campaign.repair_time")


@pytest.mark.parametrize("key, value, text", [
    ("training.global_batch", "abc", "abc"),
    ("training.global_batch", 64.5, "64.5"),
    ("training.global_batch", True, "true"),
    ("training.recompute", "everything", "everything"),
    ("parallelism.sequence_parallel", 1, "1"),
    ("training.hidden_dropout", float("inf"), "inf"),
])
def test_a_bad_override_value_is_the_clis_error(cli, key, value, text):
    error = raised_by(LLAMA3_8B, overrides={key: value})
    assert str(error) == cli.error("run", LLAMA3_8B, "--set", f"{key}={text}")
    assert (error.file, error.line, error.column, error.key) == (None, None, None, key)


def test_an_unknown_override_key_is_the_clis_error(cli):
    error = raised_by(LLAMA3_8B, overrides={"training.globl_batch": 64})
    assert str(error) == cli.error("run", LLAMA3_8B, "--set", "training.globl_batch=64")
    assert error.key == "training.globl_batch" and error.file is None


def test_a_missing_file_names_it(tmp_path):
    # The CLI refuses a missing file in its argument parser (CLI11: "File does not exist: ..."); the
    # module gets the loader's own message, naming the same file.
    missing = tmp_path / "missing.yaml"
    error = raised_by(missing)
    assert str(error) == f"{missing}: cannot open the YAML file (No such file or directory)"
    assert (error.file, error.line, error.key) == (str(missing), None, None)


def test_an_overflow_says_what_it_means(cli):
    # Values each in range whose step is beyond int64 picoseconds: the CLI's OverflowError words.
    error = raised_by(LLAMA3_8B, overrides={"training.seq_len": 1 << 24})
    assert str(error) == cli.error("run", LLAMA3_8B, "--set", f"training.seq_len={1 << 24}")
    assert "overflows int64; training.seq_len 16777216" in str(error)
    assert "a size or time this input leads to is beyond what clustersim represents" in str(error)


@pytest.mark.parametrize("call, key", [
    (lambda: clustersim.run(LLAMA3_8B, overrides={"training.global_batch": object()}), "training.global_batch"),
    (lambda: clustersim.run(LLAMA3_8B, overrides={"training.global_batch": None}), "training.global_batch"),
    (lambda: clustersim.run(LLAMA3_8B, overrides={"search.tp": [1, object()]}), "search.tp"),
    (lambda: clustersim.run(LLAMA3_8B, overrides={1: 2}), "overrides"),
    (lambda: clustersim.run(LLAMA3_8B, overrides=[("training.global_batch", 64)]), "overrides"),
    (lambda: clustersim.run(42), "scenario"),
    (lambda: clustersim.run(None), "scenario"),
    (lambda: clustersim.search(LLAMA3_8B, top="3"), "top"),
    (lambda: clustersim.search(LLAMA3_8B, threads=1.5), "threads"),
], ids=["object", "none", "object-in-list", "int-key", "list-of-pairs", "int-path", "none-path", "str-top",
        "float-threads"])
def test_a_wrong_python_type_is_an_input_type_error(call, key):
    with pytest.raises(clustersim.InputTypeError) as raised:
        call()
    assert raised.value.key == key
    assert raised.value.file is None and raised.value.line is None
    assert "expected" in str(raised.value)


def test_an_override_key_with_an_equals_sign_is_refused():
    # "a=b": 1 would be --set a=b=1, the key "a" with the value "b=1".
    with pytest.raises(clustersim.InputError) as raised:
        clustersim.run(LLAMA3_8B, overrides={"training.global_batch=64": 1})
    assert not isinstance(raised.value, TypeError)
    assert raised.value.key == "training.global_batch=64" and "'='" in str(raised.value)
