"""A DataFrame's decimal columns (the rows a Spark or Dask task folds, calibcli.io.frames) are
judged on their digits, as a file's rows are: a ``correct`` with digits after the point (1.000...
at scale 30, or 0.999999999999999999999999999999, whose double is 1.0) spells a float and is
refused naming the value as written, as is a token count of 2.99999999999999999999; decimals
of scale 0 read as the integers they spell (2**53 + 1 too), with the figures of the same rows as
JSON Lines. A negative scale (decimal128(5, -2): multiples of 100) holds whole numbers,
read exactly: a ``correct`` of 100 is refused as a JSON row's 100 is. A NaN confidence or NLL is
refused as not a number, as a file's row is."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

pa = pytest.importorskip("pyarrow")

from engine_checks import assert_same, cli_json  # noqa: E402

from calibcli.engines import finish, frame_spec, frame_task  # noqa: E402
from calibcli.io.frames import FrameSpec, frame_summary  # noqa: E402

NINES = Decimal("0." + "9" * 30)
"""Thirty nines: not 1, though the double nearest it is 1.0."""

N = 40
RIGHT = [i % 3 == 0 for i in range(N)]
"""Rows 0, 3, ..., 39 answered right: 14 of the 40."""


def confidences() -> list[float]:
    return [(i + 0.5) / N for i in range(N)]


def engine_report(batch, kind: str, columns: tuple) -> dict:
    spec, table = frame_spec(kind, columns, label="frame")
    return finish(frame_task(spec, table, 0, [batch]), spec.label).report()


def write_jsonl(path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.mark.parametrize("kind", [pa.decimal128(38, 30), pa.decimal256(60, 30)])
def test_a_decimal_correct_with_digits_after_the_point_is_refused(kind):
    # every value, 1 and 0 at scale 30 as well as the thirty nines of rows 5, 10, ... 35
    flipped = [i for i in range(N) if not RIGHT[i] and i % 5 == 0]
    assert flipped == [5, 10, 20, 25, 35]
    values = [NINES if i in flipped else Decimal(int(RIGHT[i])) for i in range(N)]
    batch = pa.record_batch(
        {"confidence": confidences(), "correct": pa.array(values, kind)},
    )
    summary, problems = frame_summary([batch], FrameSpec("calibration", CALIBRATION), 0)
    assert summary is None
    assert problems.message() == (
        f"column 'correct': 40 bad values; the first is 1.{'0' * 30} "
        "(row 1 of partition 0): not true, false, 0 or 1 (a column of floats: cast it to "
        "booleans or integers)"
    )


CALIBRATION = ("confidence", "correct")


def test_scale_zero_decimal_outcomes_count_as_the_booleans_they_spell(tmp_path):
    """1 and 0 at scale 0 are the integers 1 and 0: accuracy is the hand count 14/40, and
    every figure is the JSON Lines route's on the same rows."""
    values = [Decimal(int(y)) for y in RIGHT]
    batch = pa.record_batch(
        {"confidence": confidences(), "correct": pa.array(values, pa.decimal128(38, 0))},
    )
    got = engine_report(batch, "calibration", CALIBRATION)
    rows = [{"confidence": c, "correct": y} for c, y in zip(confidences(), RIGHT, strict=True)]
    want = cli_json("calibrate", write_jsonl(tmp_path / "rows.jsonl", rows))
    assert got["n"] == N and got["accuracy"] == 14 / 40
    assert_same(got, want, files=False)


@pytest.mark.parametrize("kind", ["float64", "float32"])
def test_an_outcome_column_of_floats_is_refused(kind):
    # 1.0 and 0.0 are floats, as `calibcli calibrate` reads them in a JSON row or a Parquet
    # column of doubles (refused there: "correct 1.0 is not true/false/0/1")
    batch = pa.record_batch(
        {"confidence": [0.9, 0.2, 0.8], "correct": pa.array([1.0, 0.0, 1.0], kind)}
    )
    summary, problems = frame_summary([batch], FrameSpec("calibration", CALIBRATION), 0)
    assert summary is None
    assert problems.message() == (
        "column 'correct': 3 bad values; the first is 1.0 (row 1 of partition 0): not true, "
        "false, 0 or 1 (a column of floats: cast it to booleans or integers)"
    )


