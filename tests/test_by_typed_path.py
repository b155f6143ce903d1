"""Grouping native rows by a top-level field keeps the typed fast path: the group value rides in
the decoded struct. Files large enough for it (over 64 KB) give the groups, names and errors the
rules say — checked here against sums computed from the rows by hand."""

from __future__ import annotations

import json
import math
import random

import pytest
from harness import run

VALUES = ["a", "b", "1", "null", '"q', 1, 2, 1.5, -0.0, 0.0, True, False, None, "é"]


def name(value):
    """The group name rule, written out: JSON text for non-strings (a whole float as the
    integer it equals: equal numbers are one group), strings as they are unless they would
    read as another JSON value or open with a quote."""
    if isinstance(value, str):
        try:
            float(value)
            typed = True
        except ValueError:
            typed = value in ("true", "false", "null", "NaN", "Infinity", "-Infinity")
        typed = typed or not value or value.startswith('"')
        return json.dumps(value, ensure_ascii=False) if typed else value
    if isinstance(value, float) and value.is_integer():
        return json.dumps(int(value))
    return json.dumps(value)


def rows(n=6000, seed=0):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        c = rng.random()
        out.append({"confidence": c, "correct": rng.random() < c, "g": rng.choice(VALUES)})
    return out


def write(path, data):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in data), "utf-8")
    assert path.stat().st_size > 64 << 10  # the block decoder, not the small-file path
    return path


def test_groups_of_every_json_type_match_sums_by_hand(tmp_path):
    data = rows()
    path = write(tmp_path / "rows.jsonl", data)
    result = run(["calibrate", path, "--by", "g", "--json", "-q", "--workers", "1"])
    assert result.exit_code == 0, result.stderr
    groups = json.loads(result.stdout)["groups"]
    expected: dict[str, list] = {}
    for r in data:
        expected.setdefault(name(r["g"]), []).append(r)
    assert sorted(groups) == sorted(expected)
    # -0.0 and 0.0 are one number, one group; the string "1" is another group than 1
    assert "0" in groups and "-0.0" not in groups and '"1"' in groups and "1" in groups
    for key, members in expected.items():
        section = groups[key]
        assert section["n"] == len(members)
        assert section["accuracy"] == sum(r["correct"] for r in members) / len(members)
        mean = math.fsum(r["confidence"] for r in members) / len(members)
        assert math.isclose(section["mean_confidence"], mean, rel_tol=1e-12)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"g": {"x": 1}}, "field 'g' is an object, not a value to group by"),
        ({"g": [1]}, "field 'g' is a list, not a value to group by"),
        ({}, "missing field 'g'"),
    ],
)
def test_a_bad_group_value_is_named_at_its_line(tmp_path, bad, message):
    data = rows(3000)
    row = {"confidence": 0.5, "correct": True, **bad}
    data.insert(2500, row)
    path = write(tmp_path / "rows.jsonl", data)
    result = run(["calibrate", path, "--by", "g", "-q"])
    assert result.exit_code == 2
    assert f"rows.jsonl:2501: {message}" in result.stderr


def test_grouping_by_the_confidence_field_itself_still_reads(tmp_path):
    data = [{"confidence": 0.25 if i % 2 else 0.75, "correct": i % 3 == 0} for i in range(6000)]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in data), "utf-8")
    result = run(["calibrate", path, "--by", "confidence", "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    groups = json.loads(result.stdout)["groups"]
    assert {k: v["n"] for k, v in groups.items()} == {"0.25": 3000, "0.75": 3000}


@pytest.mark.parametrize("workers", [1, 2])
def test_blocks_of_strings_then_other_types_then_new_strings(tmp_path, workers):
    """Blocks whose values are all strings are coded per reader; a block with a number among
    them, and later blocks bringing new strings, must still give each row its own group."""
    from calibcli.io import read_calibration

    rng = random.Random(7)
    data = []
    for part, pool in enumerate([["a", "b", "c"], ["a", 1, "1", True, None], ["d", "b", "e"]]):
        for _ in range(4000):
            c = rng.random()
            data.append({"confidence": c, "correct": rng.random() < c, "g": rng.choice(pool)})
        data[-1]["g"] = f"last of part {part}"
    path = write(tmp_path / "rows.jsonl", data)
    summary = read_calibration([str(path)], workers=workers, block_size=64 << 10, by="g")
    expected: dict[str, list] = {}
    for r in data:
        expected.setdefault(name(r["g"]), []).append(r)
    groups = summary.groups
    assert sorted(groups) == sorted(expected)
    for key, members in expected.items():
        stats = groups[key].stats
        assert int(stats.count.sum()) == len(members), key
        assert int(stats.sum_correct.sum()) == sum(r["correct"] for r in members), key
        assert float(stats.sum_conf.sum()) == pytest.approx(
            math.fsum(r["confidence"] for r in members), rel=1e-12
        ), key
