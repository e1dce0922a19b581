"""clustersim from Python: the CLI's ``run``, ``search``, ``collective`` and ``help-config`` as functions.

    import clustersim
    import pandas as pd
    step = clustersim.run("scenarios/llama3-70b-8-dgx-h100.yaml", overrides={"parallelism.tp": 4})
    layouts = pd.DataFrame(clustersim.search("scenarios/search/gpt3-1.3b-2-dgx-h100.yaml", top=10))

Each function runs the C++ of its command (the extension ``clustersim._clustersim``; nothing is
simulated in Python) and returns what the command prints with ``--json``, as Python values: the
same keys, the same numbers (each the double the CLI prints), the same strings. Times are in
seconds unless a key says otherwise (``time_us``), memory in bytes, bandwidths in GB/s (1e9
bytes/s).

Bad input raises ``InputError`` (a ``ValueError``) with the message the CLI prints after
``error: `` and, where the C++ error carries them, the ``file``, ``line``, ``column`` and ``key`` of
the bad value (None otherwise). An argument of a Python type that no command-line text can stand
for (an override value that is an ``object()``, a path that is a number) raises
``InputTypeError``, both an ``InputError`` and a ``TypeError``. A bug in clustersim raises
``RuntimeError("internal error: ...")``.
"""

import json
import numbers
import os
import warnings

from . import _clustersim

__all__ = ["run", "search", "collective", "keys", "InputError", "InputTypeError"]

InputError = _clustersim.InputError


class InputTypeError(InputError, TypeError):
    """An argument of a type clustersim cannot take: an InputError and a TypeError.

    ``key`` is the override key or argument it is about; ``file``, ``line`` and ``column`` are None.
    """

    def __init__(self, message, key=None):
        super().__init__(message)
        self.key = key


def _scenario_path(scenario):
    """The path text of `scenario` (a str or an os.PathLike of one), or InputTypeError."""
    try:
        path = os.fspath(scenario)
    except TypeError:
        path = None
    if not isinstance(path, str):
        raise InputTypeError(
            f"scenario: expected the path of a scenario YAML file (a str or os.PathLike), got "
            f"{type(scenario).__name__} {scenario!r:.80}", key="scenario")
    return path


def _override_text(key, value):
    """`value` as the text of ``--set key=TEXT``: true/false, a whole number, a float as repr
    writes it (shortest round-trip), a str as it is (YAML text, as on the command line), a list or
    tuple as a YAML flow list [a, b], a dict as a flow map {k: v}. InputTypeError otherwise."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return repr(float(value))
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_override_text(key, v) for v in value) + "]"
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            if not isinstance(k, str):
                raise InputTypeError(f"overrides[{key!r}]: a map's keys are str, got {type(k).__name__} {k!r:.80}",
                                     key=key)
            items.append(f"{k}: {_override_text(key, v)}")
        return "{" + ", ".join(items) + "}"
    raise InputTypeError(
        f"overrides[{key!r}]: expected a bool, int, float, str, or a list or dict of them (the VALUE of "
        f"--set {key}=VALUE), got {type(value).__name__} {value!r:.80}", key=key)


def _sets(overrides):
    """`overrides` ({"a.b": value}, in order: a later key wins as a later --set does) as the
    CLI's ``--set a.b=value`` texts."""
    if overrides is None:
        return []
    if not isinstance(overrides, dict):
        raise InputTypeError(
            f"overrides: expected a dict of {{\"a.b\": value}} (as --set a.b=value), got "
            f"{type(overrides).__name__} {overrides!r:.80}", key="overrides")
    sets = []
    for key, value in overrides.items():
        if not isinstance(key, str):
            raise InputTypeError(f"overrides: expected a str key, the dotted name of a scenario key (e.g. "
                                 f"\"training.global_batch\"), got {type(key).__name__} {key!r:.80}", key="overrides")
        if "=" in key:
            error = InputError(f"overrides: key {key!r:.80} holds '='; give the key alone and its value as the "
                               f"dict's value")
            error.key = key
            raise error
        sets.append(f"{key}={_override_text(key, value)}")
    return sets


