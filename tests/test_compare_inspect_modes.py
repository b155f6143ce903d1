"""compare of inspect-ai logs whose confidences --inspect-confidence auto took two ways (a
side's samples partly by the answer letter's probability, partly by the whole completion's, or
one side all one way and the other all the other): the report says so, naming each log with its
samples taken each way, and every gate check fails closed; and the samples a log took each way,
recorded beside a summary's source, survive writing, reading and joining ranges."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from types import SimpleNamespace

import pytest
from harness import run
from test_inspect_answer_forms import ANSWER, REASONING, mixed_samples, plain_ece, sample, write_log

import calibcli
from calibcli.reports.report import mixed_confidences
from calibcli.summaries import Source
from calibcli.summaries.encoding import from_bytes, to_bytes
from calibcli.summaries.sources import coalesce

REMEDY = "give --inspect-confidence answer-token or sequence"
N = 100
GATE = ["--max-increase", "ece=0.5", "--min-rows", "5", "--min-populated-bins", "1"]


def probability(k, shift):
    """Sample k's probability, never on a tenth (a bin edge)."""
    return 0.6 + 0.35 * ((k * 37) % N) / N + 0.003 + shift


def side(path, *, shift, lines):
    """A log of N samples, the first ``lines`` with an answer line (answer-token under auto),
    the rest without (sequence); each one's last token carries the logprob of its
    probability. Returns the path and each sample's (confidence, right) under auto."""
    samples, pairs = [], []
    for k in range(N):
        lp = math.log(probability(k, shift))
        tail = [*ANSWER, (" B", lp)] if k < lines else [(" four", lp)]
        right = k % 3 != 0
        samples.append(sample(k + 1, [*REASONING, *tail], right))
        # answer-token: the letter's probability; sequence: the whole completion's
        logs = [lp] if k < lines else [x for _, x in REASONING] + [lp]
        pairs.append((math.exp(math.fsum(logs)), right))
    return write_log(path, samples), pairs


def compare(*args):
    result = run(["compare", *args, "--json", "-q"])
    assert result.exit_code in (0, 1), result.stderr
    return result, json.loads(result.stdout)


def closed(report):
    checks = report["gate"]["checks"]
    return len(checks) == 2 and all(REMEDY in (c.get("reason") or "") for c in checks)


def said(report):
    return [w for w in report["warnings"] if "inspect-confidence auto" in w]


@pytest.mark.parametrize("unpaired", [False, True])
def test_a_side_mixing_modes_closes_every_gate(tmp_path, unpaired):
    base, base_pairs = side(tmp_path / "base.json", shift=0.0, lines=N)
    new, new_pairs = side(tmp_path / "new.json", shift=0.01, lines=40)
    way = ["--unpaired"] if unpaired else []
    result, report = compare(base, new, *GATE, *way)
    difference = plain_ece(new_pairs) - plain_ece(base_pairs)
    assert report["figures"]["ece"]["difference"] == pytest.approx(difference)
    assert result.exit_code == 1 and closed(report), report["gate"]
    assert "NEW's inspect-ai confidences mix" in report["gate"]["checks"][0]["reason"]
    (warning,) = said(report)
    assert f"NEW's rows mix the two ({new}: 40 of 100 samples answer-token, 60 sequence)" in (
        warning
    )
    assert str(base) not in warning and REMEDY in warning
    # one mode chosen: no warning, and the gate reads the figures
    result, report = compare(base, new, *GATE, *way, "--inspect-confidence", "sequence")
    assert result.exit_code == 0 and not said(report), report["gate"]


def test_sides_read_in_two_modes_close_every_gate(tmp_path):
    base, base_pairs = side(tmp_path / "base.json", shift=0.0, lines=N)
    new, new_pairs = side(tmp_path / "new.json", shift=0.01, lines=0)
    result, report = compare(base, new, *GATE)
    difference = plain_ece(new_pairs) - plain_ece(base_pairs)
    assert report["figures"]["ece"]["difference"] == pytest.approx(difference)
    assert result.exit_code == 1 and closed(report), report["gate"]
    (warning,) = said(report)
    assert "BASE's rows took every confidence by answer-token, NEW's by sequence" in warning
    assert f"({base}: 100 rows, answer-token; {new}: 100 rows, sequence)" in warning
    # logs read one way each, the same way, are as they were: no warning, the gate reads the
    # figures, and the report is the one of rows read in that mode
    for log in (base, new):
        result, report = compare(log, log, *GATE)
        assert result.exit_code == 0 and not said(report), report["gate"]
        mode = "answer-token" if log == base else "sequence"
        chosen = run(["compare", log, log, *GATE, "--json", "-q", "--inspect-confidence", mode])
        assert chosen.stdout == result.stdout


