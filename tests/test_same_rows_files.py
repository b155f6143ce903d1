"""Two files read together that hold the same rows in other bytes (the rows of one in another
order, as CSV, piped through stdin) are copies, as byte-identical files are: refused (exit 2,
both named) unless --all-runs pools them on purpose. Each file's rows make their own fingerprint
as they are read (an exact multiset hash), so the check costs no pass of its own.

The rows: ``n`` rows, row i with confidence (i + 1) / (n + 1) (all distinct) and right when i is
even; the "other" rows shift each confidence by 1 / (4 (n + 1)), so they share no value. Below 30
rows, or when the values repeat so much that other rows share them by chance (one confidence for
every row), equal rows may be two shards' and are pooled without a word.
"""

from __future__ import annotations

import json

import pytest
from harness import run

from calibcli.errors import InputError
from calibcli.io import read_calibration

N = 40
COPY = (
    "(the same confidences and outcomes, in any order): its rows would count twice (pass "
    "--all-runs to pool them on purpose, or give one of them)"
)


def rows(n=N, shift=0.0, reverse=False, confidence=None):
    out = [
        {
            "confidence": confidence if confidence is not None else (i + 1) / (n + 1) + shift,
            "correct": i % 2 == 0,
        }
        for i in range(n)
    ]
    return out[::-1] if reverse else out


def jsonl(path, items):
    path.write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    return path


def csv(path, items):
    body = "".join(f"{r['confidence']!r},{str(r['correct']).lower()}\n" for r in items)
    path.write_text("confidence,correct\n" + body, encoding="utf-8")
    return path


@pytest.fixture
def pair(tmp_path):
    return jsonl(tmp_path / "a.jsonl", rows()), jsonl(tmp_path / "b.jsonl", rows(reverse=True))


@pytest.mark.parametrize("command", ["calibrate", "reliability", "threshold", "summarize"])
def test_the_rows_of_a_file_in_another_order_are_refused(tmp_path, pair, command):
    a, b = pair
    extra = {
        "summarize": ["-o", str(tmp_path / "s.cbs")],
        "threshold": ["--target-accuracy", "0.9"],
    }
    extra = extra.get(command, [])
    result = run([command, str(a), str(b), "-q", *extra])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"Error: {b}: holds the rows of {a} {COPY}"
    assert not (tmp_path / "s.cbs").exists()  # nothing half-written


def test_the_rows_as_csv_and_through_stdin_are_refused(tmp_path, pair):
    a, _ = pair
    c = csv(tmp_path / "c.csv", rows(reverse=True))
    result = run(["calibrate", str(a), str(c)])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"Error: {c}: holds the rows of {a} {COPY}"
    piped = run(["calibrate", "-", str(a)], input=(tmp_path / "b.jsonl").read_text())
    assert piped.exit_code == 2
    assert piped.stderr.strip() == f"Error: {a}: holds the rows of <stdin> {COPY}"


def test_all_runs_pools_them_and_counts_each_row_twice(pair):
    a, b = pair
    result = run(["calibrate", str(a), str(b), "--all-runs", "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["n"] == 2 * N
    assert body["accuracy"] == pytest.approx(0.5, rel=1e-15)  # 20 of 40 right, twice


def test_other_rows_few_rows_and_one_repeated_value_are_pooled(tmp_path, pair):
    a, _ = pair
    other = jsonl(tmp_path / "o.jsonl", rows(shift=0.25 / (N + 1)))
    assert run(["calibrate", str(a), str(other), "-q"]).exit_code == 0
    few = [jsonl(tmp_path / f"f{k}.jsonl", rows(29, reverse=k == 1)) for k in (0, 1)]
    assert run(["calibrate", *map(str, few), "-q"]).exit_code == 0
    # two shards of other questions, each holding 20 right and 20 wrong rows at 0.9: equal
    # multisets by chance, since the values do not tell rows apart
    flat = [jsonl(tmp_path / f"g{k}.jsonl", rows(confidence=0.9, reverse=k == 1)) for k in (0, 1)]
    result = run(["calibrate", *map(str, flat), "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 2 * N


def test_the_api_refuses_them_whether_or_not_workers_share_a_file(pair):
    a, b = pair
    for workers in (1, 2):
        with pytest.raises(InputError) as caught:
            read_calibration([str(a), str(b)], workers=workers)
        assert str(caught.value) == f"{b}: holds the rows of {a} {COPY}"
    assert read_calibration([str(a), str(b)], all_runs=True).n == 2 * N


def test_each_source_keeps_its_rows_multiset_hash_and_the_summary_their_sum(tmp_path, pair):
    a, _ = pair
    other = jsonl(tmp_path / "o.jsonl", rows(shift=0.25 / (N + 1)))
    both = read_calibration([str(a), str(other)])
    (first, apart_a), (second, apart_b) = (s.rows_hash for s in both.sources)
    assert apart_a and apart_b  # 40 distinct confidences each
    assert (first + second) % (1 << 64) == both.fingerprint.total
    assert read_calibration([str(a)]).fingerprint.total == first
    # a worker's share adds into its source's hash
    assert read_calibration([str(a)], workers=2).sources[0].rows_hash == (first, True)


# --------------------------------------------------------------------------- inside summaries


def summarize(tmp_path, name, *files, extra=()):
    out = tmp_path / name
    result = run(["summarize", *map(str, files), "-o", str(out), "-q", *extra])
    assert result.exit_code == 0, result.stderr
    return out


def test_a_copy_of_one_source_inside_a_summary_of_several_is_refused(tmp_path, pair):
    a, b = pair
    other = jsonl(tmp_path / "o.jsonl", rows(shift=0.25 / (N + 1)))
    first = summarize(tmp_path, "first.cbs", a, other)  # two sources: the parts differ whole
    second = summarize(tmp_path, "second.cbs", b)
    result = run(["merge", str(first), str(second), "-o", str(tmp_path / "m.cbs")])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"Error: {b} (in {second}) holds the rows of {a} (in {first}) (the same confidences "
        "and outcomes, in any order): one input counted twice, by other routes; merge each "
        "part once"
    )
    assert not (tmp_path / "m.cbs").exists()
    result = run(["calibrate", str(first), str(second), "-q"])
    assert result.exit_code == 2
    assert "pass --all-runs to pool them on purpose" in result.stderr
    assert run(["calibrate", str(first), str(second), "--all-runs", "-q"]).exit_code == 0
    # the file itself beside the summary holding its rows by another route
    result = run(["calibrate", str(first), str(b), "-q"])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {b} holds the rows of {a} (in {first})")


def test_copies_pooled_on_purpose_inside_one_part_are_left_as_they_are(tmp_path, pair):
    a, b = pair
    pooled = summarize(tmp_path, "pooled.cbs", a, b, extra=["--all-runs"])
    other = summarize(tmp_path, "other.cbs", jsonl(tmp_path / "o.jsonl", rows(shift=0.01)))
    result = run(["merge", str(pooled), str(other), "-o", str(tmp_path / "m.cbs")])
    assert result.exit_code == 0, result.stderr
    body = run(["calibrate", str(tmp_path / "m.cbs"), "--json", "-q"])
    assert json.loads(body.stdout)["n"] == 3 * N


def test_the_rows_hash_is_kept_in_the_summary_file(tmp_path, pair):
    from calibcli.summaries import from_bytes

    a, _ = pair
    made = summarize(tmp_path, "a.cbs", a)
    [source] = from_bytes(made.read_bytes()).sources
    assert source.rows_hash == read_calibration([str(a)]).sources[0].rows_hash