def _whole(name, value, allow_none=True):
    """`value` as an int for argument `name`, or InputTypeError (a bool is not a number here)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InputTypeError(f"{name}: expected an int, got {type(value).__name__} {value!r:.80}", key=name)
    return int(value)


def _real(name, value):
    """`value` as a float for argument `name` (None: the CLI's default), or InputTypeError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputTypeError(f"{name}: expected a number, got {type(value).__name__} {value!r:.80}", key=name)
    return float(value)


def _text(name, value):
    """`value` (a str, or None for the CLI's default) for argument `name`, or InputTypeError."""
    if value is None or isinstance(value, str):
        return value
    raise InputTypeError(f"{name}: expected a str, got {type(value).__name__} {value!r:.80}", key=name)


def _size(name, value):
    """A size for -b, -e or -i: an int of bytes, or nccl-tests' text ("64K", "8G": powers of 1024)."""
    if value is None or isinstance(value, str):
        return value
    return str(_whole(name, value))


def run(scenario, overrides=None, *, reproducible=False, trace=None):
    """Simulates one training step, as ``clustersim run SCENARIO --set ... --json``.

    scenario: path of the scenario YAML file (str or os.PathLike).
    overrides: {"training.global_batch": 64, "parallelism.tp": 4, ...}: each as ``--set key=value``,
        in the dict's order; a value is a bool, int, float, str (YAML text, as on the command line)
        or a list/dict of them.
    reproducible: report sim.wall_s as 0 (``--reproducible``), so that repeated runs are equal.
    trace: path of a Chrome trace-event file to write (``--trace``), or None.

    Returns the dict that ``run --json`` prints: step_time_s (s), tokens_per_s, mfu, hfu,
    model_flops_per_step, breakdown_s {compute, exposed_comm, bubble, optimizer, host_bound, other} (s),
    memory {peak_bytes, capacity_bytes, fits, per_stage: [{stage, params_bytes, ...}]} (bytes),
    ranks [...], sim {events, wall_s, fidelity, simulated_ranks, fingerprint}, and the rest.
    A layout that does not fit in memory is a result (memory.fits False), not an error.

    Raises InputError (bad scenario, key, value or layout; file/line/column/key where known) and
    InputTypeError (an argument of a wrong Python type).
    """
    path = _scenario_path(scenario)
    sets = _sets(overrides)
    trace_path = "" if trace is None else _scenario_path(trace)
    return json.loads(_clustersim.run(path, sets, bool(reproducible), trace_path))


def _record(entry, prefix=""):
    """A ranked layout of ``search --json`` as one flat record: nested keys joined by "."
    ("layout.tp", "breakdown_s.compute"), as pandas.json_normalize names them; a list
    (layout.stage_layers) as its numbers joined by spaces, as ``search --csv`` writes it
    ("" for none)."""
    record = {}
    for key, value in entry.items():
        name = prefix + key
        if isinstance(value, dict):
            record.update(_record(value, name + "."))
        elif isinstance(value, list):
            record[name] = " ".join(str(v) for v in value)
        else:
            record[name] = value
    return record


def search(scenario, overrides=None, *, top=None, threads=0):
    """Ranks the layouts of the scenario's search: section, as ``clustersim search ... --json``.

    scenario, overrides: as for run() (``--set``, e.g. {"search.tp": [4, 8]}).
    top: layouts returned, >= 1 (``--top``); None: the scenario's search.top.
    threads: worker threads (``--threads``), 0 for all cores.

    Returns a list of records, best first, one per ranked layout (the "top" of ``search --json``),
    each a flat dict of scalars with the same keys, so that pandas.DataFrame(records) has one column
    per key: rank, layout.tp, layout.pp, layout.dp, layout.cp, layout.vpp, layout.ep, layout.etp,
    layout.micro_batch, layout.global_batch, layout.recompute, layout.zero,
    layout.sequence_parallel, layout.schedule, layout.order, layout.stage_layers (layers per stage
    joined by spaces, "" when even), layout.allow_idle_gpus, step_time_s (s), tokens_per_s, mfu,
    peak_bytes, headroom_bytes (bytes), gpus, gpu_seconds_per_token, breakdown_s.<part> (s),
    campaign.wall_days, campaign.gpu_hours, campaign.energy_mwh (with a campaign: section only),
    fidelity, screening_rank, set (the ``--set`` line that makes ``run`` simulate the layout).
    No layout feasible: an empty list (``search --json`` says why in "rejected").

    Raises InputError (no search: section, a bad space, top < 1, ...) and InputTypeError.
    """
    path = _scenario_path(scenario)
    sets = _sets(overrides)
    document = json.loads(_clustersim.search(path, sets, _whole("top", top), _whole("threads", threads, False)))
    return [_record(entry) for entry in document["top"]]


def collective(op=None, *, node=None, nodes=None, gpus_per_node=None, nic=None, fabric=None,
               oversubscription=None, leaf_ports=None, minbytes=None, maxbytes=None, stepfactor=None,
               stepbytes=None, algo=None, proto=None, datatype=None, fidelity=None):
    """A simulated nccl-tests sweep, as ``clustersim collective ... --json``.

    Each argument is the CLI flag of its name; None leaves the CLI's default:
    op (--op: all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all, send_recv),
    node (--node: preset or node YAML path, dgx-h100), nodes (--nodes, 1), gpus_per_node
    (--gpus-per-node, 0 = all), nic (--nic), fabric (--fabric: rail-optimized, fat-tree,
    single-switch), oversubscription (--oversubscription), leaf_ports (--leaf-ports), minbytes and
    maxbytes (-b, -e: bytes as an int, or nccl-tests' text "64K", "8G" in powers of 1024; 8),
    stepfactor (-f, 2), stepbytes (-i: as minbytes), algo (--algo: auto, ring, tree, nvls,
    hierarchical, pairwise), proto (--proto: auto, LL, LL128, Simple), datatype (-d: fp32, tf32,
    bf16, fp16, fp8), fidelity (--fidelity: auto, flow, analytical).

    Returns a list of rows, one per simulated size, with the columns of the CLI's table in its
    order: size_bytes (total bytes), count (elements: per rank for all_gather and reduce_scatter,
    per peer for all_to_all), type, redop, root, time_us (us), algbw_GBps, busbw_GBps (GB/s),
    algorithm, protocol; the numbers unrounded, as ``--json`` prints them. Sizes below one element
    per rank are not simulated (the CLI's "# skipped" line): a UserWarning names them.

    Raises InputError (the message names the flag: "--nodes 0 is out of range; ...") and
    InputTypeError.
    """
    document = json.loads(_clustersim.collective(
        _text("node", node), _text("nic", nic), _whole("nodes", nodes), _whole("gpus_per_node", gpus_per_node),
        _text("fabric", fabric), _real("oversubscription", oversubscription), _whole("leaf_ports", leaf_ports),
        _text("op", op), _size("minbytes", minbytes), _size("maxbytes", maxbytes), _whole("stepfactor", stepfactor),
        _size("stepbytes", stepbytes), _text("algo", algo), _text("proto", proto), _text("datatype", datatype),
        _text("fidelity", fidelity)))
    if document["skipped"]:
        sizes = ", ".join(str(s["size_bytes"]) for s in document["skipped"])
        warnings.warn(f"skipped {sizes} B: {document['skipped'][0]['reason']}", stacklevel=2)
    return document["results"]


def keys(kind="scenario"):
    """The keys of a file kind, as ``clustersim help-config KIND`` lists them, in its order.

    kind: "scenario" (the default), "model" (model preset files), "gpu", "nic" or "node" (hardware
    preset files).

    Returns a list of dicts, one per key, sections and lists of sections included: key (the dotted
    path, "a.b[].c" for an element of a list; the name an override of ``run`` takes), type
    (help-config's words: "integer in [1, 16777216]", "one of: bf16, fp16, fp8", "section"),
    default (as YAML writes it, a str; None where the key has none), required (bool), description,
    choices (the values of an enum or string-list key; the words an integer key takes besides
    numbers, as ["auto"]; else empty), min and max (the bounds, None
    where there is none; durations in s, bandwidths in bytes/s, FLOP rates in FLOP/s, power in W).

    Raises InputError for another kind and InputTypeError for a kind that is not a str.
    """
    if kind is None:
        raise InputTypeError("kind: expected a str, got NoneType None", key="kind")
    return json.loads(_clustersim.keys(_text("kind", kind)))
