"""``summarize`` given a summary file that holds a Poisson bootstrap state, beside inputs that
hold none (plain files read without ``--bootstrap-samples``, a summary file written without
it), writes a summary without one, as ``merge`` does, and says so in ``merge``'s words rather
than leaving it to be found when ``--bootstrap-scheme poisson`` refuses the file. Where every
input of rows holds the state, or ``--bootstrap-samples`` asks for it, nothing is said and the
state is kept."""

from __future__ import annotations

import random

import pytest
from harness import run, write_jsonl

from calibcli.summaries import from_bytes


def _rows(n, seed):
    rng = random.Random(seed)
    return [{"confidence": rng.random(), "correct": rng.random() < 0.7} for _ in range(n)]


def summarize(*args):
    done = run(["summarize", "-q", *args])
    assert done.exit_code == 0, done.stderr
    return done


def said(boot, without, more=""):
    """The warning merge gives (tests/test_merge_bootstrap_dropped.py), for ``boot`` holding
    200 resamples of seed 3 and ``without`` (and ``more``) none."""
    return (
        f"{boot} holds 200 Poisson bootstrap resamples and {without}{more} none: the merged "
        "summary holds none, so --bootstrap-scheme poisson cannot read it (summarize every part "
        "with --bootstrap-samples 200 --seed 3)"
    )


@pytest.fixture
def d(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", _rows(150, 1))
    write_jsonl(tmp_path / "b.jsonl", _rows(120, 2))
    write_jsonl(tmp_path / "c.jsonl", _rows(90, 3))
    boot = ["--bootstrap-samples", "200", "--seed", "3"]
    summarize(tmp_path / "a.jsonl", "-o", tmp_path / "boot.cbs", *boot)
    summarize(tmp_path / "b.jsonl", "-o", tmp_path / "plain.cbs")
    return tmp_path


def test_a_file_read_beside_a_summary_with_a_state_drops_it_with_merges_warning(d):
    out = d / "y.cbs"
    done = summarize(d / "boot.cbs", d / "b.jsonl", "-o", out)
    assert done.stderr == f"warning: {out}: {said(d / 'boot.cbs', d / 'b.jsonl')}\n"
    written = from_bytes(out.read_bytes())
    assert written.bootstrap is None and written.n == 150 + 120
    assert not [w for w in written.warnings if "Poisson" in w]  # said, not kept
    # as said: the file cannot give Poisson intervals
    poisson = ["--ci", "0.95", "--bootstrap-scheme", "poisson", "--bootstrap", "200", "-q"]
    assert run(["calibrate", out, *poisson]).exit_code == 2


def test_merges_words_for_the_same_parts(d):
    merged, out = d / "m.cbs", d / "y.cbs"
    done = run(["merge", d / "boot.cbs", d / "plain.cbs", "-o", merged, "-q"])
    assert done.exit_code == 0
    assert done.stderr == f"warning: {merged}: {said(d / 'boot.cbs', d / 'plain.cbs')}\n"
    done = summarize(d / "boot.cbs", d / "plain.cbs", "-o", out)
    assert done.stderr == f"warning: {out}: {said(d / 'boot.cbs', d / 'plain.cbs')}\n"


def test_each_input_without_a_state_is_counted(d):
    out = d / "y.cbs"
    done = summarize(d / "b.jsonl", d / "boot.cbs", d / "c.jsonl", "-o", out)
    assert done.stderr == f"warning: {out}: {said(d / 'boot.cbs', d / 'b.jsonl', ' and 1 more')}\n"
    (d / "folder").mkdir()
    for name in ("boot.cbs", "b.jsonl"):
        (d / "folder" / name).write_bytes((d / name).read_bytes())
    done = summarize(d / "folder", "-o", out)
    boot, plain = d / "folder" / "boot.cbs", d / "folder" / "b.jsonl"
    assert done.stderr == f"warning: {out}: {said(boot, plain)}\n"


def test_standard_input_is_named_as_messages_name_it(d):
    out = d / "y.cbs"
    text = (d / "b.jsonl").read_text(encoding="utf-8")
    done = run(["summarize", "-q", d / "boot.cbs", "-", "-o", out], input=text)
    assert done.exit_code == 0, done.stderr
    assert done.stderr == f"warning: {out}: {said(d / 'boot.cbs', '<stdin>')}\n"


def test_the_state_asked_for_is_kept_without_a_word(d):
    out = d / "y.cbs"
    boot = ["--bootstrap-samples", "200", "--seed", "3"]
    done = summarize(d / "boot.cbs", d / "b.jsonl", "-o", out, *boot)
    assert done.stderr == ""
    state = from_bytes(out.read_bytes()).bootstrap
    assert (state.samples, state.seed) == (200, 3)


def test_a_summary_alone_or_beside_no_rows_keeps_its_state(d):
    out = d / "y.cbs"
    assert summarize(d / "boot.cbs", "-o", out).stderr == ""
    assert from_bytes(out.read_bytes()).bootstrap.samples == 200
    (d / "empty.jsonl").write_text("", encoding="utf-8")
    done = summarize(d / "boot.cbs", d / "empty.jsonl", "-o", out)
    assert "Poisson" not in done.stderr  # a file of no rows adds no sums
    assert from_bytes(out.read_bytes()).bootstrap.samples == 200


def test_inputs_holding_no_state_say_nothing(d):
    out = d / "y.cbs"
    assert summarize(d / "plain.cbs", d / "c.jsonl", "-o", out).stderr == ""
    assert from_bytes(out.read_bytes()).bootstrap is None
