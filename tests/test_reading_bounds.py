"""Reading options that bound the input, given on the command line, and the sources a first
reading skipped staying skipped when the rows are read again."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from harness import run

LM_EVAL = Path(__file__).resolve().parent / "fixtures" / "lm_eval"


def test_max_document_mb_bounds_a_gzipped_document(tmp_path):
    rows = [{"confidence": 0.5, "correct": True, "pad": "x" * 1000}] * 1500
    path = tmp_path / "rows.json.gz"
    path.write_bytes(gzip.compress(json.dumps(rows).encode()))
    refused = run(["calibrate", path, "--max-document-mb", "1", "-q"])
    assert refused.exit_code == 2
    assert "decompresses to more than 1 MiB" in refused.stderr
    assert run(["calibrate", path, "--max-document-mb", "2", "-q"]).exit_code == 0
    assert run(["perplexity", path, "--max-document-mb", "1"]).exit_code == 2


def test_temperature_over_a_run_folder_skips_its_results_file(tmp_path):
    files = sorted(str(p) for p in LM_EVAL.glob("*_toy_mc_*.jsonl"))
    files += [str(p) for p in LM_EVAL.glob("results_*.json")]
    fitted = run(["fit", *files, "--method", "temperature", "-o", tmp_path / "t.json", "-q"])
    assert fitted.exit_code == 0, fitted.stderr
    assert json.loads((tmp_path / "t.json").read_text())["method"] == "multiclass_temperature"
    crossed = run(["calibrate", *files, "--recalibrate", "temperature", "--folds", "4", "-q"])
    assert crossed.exit_code == 0, crossed.stderr
