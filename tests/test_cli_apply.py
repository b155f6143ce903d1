"""`calibcli apply CALIBRATOR FILE...`: rows streamed back out with the confidence recalibrated.

Each output row is checked against its input row: the same keys in the same order, every value
but the confidence unchanged, and the confidence equal to the calibrator's map computed here
from the parameters in the calibrator file (platt σ(a·logit(c) + b), temperature
σ(logit(c) / T) with c clipped to [1e-12, 1 - 1e-12], histogram by a plain bin loop). The
figures of an applied file are checked against `calibrate --calibrator` on the raw rows.
"""

from __future__ import annotations

import gzip
import json
import math
import random
from pathlib import Path

import pytest
from harness import run

EPS = 1e-12  # the clip of c before logit(c)
SUBJECTS = ("algebra", "history", "law")
UNSEEN = "astronomy"  # a subject the calibrator was not fitted on
LM_EVAL = sorted(
    (Path(__file__).resolve().parent / "fixtures" / "lm_eval").glob("samples_toy_mc_*")
)
# exact bin edges and the ends of [0, 1], with ints among them
EDGES = (0, 0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0, 1)


# --------------------------------------------------------------------------- data


def fit_rows(n=600, seed=11):
    """Overconfident rows in [0.2, 1): histogram bins 0 and 1 stay empty (null)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        c = 0.2 + 0.8 * rng.random()
        subject = SUBJECTS[i % 3]
        skew = (1.5, 2.5, 4.0)[i % 3]  # each subject its own miscalibration
        out.append(
            {"id": f"f{i}", "subject": subject, "confidence": c, "correct": rng.random() < c**skew}
        )
    return out


def score_rows(n=120, seed=12):
    """Rows with keys in varied order, nested and non-ASCII values, bin edges, ints, 0 and 1."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        c = EDGES[i] if i < len(EDGES) else rng.random()
        subject = (*SUBJECTS, UNSEEN)[i % 4]
        row = {
            "meta": {"src": "Überprüfung ✓", "tags": [i, None, True, 1.5e-300]},
            "confidence": c,
            "id": f"s{i:03d}",
            "big": 12345678901234567890123,
            "subject": subject,
            "correct": rng.random() < c**2,
            "note": None if i % 2 else "日本語",
        }
        if i % 3 == 0:
            row = dict(reversed(list(row.items())))
        out.append(row)
    return out


def write_rows(path, rows):
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    path.write_text(text, encoding="utf-8")
    return path


def nested(rows):
    """The rows with the confidence moved to pred.conf, beside other keys."""
    out = []
    for r in rows:
        r = dict(r)
        c = r.pop("confidence")
        out.append({"id": r["id"], "pred": {"label": "B", "conf": c, "rank": [1, 2]}, **r})
    return out


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("apply")
    return {
        "root": root,
        "fit": write_rows(root / "fit.jsonl", fit_rows()),
        "score": write_rows(root / "score.jsonl", score_rows()),
        "nested": write_rows(root / "nested.jsonl", nested(score_rows())),
    }


def fit(data, method, *extra):
    out = data["root"] / f"{method}{''.join(extra)}.json"
    if not out.exists():
        result = run(["fit", data["fit"], "--method", method, "-o", out, "-q", *extra])
        assert result.exit_code == 0, result.stderr
    return out


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def lines_of(text):
    return [json.loads(line) for line in text.splitlines()]


# --------------------------------------------------------------------------- reference maps


def logit(c):
    c = min(max(float(c), EPS), 1.0 - EPS)
    return math.log(c) - math.log1p(-c)


def sigmoid(x):
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def reference_map(method, params):
    """The calibrator's map c -> c' from its parameters."""
    if method == "platt":
        return lambda c: sigmoid(params["a"] * logit(c) + params["b"])
    if method == "temperature":
        return lambda c: sigmoid(logit(c) / params["temperature"])
    if method == "histogram":
        acc = params["accuracy"]
        bins = len(acc)

        def apply(c):
            k = 0
            while k < bins - 1 and c >= (k + 1) / bins:
                k += 1
            return float(c) if acc[k] is None else acc[k]

        return apply
    raise AssertionError(method)


def get(row, dotted):
    for part in dotted.split("."):
        row = row[part]
    return row


def without(row, dotted):
    """A deep copy of ``row`` less the field at ``dotted``."""
    row = json.loads(json.dumps(row))
    *parents, leaf = dotted.split(".")
    node = row
    for part in parents:
        node = node[part]
    del node[leaf]
    return row


