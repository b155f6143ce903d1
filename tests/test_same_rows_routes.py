"""The same rows reached by another route are copies, as byte-identical inputs are.

A summary's sources are known by a hash of their bytes, which differs for a file, its gzip copy,
the same bytes piped through stdin and its rows in another order. The rows' fingerprint (an exact
multiset hash) tells them: ``merge`` refuses two parts holding the same rows, and a command
reading a summary refuses, unless --all-runs pools them, another summary or the files read beside
it holding its rows. Below 30 rows on either side equal rows may be chance, and are pooled.

Every input below holds ``n`` rows with confidences (i + 1) / 50 (i = 0 .. n - 1), the even i
right; the "other" rows shift each confidence by 0.01. Expected counts are those sums.
"""

from __future__ import annotations

import gzip
import json

import pytest
from harness import run

N = 40


def rows_text(n=N, shift=0.0, reverse=False):
    rows = [{"confidence": (i + 1) / 50 + shift, "correct": i % 2 == 0} for i in range(n)]
    if reverse:
        rows.reverse()
    return "".join(json.dumps(r) + "\n" for r in rows)


def write(path, text):
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode(), mtime=0))
    else:
        path.write_text(text, encoding="utf-8")
    return path


def summarize(tmp_path, name, text, route):
    """A summary of ``text`` made by ``route``: a plain file, a gzip file, stdin, or a file of
    the rows in reverse order."""
    out = tmp_path / f"{name}.cbs"
    if route == "stdin":
        result = run(["summarize", "-", "-q", "-o", out], input=text)
    else:
        if route == "shuffled":
            text = "".join(reversed(text.splitlines(keepends=True)))
        source = write(tmp_path / f"{name}.jsonl{'.gz' if route == 'gz' else ''}", text)
        result = run(["summarize", source, "-q", "-o", out])
    assert result.exit_code == 0, result.stderr
    return out


def calibrate(*args, input=None):
    return run(["calibrate", *args, "-q", "--json"], input=input)


def error_line(result):
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


ROUTES = ["gz", "stdin", "shuffled"]


@pytest.mark.parametrize("route", ROUTES)
def test_merge_refuses_a_part_holding_the_same_rows_by_another_route(tmp_path, route):
    a = summarize(tmp_path, "a", rows_text(), "plain")
    b = summarize(tmp_path, "b", rows_text(), route)
    result = run(["merge", a, b, "-o", tmp_path / "m.cbs"])
    assert result.exit_code == 2
    line = error_line(result)
    assert f"{a} and {b} both hold the same 40 rows" in line
    assert line.endswith("merge each part once")
    assert not (tmp_path / "m.cbs").exists()


@pytest.mark.parametrize("route", ROUTES)
def test_a_summary_beside_its_rows_by_another_route_is_refused(tmp_path, route):
    a = summarize(tmp_path, "a", rows_text(), "plain")
    if route == "stdin":
        result = calibrate(a, "-", input=rows_text())
        shown = "<stdin>"
    else:
        text = rows_text(reverse=route == "shuffled")
        shown = str(write(tmp_path / f"copy.jsonl{'.gz' if route == 'gz' else ''}", text))
        result = calibrate(a, shown)
    assert result.exit_code == 2
    line = error_line(result)
    assert f"{shown} is read here and its 40 rows are counted in {a} too" in line
    assert "pass --all-runs" in line


def test_two_summaries_of_the_same_rows_given_to_a_command_are_refused(tmp_path):
    a = summarize(tmp_path, "a", rows_text(), "plain")
    b = summarize(tmp_path, "b", rows_text(), "gz")
    result = calibrate(a, b)
    assert result.exit_code == 2
    assert f"{a} and {b} both hold the same 40 rows" in error_line(result)
    for command in (["reliability"], ["threshold", "--target-accuracy", "0.9"]):
        result = run([*command, a, b, "-q"])
        assert result.exit_code == 2, command
        assert "both hold the same 40 rows" in error_line(result)


def test_files_read_beside_two_summaries_holding_all_their_rows_are_refused(tmp_path):
    a = summarize(tmp_path, "a", rows_text(), "plain")
    c = summarize(tmp_path, "c", rows_text(shift=0.01), "plain")
    both = write(tmp_path / "both.jsonl.gz", rows_text() + rows_text(shift=0.01))
    result = calibrate(a, c, both)
    assert result.exit_code == 2
    assert f"its 80 rows are counted in {a} and {c} too" in error_line(result)


