"""Row ids follow one rule on every route: JSON numbers that are equal are one id (5, 5.0, 5e0,
50e-1), the string "5" is another, and a null id is refused. calibrate, summarize, threshold,
fit and merge (an id read twice) and compare (matching and duplicates) hold to it, through the
block decoders as through the row-by-row path. The files are built here, so the lines named and
the counts follow from how they are written."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from harness import make_rows, run, write_jsonl

from calibcli.io.ids import id_hash, id_key
from calibcli.io.keys import canonical_id, hash_ids, hash_packed, plain_ids

DOUBLE_READ = (
    "re-runs of a task, or the same rows in two files, would count twice (pass --all-runs to "
    "pool them on purpose)"
)
FIVES = ["5.0", "5e0", "50e-1", "5.00", "0.5e1"]  # each the JSON number 5, as written


def _row(id_text: str, confidence: float = 0.5, correct: bool = True) -> str:
    return f'{{"id": {id_text}, "confidence": {confidence}, "correct": {str(correct).lower()}}}\n'


def _hundred_and(tmp_path, name: str, *extra: str, rows: int = 100):
    """ids 0 .. rows-1 on lines 1 .. rows (id 5 on line 6), then ``extra`` lines."""
    return write_jsonl(tmp_path / name, make_rows(rows), raw_lines=extra)


def _blake(text: str) -> int:
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


# --------------------------------------------------------------------------- the keys and hashes


def test_equal_numbers_share_one_key_and_hash_and_old_hashes_are_kept():
    # an integer's and a string's hash are those summaries already hold: blake2b of the key's
    # repr, written out here
    assert id_hash(id_key(5)) == _blake("('number', 5)")
    assert id_hash(id_key("5")) == _blake("('string', '5')")
    assert id_hash(id_key(2.5)) == _blake("('number', 2.5)")
    for text in FIVES:
        assert id_key(json.loads(text)) == ("number", 5)
        assert id_hash(id_key(json.loads(text))) == _blake("('number', 5)")
    assert id_hash(id_key(-0.0)) == _blake("('number', 0)")
    assert id_key("5") != id_key(5)


def test_a_null_id_is_refused():
    with pytest.raises(ValueError, match=r"^is null, not a string or number$"):
        id_key(None)


def test_compare_raw_texts_hash_as_the_canonical_ids():
    # the block path hashes a plain id's raw text; any other goes by its canonical bytes
    raw = [b"5", b'"5"', b"123"]
    packed = b"".join(raw)
    lengths = np.array([len(r) for r in raw], np.int64)
    assert plain_ids(packed, lengths)
    fast = hash_packed(packed, lengths)
    slow = hash_ids([canonical_id(id_key(v)) for v in (5.0, "5", 1.23e2)])
    assert [h.tolist() for h in fast] == [h.tolist() for h in slow]
    for text in [*FIVES, "null"]:
        t = text.encode()
        assert not plain_ids(t, np.array([len(t)], np.int64))


# --------------------------------------------------------------------------- an id read twice


@pytest.mark.parametrize("text", FIVES)
def test_calibrate_refuses_five_read_again_as_an_equal_number(tmp_path, text):
    path = _hundred_and(tmp_path, "p.jsonl", _row(text))
    result = run(["calibrate", path, "--id-field", "id", "-q", "--json"])
    assert result.exit_code == 2, result.stdout
    assert result.stdout == ""
    assert result.stderr.strip() == (
        f"Error: {path}:101: the row of id 5 was read before, at {path}:6: {DOUBLE_READ}"
    )


def test_summarize_refuses_it_and_the_string_five_is_another_id(tmp_path):
    path = _hundred_and(tmp_path, "p.jsonl", _row("5.0"))
    result = run(["summarize", path, "--id-field", "id", "-q", "-o", tmp_path / "s.cbs"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"Error: {path}:101: the row of id 5 was read before, at {path}:6: {DOUBLE_READ}"
    )
    assert not (tmp_path / "s.cbs").exists()
    other = _hundred_and(tmp_path, "q.jsonl", _row('"5"'))
    result = run(["calibrate", other, "--id-field", "id", "-q", "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 101


@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_block_path_refuses_it_far_into_a_large_file(tmp_path, workers):
    # 5000 rows, several blocks decoded in one call each; 4000.0 repeats line 4001's id
    path = _hundred_and(tmp_path, "big.jsonl", _row("4000.0"), rows=5000)
    result = run(["calibrate", path, "--id-field", "id", "-q", "--workers", workers])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"Error: {path}:5001: the row of id 4000 was read before, at {path}:4001: {DOUBLE_READ}"
    )


def test_threshold_and_fit_refuse_it_across_files(tmp_path):
    a = _hundred_and(tmp_path, "a.jsonl")
    b = write_jsonl(tmp_path / "b.jsonl", [], raw_lines=[_row("5e0")])
    want = f"Error: {b}:1: the row of id 5 was read before, at {a}:6: {DOUBLE_READ}"
    for args in (
        ["threshold", a, b, "--target-accuracy", "0.8"],
        ["fit", a, b, "--method", "platt", "-o", tmp_path / "cal.json"],
    ):
        result = run([*args, "--id-field", "id", "-q"])
        assert result.exit_code == 2, args
        assert result.stderr.strip() == want


def test_merge_refuses_summaries_holding_five_and_five_point_zero(tmp_path):
    a = _hundred_and(tmp_path, "a.jsonl")
    b = write_jsonl(tmp_path / "b.jsonl", [], raw_lines=[_row("5.0")])
    c = write_jsonl(tmp_path / "c.jsonl", [], raw_lines=[_row('"5"')])
    for path in (a, b, c):
        made = run(["summarize", path, "--id-field", "id", "-q", "-o", path.with_suffix(".cbs")])
        assert made.exit_code == 0, made.stderr
    sa, sb, sc = (p.with_suffix(".cbs") for p in (a, b, c))
    result = run(["merge", sa, sb, "-o", tmp_path / "m.cbs"])
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"Error: {sa}, {sb}: a row is in two of the parts (the same id)"
    )
    assert run(["merge", sa, sc, "-o", tmp_path / "m.cbs"]).exit_code == 0
    result = run(["calibrate", tmp_path / "m.cbs", "-q", "--json"])
    assert json.loads(result.stdout)["n"] == 101


def test_an_lm_eval_doc_id_read_again_as_a_float_is_refused(tmp_path):
    from test_row_ids import choice_row

    lines = [choice_row(i) for i in range(3000)]
    lines[2500] = choice_row(17.0)
    path = tmp_path / "samples_mc_2026-01-01T00-00-00.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = run(["calibrate", path, "-q"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"Error: {path}:2501: the row of id mc/17 was read before, at {path}:18: {DOUBLE_READ}"
    )


# --------------------------------------------------------------------------- compare


def test_compare_pairs_equal_numbers_and_calls_them_one_id_within_a_file(tmp_path):
    base = _hundred_and(tmp_path, "base.jsonl")
    lines = [_row("5.0" if i == 5 else "7e0" if i == 7 else str(i), 0.25) for i in range(100)]
    new = write_jsonl(tmp_path / "new.jsonl", [], raw_lines=lines)
    result = run(["compare", base, new, "-q", "--json", "--bootstrap", "200"])
    assert result.exit_code in (0, 1), result.stderr
    assert json.loads(result.stdout)["matched"] == 100
    both = _hundred_and(tmp_path, "both.jsonl", _row("5.0"))
    result = run(["compare", both, base, "-q", "--allow-unmatched", "--bootstrap", "200"])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"Error: {both}:101: duplicate id 5 (first at {both}:6)"


# --------------------------------------------------------------------------- null ids

NULL = 'id field "{}" is null, not a string or number'


@pytest.mark.parametrize("rows", [100, 5000])  # row by row, and inside decoded blocks
def test_compare_refuses_a_null_id_on_either_side(tmp_path, rows):
    clean = _hundred_and(tmp_path, "clean.jsonl", rows=rows)
    null = _hundred_and(tmp_path, "null.jsonl", _row("null"), rows=rows)
    for args in ([null, clean, "--allow-unmatched"], [clean, null, "--allow-unmatched"]):
        result = run(["compare", *args, "-q", "--bootstrap", "200"])
        assert result.exit_code == 2
        assert result.stderr.strip() == f"Error: {null}:{rows + 1}: {NULL.format('id')}"
    # null on both sides is no pair
    twin = _hundred_and(tmp_path, "twin.jsonl", _row("null"), rows=rows)
    result = run(["compare", null, twin, "-q", "--bootstrap", "200"])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"Error: {null}:{rows + 1}: {NULL.format('id')}"


def test_compare_names_its_id_field(tmp_path):
    rows = [{"qid": f"q{i}", "confidence": 0.5, "correct": i % 2 == 0} for i in range(20)]
    base = write_jsonl(tmp_path / "base.jsonl", rows)
    new = write_jsonl(tmp_path / "new.jsonl", [*rows[:19], {**rows[19], "qid": None}])
    result = run(["compare", base, new, "--id-field", "qid", "-q", "--allow-unmatched"])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"Error: {new}:20: {NULL.format('qid')}"


@pytest.mark.parametrize("first", [True, False])
def test_every_id_field_read_refuses_a_null_id(tmp_path, first):
    if first:  # the file's first row
        path = write_jsonl(tmp_path / "p.jsonl", [], raw_lines=[_row("null"), _row("1")])
        line = 1
    else:
        path = _hundred_and(tmp_path, "p.jsonl", _row("null"))
        line = 101
    want = f"Error: {path}:{line}: {NULL.format('id')}"
    for args in (
        ["calibrate", path, "--json"],
        ["summarize", path, "-o", tmp_path / "s.cbs"],
        ["threshold", path, "--target-accuracy", "0.8"],
        ["fit", path, "--method", "platt", "-o", tmp_path / "cal.json"],
    ):
        result = run([*args, "--id-field", "id", "-q"])
        assert result.exit_code == 2, args
        assert result.stderr.strip() == want, args


def test_an_lm_eval_null_doc_id_is_refused(tmp_path):
    from test_row_ids import choice_row

    lines = [choice_row(i) for i in range(3000)]
    lines[2500] = choice_row(None)
    path = tmp_path / "samples_mc_2026-01-01T00-00-00.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = run(["calibrate", path, "-q"])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"Error: {path}:2501: {NULL.format('doc_id')}"
