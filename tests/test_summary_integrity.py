"""A summary file whose records of its row count disagree (edited by hand, or damaged) is refused
as damaged, naming what disagrees, by every command that reads it: never a traceback, never a
figure or a gate of rows that do not exist. Summaries are made with ``summarize`` and their
header and arrays edited as another program would (the layout of
:mod:`calibcli.summaries.encoding`).

The six rows used throughout, in 10 bins (1-based): 0.15 wrong and 0.15 right (bin 2), 0.35
right (bin 4), 0.55 wrong (bin 6), 0.75 right (bin 8), 0.95 right (bin 10): 4 right answers, 2
wrong. The bin table's counts are one (wrong, right) pair per group and bin.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from harness import run, write_jsonl

from calibcli.summaries import CalibrationSettings, SummaryError, from_bytes
from calibcli.summaries.calibration import from_columns
from calibcli.summaries.encoding import array_specs, assemble, encode, read_header

ROWS = [(0.15, False), (0.15, True), (0.35, True), (0.55, False), (0.75, True), (0.95, True)]
PREFIX = struct.Struct("<16sIIQ")


def load(path):
    """(version, header, arrays by name) of a summary file."""
    data = path.read_bytes()
    _, version, _, length = PREFIX.unpack(data[: PREFIX.size])
    meta = json.loads(data[PREFIX.size : PREFIX.size + length])
    pos, arrays = PREFIX.size + length, {}
    for a in meta["arrays"]:
        dtype = np.dtype(a["dtype"])
        n = int(np.prod(a["shape"]))
        arrays[a["name"]] = (
            np.frombuffer(data, dtype, count=n, offset=pos).reshape(a["shape"]).copy()
        )
        pos += n * dtype.itemsize + (-(n * dtype.itemsize) % 8)
    return version, meta, arrays


def save(path, version, meta, arrays):
    meta["arrays"] = [
        {"name": a["name"], "dtype": a["dtype"], "shape": list(arrays[a["name"]].shape)}
        for a in meta["arrays"]
    ]
    text = json.dumps(meta, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    out = [PREFIX.pack(b"CALIBCLI SUMMARY", version, 0, len(text)), text]
    for a in meta["arrays"]:
        raw = np.ascontiguousarray(arrays[a["name"]], np.dtype(a["dtype"])).tobytes()
        out.append(raw + b"\0" * (-len(raw) % 8))
    path.write_bytes(b"".join(out))


def edited(path, change):
    """The summary at ``path`` with ``change(meta, arrays)`` applied, written beside it."""
    version, meta, arrays = load(path)
    change(meta, arrays)
    out = path.with_name("edited-" + path.name)
    save(out, version, meta, arrays)
    return out


@pytest.fixture
def files(tmp_path, monkeypatch):
    """The rows as one file (rows.jsonl), as two (a.jsonl: the first four, b.jsonl: the last
    two), and with groups (g.jsonl: the first three in group a, the others in b)."""
    monkeypatch.chdir(tmp_path)
    rows = [{"confidence": c, "correct": y} for c, y in ROWS]
    write_jsonl(tmp_path / "rows.jsonl", rows)
    write_jsonl(tmp_path / "a.jsonl", rows[:4])
    write_jsonl(tmp_path / "b.jsonl", rows[4:])
    write_jsonl(tmp_path / "g.jsonl", [{**r, "g": "ab"[i >= 3]} for i, r in enumerate(rows)])
    return tmp_path


def summarize(*args):
    out = args[-1]
    result = run(["summarize", *args[:-1], "-o", out, "-q"])
    assert result.exit_code == 0, result.stderr
    return Path(out).resolve()


def refused(args, path, what):
    """``args`` exits 2 with the one line naming ``path`` as a damaged summary of ``what``."""
    result = run(args)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert result.stderr.strip() == (f"Error: {path}: a damaged calibcli summary ({what})"), (
        result.stderr
    )
    assert "Traceback" not in result.stderr


def times_ten(name):
    def change(meta, arrays):
        arrays[name] = arrays[name] * 10

    return change


# --------------------------------------------------------------------------- the bin table


def test_bin_counts_inflated_against_the_table_of_distinct_confidences(files):
    path = edited(summarize("rows.jsonl", "m.cbs"), times_ten("table.counts"))
    what = "its bin table counts 60 rows but its table of distinct confidences counts 6"
    refused(["calibrate", path, "-q"], path, what)
    refused(["merge", path, "-o", files / "x.cbs"], path, what)
    assert not (files / "x.cbs").exists()


def test_bin_counts_inflated_without_a_distinct_table_do_not_pass_a_row_gate(files):
    made = summarize("g.jsonl", "--by", "g", "--table", "never", "nt.cbs")
    path = edited(made, times_ten("table.counts"))
    what = "its bin table counts 60 rows but its fingerprint counts 6"
    refused(["calibrate", path, "-q", "--min-rows", "20"], path, what)


def test_distinct_counts_inflated(files):
    path = edited(summarize("rows.jsonl", "m.cbs"), times_ten("distinct.right.counts"))
    # 4 right answers counted 10 times each, beside 2 wrong ones
    what = "its bin table counts 6 rows but its table of distinct confidences counts 42"
    refused(["calibrate", path, "-q"], path, what)
    refused(["threshold", path, "--target-accuracy", "0.5"], path, what)


def test_a_group_counted_in_another(files):
    made = summarize("g.jsonl", "--by", "g", "gm.cbs")

    def change(meta, arrays):
        counts = arrays["table.counts"]
        counts[1, 1] -= 1  # group a, bin 2: the right answer 0.15 ...
        counts[10 + 1, 1] += 1  # ... counted in group b's bin 2

    path = edited(made, change)
    what = "its bin table counts 2 rows of group 'a' but its table of distinct confidences counts 3"
    refused(["calibrate", path, "-q"], path, what)


def test_a_right_answer_counted_as_wrong(files):
    def change(meta, arrays):
        arrays["table.counts"][3] = [1, 0]  # bin 4 held 0.35 right

    path = edited(summarize("rows.jsonl", "m.cbs"), change)
    what = "its bin table counts 3 wrong answers but its table of distinct confidences counts 2"
    refused(["calibrate", path, "-q"], path, what)


def test_a_row_counted_in_another_bin(files):
    def change(meta, arrays):
        arrays["table.counts"][3] = [0, 0]  # 0.35 right, moved from bin 4 ...
        arrays["table.counts"][4] = [0, 1]  # ... to bin 5
        # the source's own table moved with it: only the distinct table tells
        arrays["sources.0.table.counts"][:] = arrays["table.counts"]

    path = edited(summarize("rows.jsonl", "m.cbs"), change)
    what = (
        "its bin table counts 0 right answers in bin 4 of 10 but its table of distinct "
        "confidences counts 1"
    )
    refused(["reliability", path], path, what)


# --------------------------------------------------------------------------- other records


def test_fingerprint_rows_changed(files):
    def change(meta, arrays):
        meta["fingerprint"]["rows"] = 5

    path = edited(summarize("rows.jsonl", "m.cbs"), change)
    refused(
        ["calibrate", path, "-q"], path, "its bin table counts 6 rows but its fingerprint counts 5"
    )


def test_a_malformed_fingerprint(files):
    def change(meta, arrays):
        meta["fingerprint"]["total"] = "not hex"

    path = edited(summarize("rows.jsonl", "m.cbs"), change)
    refused(["calibrate", path, "-q"], path, "its fingerprint is malformed")


def test_a_source_row_count_against_its_own_table(files):
    def change(meta, arrays):
        meta["sources"][0]["rows"] = 1

    path = edited(summarize("a.jsonl", "b.jsonl", "ab.cbs"), change)
    what = "its source a.jsonl records 1 row but its own bin table counts 4"
    refused(["calibrate", path, "-q"], path, what)


def test_the_sources_rows_against_the_table(files):
    def change(meta, arrays):
        meta["sources"][0]["rows"] = 5  # a --by summary keeps no per-source tables

    path = edited(summarize("g.jsonl", "--by", "g", "gm.cbs"), change)
    refused(["calibrate", path, "-q"], path, "its bin table counts 6 rows but its sources count 5")


def test_perplexity_sequences_against_the_sources(files):
    write_jsonl(
        files / "p.jsonl",
        [{"nll": 10.0, "tokens": 5}, {"nll": 12.0, "tokens": 6}, {"nll": 9.0, "tokens": 4}],
    )

    def change(meta, arrays):
        arrays["table.ints"][:, 0] *= 10

    path = edited(summarize("p.jsonl", "p.cbs"), change)
    what = "its totals count 30 sequences but its sources count 3"
    refused(["perplexity", path], path, what)


# --------------------------------------------------------------------------- what agrees loads


def test_agreeing_records_load(files):
    """Ranges of a file read in pieces (each source counting its own range's rows), a skipped
    source (no rows), groups, and a summary without the records an older version did not
    write: each loads, with its six rows."""
    write_jsonl(files / "many.jsonl", [{"confidence": c, "correct": y} for c, y in ROWS * 5])
    pieces = [summarize("many.jsonl", "--part", f"{k}/3", f"p{k}.cbs") for k in (1, 2, 3)]
    assert run(["merge", *pieces, "-o", "pm.cbs", "-q"]).exit_code == 0
    merged = from_bytes((files / "pm.cbs").read_bytes())
    assert merged.n == 30 and sum(s.rows for s in merged.sources) == 30
    (files / "results_x.json").write_text('{"results": {"t": {}}, "configs": {"t": {}}}\n')
    skipped = from_bytes(summarize("rows.jsonl", "results_x.json", "sk.cbs").read_bytes())
    assert skipped.n == 6 and [s.rows for s in skipped.sources] == [6, 0]
    assert from_bytes(summarize("g.jsonl", "--by", "g", "g.cbs").read_bytes()).n == 6

    def older(meta, arrays):
        del meta["fingerprint"]
        for s in meta["sources"]:
            s.pop("rows_hash", None)

    path = edited(summarize("rows.jsonl", "--table", "never", "nt.cbs"), older)
    result = run(["calibrate", path, "-q"])
    assert result.exit_code == 0, result.stderr
    assert from_bytes(path.read_bytes()).n == 6


# --------------------------------------------------------------------------- kept rows


def _decoded(summary):
    header, arrays = encode(summary)
    meta, _ = read_header(header)
    return meta, {name: a.copy() for (name, _, _), a in zip(array_specs(meta), arrays, strict=True)}


def _kept(grouped):
    right = np.array([0.15, 0.35, 0.75, 0.95])
    wrong = np.array([0.15, 0.55])
    if not grouped:
        return from_columns(CalibrationSettings(), right, wrong)
    return from_columns(
        CalibrationSettings(by="g"),
        right,
        wrong,
        groups=("a", "b"),
        right_ids=np.array([0, 0, 1, 1]),
        wrong_ids=np.array([0, 1]),
    )


def test_kept_rows_against_the_table():
    meta, arrays = _decoded(_kept(False))
    assert assemble(meta, arrays).kept.n == 6
    arrays["rows.right"] = arrays["rows.right"][:3]
    with pytest.raises(
        SummaryError, match=r"\(its bin table counts 6 rows but its kept rows number 5\)"
    ):
        assemble(meta, arrays)


def test_kept_rows_of_another_group():
    meta, arrays = _decoded(_kept(True))
    arrays["rows.right_groups"][0] = 1  # 0.15 right, group a, said to be b's
    with pytest.raises(
        SummaryError,
        match=r"\(its bin table counts 3 rows of group 'a' but its kept rows number 2\)",
    ):
        assemble(meta, arrays)
    arrays["rows.right_groups"][0] = 2
    with pytest.raises(SummaryError, match="its kept rows name groups it does not have"):
        assemble(meta, arrays)
    del meta["rows"]["right"]
    with pytest.raises(SummaryError, match="its kept rows are incomplete"):
        assemble(meta, arrays)


@pytest.mark.parametrize("kind", ["calibration", "perplexity"])
@pytest.mark.parametrize(
    ("change", "what"),
    [
        (lambda meta: meta.__setitem__("sources", []), "it names no file it read"),
        (lambda meta: meta.pop("sources"), "it names no file it read"),
        (lambda meta: meta.pop("settings"), "bad settings: 'settings'"),
    ],
    ids=["sources emptied", "sources removed", "settings removed"],
)
def test_a_header_without_its_sources_or_settings_is_refused(files, kind, change, what):
    # what the summary read decides its checks (a --part piece, several models' runs), so a
    # header that names none is not read as if those checks had passed
    if kind == "calibration":
        made = summarize("rows.jsonl", "s.cbs")
        command = ["calibrate", "--max-ece", "0.5"]
    else:
        write_jsonl(files / "p.jsonl", [{"nll": 2.0, "tokens": 3}, {"nll": 1.0, "tokens": 2}])
        made = summarize("p.jsonl", "s.cbs")
        command = ["perplexity"]
    damaged = edited(made, lambda meta, arrays: change(meta))
    result = run([*command, str(damaged), "-q"])
    assert result.exit_code == 2, result.stdout
    assert result.stderr.strip() == f"Error: {damaged}: a damaged calibcli summary ({what})"
