"""The Python API's compare of two sides read with other scoring settings (one run's
loglikelihoods as acc on BASE and acc_norm on NEW) says so in the report's warnings: the command
reads both sides one way and cannot produce such a comparison. A field of another name on each
side is only another spelling and says nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import calibcli

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SAID = "the sides' confidences were computed another way"


def warnings_of(report) -> list[str]:
    return json.loads(report.to_json())["warnings"]


def test_sides_scored_another_way_are_said(tmp_path):
    source = next((FIXTURES / "lm_eval").glob("samples_toy_mc_trivia_*.jsonl"))
    shutil.copy(source, tmp_path)
    base = calibcli.read_predictions(str(tmp_path))
    new = calibcli.read_predictions(str(tmp_path), mc_norm="chars")
    said = [w for w in warnings_of(calibcli.compare(base, new, bootstrap=200)) if SAID in w]
    assert said == [
        f"{SAID} (mc_norm='none' on BASE, 'chars' on NEW): the differences are also those of "
        "scoring the rows another way, which compare of the files never does"
    ]
    same = calibcli.compare(base, calibcli.read_predictions(str(tmp_path)), bootstrap=200)
    assert not [w for w in warnings_of(same) if SAID in w]


def test_fields_of_other_names_say_nothing(tmp_path):
    rows = [{"id": f"q{i}", "p": (i % 9 + 0.5) / 10, "correct": i % 3 == 0} for i in range(60)]
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(json.dumps(r) + "\n" for r in rows))
    renamed = [{"id": r["id"], "confidence": r["p"], "correct": r["correct"]} for r in rows]
    b.write_text("".join(json.dumps(r) + "\n" for r in renamed))
    base = calibcli.read_predictions(str(a), confidence_field="p", id_field="id")
    new = calibcli.read_predictions(str(b), id_field="id")
    report = calibcli.compare(base, new, bootstrap=200)
    assert not [w for w in warnings_of(report) if SAID in w]
