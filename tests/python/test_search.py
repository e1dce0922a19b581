"""clustersim.search(): uniform flat records, equal to the "top" of `clustersim search --json`."""

import pytest

import clustersim
from conftest import SOURCE_DIR

SMALL_SEARCH = SOURCE_DIR / "scenarios" / "search" / "gpt3-1.3b-2-dgx-h100.yaml"  # about 0.3 s
SC21_SEARCH = SOURCE_DIR / "scenarios" / "search" / "sc21-gpt-1.7b.yaml"
# The small search with a campaign (campaign.* columns) and 26 layers over 4 uneven stages
# (layout.stage_layers, a list in search --json).
CAMPAIGN_UNEVEN = {"training.tokens": "1e10", "cluster.storage.bandwidth": "100 GB/s",
                   "campaign.relaunch_time": "10 min", "search.uneven_stages": True, "search.pp": [4],
                   "model.layers": 26}


def leaves(entry, prefix=""):
    """(dotted key, value) of every non-dict value of a search --json entry."""
    for key, value in entry.items():
        if isinstance(value, dict):
            yield from leaves(value, prefix + key + ".")
        else:
            yield prefix + key, value


@pytest.mark.parametrize("scenario, overrides, sets", [
    (SMALL_SEARCH, {}, []),
    (SC21_SEARCH, {}, []),
    (SMALL_SEARCH, CAMPAIGN_UNEVEN,
     ["training.tokens=1e10", "cluster.storage.bandwidth=100 GB/s", "campaign.relaunch_time=10 min",
      "search.uneven_stages=true", "search.pp=[4]", "model.layers=26"]),
], ids=["gpt3-1.3b", "sc21-gpt-1.7b", "campaign-uneven-stages"])
def test_records_are_the_top_of_search_json(cli, scenario, overrides, sets):
    records = clustersim.search(scenario, overrides=overrides, top=4, threads=2)
    expected = cli.json("search", scenario, "--json", "--top", 4, "--threads", 2, "--no-progress",
                        *[a for s in sets for a in ("--set", s)])["top"]
    assert len(records) == len(expected) > 0
    for record, entry in zip(records, expected):
        flat = dict(leaves(entry))
        assert set(record) == set(flat)
        for key, value in flat.items():
            # A list (layout.stage_layers) as search --csv writes it: numbers joined by spaces.
            assert record[key] == (" ".join(map(str, value)) if isinstance(value, list) else value), key
    if overrides:
        assert "campaign.wall_days" in records[0] and records[0]["campaign.wall_days"] > 0
        assert any(len(r["layout.stage_layers"].split()) == 4 for r in records)


def test_records_are_uniform_scalars():
    # pandas.DataFrame(records) has one column per key and one row per layout.
    records = clustersim.search(SMALL_SEARCH, overrides={"search.top": 10})
    assert len(records) == 10
    keys = list(records[0])
    assert {"rank", "layout.tp", "layout.pp", "layout.dp", "step_time_s", "tokens_per_s", "mfu",
            "breakdown_s.compute", "set"} <= set(keys)
    for record in records:
        assert list(record) == keys
        for key, value in record.items():
            assert value is None or isinstance(value, (bool, int, float, str)), (key, value)
    assert [r["rank"] for r in records] == list(range(1, 11))
    # Ranked best first by the scenario's objective (tokens/s).
    assert all(a["tokens_per_s"] >= b["tokens_per_s"] for a, b in zip(records, records[1:]))


def test_a_ranked_layout_runs_as_its_set_line_says(cli):
    best = clustersim.search(SMALL_SEARCH, top=1)[0]
    words = best["set"].split()
    overrides = dict(word.split("=", 1) for word in words[1::2])
    assert words[0::2] == ["--set"] * len(overrides)
    result = clustersim.run(SMALL_SEARCH, overrides=overrides, reproducible=True)
    assert result["layout"]["tp"] == best["layout.tp"] and result["layout"]["pp"] == best["layout.pp"]
    assert result["tokens_per_s"] == pytest.approx(best["tokens_per_s"], rel=1e-9)


def test_top_below_one_is_the_clis_error(cli):
    with pytest.raises(clustersim.InputError) as raised:
        clustersim.search(SMALL_SEARCH, top=0)
    assert str(raised.value) == cli.error("search", SMALL_SEARCH, "--top", 0)


def test_a_scenario_without_a_search_section_is_the_clis_error(cli):
    scenario = SOURCE_DIR / "scenarios" / "llama3-8b-dgx-h100.yaml"
    with pytest.raises(clustersim.InputError) as raised:
        clustersim.search(scenario)
    assert str(raised.value) == cli.error("search", scenario)
