"""summarize given summary files keeps their Poisson bootstrap state as merge keeps it.

The state written is the one ``calibcli merge`` writes for the same parts, bit for bit (plain
files read beside them count as the part ``summarize`` makes of them alone), and its intervals
are those of one pass over every row. ``--bootstrap-samples``/``--seed`` that the summary files
cannot honour (no state, or another one) are exit 2 naming the file, in merge's words.
"""

from __future__ import annotations

import json
import math

import pytest
from harness import make_rows, run, write_jsonl

from calibcli.engines.result import finish
from calibcli.engines.tasks import file_jobs, file_task, merge_all
from calibcli.errors import InputError
from calibcli.io import load_summary

TASKS = ("algebra", "biology", "chemistry")


def _shards(tmp_path, n=3, rows=240):
    """Plain shards a.jsonl, b.jsonl, ... of rows with ids and a task, each from its own
    random stream."""
    paths = []
    for k in range(n):
        made = make_rows(rows, seed=11 + k)
        for i, r in enumerate(made):
            r["id"] = f"{k}-{i}"
            r["task"] = TASKS[(i + k) % 3]
        paths.append(write_jsonl(tmp_path / f"{'abcdef'[k]}.jsonl", made))
    return paths


def _ok(args):
    result = run(args)
    assert result.exit_code == 0, result.stderr
    return result


def _summarize(path, out, *more):
    _ok(["summarize", path, "-q", "-o", out, *more])
    return out


def _state_bits(path):
    state = load_summary(str(path)).bootstrap
    assert state is not None, f"{path} holds no bootstrap state"
    return {name: array.tobytes() for name, array in state.to_arrays().items()}


def _ci(args):
    out = _ok(["calibrate", *args, "--ci", "0.95", "--bootstrap-scheme", "poisson", "--json"])
    return json.loads(out.stdout)["ci"]


def _close(a, b):
    """The summary's intervals ``a`` equal one pass's ``b`` to 1e-12 relative (those of
    figures needing every row are null from a summary: auroc, smece)."""
    for name, (lo, hi) in a.items():
        if lo is None:
            assert name.startswith(("auroc", "smece")), name
            continue
        assert math.isclose(lo, b[name][0], rel_tol=1e-12), name
        assert math.isclose(hi, b[name][1], rel_tol=1e-12), name


BOOT = ("--bootstrap-samples", "200", "--seed", "3")


@pytest.mark.parametrize("by", [(), ("--by", "task")])
def test_one_summary_file_keeps_its_state(tmp_path, by):
    (a,) = _shards(tmp_path, 1)
    part = _summarize(a, tmp_path / "a.cbs", *BOOT, *by)
    again = _summarize(part, tmp_path / "again.cbs")
    merged = tmp_path / "m.cbs"
    _ok(["merge", part, "-q", "-o", merged])
    assert _state_bits(again) == _state_bits(merged) == _state_bits(part)
    state = load_summary(str(again)).bootstrap
    assert (state.bins, state.samples, state.seed) == (10, 200, 3)
    assert state.groups == (3 if by else 1)
    # the intervals of one pass over the rows, as the README promises for merged parts
    single = _ci([a, *by, "--bootstrap", "200", "--seed", "3"])
    _close(_ci([again]), single)


@pytest.mark.parametrize("asked", [(), BOOT])
def test_summary_files_merge_as_merge_does(tmp_path, asked):
    a, b, _ = _shards(tmp_path)
    parts = [_summarize(p, tmp_path / f"{p.stem}.cbs", *BOOT, "--by", "task") for p in (a, b)]
    out = _summarize(parts[1], tmp_path / "x.cbs", *asked, parts[0])
    merged = tmp_path / "m.cbs"
    _ok(["merge", *parts, "-q", "-o", merged])
    assert _state_bits(out) == _state_bits(merged)
    _close(_ci([out]), _ci([a, b, "--by", "task", "--bootstrap", "200", "--seed", "3"]))


