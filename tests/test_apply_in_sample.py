"""`calibcli apply` refuses rows the calibrator was fitted on, as `calibcli calibrate
--calibrator` fails its gates closed on them: figures computed on the output would be in-sample
and flatter the map.

The fitted rows are known by construction: full-precision confidences drawn here, the fitting
file's rows, and each input below mixes a known share of them with rows drawn apart. The verdict
expected of each input is written from that share (all of them, half, a slice of the fitting
rows alone, the fitting rows through float32: fitted rows; 5% of them among held-out rows, or
none: held-out rows), and calibrate's verdict on the same input must agree. Mapped values are
checked against a histogram map computed here from the fitted rows by a plain bin loop.
"""

from __future__ import annotations

import json
import random
import re
import struct

import pytest
from harness import run, write_jsonl

IN_SAMPLE = (
    "the calibrator was fitted on rows scored here, so the figures after it are in-sample "
    "(score held-out rows)"
)
REFUSED = (
    "figures computed on the output are in-sample for them and flatter the map; apply the "
    "calibrator to held-out rows (or fit it on other rows), or pass --allow-in-sample to write "
    "them anyway"
)
BINS = 10


def draw(n, seed, prefix):
    """Rows {id, confidence, correct} of full-precision confidences in [0.05, 1)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        c = 0.05 + 0.95 * rng.random()
        rows.append({"id": f"{prefix}{i}", "confidence": c, "correct": rng.random() < c**2})
    return rows


FITTED = draw(1000, 1, "f")
HELD = draw(1000, 2, "h")


def share_said(message):
    """A message with its "about N%" share taken out (a share of the fitted rows' sketch, so a
    point or two from the share built), and that share in percent."""
    found = re.search(r"about (\d+)% ", message)
    assert found is not None, message
    return message.replace(found.group(), "about N% "), int(found.group(1))


def float32(value):
    """The double nearest ``value`` through a float32 column."""
    return struct.unpack("f", struct.pack("f", value))[0]


def bin_of(c):
    k = 0
    while k < BINS - 1 and c >= (k + 1) / BINS:
        k += 1
    return k


def histogram_map(rows):
    """The histogram map of ``rows``: each bin's share of right answers (every bin holds
    rows here)."""
    right, total = [0] * BINS, [0] * BINS
    for r in rows:
        k = bin_of(r["confidence"])
        total[k] += 1
        right[k] += int(r["correct"])
    assert all(total)
    return lambda c: right[bin_of(c)] / total[bin_of(c)]


@pytest.fixture
def calibrator(tmp_path):
    rows = write_jsonl(tmp_path / "fit.jsonl", FITTED)
    out = tmp_path / "cal.json"
    made = run(["fit", rows, "--method", "histogram", "-o", out, "-q"])
    assert made.exit_code == 0, made.stderr
    return out


def calibrate_fails_closed(calibrator, path):
    """Whether calibrate --calibrator fails its gate closed on ``path`` (a gate no figure
    fails: ECE is at most 1)."""
    result = run(["calibrate", path, "--calibrator", calibrator, "--max-ece", "1", "--json"])
    report = json.loads(result.stdout)
    closed = [c["metric"] for c in report["gate"]["checks"] if c.get("reason") == IN_SAMPLE]
    assert result.exit_code == (1 if closed else 0), result.stderr
    return bool(closed)


# each input, and whether it holds the calibrator's fitted rows, by construction
CASES = {
    "the fitted rows": (FITTED, True),
    "the fitted rows reversed": (FITTED[::-1], True),
    "half of them among held-out rows": (FITTED[:500] + HELD[:500], True),
    "a slice of them alone": (FITTED[:300], True),
    "the fitted rows through float32": (
        [{**r, "confidence": float32(r["confidence"])} for r in FITTED],
        True,
    ),
    "5% of them among held-out rows": (FITTED[:50] + HELD[:950], False),
    "held-out rows": (HELD, False),
}


def test_apply_refuses_exactly_where_calibrate_fails_closed(tmp_path, calibrator):
    verdicts = {}
    for i, (name, (rows, _)) in enumerate(CASES.items()):
        path = write_jsonl(tmp_path / f"in{i}.jsonl", rows)
        out = tmp_path / f"out{i}.jsonl"
        result = run(["apply", calibrator, path, "-o", out, "-q"])
        refused = result.exit_code == 2
        assert result.exit_code in (0, 2), (name, result.stderr)
        if refused:
            assert not out.exists(), name
            assert result.stderr.strip().startswith(f"Error: {path}: "), name
            assert result.stderr.strip().endswith(REFUSED), name
        else:
            assert len(out.read_text(encoding="utf-8").splitlines()) == len(rows), name
        verdicts[name] = (refused, calibrate_fails_closed(calibrator, path))
    assert verdicts == {name: (fitted, fitted) for name, (_, fitted) in CASES.items()}


def test_refused_rows_leave_an_existing_output_as_it_was(tmp_path, calibrator):
    path = write_jsonl(tmp_path / "dev.jsonl", FITTED)
    out = tmp_path / "mapped.jsonl"
    out.write_bytes(b"earlier output\n")
    result = run(["apply", calibrator, path, "-o", out])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"Error: {path}: the 1,000 rows read here are the rows the calibrator was fitted on: "
        + REFUSED
    ]
    assert out.read_bytes() == b"earlier output\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "cal.json",
        "dev.jsonl",
        "fit.jsonl",
        out.name,
    ]


def test_rows_streamed_to_stdout_are_written_then_refused(tmp_path, calibrator):
    text = "".join(json.dumps(r) + "\n" for r in FITTED[:500] + HELD[:500])
    mapping = histogram_map(FITTED)
    for source, given in (("file", write_jsonl(tmp_path / "mix.jsonl", [])), ("stdin", "-")):
        if source == "file":
            given.write_text(text, encoding="utf-8")
        result = run(["apply", calibrator, given], input=text if source == "stdin" else None)
        assert result.exit_code == 2, source
        shown = "<stdin>" if source == "stdin" else str(given)
        message, share = share_said(result.stderr.strip().splitlines()[-1])
        assert message == (
            f"Error: {shown}: about N% of the rows the calibrator was fitted on (1,000) are "
            f"among the 1,000 rows read here: {REFUSED}"
        )
        assert abs(share - 50) <= 5  # 500 of the 1,000 fitted rows
        written = [json.loads(line) for line in result.stdout.splitlines()]
        assert [r["id"] for r in written] == [r["id"] for r in FITTED[:500] + HELD[:500]]
        for before, after in zip(FITTED[:500] + HELD[:500], written, strict=True):
            assert after["confidence"] == pytest.approx(mapping(before["confidence"]), abs=1e-15)


def test_allow_in_sample_writes_them_with_a_warning(tmp_path, calibrator):
    path = write_jsonl(tmp_path / "dev.jsonl", FITTED)
    out = tmp_path / "mapped.jsonl"
    result = run(["apply", calibrator, path, "-o", out, "--allow-in-sample", "-q"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == [
        "warning: the 1,000 rows read here are the rows the calibrator was fitted on: figures "
        "computed on the output are in-sample for them and flatter the map"
    ]
    mapping = histogram_map(FITTED)
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(written) == len(FITTED)
    for before, after in zip(FITTED, written, strict=True):
        assert after["confidence"] == pytest.approx(mapping(before["confidence"]), abs=1e-15)
        assert {**after, "confidence": before["confidence"]} == before


def test_rows_without_outcomes_are_written_and_with_them_refused(tmp_path, calibrator):
    # nothing can be scored on rows that carry no outcome: their confidences say nothing
    bare = [{k: v for k, v in r.items() if k != "correct"} for r in FITTED]
    variants = {
        "no correct field": bare,
        "correct null": [{**r, "correct": None} for r in bare],
        "correct not true/false/0/1": [{**r, "correct": "yes"} for r in bare],
        "outcomes": FITTED,
    }
    codes = {}
    for i, (name, rows) in enumerate(variants.items()):
        path = write_jsonl(tmp_path / f"rows{i}.jsonl", rows)
        result = run(["apply", calibrator, path, "-o", tmp_path / f"out{i}.jsonl", "-q"])
        codes[name] = (result.exit_code, result.stderr.count("\n"))
    assert codes == {
        "no correct field": (0, 0),
        "correct null": (0, 0),
        "correct not true/false/0/1": (0, 0),
        "outcomes": (2, 1),
    }


def _ints(rows):
    return "".join(json.dumps({**r, "correct": int(r["correct"])}) + "\n" for r in rows)


def _escaped(rows):
    # a \\u escape sends each line down the per-line path
    return "".join(json.dumps({**r, "note": "é"}) + "\n" for r in rows)


def _csv(rows):
    head = "id,confidence,correct\n"
    return head + "".join(
        f"{r['id']},{r['confidence']!r},{str(r['correct']).lower()}\n" for r in rows
    )


def _array(rows):
    return json.dumps(rows, indent=1)


@pytest.mark.parametrize(
    ("kind", "name"),
    [(_ints, "rows.jsonl"), (_escaped, "rows.jsonl"), (_csv, "rows.csv"), (_array, "rows.json")],
)
def test_fitted_rows_are_told_however_they_are_written(tmp_path, calibrator, kind, name):
    path = tmp_path / name
    path.write_text(kind(FITTED[:600]), encoding="utf-8")
    out = tmp_path / ("out.csv" if name.endswith(".csv") else "out.jsonl")
    result = run(["apply", calibrator, path, "-o", out])
    assert result.exit_code == 2, result.stderr
    message, share = share_said(result.stderr.strip())
    assert message == (
        f"Error: {path}: about N% of the rows the calibrator was fitted on (1,000) are among "
        f"the 600 rows read here: {REFUSED}"
    )
    assert abs(share - 60) <= 5  # 600 of the 1,000 fitted rows
    assert not out.exists()
    assert calibrate_fails_closed(calibrator, path)


def test_the_outcomes_are_read_from_the_field_the_calibrator_was_fitted_on(tmp_path):
    rows = [{"id": r["id"], "confidence": r["confidence"], "ok": r["correct"]} for r in FITTED]
    path = write_jsonl(tmp_path / "dev.jsonl", rows)
    cal = tmp_path / "cal.json"
    made = run(["fit", path, "--correct-field", "ok", "--method", "histogram", "-o", cal, "-q"])
    assert made.exit_code == 0, made.stderr
    result = run(["apply", cal, path, "-o", tmp_path / "out.jsonl"])
    assert result.exit_code == 2
    assert "the 1,000 rows read here are the rows the calibrator was fitted on" in result.stderr


def test_several_files_holding_the_fitted_rows_are_named(tmp_path, calibrator):
    paths = [write_jsonl(tmp_path / f"part{i}.jsonl", FITTED[i::2]) for i in range(2)]
    result = run(["apply", calibrator, *paths, "-o", tmp_path / "out.jsonl"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"Error: {paths[0]}, {paths[1]}: the 1,000 rows read here are the rows the calibrator "
        f"was fitted on: {REFUSED}"
    )


def test_a_calibrator_without_a_fingerprint_is_told_by_the_file_it_was_fitted_on(
    tmp_path, calibrator
):
    body = json.loads(calibrator.read_text(encoding="utf-8"))
    del body["fingerprint"]
    calibrator.write_text(json.dumps(body), encoding="utf-8")
    fitted, held = tmp_path / "fit.jsonl", write_jsonl(tmp_path / "held.jsonl", HELD)
    result = run(["apply", calibrator, fitted, "-o", tmp_path / "out.jsonl"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"Error: {fitted}: the calibrator was fitted on {fitted}, which is read here too: "
        + REFUSED
    )
    assert calibrate_fails_closed(calibrator, fitted)
    assert run(["apply", calibrator, held, "-o", tmp_path / "out.jsonl"]).exit_code == 0
    assert not calibrate_fails_closed(calibrator, held)
