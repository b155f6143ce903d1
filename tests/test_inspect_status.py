"""An inspect-ai log whose run did not succeed (status "error", "cancelled", or "started" for a
run still going or stopped) is read as before, with one warning naming the file, the status and
the counts the log carries of what the run planned: on stderr, and in the JSON report's
warnings. The logs are the fixture's samples under a top level written here, as a ``.json`` log
and as an ``.eval`` zip (``header.json``, or only ``_journal/start.json`` for a running log)."""

from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path

import pytest
from harness import run

from calibcli.io.inspect_log import status_note

FIXTURE = Path(__file__).parent / "fixtures" / "inspect_ai" / "toy_arithmetic.json"
HELD = 7  # the samples a partial log holds, of the fixture's 20
CALIBRATE = ("calibrate", "--scorer", "match", "--json")


def log(status: str | None, *, held: int = HELD, **top) -> dict:
    """The fixture log holding its first ``held`` samples, with ``status`` (None: no status)
    and the top-level fields ``top`` (a field given None is removed)."""
    value = json.loads(FIXTURE.read_text(encoding="utf-8"))
    value["samples"] = value["samples"][:held]
    value["status"] = status
    value.update(top)
    return {k: v for k, v in value.items() if v is not None}


def write(tmp_path: Path, name: str, value: dict, *, header: bool = True) -> Path:
    """``value`` as a ``.json`` log, or for a name ending ``.eval`` as a zip: ``header.json``
    (the top level without samples) or, with ``header=False``, the journal's start of a run
    still going (``version``, ``eval``, ``plan``), and one member per sample."""
    path = tmp_path / name
    if path.suffix == ".json":
        path.write_text(json.dumps(value, indent=2), encoding="utf-8")
        return path
    top = {k: v for k, v in value.items() if k != "samples"}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        if header:
            z.writestr("header.json", json.dumps(top))
        else:
            start = {k: top[k] for k in ("version", "eval", "plan")}
            z.writestr("_journal/start.json", json.dumps(start))
        for sample in value["samples"]:
            z.writestr(f"samples/{sample['id']}_epoch_{sample['epoch']}.json", json.dumps(sample))
    return path


def calibrate(path: Path):
    """``calibcli calibrate --json`` of one log: the result, its report, and the warnings on
    stderr about the log's run."""
    result = run([*CALIBRATE, path])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    lines = result.stderr.splitlines()
    return result, body, [w for w in lines if w.startswith("warning:") and "inspect-ai" in w]


def figures(body: dict) -> dict:
    """The report without its warnings."""
    return {k: v for k, v in body.items() if k != "warnings"}


ERROR = {"message": "RuntimeError: the server closed the connection\nretry later", "traceback": ""}
PLANNED = "its 7 samples may be a part of those it planned (a dataset of 20 samples)"
STATUSES = [
    (
        "error",
        {"error": ERROR},
        "the inspect-ai run ended with status 'error' (RuntimeError: the server closed the "
        "connection)",
    ),
    ("cancelled", {}, "the inspect-ai run ended with status 'cancelled'"),
    (
        "started",
        {},
        "the inspect-ai log has status 'started' (its run was still going, or was stopped)",
    ),
]


@pytest.mark.parametrize("name", ["run.json", "run.eval"])
@pytest.mark.parametrize(("status", "top", "said"), STATUSES, ids=[s[0] for s in STATUSES])
def test_a_run_that_did_not_succeed_is_read_as_before_with_one_warning(
    tmp_path, name, status, top, said
):
    path = write(tmp_path, name, log(status, results=None, **top))  # a failed run: no results
    result, body, lines = calibrate(path)
    _, success, quiet = calibrate(write(tmp_path, f"ok{path.suffix}", log("success")))
    assert figures(body) == figures(success)
    assert body["n"] == HELD
    assert quiet == []
    warning = f"{path}: {said}: {PLANNED}"
    assert lines == [f"warning: {warning}"]
    assert [w for w in body["warnings"] if w not in success["warnings"]] == [warning]
    assert result.stdout.count("\n") == 1  # the report alone, as one JSON line


@pytest.mark.parametrize("name", ["run.json", "run.eval"])
def test_only_a_run_that_did_not_succeed_is_warned_about(tmp_path, name):
    suffix = Path(name).suffix
    # whole logs: a successful run's log holding 7 of its 20 samples is said to be cut short
    success = calibrate(write(tmp_path, f"ok{suffix}", log("success", held=20)))
    unsaid = calibrate(write(tmp_path, f"none{suffix}", log(None, held=20)))
    failed = calibrate(write(tmp_path, f"failed{suffix}", log("error", error=ERROR)))
    assert success[2] == unsaid[2] == []
    assert success[1]["warnings"] == unsaid[1]["warnings"]
    assert len(failed[2]) == 1 and f"failed{suffix}: the inspect-ai run ended" in failed[2][0]