def key_order(value):
    """Every object's key order, recursively."""
    if isinstance(value, dict):
        return [(k, key_order(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [key_order(v) for v in value]
    return None


def assert_applied(inputs, outputs, mapping, field="confidence"):
    assert len(outputs) == len(inputs)
    for i, (before, after) in enumerate(zip(inputs, outputs, strict=True)):
        assert key_order(after) == key_order(before), i
        assert without(after, field) == without(before, field), i
        got, want = get(after, field), mapping(get(before, field))
        assert isinstance(got, float), i
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15), (i, get(before, field))


def ece_loop(conf, correct, bins=10):
    total, right = [0.0] * bins, [0] * bins
    for c, y in zip(conf, correct, strict=True):
        k = 0
        while k < bins - 1 and c >= (k + 1) / bins:
            k += 1
        total[k] += c
        right[k] += int(y)
    return math.fsum(abs(total[k] - right[k]) for k in range(bins)) / len(conf)


# --------------------------------------------------------------------------- the map


@pytest.mark.parametrize("method", ["platt", "temperature", "histogram"])
def test_apply_rewrites_only_the_confidence(method, data):
    cal = fit(data, method)
    doc = load(cal)
    assert doc["method"] == method
    result = run(["apply", cal, data["score"]])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.strip() == f"recalibrated 120 rows ({method})"
    inputs = lines_of(data["score"].read_text(encoding="utf-8"))
    assert_applied(inputs, lines_of(result.stdout), reference_map(method, doc["params"]))


def test_histogram_keeps_confidences_of_empty_bins(data):
    doc = load(fit(data, "histogram"))
    acc = doc["params"]["accuracy"]
    assert acc[0] is None and acc[1] is None and all(a is not None for a in acc[2:])
    out = lines_of(run(["apply", fit(data, "histogram"), data["score"], "-q"]).stdout)
    inputs = lines_of(data["score"].read_text(encoding="utf-8"))
    kept = [o["confidence"] for i, o in zip(inputs, out, strict=True) if i["confidence"] < 0.2]
    assert kept and kept == [float(i["confidence"]) for i in inputs if i["confidence"] < 0.2]


def test_a_nested_confidence_field(data):
    cal = fit(data, "platt")
    result = run(["apply", cal, data["nested"], "--confidence-field", "pred.conf", "-q"])
    assert result.exit_code == 0, result.stderr
    # -q hides progress and the format line, never a warning
    assert result.stderr == (
        "warning: the calibrator was fitted on the field 'confidence'; it maps 'pred.conf' "
        "here, as --confidence-field asked\n"
    )
    inputs = lines_of(data["nested"].read_text(encoding="utf-8"))
    mapping = reference_map("platt", load(cal)["params"])
    assert_applied(inputs, lines_of(result.stdout), mapping, field="pred.conf")


def test_gzip_stdin_and_several_files_give_the_same_rows(data, tmp_path):
    cal = fit(data, "platt")
    plain = run(["apply", cal, data["score"], "-q"])
    assert plain.exit_code == 0, plain.stderr
    text = data["score"].read_text(encoding="utf-8")
    packed = tmp_path / "score.jsonl.gz"
    packed.write_bytes(gzip.compress(text.encode("utf-8")))
    zipped = run(["apply", cal, packed, "-q"])
    assert zipped.exit_code == 0, zipped.stderr
    assert zipped.stdout == plain.stdout
    piped = run(["apply", cal, "-", "-q"], input=text)
    assert piped.exit_code == 0, piped.stderr
    assert piped.stdout == plain.stdout
    # a compressed copy beside its plain file is written twice only when asked to
    both = run(["apply", cal, packed, data["score"], "--all-runs", "-q"])
    assert both.exit_code == 0, both.stderr
    assert both.stdout == plain.stdout + plain.stdout


def test_output_file(data, tmp_path):
    cal = fit(data, "temperature")
    out = tmp_path / "applied.jsonl"
    result = run(["apply", cal, data["score"], "-o", out])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert "recalibrated 120 rows" in result.stderr
    inputs = lines_of(data["score"].read_text(encoding="utf-8"))
    mapping = reference_map("temperature", load(cal)["params"])
    assert_applied(inputs, lines_of(out.read_text(encoding="utf-8")), mapping)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["applied.jsonl"]


# --------------------------------------------------------------------------- --by


def test_by_maps_each_group_with_its_own_calibrator(data):
    cal = fit(data, "platt", "--by", "subject")
    doc = load(cal)
    assert doc["by"] == "subject" and sorted(doc["groups"]) == list(SUBJECTS)
    params = {name: g["params"] for name, g in doc["groups"].items()}
    assert len({json.dumps(p) for p in [*params.values(), doc["params"]]}) == 4

    result = run(["apply", cal, data["score"], "--by", "subject", "-q"])
    assert result.exit_code == 0, result.stderr
    inputs = lines_of(data["score"].read_text(encoding="utf-8"))
    outputs = lines_of(result.stdout)
    assert {r["subject"] for r in inputs} == {*SUBJECTS, UNSEEN}
    for name in (*SUBJECTS, UNSEEN):
        # a subject the file has no calibrator for is mapped by the pooled one
        mapping = reference_map("platt", params.get(name, doc["params"]))
        pairs = [(i, o) for i, o in zip(inputs, outputs, strict=True) if i["subject"] == name]
        assert_applied([i for i, _ in pairs], [o for _, o in pairs], mapping)

    # without --by every row takes the pooled calibrator
    pooled = run(["apply", cal, data["score"], "-q"])
    assert pooled.exit_code == 0, pooled.stderr
    assert_applied(inputs, lines_of(pooled.stdout), reference_map("platt", doc["params"]))


# --------------------------------------------------------------------------- errors


BAD_LINES = {
    "outside-unit": '{"confidence": 1.5, "correct": true}',
    "not-a-number": '{"confidence": "high", "correct": true}',
    "missing-field": '{"conf": 0.5, "correct": true}',
    "invalid-json": '{"confidence": 0.5, "correct": tru',
}


@pytest.mark.parametrize("name", list(BAD_LINES))
def test_a_bad_row_stops_apply_and_leaves_the_output_alone(name, data, tmp_path):
    cal = fit(data, "platt")
    rows = [json.dumps({"confidence": (k + 0.5) / 10, "correct": k % 2 == 0}) for k in range(10)]
    rows[4] = BAD_LINES[name]
    src = tmp_path / "rows.jsonl"
    src.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    out.write_bytes(b'{"previous": "contents"}\n')
    before = sorted(p.name for p in tmp_path.iterdir())

    result = run(["apply", cal, src, "-o", out])
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"Error: {src}:5: "), lines[0]
    assert out.read_bytes() == b'{"previous": "contents"}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == before

    fresh = tmp_path / "fresh.jsonl"
    assert run(["apply", cal, src, "-o", fresh]).exit_code == 2
    assert not fresh.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == before

    streamed = run(["apply", cal, src])
    assert streamed.exit_code == 2
    assert streamed.stderr.splitlines() == lines


def one_error_line(result):
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), lines
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    return lines[0]