def test_a_decimal_token_count_just_below_a_whole_number_is_refused():
    tokens = [Decimal("3"), Decimal("4"), Decimal("2.99999999999999999999"), Decimal("5")]
    batch = pa.record_batch(
        {"nll": [1.0, 2.0, 3.0, 4.0], "tokens": pa.array(tokens, pa.decimal128(38, 20))},
    )
    spec = FrameSpec("perplexity", ("nll", "tokens", None, None))
    summary, problems = frame_summary([batch], spec, 0)
    assert summary is None
    assert problems.message() == (
        "column 'tokens': 1 bad value; the first is 2.99999999999999999999 "
        "(row 3 of partition 0): not a whole number in [0, 2**62]"
    )


def test_a_decimal_count_past_two_to_the_62_is_refused():
    """2**62 + 1 has the double 2**62, the largest count accepted; its digits say it is
    larger."""
    big = Decimal(2**62 + 1)
    batch = pa.record_batch(
        {"nll": [1.0, 2.0], "tokens": pa.array([Decimal(3), big], pa.decimal128(20, 0))},
    )
    spec = FrameSpec("perplexity", ("nll", "tokens", None, None))
    summary, problems = frame_summary([batch], spec, 0)
    assert summary is None
    assert problems.message() == (
        "column 'tokens': 1 bad value; the first is 4611686018427387905 "
        "(row 2 of partition 0): not a whole number in [0, 2**62]"
    )


def test_exact_decimal_counts_are_read_as_their_integers(tmp_path):
    """Token counts of scale 20 (3.000...) and of scale 0 past 2**53, where doubles skip odd
    integers: the total is the hand sum 2**53 + 1 + 3 + 4, as the JSON Lines rows give it."""
    counts = [2**53 + 1, 3, 4]
    nll = [10.0, 2.5, 4.0]
    wide = pa.array([Decimal(c) for c in counts], pa.decimal128(20, 0))
    scaled = pa.array([Decimal(c).quantize(Decimal(10) ** -20) for c in counts[1:]])
    rows = [{"nll": x, "tokens": c} for x, c in zip(nll, counts, strict=True)]
    want = cli_json("perplexity", write_jsonl(tmp_path / "rows.jsonl", rows))
    assert want["total_tokens"] == 2**53 + 8
    got = engine_report(pa.record_batch({"nll": nll, "tokens": wide}), "perplexity", PPL)
    assert got["total_tokens"] == 2**53 + 8
    assert got == want | {"format": got["format"]}
    two = cli_json("perplexity", write_jsonl(tmp_path / "two.jsonl", rows[1:]))
    got = engine_report(pa.record_batch({"nll": nll[1:], "tokens": scaled}), "perplexity", PPL)
    assert got["total_tokens"] == 7
    assert got == two | {"format": got["format"]}


PPL = ("nll", "tokens", None, None)


@pytest.mark.parametrize(
    ("column", "values", "kind", "columns"),
    [
        ("nll", [1.0, float("nan"), None, -1.0], "perplexity", PPL),
        ("nll", [1.0, float("nan"), -1.0, -2.0], "perplexity", PPL),
        ("confidence", [0.5, float("nan"), None, 1.5], "calibration", CALIBRATION),
    ],
    ids=["nll-with-nulls", "nll", "confidence"],
)
def test_a_nan_is_refused_as_not_a_number(column, values, kind, columns):
    """As a file's row says ``nll NaN is not a number``; a null beside it stays a null."""
    other = {"nll": "tokens", "confidence": "correct"}[column]
    fill = [1, 1, 1, 1] if other == "tokens" else [True, False, True, False]
    batch = pa.record_batch({column: pa.array(values, pa.float64()), other: fill})
    summary, problems = frame_summary([batch], FrameSpec(kind, columns), 0)
    assert summary is None
    assert problems.message() == (
        f"column {column!r}: 3 bad values; the first is NaN (row 2 of partition 0): not a number"
    )


