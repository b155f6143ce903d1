"""A summary's Poisson replicate sums are binned as the summary was made: other bins (--bins
given at another number, or another strategy) have none, so --ci --bootstrap-scheme poisson
on such a summary is exit 2, for the pooled rows and per --by group alike, while its own bins
(given or not) keep the intervals of the rows read directly, and the figures without --ci
keep following --bins and --strategy. The engines' report and the report builder refuse the
same (ValueError). And ``summarize --part k/K`` cuts one plain file: a folder or a pattern
standing for several files, or a summary file, is exit 2 with one line.

Every expected number comes from calibcli reading the rows themselves with the same options,
never from the summary's own output."""

from __future__ import annotations

import json
import math
import random

import pytest
from harness import run, write_jsonl

POISSON = ("--ci", "0.95", "--bootstrap-scheme", "poisson")


def rows(n: int = 600, seed: int = 11) -> list[dict]:
    """Rows with an id, a confidence, an outcome drawn with probability c**1.5 and one of
    three subjects."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        c = round(rng.random(), 6)
        out.append(
            {"id": i, "confidence": c, "correct": rng.random() < c**1.5, "subject": "abc"[i % 3]}
        )
    return out


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The rows file and its summaries with 200 replicate sums at 10 bins (pooled, per
    subject)."""
    folder = tmp_path_factory.mktemp("poisson_bins")
    path = write_jsonl(folder / "rows.jsonl", rows())
    pooled, grouped = folder / "pooled.cbs", folder / "grouped.cbs"
    for out, more in ((pooled, []), (grouped, ["--by", "subject"])):
        result = run(["summarize", path, "--bootstrap-samples", "200", "-q", "-o", out, *more])
        assert result.exit_code == 0, result.stderr
    return path, pooled, grouped