def test_lm_eval_rows_are_refused(data):
    line = one_error_line(run(["apply", fit(data, "platt"), LM_EVAL[0]]))
    assert f"{LM_EVAL[0]}:1:" in line and "lm-eval" in line


def test_a_multiclass_temperature_calibrator_is_refused(data, tmp_path):
    cal = tmp_path / "mc.json"
    result = run(["fit", *LM_EVAL, "--method", "temperature", "-o", cal, "-q"])
    assert result.exit_code == 0, result.stderr
    assert load(cal)["method"] == "multiclass_temperature"
    line = one_error_line(run(["apply", cal, data["score"]]))
    assert str(cal) in line


# --------------------------------------------------------------------------- consistency


@pytest.mark.parametrize("method", ["platt", "temperature", "histogram", "isotonic", "beta"])
def test_applied_rows_score_as_calibrate_with_the_calibrator(method, data, tmp_path):
    cal = fit(data, method)
    applied = tmp_path / "applied.jsonl"
    assert run(["apply", cal, data["score"], "-o", applied, "-q"]).exit_code == 0
    rows = lines_of(applied.read_text(encoding="utf-8"))
    conf = [r["confidence"] for r in rows]
    correct = [r["correct"] for r in rows]

    direct = run(["calibrate", data["score"], "--calibrator", cal, "--json"])
    assert direct.exit_code == 0, direct.stderr
    after = json.loads(direct.stdout)["recalibration"]["after"]
    assert after["mean_confidence"] == pytest.approx(math.fsum(conf) / len(conf), abs=1e-12)

    scored = run(["calibrate", applied, "--json"])
    assert scored.exit_code == 0, scored.stderr
    report = json.loads(scored.stdout)
    assert report["ece"] == pytest.approx(after["ece"], abs=1e-12)
    assert report["ece"] == pytest.approx(ece_loop(conf, correct), abs=1e-12)
    assert report["mean_confidence"] == pytest.approx(after["mean_confidence"], abs=1e-12)