def test_all_runs_pools_the_copies_on_purpose(tmp_path):
    """The same rows by another route (a summary of them piped in) are pooled with --all-runs;
    a compressed copy of the file a summary read, beside it, holds that file's bytes, and rows
    without ids cannot tell a re-run from a copy: refused, as the two files are."""
    a = summarize(tmp_path, "a", rows_text(), "plain")
    b = summarize(tmp_path, "b", rows_text(), "stdin")
    gz = write(tmp_path / "copy.jsonl.gz", rows_text())
    result = calibrate(a, b, "--all-runs")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["n"] == 80  # 40 rows twice
    assert report["accuracy"] == 0.5  # 20 of 40 right, twice
    result = calibrate(a, gz, "--all-runs")
    assert result.exit_code == 2
    assert f"{gz}: holds the same bytes as {tmp_path / 'a.jsonl'} once decompressed" in (
        error_line(result)
    )


def test_distinct_rows_of_equal_count_still_merge_and_read(tmp_path):
    a = summarize(tmp_path, "a", rows_text(), "plain")
    c = summarize(tmp_path, "c", rows_text(shift=0.01), "gz")
    merged = tmp_path / "m.cbs"
    result = run(["merge", a, c, "-o", merged, "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(calibrate(merged).stdout)["n"] == 80
    other = write(tmp_path / "other.jsonl", rows_text(shift=0.01))
    result = calibrate(a, other)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 80


@pytest.mark.parametrize(("n", "code"), [(29, 0), (30, 2)])
def test_equal_rows_below_30_on_a_side_are_pooled(tmp_path, n, code):
    a = summarize(tmp_path, "a", rows_text(n), "plain")
    b = summarize(tmp_path, "b", rows_text(n), "gz")
    merged = tmp_path / "m.cbs"
    assert run(["merge", a, b, "-o", merged, "-q"]).exit_code == code
    result = calibrate(a, write(tmp_path / "copy.jsonl.gz", rows_text(n)))
    assert result.exit_code == code
    if code == 0:
        assert json.loads(calibrate(merged).stdout)["n"] == 2 * n
        assert json.loads(result.stdout)["n"] == 2 * n


def test_ranges_of_one_file_holding_equal_rows_merge(tmp_path):
    # a file holding the same 40 rows twice, cut into its two halves: disjoint ranges of one
    # input, which the whole file's reading counts twice too
    doubled = write(tmp_path / "doubled.jsonl", rows_text() + rows_text())
    halves = []
    for k in (1, 2):
        out = tmp_path / f"half{k}.cbs"
        result = run(["summarize", doubled, "--part", f"{k}/2", "-q", "-o", out])
        assert result.exit_code == 0, result.stderr
        assert json.loads(calibrate(out).stdout)["n"] == 40
        halves.append(out)
    merged = tmp_path / "m.cbs"
    result = run(["merge", *halves, "-o", merged, "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(calibrate(merged).stdout)["n"] == 80


def coarse_shard(prefix):
    """40 rows of one confidence, 0.9, 36 of them right: the rows of any shard of that size and
    accuracy, whatever its questions."""
    rows = [{"id": f"{prefix}{i}", "confidence": 0.9, "correct": i < 36} for i in range(40)]
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_coarse_shards_of_other_questions_merge(tmp_path):
    # equal values say nothing of equal rows when every row repeats one value
    a = summarize(tmp_path, "a", coarse_shard("a"), "plain")
    b = summarize(tmp_path, "b", coarse_shard("b"), "plain")
    merged = tmp_path / "m.cbs"
    result = run(["merge", a, b, "-o", merged, "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(calibrate(merged).stdout)["n"] == 80


def test_shards_with_ids_are_told_apart_by_their_rows(tmp_path):
    # other rows under other ids: other questions; the same confidences and outcomes under
    # other ids: a copy whose ids were renamed, refused by its rows; under the same ids: the
    # rows counted twice, refused by the ids
    def with_ids(text, prefix):
        return "".join(
            json.dumps({**json.loads(line), "id": f"{prefix}{i}"}) + "\n"
            for i, line in enumerate(text.splitlines())
        )

    same_ids = with_ids(rows_text(), "a")
    bodies = {
        "a": same_ids,
        "b": with_ids(rows_text(shift=0.01), "b"),
        "c": same_ids,
        "d": with_ids(rows_text(), "d"),
    }
    parts = {}
    for name, body in bodies.items():
        source = write(tmp_path / f"{name}.jsonl{'.gz' if name == 'c' else ''}", body)
        parts[name] = tmp_path / f"{name}.cbs"
        made = run(["summarize", source, "--id-field", "id", "-q", "-o", parts[name]])
        assert made.exit_code == 0, made.stderr
    merged = tmp_path / "ab.cbs"
    result = run(["merge", parts["a"], parts["b"], "-o", merged, "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(calibrate(merged).stdout)["n"] == 80
    result = run(["merge", parts["a"], parts["c"], "-o", tmp_path / "ac.cbs", "-q"])
    assert result.exit_code == 2
    assert "a row is in two of the parts (the same id)" in error_line(result)
    result = run(["merge", parts["a"], parts["d"], "-o", tmp_path / "ad.cbs", "-q"])
    assert result.exit_code == 2
    assert f"both hold the same {N} rows" in error_line(result)