def test_the_api_says_what_the_command_says(tmp_path):
    base, _ = side(tmp_path / "base.json", shift=0.0, lines=N)
    new, _ = side(tmp_path / "new.json", shift=0.01, lines=40)
    _, report = compare(base, new, *GATE)
    margins = {"max_increase": {"ece": 0.5}, "min_rows": 5, "min_populated_bins": 1}
    by_paths = calibcli.compare(str(base), str(new), **margins)
    assert not by_paths.passed
    assert json.loads(by_paths.to_json()) == report
    rows = [calibcli.read_predictions(str(p)) for p in (base, new)]
    by_rows = calibcli.compare(*rows, **margins)
    assert json.loads(by_rows.to_json())["warnings"] == report["warnings"]
    assert json.loads(by_rows.to_json())["gate"] == report["gate"]


def test_each_log_is_read_once_and_standard_input_is_counted(tmp_path, monkeypatch):
    # the samples taken each way are counted as compare reads them: each log read once, and
    # a side on standard input said as the files are
    import calibcli.io.records as records

    base, _ = side(tmp_path / "base.json", shift=0.0, lines=N)
    new, _ = side(tmp_path / "new.json", shift=0.01, lines=40)
    opened = []
    real = records.records
    monkeypatch.setattr(
        records, "records", lambda path, **k: opened.append(path) or real(path, **k)
    )
    result, report = compare(base, new, *GATE)
    assert sorted(map(str, opened)) == sorted(map(str, (base, new)))
    assert result.exit_code == 1 and closed(report), report["gate"]
    lines = "".join(json.dumps(s) + "\n" for s in json.loads(new.read_text())["samples"])
    result = run(["compare", base, "-", *GATE, "--json", "-q"], input=lines)
    assert result.exit_code == 1 and closed(json.loads(result.stdout)), result.stdout
    (warning,) = said(json.loads(result.stdout))
    assert "NEW's rows mix the two (<stdin>: 40 of 100 samples answer-token, 60 sequence)" in (
        warning
    )


def test_counts_survive_summary_files_and_joined_ranges(tmp_path):
    # two adjacent ranges of a log, one read by answer-token, the other by sequence
    first = Source("m.json", "c1", "inspect-ai", 6, 0, 50, inspect_confidence="answer-token")
    then = Source("m.json", "c1", "inspect-ai", 4, 50, 90, inspect_confidence="sequence")
    (joined,) = coalesce([first, then], lambda a, b: None)
    assert (joined.inspect_confidence, joined.inspect_counts) == ("auto", (6, 4))
    summary = SimpleNamespace(inspect_confidence="auto", sources=[joined])
    assert "m.json: 6 of 10 samples answer-token, 4 sequence" in mixed_confidences(summary)
    # a summary file keeps them; one that does not record them says what it knows
    mixed = write_log(tmp_path / "mixed.json", mixed_samples())
    done = run(["summarize", mixed, "-o", tmp_path / "mixed.cbs", "-q"])
    assert done.exit_code == 0, done.stderr
    written = from_bytes((tmp_path / "mixed.cbs").read_bytes())
    (source,) = written.sources
    assert (source.inspect_confidence, source.inspect_counts) == ("auto", (6, 4))
    assert "mixed.json: 6 of 10 samples answer-token, 4 sequence" in mixed_confidences(written)
    uncounted = replace(written, sources=[replace(source, inspect_counts=None)])
    (read_back,) = from_bytes(to_bytes(uncounted)).sources
    assert read_back.inspect_counts is None
    assert "mixed.json: 10 rows, both modes" in mixed_confidences(
        SimpleNamespace(inspect_confidence="auto", sources=[read_back])
    )
    # a log read one way records no counts: its summary file is as it was
    answers = write_log(tmp_path / "answers.json", mixed_samples()[:6])
    done = run(["summarize", answers, "-o", tmp_path / "answers.cbs", "-q"])
    assert done.exit_code == 0, done.stderr
    assert b"inspect_counts" not in (tmp_path / "answers.cbs").read_bytes()
