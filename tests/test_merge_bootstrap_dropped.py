"""A merge of calibration summaries keeps a Poisson bootstrap state only when every part holds
one: when some do and some do not, the merged file holds none, and ``merge`` says so (naming
the parts and how to keep it) rather than leaving it to be found when ``--bootstrap-scheme
poisson`` refuses the file."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from calibcli.cli import app

SAMPLES = Path(__file__).resolve().parent.parent / "sample_data"


def _run(args: list) -> object:
    return CliRunner().invoke(app, [str(a) for a in args])


def _summary(tmp_path: Path, name: str, *args: str) -> Path:
    out = tmp_path / f"{name}.cbs"
    done = _run(["summarize", SAMPLES / f"{name}.jsonl", "-q", "-o", out, *args])
    assert done.exit_code == 0, done.stderr
    return out


def test_a_part_without_bootstrap_sums_drops_them_with_a_warning(tmp_path):
    boot = _summary(tmp_path, "overconfident", "--bootstrap-samples", "200", "--seed", "3")
    plain = _summary(tmp_path, "underconfident")
    merged = tmp_path / "merged.cbs"
    done = _run(["merge", boot, plain, "-o", merged, "-q"])
    assert done.exit_code == 0, done.stderr
    assert done.stderr == (
        f"warning: {merged}: {boot} holds 200 Poisson bootstrap resamples and {plain} none: the "
        "merged summary holds none, so --bootstrap-scheme poisson cannot read it (summarize "
        "every part with --bootstrap-samples 200 --seed 3)\n"
    )
    # as said: the merged file cannot give Poisson intervals
    poisson = ["--ci", "0.95", "--bootstrap-scheme", "poisson", "--bootstrap", "200", "-q"]
    assert _run(["calibrate", merged, *poisson]).exit_code == 2


def test_parts_that_all_hold_them_merge_without_a_word(tmp_path):
    a = _summary(tmp_path, "overconfident", "--bootstrap-samples", "200")
    b = _summary(tmp_path, "underconfident", "--bootstrap-samples", "200")
    done = _run(["merge", a, b, "-o", tmp_path / "merged.cbs", "-q"])
    assert done.exit_code == 0, done.stderr
    assert done.stderr == ""


def test_parts_that_hold_none_merge_without_a_word(tmp_path):
    a, b = _summary(tmp_path, "overconfident"), _summary(tmp_path, "underconfident")
    done = _run(["merge", a, b, "-o", tmp_path / "merged.cbs", "-q"])
    assert done.exit_code == 0, done.stderr
    assert done.stderr == ""


def test_a_part_of_no_rows_keeps_the_others_sums(tmp_path):
    # an empty shard's summary (its job wrote nothing) adds no sums: the merge keeps the
    # others' state, and the intervals are those of the others alone
    boot = ["--bootstrap-samples", "200"]
    a = _summary(tmp_path, "overconfident", *boot)
    b = _summary(tmp_path, "underconfident", *boot)
    (tmp_path / "empty.jsonl").write_text("")
    empty = tmp_path / "empty.cbs"
    done = _run(["summarize", tmp_path / "empty.jsonl", "--kind", "calibration", "-q", "-o", empty])
    assert done.exit_code == 0, done.stderr
    with_empty, alone = tmp_path / "with.cbs", tmp_path / "alone.cbs"
    done = _run(["merge", a, empty, b, "-o", with_empty, "-q"])
    # the empty shard is named, as among files; no state is said to be dropped
    said = f"warning: {tmp_path / 'empty.jsonl'}: holds no rows: the figures are the other files'"
    assert done.exit_code == 0 and done.stderr.splitlines() == [said], done.stderr
    assert _run(["merge", a, b, "-o", alone, "-q"]).exit_code == 0
    poisson = ["--ci", "0.95", "--bootstrap-scheme", "poisson", "--bootstrap", "200", "--json"]
    got = [_run(["calibrate", path, *poisson, "-q"]) for path in (with_empty, alone)]
    assert got[0].exit_code == 0, got[0].stderr
    assert json.loads(got[0].stdout)["ci"] == json.loads(got[1].stdout)["ci"]
