"""clustersim.keys(kind): the keys `clustersim help-config KIND` prints, as records."""

import pytest

import clustersim

KINDS = ["scenario", "model", "gpu", "nic", "node"]


def help_config_text(keys):
    """The key lines of `clustersim help-config KIND` written from the records: the path indented
    two spaces per dot and padded to 44 columns, the type, "; default D" and "; required", then the
    description under it (scenarios/schema.cc Schema::print)."""
    lines = []
    for k in keys:
        line = f"{'  ' * k['key'].count('.')}{k['key']}".ljust(44) + " " + k["type"]
        if k["default"] is not None:
            line += f"; default {k['default']}"
        if k["required"]:
            line += "; required"
        lines.append(line)
        lines.append(" " * 47 + k["description"])
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("kind", KINDS)
def test_the_keys_are_those_help_config_prints(cli, kind):
    keys = clustersim.keys(kind)
    printed = cli.output("help-config", kind)
    # Its first line names the kind ("# scenario keys"); the presets' names follow a blank line.
    schema = printed[printed.index("\n") + 1:printed.index("\n\n") + 1]
    assert help_config_text(keys) == schema


def test_scenario_keys_carry_defaults_choices_and_bounds():
    by_key = {k["key"]: k for k in clustersim.keys()}
    assert by_key["parallelism.tp"]["default"] == "1"
    assert by_key["parallelism.tp"]["min"] == 1
    assert by_key["training.precision"]["choices"] == ["bf16", "fp16", "fp8"]
    assert by_key["training.seq_len"]["default"] is None
    assert by_key["stragglers[].speed"]["required"] is True
    assert by_key["jitter"]["type"] == "section"
    # The top-level seed is what jitter.seed and campaign.seed default to.
    assert by_key["jitter.seed"]["default"] is None
    assert "top-level seed" in by_key["jitter.seed"]["description"]


def test_a_bad_kind(cli):
    with pytest.raises(clustersim.InputError) as raised:
        clustersim.keys("scenarios")
    assert "scenario, model, gpu, nic, node" in str(raised.value)
    with pytest.raises(clustersim.InputTypeError):
        clustersim.keys(3)
