"""The engines' ``report(limits=...)`` gates bits per byte and word perplexity as
``calibcli perplexity --max-bits-per-byte/--max-word-perplexity`` does: on the figure by hand
(total NLL / ln 2 / total bytes), failing closed on a frame without the counts. Skipped
without dask, except under CALIBCLI_REQUIRE_ENGINES=1."""

from __future__ import annotations

import math

from conftest import require_engine

require_engine("dask.dataframe", "dask")

import dask  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402

from calibcli.dask import summarize_perplexity  # noqa: E402


def report(frame, limits, **columns):
    lazy = summarize_perplexity(dd.from_pandas(frame, npartitions=2), **columns)
    (result,) = dask.compute(lazy, scheduler="synchronous")
    return result.report(limits=limits)


def test_bits_per_byte_is_gated_on_the_figure_by_hand():
    frame = pd.DataFrame({"nll": [2.0, 3.0, 4.0] * 10, "tokens": [4] * 30, "bytes": [16] * 30})
    bpb = 90.0 / math.log(2) / 480
    passed = report(frame, {"bits_per_byte": bpb * (1 + 1e-12)}, bytes="bytes")
    assert passed["bits_per_byte"] == bpb and passed["gate"]["passed"] is True
    assert report(frame, {"bits_per_byte": bpb * 0.999}, bytes="bytes")["gate"]["passed"] is False


def test_a_frame_without_word_counts_fails_the_word_gate_closed():
    frame = pd.DataFrame({"nll": [2.0, 3.0, 4.0] * 10, "tokens": [4] * 30})
    gate = report(frame, {"word_perplexity": 1e9})["gate"]
    (check,) = gate["checks"]
    assert gate["passed"] is False and check["reason"] == "the input carries no word counts"