def test_a_log_pooled_with_a_rerun_is_warned_about_once_each(tmp_path):
    path = write(tmp_path, "run.eval", log("cancelled", results=None))
    rerun = log("cancelled", results=None)
    rerun["eval"] = {**rerun["eval"], "eval_id": "again"}  # a re-run has an eval_id of its own
    again = write(tmp_path, "again.eval", rerun)
    result = run([*CALIBRATE, path, again, "--all-runs"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 2 * HELD
    said = [w for w in result.stderr.splitlines() if w.startswith("warning:") and "inspect" in w]
    assert said == [
        f"warning: {name}: the inspect-ai run ended with status 'cancelled': {PLANNED}"
        for name in (path, again)
    ]


def test_a_running_eval_log_without_a_header_is_started(tmp_path):
    path = write(tmp_path, "running.eval", log("started", results=None), header=False)
    _, body, lines = calibrate(path)
    assert lines == [
        f"warning: {path}: the inspect-ai log has status 'started' (its run was still going, or "
        "was stopped): its 7 samples may be a part of those it planned (a dataset of 20 samples)"
    ]
    assert body["n"] == HELD


def test_a_log_that_msgspec_does_not_read_is_warned_about_too(tmp_path):
    """A log holding NaN is read by json.loads of the whole text: the same warning."""
    value = log("cancelled", results=None, metadata={"temperature": math.nan})
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")
    assert "NaN" in path.read_text(encoding="utf-8")
    _, body, lines = calibrate(path)
    assert lines == [
        f"warning: {path}: the inspect-ai run ended with status 'cancelled': its 7 samples may "
        "be a part of those it planned (a dataset of 20 samples)"
    ]
    assert body["n"] == HELD


def test_the_warning_travels_in_a_summary_file(tmp_path):
    path = write(tmp_path, "run.json", log("error", error=ERROR, results=None))
    part = tmp_path / "run.summary"
    made = run(["summarize", path, "--scorer", "match", "-o", part])
    assert made.exit_code == 0, made.stderr
    result = run(["calibrate", part, "--json"])
    assert result.exit_code == 0, result.stderr
    said = [w for w in json.loads(result.stdout)["warnings"] if "inspect-ai" in w]
    assert len(said) == 1 and said[0].startswith(f"{path}: the inspect-ai run ended with status")


def test_an_engine_task_carries_the_warning(tmp_path):
    pytest.importorskip("pyarrow")
    from calibcli.engines import file_jobs, file_task, finish, merge_all

    path = write(tmp_path, "run.eval", log("cancelled", results=None))
    jobs = file_jobs([str(path)], "calibration", None, scorer="match")
    report = finish(merge_all([file_task(job) for job in jobs])).report()
    said = [w for w in report["warnings"] if "inspect-ai" in w]
    assert len(said) == 1 and said[0].startswith(f"{path}: the inspect-ai run ended with status")


# --------------------------------------------------------------------------- the note's counts

SPEC = {"dataset": {"samples": 100}, "config": {"epochs": 1}}


@pytest.mark.parametrize(
    ("top", "said"),
    [
        (
            {"results": {"total_samples": 200, "completed_samples": 37}},
            "its 37 samples may be a part of the 200 it planned",
        ),
        ({"results": {"total_samples": 37}}, "it holds all 37 samples the run planned"),
        ({}, "its 37 samples may be a part of those it planned (a dataset of 100 samples)"),
        (
            {"eval": {"dataset": {"samples": 100}, "config": {"limit": 50, "epochs": 2}}},
            "its 37 samples may be a part of those it planned (a dataset of 100 samples, "
            "limit 50, 2 epochs)",
        ),
        (
            {"eval": {"dataset": {}, "config": {"limit": [10, 60]}}},
            "its 37 samples may be a part of those it planned (limit 10,60)",
        ),
        ({"eval": {}}, "its 37 samples may be a part of those it planned"),
        ({"results": None, "eval": None}, "its 37 samples may be a part of those it planned"),
    ],
    ids=["total", "all", "dataset", "limit", "range", "no-counts", "null"],
)
def test_the_note_states_the_counts_the_log_carries(top, said):
    note = status_note({"status": "cancelled", "eval": SPEC, **top}, 37)
    assert note == f"the inspect-ai run ended with status 'cancelled': {said}"


def test_the_note_quotes_the_first_line_of_the_error_shortened():
    message = "ValueError: " + "x" * 200 + "\nTraceback follows"
    note = status_note({"status": "error", "error": {"message": message}}, 1)
    quoted = note.split("(", 1)[1].split(")", 1)[0]
    assert quoted.startswith("ValueError: xxx") and quoted.endswith("...")
    assert len(quoted) == 100 and "Traceback" not in note
    assert note.endswith(": its 1 sample may be a part of those it planned")
    assert status_note({"status": "error", "error": None}, 2) == (
        "the inspect-ai run ended with status 'error': its 2 samples may be a part of those it "
        "planned"
    )
    assert status_note({"status": "success"}, 2) is None
    assert status_note({}, 2) is None


@pytest.mark.parametrize("name", ["run.json", "run.eval"])
def test_compare_names_a_side_whose_run_did_not_succeed(tmp_path, name):
    """compare reads its sides by id on a reader of its own: a log of a failed run on either
    side is named once, as calibrate names it, and the comparison is otherwise the same."""
    suffix = Path(name).suffix
    failed = write(tmp_path, name, log("cancelled", results=None))
    whole = log("success")  # a successful run of the 7 samples it holds: no warning of its own
    whole["eval"]["dataset"].update(samples=HELD, sample_ids=list(range(1, HELD + 1)))
    whole["results"]["completed_samples"] = HELD
    ok = write(tmp_path, f"ok{suffix}", whole)
    args = ["compare", "--scorer", "match", "--json", "--bootstrap", "200", "-q"]
    said = f"{failed}: the inspect-ai run ended with status 'cancelled': {PLANNED}"
    clean = run([*args, ok, ok])
    assert clean.exit_code == 0, clean.stderr
    for sides in ([failed, ok], [ok, failed], [failed, failed]):
        result = run([*args, *sides])
        assert result.exit_code == 0, result.stderr
        body = json.loads(result.stdout)
        assert body["warnings"][0] == said
        assert body["warnings"][1:] == json.loads(clean.stdout)["warnings"]
        assert body["figures"] == json.loads(clean.stdout)["figures"]
        assert result.stderr.count("inspect-ai run ended") == 1