def report(*args):
    result = run(["calibrate", *args, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def refusal(*args) -> str:
    """Exit 2, one line on stderr, nothing on stdout."""
    result = run([*args, "-q"])
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == "" and result.stderr.startswith("Error: "), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr


def close(a, b) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)


def same_interval(a, b) -> bool:
    return all(close(x, y) for x, y in zip(a, b, strict=True))


# --------------------------------------------------------------------- other bins: refused


def test_other_bins_with_the_summarys_replicate_sums_are_refused(made):
    path, pooled, _ = made
    rows_12 = report(path, "--bins", "12", *POISSON, "--bootstrap", "200")
    rows_10 = report(path, *POISSON, "--bootstrap", "200")
    # the rows' 12-bin MCE reaches higher than their 10-bin one: a gate between the two fails
    # the rows, and the summary's 10-bin interval would have passed it
    upper_12, upper_10 = rows_12["ci"]["mce"][1], rows_10["ci"]["mce"][1]
    assert upper_12 > upper_10
    limit = str((upper_12 + upper_10) / 2)
    gate = ("--max-mce", limit, "--gate-on", "upper")
    failed = run(["calibrate", path, "--bins", "12", *POISSON, "--bootstrap", "200", *gate])
    assert failed.exit_code == 1, failed.stderr
    message = refusal("calibrate", pooled, "--bins", "12", *POISSON, *gate)
    assert "--bins 10, not 12" in message
    for more in ([], ["--bins", "11"], ["--bins", "20", "--gate-on", "upper", "--max-ece", "1"]):
        refusal("calibrate", pooled, "--bins", "12", *POISSON, *more)


def test_other_bins_are_refused_for_every_group(made):
    _, _, grouped = made
    for more in (
        [],
        ["--by", "subject"],
        ["--gate-each", "--max-ece", "0.5"],
        ["--gate-each", "--max-mce", "0.9", "--gate-on", "upper"],
    ):
        assert "--bins 10, not 12" in refusal("calibrate", grouped, "--bins", "12", *POISSON, *more)


def test_the_summarys_own_bins_keep_the_rows_intervals(made):
    path, pooled, grouped = made
    want = report(path, *POISSON, "--bootstrap", "200")
    for flags in ([], ["--bins", "10"]):  # not given, or given at the summary's own number
        got = report(pooled, *POISSON, *flags)
        assert got["bins"] == 10
        for key in ("ece", "mce", "rmsce", "brier", "nll"):
            assert close(got[key], want[key]), key
            assert same_interval(got["ci"][key], want["ci"][key]), key
    # per group too: the rows read with --by subject
    want = report(path, "--by", "subject", *POISSON, "--bootstrap", "200")
    got = report(grouped, "--bins", "10", *POISSON)
    for name in ("a", "b", "c"):
        g, w = got["groups"][name], want["groups"][name]
        assert same_interval(g["ci"]["mce"], w["ci"]["mce"]), name


def test_other_bins_without_poisson_intervals_still_work(made):
    path, pooled, _ = made
    for flags in (
        ["--bins", "12"],
        ["--strategy", "quantile"],
        ["--bins", "12", "--strategy", "quantile"],
    ):
        got, want = report(pooled, *flags), report(path, *flags)
        assert got["bins"] == want["bins"]
        for key in ("ece", "mce", "rmsce", "brier"):
            assert close(got[key], want[key]), (flags, key)
    # the multinomial bootstrap draws the rows the summary's table rebuilds, at any bins
    got = report(pooled, "--bins", "12", "--ci", "0.95", "--bootstrap", "200")
    assert close(got["mce"], report(path, "--bins", "12")["mce"])
    assert got["ci"]["mce"][0] <= got["mce"] <= got["ci"]["mce"][1]


# -------------------------------------------------------------- the engines and the report


def test_the_engine_report_refuses_another_strategy_with_ci(made):
    from calibcli.engines import EngineSummary
    from calibcli.io import load_summary

    path, pooled, _ = made
    engine = EngineSummary(load_summary(str(pooled)))
    with pytest.raises(ValueError, match="uniform bins only"):
        engine.report(ci=0.95, strategy="quantile")
    # uniform: the rows' own Poisson intervals
    got, want = engine.report(ci=0.95), report(path, *POISSON, "--bootstrap", "200")
    assert same_interval(got["ci"]["mce"], want["ci"]["mce"])


def test_the_report_refuses_replicate_sums_of_other_bins(made):
    from calibcli.engines import EngineSummary
    from calibcli.io import load_summary
    from calibcli.reports import Bootstrap, calibrate_report

    _, pooled, _ = made
    data = EngineSummary(load_summary(str(pooled))).measured()
    boot = Bootstrap(0.95, 200, 0, None, "poisson")
    for bins, strategy in ((12, "uniform"), (10, "quantile")):
        with pytest.raises(ValueError, match="hold 10 uniform bins"):
            calibrate_report(data, bins=bins, strategy=strategy, bootstrap=boot)


# ------------------------------------------------------------------ --part on one file only


@pytest.mark.parametrize("kind", ["calibration", "perplexity"])
def test_part_of_a_folder_or_pattern_of_several_files_is_refused(tmp_path, kind):
    folder = tmp_path / "runs"
    folder.mkdir()
    for seed, name in enumerate(("a.jsonl", "b.jsonl")):  # other rows: not copies
        if kind == "calibration":
            write_jsonl(folder / name, rows(40, seed))
        else:
            write_jsonl(folder / name, [{"nll": seed + i / 8, "tokens": 3} for i in range(40)])
    out = tmp_path / "part.cbs"
    message = refusal("summarize", folder, "--part", "1/2", "-o", out)
    assert f"{folder}: --part" in message and "holds 2 files" in message
    message = refusal("summarize", str(folder / "*.jsonl"), "--part", "1/2", "-o", out)
    assert "matches 2 files" in message
    refusal("summarize", folder / "a.jsonl", folder / "b.jsonl", "--part", "1/2", "-o", out)
    assert not out.exists()


def test_part_of_a_folder_of_one_file_cuts_that_file(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    write_jsonl(folder / "a.jsonl", rows(41))
    counts = []
    for k in (1, 2):
        out = tmp_path / f"part{k}.cbs"
        result = run(["summarize", folder, "--part", f"{k}/2", "-o", out, "-q"])
        assert result.exit_code == 0, result.stderr
        counts.append(report(out)["n"])
    assert sum(counts) == 41 and all(0 < c < 41 for c in counts)


def test_part_of_a_summary_file_is_refused(made, tmp_path):
    _, pooled, _ = made
    out = tmp_path / "part.cbs"
    assert "summary file" in refusal("summarize", pooled, "--part", "1/2", "-o", out)
    folder = tmp_path / "parts"
    folder.mkdir()
    (folder / "p.cbs").write_bytes(pooled.read_bytes())
    assert "summary file" in refusal("summarize", folder, "--part", "1/2", "-o", out)
    assert not out.exists()
