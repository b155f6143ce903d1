"""``summarize --kind auto`` tells the kind of rows by the first row of the first file that holds
one, folders and patterns standing for their files: a folder of perplexity shards (or a
perplexity file after an empty shard) was summarized as calibration rows and refused with
"missing field confidence", which named the wrong thing."""

from __future__ import annotations

import pytest
from harness import run, write_jsonl

SEQUENCES = [{"nll": 2.0 + i / 4, "tokens": 3 + i} for i in range(6)]


@pytest.fixture
def shards(tmp_path):
    folder = tmp_path / "shards"
    folder.mkdir()
    (folder / "00.jsonl").write_text("", encoding="utf-8")  # a job that wrote nothing
    (folder / "01.jsonl").write_text("\n\n", encoding="utf-8")  # blank lines only
    write_jsonl(folder / "02.jsonl", SEQUENCES[:3])
    write_jsonl(folder / "03.jsonl", SEQUENCES[3:])
    return folder


@pytest.mark.parametrize("given", ["folder", "files", "pattern"])
def test_perplexity_shards_after_empty_ones_are_summarized_as_perplexity(tmp_path, shards, given):
    inputs = {
        "folder": [shards],
        "files": sorted(shards.iterdir()),
        "pattern": [f"{shards}/*.jsonl"],
    }[given]
    out = tmp_path / "s.cbs"
    result = run(["summarize", *inputs, "-o", out])
    assert result.exit_code == 0, result.stderr
    assert "6 perplexity rows" in result.stderr
    measured = run(["perplexity", out, "--json", "-q"])
    assert measured.exit_code == 0, measured.stderr
    assert '"sequences": 6' in measured.stdout


def test_calibration_rows_after_an_empty_file_stay_calibration(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "00.jsonl").write_text("", encoding="utf-8")
    write_jsonl(folder / "01.jsonl", [{"confidence": 0.7, "correct": True}] * 4)
    result = run(["summarize", folder, "-o", tmp_path / "c.cbs"])
    assert result.exit_code == 0, result.stderr
    assert "4 calibration rows" in result.stderr


def test_an_inspect_log_without_scores_is_one_line_not_a_traceback(tmp_path):
    """Telling the kind looks at the first sample's scores: a log whose samples hold none is
    left to the reading, which names what is missing."""
    import json
    from pathlib import Path

    fixture = Path(__file__).parent / "fixtures" / "inspect_ai_schema" / "toy_perplexity.json"
    log = json.loads(fixture.read_text(encoding="utf-8"))
    for sample in log["samples"]:
        sample.pop("scores", None)
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log), encoding="utf-8")
    result = run(["summarize", path, "-o", tmp_path / "s.cbs"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1].startswith(f"Error: {path}:samples[0]")
