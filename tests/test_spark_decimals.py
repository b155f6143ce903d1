"""calibcli.spark on the values a double cannot tell apart: a DecimalType(38, 30) outcome (its
0.999999999999999999999999999999 has the double 1.0; its 1 spells 1.0, a float, as a DOUBLE's
does) and a DecimalType(38, 20) token count of 2.99999999999999999999 are refused naming them
as written, and a NaN NLL is named as not a
number, as the command line names it. Skipped without pyspark or Java, except under
CALIBCLI_REQUIRE_ENGINES=1."""

from __future__ import annotations

from decimal import Decimal

import pytest
from conftest import require_engine, require_program
from engine_checks import local_spark

require_program("java", "Spark runs on a JVM (Java 17)")
require_engine("pyspark", "spark")

from calibcli.errors import InputError  # noqa: E402
from calibcli.spark import summarize, summarize_perplexity  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    with local_spark("calibcli-decimals", memory="1g") as session:
        yield session


def refusal(run) -> str:
    with pytest.raises(InputError) as found:
        run()
    return str(found.value)


def test_an_outcome_with_digits_after_the_point_is_refused(spark):
    """300 rows, every third wrong answer written as thirty nines (whose double is 1.0): an
    outcome at scale 30 is refused whole, as `calibcli calibrate` refuses 1.0 in a file's row,
    naming the first as written; the same outcomes at scale 0 (exactly 0 or 1) are read."""
    nines = Decimal("0." + "9" * 30)
    rows = [((i + 0.5) / 300, nines if i % 6 == 2 else Decimal(i % 2)) for i in range(300)]
    df = spark.createDataFrame(rows, "confidence DOUBLE, correct DECIMAL(38, 30)").coalesce(1)
    text = refusal(lambda: summarize(df))
    assert (
        f"column 'correct': 300 bad values; the first is 0.{'0' * 30} "
        "(row 1 of partition 0): not true, false, 0 or 1 (a column of floats: cast it to booleans "
        "or integers)"
    ) in text
    exact = df.where(df.correct != nines).selectExpr(
        "confidence", "CAST(correct AS DECIMAL(38, 0)) AS correct"
    )
    assert summarize(exact).report()["accuracy"] == 150 / 250


def test_an_outcome_column_of_doubles_is_refused(spark):
    rows = [((i + 0.5) / 10, float(i % 2)) for i in range(10)]
    df = spark.createDataFrame(rows, "confidence DOUBLE, correct DOUBLE").coalesce(1)
    assert (
        "column 'correct': 10 bad values; the first is 0.0 (row 1 of partition 0): not true, "
        "false, 0 or 1 (a column of floats: cast it to booleans or integers)"
    ) in refusal(lambda: summarize(df))


def test_a_count_just_below_a_whole_number_is_refused(spark):
    rows = [(1.0, Decimal(3)), (2.0, Decimal("2.99999999999999999999")), (3.0, Decimal(4))]
    df = spark.createDataFrame(rows, "nll DOUBLE, tokens DECIMAL(38, 20)").coalesce(1)
    assert (
        "column 'tokens': 1 bad value; the first is 2.99999999999999999999 "
        "(row 2 of partition 0): not a whole number in [0, 2**62]"
    ) in refusal(lambda: summarize_perplexity(df))


def test_a_nan_nll_is_named_as_not_a_number(spark):
    rows = [(1.0, 3), (float("nan"), 2), (-1.0, 4)]
    df = spark.createDataFrame(rows, "nll DOUBLE, tokens BIGINT").coalesce(1)
    assert (
        "column 'nll': 2 bad values; the first is NaN (row 2 of partition 0): not a number"
    ) in refusal(lambda: summarize_perplexity(df))
