"""clustersim.collective() against `clustersim collective` (its --json and its table)."""

import pytest

import clustersim

COLUMNS = ["size_bytes", "count", "type", "redop", "root", "time_us", "algbw_GBps", "busbw_GBps", "algorithm",
           "protocol"]


def table(text):
    """The rows of the CLI's table: its lines that are not # comments, split at spaces."""
    return [line.split() for line in text.splitlines() if line and not line.startswith("#")]


@pytest.mark.parametrize("flags, arguments", [
    (["--node", "dgx-h100", "--nodes", "2", "-b", "8", "-e", "1G", "-f", "4"],
     dict(node="dgx-h100", nodes=2, minbytes=8, maxbytes="1G", stepfactor=4)),
    (["--node", "hgx-h200", "--nodes", "2", "--op", "all_to_all", "-b", "64K", "-e", "16M", "-f", "16", "-d", "bf16"],
     dict(node="hgx-h200", nodes=2, op="all_to_all", minbytes="64K", maxbytes=16 << 20, stepfactor=16,
          datatype="bf16")),
    (["--nodes", "4", "--op", "broadcast", "-b", "1M", "-e", "4M", "-i", "1M", "--fabric", "fat-tree"],
     dict(nodes=4, op="broadcast", minbytes="1M", maxbytes="4M", stepbytes="1M", fabric="fat-tree")),
], ids=["all_reduce", "all_to_all", "broadcast-stepbytes"])
def test_rows_are_the_clis(cli, flags, arguments):
    rows = clustersim.collective(**arguments)
    expected = cli.json("collective", *flags, "--json")["results"]
    assert len(rows) == len(expected) > 1
    for row, cli_row in zip(rows, expected):
        assert list(row) == COLUMNS
        assert {k: row[k] for k in cli_row} == cli_row
    # type, redop and root are the table's; every number rounds to the table's figure.
    for row, line in zip(rows, table(cli.output("collective", *flags))):
        assert [str(row["size_bytes"]), str(row["count"]), row["type"], row["redop"], str(row["root"])] == line[:5]
        assert [f"{row[k]:.2f}" for k in ("time_us", "algbw_GBps", "busbw_GBps")] == line[5:8]
        assert [row["algorithm"], row["protocol"]] == line[8:]


def test_skipped_sizes_warn(cli):
    # 16 GPUs: an all_gather below 16 x 4 B has less than one float per rank.
    with pytest.warns(UserWarning, match=r"skipped 8, 32 B: below 16 ranks x 4 B"):
        rows = clustersim.collective("all_gather", nodes=2, minbytes=8, maxbytes=128, stepfactor=4)
    assert [row["size_bytes"] for row in rows] == [128]
    assert cli.json("collective", "--nodes", 2, "--op", "all_gather", "-b", 8, "-e", 128, "-f", 4,
                    "--json")["results"][0]["size_bytes"] == 128


@pytest.mark.parametrize("flags, arguments", [
    (["--nodes", "0"], dict(nodes=0)),
    (["--op", "all_reduc"], dict(op="all_reduc")),
    (["-b", "8Q"], dict(minbytes="8Q")),
    (["-b", "1G", "-e", "8"], dict(minbytes="1G", maxbytes=8)),
    (["-f", "4", "-i", "8", "-e", "64"], dict(stepfactor=4, stepbytes=8, maxbytes=64)),
    (["--fidelity", "exact"], dict(fidelity="exact")),
    (["--node", "no-such-node"], dict(node="no-such-node")),
    (["--oversubscription", "0.5"], dict(oversubscription=0.5)),
], ids=["nodes", "op", "size", "min-above-max", "factor-and-increment", "fidelity", "node", "oversubscription"])
def test_bad_flags_are_the_clis_errors(cli, flags, arguments):
    with pytest.raises(clustersim.InputError) as raised:
        clustersim.collective(**arguments)
    assert str(raised.value) == cli.error("collective", *flags)


@pytest.mark.parametrize("arguments", [dict(nodes="2"), dict(nodes=2.0), dict(op=1), dict(minbytes=8.5),
                                       dict(oversubscription="2"), dict(nodes=True)])
def test_wrong_types_are_input_type_errors(arguments):
    with pytest.raises(clustersim.InputTypeError) as raised:
        clustersim.collective(**arguments)
    assert isinstance(raised.value, TypeError) and isinstance(raised.value, clustersim.InputError)
    assert raised.value.key == next(iter(arguments)) and raised.value.key in str(raised.value)


def test_a_number_beyond_an_int_names_its_flag():
    with pytest.raises(clustersim.InputError, match=r"^--nodes 99999999999: out of range of a 32-bit integer$"):
        clustersim.collective(nodes=99_999_999_999)
