"""clustersim.run() against `clustersim run --json` of the CLI."""

import math

import pytest

import clustersim
from conftest import SOURCE_DIR, canonical

# Every shipped scenario, the calibration references of scenarios/reference/ included (all of them
# together run in a few seconds).
SCENARIOS = sorted(SOURCE_DIR.glob("scenarios/*.yaml")) + sorted(SOURCE_DIR.glob("scenarios/reference/*.yaml"))
LLAMA3_8B = SOURCE_DIR / "scenarios" / "llama3-8b-dgx-h100.yaml"


def test_every_shipped_scenario_is_found():
    # The glob must see the shipped files, or the parametrised test below would test nothing.
    names = {path.name for path in SCENARIOS}
    assert {"llama3-8b-dgx-h100.yaml", "llama3-405b-16k-h100.yaml", "deepseek-v3-2048-h800.yaml"} <= names
    assert any(path.parent.name == "reference" for path in SCENARIOS)


# The 16,384-GPU Llama-3-405B steps run analytically here (a 10 s budget for fidelity auto): at the
# default budget auto simulates their flows, a minute each (tests/flow_scale_slow_test.cc, label slow).
MINUTE_AT_FLOW = {"llama3-405b-16k-h100.yaml", "llama3-405b-16k-h100-pods.yaml"}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: str(p.relative_to(SOURCE_DIR / "scenarios")))
def test_run_equals_the_cli_json(cli, scenario):
    overrides = {"simulation.auto_flow_seconds": "10s"} if scenario.name in MINUTE_AT_FLOW else {}
    sets = [a for key, value in overrides.items() for a in ("--set", f"{key}={value}")]
    expected = cli.json("run", scenario, "--json", "--reproducible", *sets)
    assert canonical(clustersim.run(scenario, overrides=overrides, reproducible=True)) == canonical(expected)


def test_a_run_without_reproducible_reports_its_wall_time(cli):
    result = clustersim.run(str(LLAMA3_8B))
    expected = cli.json("run", LLAMA3_8B, "--json", "--reproducible")
    assert result["sim"]["wall_s"] > 0
    result["sim"]["wall_s"] = 0.0
    assert canonical(result) == canonical(expected)


def test_overrides_are_the_clis_set(cli):
    overrides = {"training.global_batch": 64, "training.recompute": "full", "parallelism.sequence_parallel": False,
                 "parallelism.tp": 4, "parallelism.dp": 2}
    result = clustersim.run(LLAMA3_8B, overrides=overrides, reproducible=True)
    expected = cli.json("run", LLAMA3_8B, "--json", "--reproducible", "--set", "training.global_batch=64",
                        "--set", "training.recompute=full", "--set", "parallelism.sequence_parallel=false",
                        "--set", "parallelism.tp=4", "--set", "parallelism.dp=2")
    assert canonical(result) == canonical(expected)
    # The overrides took: the layout and batch are the ones asked for, and the step differs.
    assert result["layout"]["tp"] == 4 and result["layout"]["dp"] == 2
    assert result["layout"]["sequence_parallel"] is False and result["layout"]["recompute"] == "full"
    assert result["step_time_s"] != clustersim.run(LLAMA3_8B, reproducible=True)["step_time_s"]


def test_a_float_and_a_list_override_are_written_as_the_cli_reads_them(cli):
    # A float as repr writes it (1e-05, 0.25); a list as a YAML flow list.
    search_scenario = SOURCE_DIR / "scenarios" / "search" / "gpt3-1.3b-2-dgx-h100.yaml"
    overrides = {"training.hidden_dropout": 0.25, "search.tp": [1, 2], "search.pp": (1,)}
    records = clustersim.search(search_scenario, overrides=overrides, top=3)
    expected = cli.json("search", search_scenario, "--json", "--top", 3, "--set", "training.hidden_dropout=0.25",
                        "--set", "search.tp=[1, 2]", "--set", "search.pp=[1]")
    assert [r["set"] for r in records] == [e["set"] for e in expected["top"]]
    assert {r["layout.tp"] for r in records} <= {1, 2} and {r["layout.pp"] for r in records} == {1}


def test_a_layout_that_does_not_fit_is_a_result(cli):
    # As the CLI: exit 0 and memory.fits false, not an error.
    overrides = {"parallelism.tp": 1, "parallelism.dp": 8, "parallelism.sequence_parallel": False,
                 "parallelism.zero": 0, "training.micro_batch": 16}
    result = clustersim.run(LLAMA3_8B, overrides=overrides, reproducible=True)
    assert result["memory"]["fits"] is False
    assert result["memory"]["peak_bytes"] > result["memory"]["capacity_bytes"]
    assert not math.isnan(result["step_time_s"])


def test_a_trace_is_written(tmp_path):
    trace = tmp_path / "trace.json"
    clustersim.run(LLAMA3_8B, trace=trace, reproducible=True)
    assert trace.stat().st_size > 0 and trace.read_text().lstrip().startswith(("{", "["))
