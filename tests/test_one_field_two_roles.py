"""Two field options naming one field: every route reads the field for both roles.

A byte-level model's tokens are its bytes (``--tokens-field bytes``); a JSON Lines file read
block by block (a first block of 64 KiB or more, decoded by msgspec), the same rows in a small
file (read line by line) and as CSV give the same figures, those of the field read twice, and
a pairing no row can keep (an NLL of 12.5 read as a token count) is the same one-line error on
every route. The figures are hand totals of the rows written."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from harness import refused, run

from calibcli.io.decode import SMALL_BLOCK, BlockDecoder, struct_names_ok
from calibcli.io.keyed_blocks import KeyedBlocks
from calibcli.io.rows import CalibrationRow

FIELDS = ("g", "nll", "tokens", "bytes", "words")


def _row(i):
    return {
        "g": f"grp{i % 3}",
        "nll": 12.5 + i % 7,
        "tokens": 5 + i % 3,
        "bytes": 20 + i % 5,
        "words": 4 + i % 2,
    }


def _inputs(tmp_path, n=3000):
    """The same ``n`` rows as a JSON Lines file of at least SMALL_BLOCK bytes and as CSV, and
    their first 30 rows as a small JSON Lines file; the rows themselves."""
    rows = [_row(i) for i in range(n)]
    big, small, table = tmp_path / "big.jsonl", tmp_path / "small.jsonl", tmp_path / "big.csv"
    big.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    small.write_text("".join(json.dumps(r) + "\n" for r in rows[:30]), encoding="utf-8")
    lines = [",".join(FIELDS)] + [",".join(str(r[k]) for k in FIELDS) for r in rows]
    table.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert big.stat().st_size > 2 * SMALL_BLOCK
    return {"big": big, "small": small, "csv": table}, rows


def _figures(rows, roles):
    """Hand totals of ``rows`` read with ``roles`` (role -> field)."""
    nll = sum(r[roles["nll"]] for r in rows)
    tokens = sum(r[roles["tokens"]] for r in rows)
    nbytes = sum(r[roles["bytes"]] for r in rows)
    words = sum(r[roles["words"]] for r in rows)
    return {
        "sequences": len(rows),
        "total_tokens": tokens,
        "total_nll": nll,
        "perplexity": math.exp(nll / tokens),
        "total_bytes": nbytes,
        "bits_per_byte": nll / nbytes / math.log(2),
        "total_words": words,
        "word_perplexity": math.exp(nll / words),
    }


def _check(report, expected):
    for key, value in expected.items():
        assert report[key] == pytest.approx(value, rel=1e-12), key


SAME_FIELD = [
    ("--tokens-field", "bytes"),  # a byte-level model
    ("--tokens-field", "words"),
    ("--bytes-field", "words"),
    ("--bytes-field", "tokens"),
    ("--words-field", "tokens"),
    ("--words-field", "bytes"),
    ("--nll-field", "tokens"),
]


@pytest.mark.parametrize(("option", "field"), SAME_FIELD)
def test_a_field_read_for_two_roles_gives_its_figures_on_every_route(tmp_path, option, field):
    files, rows = _inputs(tmp_path)
    roles = {"nll": "nll", "tokens": "tokens", "bytes": "bytes", "words": "words"}
    roles[option.removeprefix("--").removesuffix("-field")] = field
    bodies = {}
    for route, path in files.items():
        result = run(["perplexity", path, option, field, "--json", "-q"])
        assert result.exit_code == 0, (route, result.stderr)
        bodies[route] = json.loads(result.stdout)
        _check(bodies[route], _figures(rows[:30] if route == "small" else rows, roles))
    big, table = ({k: v for k, v in bodies[r].items() if k != "format"} for r in ("big", "csv"))
    assert big == table


def test_grouped_rows_read_a_field_for_two_roles_on_every_route(tmp_path):
    files, rows = _inputs(tmp_path)
    roles = {"nll": "nll", "tokens": "bytes", "bytes": "bytes", "words": "words"}
    for route in ("big", "csv"):
        args = ["perplexity", files[route], "--tokens-field", "bytes", "--by", "g", "--json"]
        result = run([*args, "-q"])
        assert result.exit_code == 0, (route, result.stderr)
        groups = json.loads(result.stdout)["groups"]
        assert sorted(groups) == ["grp0", "grp1", "grp2"]
        for name, group in groups.items():
            _check(group, _figures([r for r in rows if r["g"] == name], roles))


@pytest.mark.parametrize("route", ["big", "small"])
def test_a_pairing_no_row_keeps_is_one_line_on_every_route(tmp_path, route):
    files, _ = _inputs(tmp_path)
    line = refused("perplexity", files[route], "--tokens-field", "nll", "-q")
    assert line == f"Error: {files[route]}:1: nll 12.5 is not a non-negative integer"


def test_names_given_to_two_struct_fields_are_not_a_struct():
    assert struct_names_ok(["nll", "tokens", "bytes"])
    assert not struct_names_ok(["nll", "bytes", "bytes"])
    assert not struct_names_ok(iter(["correct", "correct"]))


def _calibration_block(n):
    """``n`` calibration rows whose ``correct`` is 0/1, and that column."""
    correct = [int(i % 3 != 0) for i in range(n)]
    text = "".join(
        json.dumps({"confidence": 0.25 + (i % 50) / 100, "correct": y}) + "\n"
        for i, y in enumerate(correct)
    )
    return text.encode(), correct


def test_a_block_reads_one_field_as_both_confidence_and_outcome_as_a_line_does():
    # what reading gives; whether a command takes a confidence that is the outcome is its own
    # decision, made before any row is read
    data, correct = _calibration_block(4000)
    assert len(data) > 2 * SMALL_BLOCK
    spec = CalibrationRow("correct", "correct")
    conf, corr = BlockDecoder(spec).block(memoryview(data), 1, "x.jsonl", len(correct))[0]
    assert conf.tolist() == [float(y) for y in correct]
    assert corr.tolist() == [bool(y) for y in correct]
    small = data[: data.index(b"\n", 2000) + 1]
    cols = BlockDecoder(spec).block(memoryview(small), 1, "x.jsonl", small.count(b"\n"))[0]
    np.testing.assert_array_equal(cols[0], conf[: small.count(b"\n")])


def test_compare_keyed_blocks_of_one_field_for_two_roles_go_line_by_line():
    data, correct = _calibration_block(100)
    blocks = KeyedBlocks(CalibrationRow("correct", "correct"), None)
    assert blocks.decoder() is None
    assert blocks.decode(memoryview(data), len(correct)) is None
