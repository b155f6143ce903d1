"""Integer columns beyond what a double or an int64 holds (the rows a Spark or Dask task folds,
calibcli.io.frames): a uint64 token count above 2**63 is refused as over the most a count may
be, naming its value, as a JSON row's is; an integer confidence or correct above 2**53 is
refused as outside [0, 1] or not 0/1, never stopped by Arrow's own range error."""

from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow")

from calibcli.engines import finish, frame_spec, frame_task  # noqa: E402
from calibcli.io.frames import FrameSpec, frame_summary  # noqa: E402

CALIBRATION = ("confidence", "correct")
PERPLEXITY = ("nll", "tokens", None, None)
BIG = 2**63 + 5


def test_a_uint64_count_beyond_int64_is_refused_by_its_value():
    batch = pa.record_batch(
        {"nll": [3.0, 2.0, 1.0], "tokens": pa.array([3, BIG, 2], pa.uint64())},
    )
    summary, problems = frame_summary([batch], FrameSpec("perplexity", PERPLEXITY), 0)
    assert summary is None
    assert problems.message() == (
        f"column 'tokens': 1 bad value; the first is {BIG} (row 2 of partition 0): "
        "not a whole number in [0, 2**62]"
    )


def test_uint64_counts_within_the_most_are_read_exactly():
    most = 2**62
    batch = pa.record_batch(
        {"nll": [3.0, 2.0], "tokens": pa.array([3, most], pa.uint64())},
    )
    spec, table = frame_spec("perplexity", PERPLEXITY, label="frame")
    report = finish(frame_task(spec, table, 0, [batch]), spec.label).report()
    assert report["total_tokens"] == most + 3


@pytest.mark.parametrize(
    ("column", "why"),
    [("correct", "not true, false, 0 or 1"), ("confidence", "outside [0, 1]")],
)
@pytest.mark.parametrize("kind", [pa.uint64(), pa.int64()])
def test_an_integer_beyond_a_doubles_range_is_refused_not_raised(column, why, kind):
    values = {"confidence": [0.9, 0.2, 0.6], "correct": pa.array([1, 0, 1], kind)}
    values[column] = pa.array([1, 2**60 + 1, 0], kind)
    spec = FrameSpec("calibration", CALIBRATION)
    summary, problems = frame_summary([pa.record_batch(values)], spec, 0)
    assert summary is None
    (count, _, said, where) = problems.found[column]
    assert (count, said, where) == (1, why, (0, 1))
