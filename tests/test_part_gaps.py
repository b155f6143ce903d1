"""Pieces of a file read with ``summarize --part k/K`` that are missing from a merge, and the
reading settings (--choices, --gold-field, --id-field) a summary records.

The inputs are written here with every line the same length (``WIDTH`` bytes), so the pieces
``--part k/3`` cuts are known by hand: 12 lines cut at bytes 0, 4W, 8W and 12W (each cut falls
on a line start), 4 rows a piece. Row counts are those of the pieces' own lines, counted here.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from harness import run

from calibcli.summaries import from_bytes, read_header, to_bytes

WIDTH = 48  # bytes of every line, its newline included
LINES = 12  # calibration rows: 4 a piece of 3
SIZE = WIDTH * LINES
CUTS = [0, 4 * WIDTH, 8 * WIDTH, 12 * WIDTH]  # where --part k/3 cuts: size * k // 3
CONFIDENCES = [0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.52, 0.51, 0.99]
CORRECT = [True, False, True, True, False, True, False, True, True, False, True, True]
CHAT_MC = Path(__file__).parent / "fixtures" / "openai_choices" / "chat_mc.jsonl"


def _padded(row: dict) -> str:
    text = json.dumps(row)
    assert len(text) < WIDTH
    return text + " " * (WIDTH - 1 - len(text)) + "\n"


@pytest.fixture
def rows_file(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(
        "".join(
            _padded({"id": i, "confidence": c, "correct": ok})
            for i, (c, ok) in enumerate(zip(CONFIDENCES, CORRECT, strict=True))
        )
    )
    assert path.stat().st_size == SIZE
    return path


@pytest.fixture
def pieces(rows_file, tmp_path):
    """The summaries of --part 1/3, 2/3 and 3/3, by k."""
    out = {}
    for k in (1, 2, 3):
        out[k] = tmp_path / f"p{k}.cbs"
        result = run(["summarize", rows_file, "--part", f"{k}/3", "-o", out[k], "-q"])
        assert result.exit_code == 0, result.stderr
    return out


def _rows_in(path, lo: int, hi: int) -> int:
    """The lines of ``path`` starting in bytes [lo, hi), counted from the bytes themselves."""
    data = path.read_bytes()
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A and i + 1 < len(data)]
    return sum(lo <= s < hi for s in starts)


def _merge(tmp_path, name, *parts):
    out = tmp_path / name
    result = run(["merge", *parts, "-o", out, "-q"])
    assert result.exit_code == 0, result.stderr
    return out, result


# --------------------------------------------------------------------------- what merge says


@pytest.mark.parametrize(
    ("held", "missing"),
    [((1, 3), 2), ((2, 3), 1), ((1, 2), 3)],
    ids=["middle", "first", "last"],
)
def test_merge_writes_the_file_and_names_the_missing_piece(tmp_path, pieces, held, missing):
    out, result = _merge(tmp_path, "held.cbs", *(pieces[k] for k in held))
    assert out.exists()
    lo, hi = CUTS[missing - 1], CUTS[missing]
    assert (lo, hi) == ((missing - 1) * 192, missing * 192)
    said = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(said) == 1
    assert f"{out}:" in said[0] and "rows.jsonl" in said[0]
    assert (
        f"cover 2 of its 3 pieces (--part {missing}/3 missing: bytes {lo:,}-{hi:,} of 576)"
        in (said[0])
    )


def test_two_pieces_missing_are_both_named(tmp_path, pieces):
    _, result = _merge(tmp_path, "one.cbs", pieces[2])
    assert "cover 1 of its 3 pieces (--part 1/3 and 3/3 missing: bytes 0-192 and 384-576" in (
        result.stderr
    )


# --------------------------------------------------------------------------- what readers do


def test_calibrate_warns_and_every_gate_fails_closed(tmp_path, rows_file, pieces):
    merged, _ = _merge(tmp_path, "p13.cbs", pieces[3], pieces[1])
    result = run(["calibrate", merged, "--max-ece", "1", "--min-rows", "1", "--json", "-q"])
    assert result.exit_code == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["n"] == _rows_in(rows_file, 0, 192) + _rows_in(rows_file, 384, 576) == 8
    [warning] = [w for w in report["warnings"] if "rows.jsonl" in w]
    assert "--part 2/3 missing: bytes 192-384 of 576" in warning
    checks = report["gate"]["checks"]
    assert [c["metric"] for c in checks] == ["ece", "n"]
    for check in checks:
        assert check["passed"] is False
        assert "covers only part of" in check["reason"] and "rows.jsonl" in check["reason"]
    assert "cannot support --min-rows 1" in result.stderr


def test_pieces_given_to_a_command_unmerged_are_judged_too(pieces):
    result = run(["calibrate", pieces[1], pieces[2], "--min-rows", "1", "--json", "-q"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["n"] == 8
    assert any("--part 3/3 missing: bytes 384-576" in w for w in report["warnings"])


def test_threshold_reliability_and_fit_carry_the_warning(tmp_path, pieces):
    merged, _ = _merge(tmp_path, "p12.cbs", pieces[1], pieces[2])
    chosen = ["--target-accuracy", "0.1", "--delta", "0.5", "--min-coverage", "0.01"]
    threshold = run(["threshold", merged, *chosen, "--json"])
    assert threshold.exit_code == 1
    gate = json.loads(threshold.stdout)["gate"]
    assert [c["passed"] for c in gate["checks"]] == [False]
    assert "covers only part of" in gate["checks"][0]["reason"]
    reliability = run(["reliability", merged, "--json", "-q"])
    assert reliability.exit_code == 0
    assert any("--part 3/3 missing" in w for w in json.loads(reliability.stdout)["warnings"])
    fit = run(["fit", merged, "--method", "platt", "-o", tmp_path / "cal.json", "-q"])
    assert fit.exit_code == 0
    assert "--part 3/3 missing" in fit.stderr


def test_a_threshold_chosen_on_a_merge_missing_a_piece_fails_closed(tmp_path, rows_file, pieces):
    # the rows evaluated are whole; the --fit rows the threshold is chosen on lack piece 3/3
    merged, _ = _merge(tmp_path, "p12.cbs", pieces[1], pieces[2])
    every, _ = _merge(tmp_path, "all.cbs", pieces[1], pieces[2], pieces[3])
    chosen = ["--target-accuracy", "0.1", "--delta", "0.5", "--min-coverage", "0.01"]
    whole = run(["threshold", rows_file, "--fit", every, *chosen, "--json"])
    assert whole.exit_code == 0, whole.stdout  # every piece: the gate is judged
    result = run(["threshold", rows_file, "--fit", merged, *chosen, "--json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    [check] = report["gate"]["checks"]
    assert check["passed"] is False
    assert check["reason"].startswith("the --fit rows: the summary covers only part of")
    assert any("--part 3/3 missing" in w for w in report["warnings"])


def test_perplexity_rows_path(tmp_path):
    path = tmp_path / "ppl.jsonl"
    nll = [2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    path.write_text("".join(_padded({"nll": x, "tokens": 2}) for x in nll))
    for k in (1, 2, 3):
        args = ["summarize", path, "--part", f"{k}/3", "-o", tmp_path / f"q{k}.cbs", "-q"]
        assert run(args).exit_code == 0
    gated = ["--max-perplexity", "1e9", "--min-rows", "1", "--json", "-q"]
    # 6 lines of 48 bytes: cut at 96 and 192, 2 rows a piece
    partial, merged = _merge(tmp_path, "q13.cbs", tmp_path / "q1.cbs", tmp_path / "q3.cbs")
    assert "--part 2/3 missing: bytes 96-192 of 288" in merged.stderr
    result = run(["perplexity", partial, *gated])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["sequences"] == 4
    assert all(not c["passed"] and "only part of" in c["reason"] for c in report["gate"]["checks"])
    assert any("ppl.jsonl" in w for w in report["warnings"])
    whole, merged = _merge(tmp_path, "q.cbs", partial, tmp_path / "q2.cbs")
    assert "warning" not in merged.stderr
    result = run(["perplexity", whole, *gated])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["sequences"] == 6


# --------------------------------------------------------------------------- complete pieces


def test_every_piece_in_any_order_or_grouping_is_unaffected(tmp_path, rows_file, pieces):
    whole = tmp_path / "whole.cbs"
    assert run(["summarize", rows_file, "-o", whole, "-q"]).exit_code == 0
    args = ["--max-ece", "1", "--min-rows", "12", "--json", "-q"]
    want = run(["calibrate", whole, *args])
    assert want.exit_code == 0
    assert json.loads(want.stdout)["n"] == LINES
    order = [pieces[k] for k in (1, 2, 3)]
    random.Random(3).shuffle(order)
    flat, said = _merge(tmp_path, "flat.cbs", *order)
    assert "warning" not in said.stderr
    p31, said = _merge(tmp_path, "p31.cbs", pieces[3], pieces[1])
    assert "--part 2/3 missing" in said.stderr  # merged now, the rest later
    grouped, said = _merge(tmp_path, "grouped.cbs", pieces[2], p31)
    assert "warning" not in said.stderr
    p2, _ = _merge(tmp_path, "p2only.cbs", pieces[2])
    nested, said = _merge(tmp_path, "nested.cbs", p2, grouped.parent / "p31.cbs")
    assert "warning" not in said.stderr
    for summary in (flat, grouped, nested):
        got = run(["calibrate", summary, *args])
        assert got.exit_code == 0, got.stderr
        assert got.stdout == want.stdout
    direct = run(["calibrate", *order, *args])
    assert direct.exit_code == 0 and direct.stdout == want.stdout


def test_summarize_of_pieces_does_not_keep_the_warning(tmp_path, rows_file, pieces):
    partial = tmp_path / "again.cbs"
    result = run(["summarize", pieces[1], pieces[3], "-o", partial, "-q"])
    assert result.exit_code == 0
    assert "--part 2/3 missing" in result.stderr
    meta, _ = read_header(partial.read_bytes())
    assert not any("missing" in w for w in meta.get("warnings") or ())
    whole, said = _merge(tmp_path, "whole.cbs", partial, pieces[2])
    assert "warning" not in said.stderr
    result = run(["calibrate", whole, "--min-rows", "12", "--json", "-q"])
    assert result.exit_code == 0
    want = run(["calibrate", rows_file, "--min-rows", "12", "--json", "-q"])
    assert json.loads(result.stdout)["warnings"] == json.loads(want.stdout)["warnings"]
    assert not any("missing" in w for w in json.loads(result.stdout)["warnings"])


def test_a_whole_file_is_never_judged(tmp_path, rows_file, pieces):
    other = tmp_path / "other.jsonl"
    other.write_text(_padded({"confidence": 0.5, "correct": True}))
    whole = tmp_path / "other.cbs"
    assert run(["summarize", other, "-o", whole, "-q"]).exit_code == 0
    result = run(["calibrate", whole, "--min-rows", "1", "--json", "-q"])
    assert result.exit_code == 0
    # beside pieces of another file, only that file is named
    _, said = _merge(tmp_path, "mixed.cbs", whole, pieces[1])
    assert "rows.jsonl" in said.stderr and "other.jsonl" not in said.stderr
    _, said = _merge(tmp_path, "all.cbs", whole, pieces[1], pieces[2], pieces[3])
    assert "warning" not in said.stderr


def test_the_header_records_the_size_and_the_piece(pieces):
    meta, _ = read_header(pieces[2].read_bytes())
    [source] = meta["sources"]
    assert (source["start"], source["stop"], source["rows"]) == (192, 384, 4)
    assert (source["size"], source["part"]) == (SIZE, [2, 2, 3])


def test_an_older_summary_without_sizes_reads_as_before(tmp_path, pieces):
    """A summary written before the size was recorded: read as it is, its pieces not judged."""
    from dataclasses import replace

    old = {}
    for k in (1, 3):
        summary = from_bytes(pieces[k].read_bytes())
        sources = tuple(replace(s, size=None, part=None) for s in summary.sources)
        old[k] = tmp_path / f"old{k}.cbs"
        old[k].write_bytes(to_bytes(replace(summary, sources=sources)))
        meta, _ = read_header(old[k].read_bytes())
        assert "size" not in meta["sources"][0] and "part" not in meta["sources"][0]
    merged, said = _merge(tmp_path, "old13.cbs", old[1], old[3])
    assert "warning" not in said.stderr
    result = run(["calibrate", merged, "--min-rows", "1", "--json", "-q"])
    assert result.exit_code == 0 and json.loads(result.stdout)["n"] == 8


# --------------------------------------------------------------------------- reading settings


@pytest.fixture
def chat_pieces(tmp_path):
    """Two summaries of OpenAI chat multiple-choice rows (no answer D), the second read with
    --choices A,B,C."""
    lines = [
        line
        for line in CHAT_MC.read_text(encoding="utf-8").splitlines(keepends=True)
        if '"answer": "D"' not in line
    ]
    assert len(lines) >= 4
    (tmp_path / "a.jsonl").write_text("".join(lines[:2]))
    (tmp_path / "b.jsonl").write_text("".join(lines[-2:]))
    a, b = tmp_path / "a.cbs", tmp_path / "b.cbs"
    assert (
        run(["summarize", tmp_path / "a.jsonl", "--gold-field", "answer", "-o", a]).exit_code == 0
    )
    args = ["summarize", tmp_path / "b.jsonl", "--gold-field", "answer", "--choices", "A,B,C"]
    assert run([*args, "-o", b, "-q"]).exit_code == 0
    return a, b


def test_merge_refuses_other_choices(tmp_path, chat_pieces):
    result = run(["merge", *chat_pieces, "-o", tmp_path / "ab.cbs"])
    assert result.exit_code == 2
    assert "choices" in result.stderr and "'A,B,C'" in result.stderr
    assert not (tmp_path / "ab.cbs").exists()


def test_reading_a_summary_with_other_choices_is_refused(chat_pieces):
    a, b = chat_pieces
    result = run(["calibrate", a, "--choices", "A,B,C", "-q"])
    assert result.exit_code == 2
    assert "without --choices" in result.stderr
    # left out, the summary's own choices are taken; given alike, read as they are
    for args in ([b], [b, "--choices", "A,B,C"]):
        result = run(["calibrate", *args, "--json", "-q"])
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout)["n"] == 2


def test_merge_refuses_another_gold_field_and_not_a_missing_id_field_but_reading_does(
    tmp_path, rows_file
):
    def summary(name, *options):
        out = tmp_path / name
        assert (
            run(["summarize", rows_file, "--part", f"{name[1]}/3", *options, "-o", out]).exit_code
            == 0
        )
        return out

    plain = summary("p1.cbs")
    gold = summary("p2.cbs", "--gold-field", "answer")
    ids = summary("p3.cbs", "--id-field", "id")
    result = run(["merge", plain, gold, "-o", tmp_path / "x.cbs"])
    assert result.exit_code == 2
    assert "gold_field" in result.stderr
    # rows read without ids (or by a calibcli that did not record them) merge with rows read
    # with them, as they always did: the ids only add a check
    result = run(["merge", plain, ids, "-o", tmp_path / "y.cbs"])
    assert result.exit_code == 0, result.stderr
    # but --id-field given to read them asks for a check their rows cannot have: refused
    for unknown in (plain, tmp_path / "y.cbs"):
        result = run(["calibrate", unknown, "--id-field", "id", "-q"])
        assert result.exit_code == 2
        assert result.stderr.strip() == (
            f"Error: {unknown}: its rows were read without --id-field, so their ids are not "
            "known: --id-field id cannot check them for repeats (summarize the inputs with "
            "--id-field id, or drop it)"
        )
    assert run(["calibrate", ids, "--id-field", "id", "-q"]).exit_code == 0
    result = run(["calibrate", ids, "--id-field", "other", "-q"])
    assert result.exit_code == 2 and "with --id-field id" in result.stderr


def test_a_summary_read_with_ids_reads_files_beside_it_with_them(tmp_path, rows_file):
    """Plain files read beside a summary read with --id-field are read with it too: a repeated
    id among their rows is refused, as reading them all with --id-field refuses it."""
    ids = tmp_path / "ids.cbs"
    assert run(["summarize", rows_file, "--id-field", "id", "-o", ids, "-q"]).exit_code == 0
    again = tmp_path / "again.jsonl"
    # the repeat is not of the first row's id, which is refused even without --id-field
    again.write_text(
        "".join(_padded({"id": i, "confidence": 0.5, "correct": True}) for i in (101, 100, 100))
    )
    result = run(["calibrate", ids, again, "-q"])
    assert result.exit_code == 2
    assert "100" in result.stderr


def test_default_settings_are_written_as_before(pieces):
    """Summaries read without --choices, --gold-field or --id-field hold no such settings, as
    summaries written before they were recorded: those read as these."""
    meta, _ = read_header(pieces[1].read_bytes())
    assert not {"choices", "gold_field", "id_field"} & set(meta["settings"])


@pytest.mark.parametrize(
    "how",
    [
        ["calibrate", "--calibrator", "CAL", "--max-ece", "1", "--min-rows", "1"],
        ["calibrate", "--recalibrate", "temperature", "--max-ece", "1", "--min-rows", "1"],
        ["threshold", "--calibrator", "CAL", "--target-accuracy", "0.1", "--min-coverage", "0.1"],
    ],
)
def test_recalibrated_rows_of_a_merge_missing_a_piece_fail_closed_too(tmp_path, pieces, how):
    # a calibrator fitted on other rows maps each kept confidence anew: the rows are still
    # only part of rows.jsonl's, so every gate on them fails as without it
    merged, _ = _merge(tmp_path, "p13.cbs", pieces[1], pieces[3])
    calibrator = tmp_path / "cal.json"
    well = Path(__file__).parent.parent / "sample_data" / "well_calibrated.jsonl"
    fitted = run(["fit", well, "--method", "temperature", "-o", calibrator, "-q"])
    assert fitted.exit_code == 0, fitted.stderr
    command, *options = [calibrator if o == "CAL" else o for o in how]
    result = run([command, merged, *options, "--json", "-q"])
    assert result.exit_code == 1, result.stderr
    checks = json.loads(result.stdout)["gate"]["checks"]
    assert checks and all(c["passed"] is False for c in checks)
    assert all(c["reason"].startswith("the summary covers only part of") for c in checks)