def test_plain_files_beside_count_as_their_own_part(tmp_path):
    a, b, c = _shards(tmp_path)
    # the plain file sorts between the two parts: the sums are added in merge's order
    parts = [_summarize(p, tmp_path / f"{p.stem}.cbs", *BOOT, "--by", "task") for p in (a, c)]
    out = _summarize(parts[1], tmp_path / "x.cbs", b, parts[0], *BOOT)
    alone = _summarize(b, tmp_path / "b.cbs", *BOOT, "--by", "task")
    merged = tmp_path / "m.cbs"
    _ok(["merge", parts[0], alone, parts[1], "-q", "-o", merged])
    assert _state_bits(out) == _state_bits(merged)
    _close(_ci([out]), _ci([a, b, c, "--by", "task", "--bootstrap", "200", "--seed", "3"]))


def _one_error(result, start):
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(start), result.stderr
    return lines[0]


@pytest.mark.parametrize("beside", [False, True])
def test_samples_asked_of_a_summary_without_state_are_exit_2(tmp_path, beside):
    a, b, _ = _shards(tmp_path)
    bare = _summarize(a, tmp_path / "a.cbs")
    more = [b] if beside else []
    result = run(["summarize", bare, *more, "--bootstrap-samples", "200", "-o", tmp_path / "x"])
    line = _one_error(result, f"Error: {bare}: it holds no bootstrap state")
    assert "its rows are not there to resample" in line
    assert "--bootstrap-samples 200" in line
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    ("asked", "differs"),
    [
        (("--bootstrap-samples", "300", "--seed", "3"), "samples: 200 != 300"),
        (("--bootstrap-samples", "200", "--seed", "4"), "seed: 3 != 4"),
        (("--bootstrap-samples", "200"), "seed: 3 != 0"),  # --seed's default is 0
    ],
)
def test_other_samples_or_seed_are_exit_2_in_merges_words(tmp_path, asked, differs):
    a, b, _ = _shards(tmp_path)
    part = _summarize(a, tmp_path / "a.cbs", *BOOT)
    samples = asked[1]
    seed = asked[3] if len(asked) > 2 else "0"
    other = _summarize(b, tmp_path / "b.cbs", "--bootstrap-samples", samples, "--seed", seed)
    merging = run(["merge", part, other, "-o", tmp_path / "m.cbs"])
    assert merging.exit_code == 2
    said = f"cannot merge states of different {differs}"
    assert merging.stderr.strip().endswith(said)
    result = run(["summarize", part, *asked, "-o", tmp_path / "x.cbs"])
    line = _one_error(result, f"Error: {part}: cannot merge its bootstrap state")
    assert line.endswith(said)


def test_other_bins_drop_the_state_or_refuse_it(tmp_path):
    (a,) = _shards(tmp_path, 1)
    part = _summarize(a, tmp_path / "a.cbs", *BOOT)
    result = run(["summarize", part, "--bins", "15", "-o", tmp_path / "x.cbs"])
    assert result.exit_code == 0
    assert "warning: the bootstrap state was dropped: its sums are of 10 bins, not 15" in (
        result.stderr
    )
    assert load_summary(str(tmp_path / "x.cbs")).bootstrap is None
    result = run(["summarize", part, "--bins", "15", *BOOT, "-o", tmp_path / "y.cbs"])
    line = _one_error(result, f"Error: {part}: cannot merge its bootstrap state")
    assert line.endswith("cannot merge states of different bins: 10 != 15")


def test_engines_file_tasks_keep_and_check_the_state(tmp_path):
    """The path Dask's and Spark's summarize_files run in their tasks (no cluster started)."""
    (a,) = _shards(tmp_path, 1)
    part = _summarize(a, tmp_path / "a.cbs", *BOOT)
    for asked in ({}, {"bootstrap_samples": 200, "seed": 3}):
        jobs = file_jobs([str(part)], "auto", None, **asked)
        summary = finish(merge_all([file_task(job) for job in jobs])).summary
        state = summary.bootstrap
        assert state is not None and (state.samples, state.seed) == (200, 3)
        assert state.to_arrays()["moments"].tobytes() == _state_bits(part)["moments"]
    jobs = file_jobs([str(part)], "auto", None, bootstrap_samples=300, seed=1)
    with pytest.raises(InputError, match=r"cannot merge states of different samples: 200 != 300"):
        finish(merge_all([file_task(job) for job in jobs]))