# --------------------------------------------------------------------------- negative scales


def negative_scale(values: list[int | None], kind) -> object:
    """Whole numbers as a decimal column of negative scale (multiples of 10**-scale), made by
    Arrow's own rescaling from scale 0."""
    return pa.array([None if v is None else Decimal(v) for v in values], pa.decimal256(76, 0)).cast(
        kind
    )


HUNDREDS = [pa.decimal32(5, -2), pa.decimal64(5, -2), pa.decimal128(5, -2), pa.decimal256(5, -2)]
"""Multiples of 100 of up to 7 digits, in each width of decimal."""


@pytest.mark.parametrize("kind", [*HUNDREDS, pa.decimal256(76, -2)], ids=str)
def test_a_negative_scale_correct_of_100_is_refused(kind):
    # rows 3 and 7 (0-based) answered 100, the rest 0
    values = [100 if i in (3, 7) else 0 for i in range(N)]
    batch = pa.record_batch({"confidence": confidences(), "correct": negative_scale(values, kind)})
    summary, problems = frame_summary([batch], FrameSpec("calibration", CALIBRATION), 0)
    assert summary is None
    (count, _, why, where) = problems.found["correct"]
    assert (count, why, where) == (2, "not true, false, 0 or 1", (0, 3))
    if kind.precision - kind.scale <= 76:  # read at scale 0: 100 as a JSON row writes it
        assert problems.message() == (
            "column 'correct': 2 bad values; the first is 100 (row 4 of partition 0): "
            "not true, false, 0 or 1"
        )


@pytest.mark.parametrize("kind", HUNDREDS, ids=str)
def test_a_negative_scale_correct_of_zeros_reads_as_false(tmp_path, kind):
    batch = pa.record_batch({"confidence": confidences(), "correct": negative_scale([0] * N, kind)})
    got = engine_report(batch, "calibration", CALIBRATION)
    rows = [{"confidence": c, "correct": False} for c in confidences()]
    want = cli_json("calibrate", write_jsonl(tmp_path / "rows.jsonl", rows))
    assert got["n"] == N and got["accuracy"] == 0.0
    assert_same(got, want, files=False)


@pytest.mark.parametrize("kind", [*HUNDREDS, pa.decimal256(76, -2)], ids=str)
def test_negative_scale_counts_read_as_their_integers(tmp_path, kind):
    """100, 9_999_900 (the largest of 5 digits at scale -2) and a null-free hand sum."""
    counts = [100, 9_999_900, 300, 0]
    nll = [10.0, 2.5, 4.0, 0.0]
    batch = pa.record_batch({"nll": nll, "tokens": negative_scale(counts, kind)})
    got = engine_report(batch, "perplexity", PPL)
    rows = [{"nll": x, "tokens": c} for x, c in zip(nll, counts, strict=True)]
    want = cli_json("perplexity", write_jsonl(tmp_path / "rows.jsonl", rows))
    assert got["total_tokens"] == 100 + 9_999_900 + 300
    assert got == want | {"format": got["format"]}


@pytest.mark.parametrize("kind", [pa.decimal128(20, -2), pa.decimal256(76, -2)], ids=str)
def test_a_negative_scale_count_just_past_two_to_the_62_is_refused_by_its_digits(kind):
    """2**62 = 4611686018427387904: the multiple of 100 below it is a count, the one above
    (4611686018427388000, whose double is 2**62) is not."""
    below, above = 4611686018427387900, 4611686018427388000
    assert below < 2**62 < above and float(above) == 2.0**62
    batch = pa.record_batch(
        {"nll": [1.0, 2.0, 3.0], "tokens": negative_scale([below, 100, above], kind)}
    )
    summary, problems = frame_summary([batch], FrameSpec("perplexity", PPL), 0)
    assert summary is None
    (count, _, why, where) = problems.found["tokens"]
    assert (count, why, where) == (1, "not a whole number in [0, 2**62]", (0, 2))
    fine = pa.record_batch({"nll": [1.0, 2.0], "tokens": negative_scale([below, 100], kind)})
    assert engine_report(fine, "perplexity", PPL)["total_tokens"] == below + 100
