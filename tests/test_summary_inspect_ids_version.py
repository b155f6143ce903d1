"""An inspect-ai sample's id carries its log's task from summary format version 4 on; a summary
of format version 3 or before holds its inspect-ai samples' ids without it. Counted beside
another input holding inspect-ai samples (a summary written now, or the log itself) the same
sample has another id on each side, so re-runs of one task went unseen: merged as other
questions, or pooled with --all-runs as twice the questions. Such a summary is read alone as
before, and refused beside those inputs with one line naming it: summarize its files again.

The old summaries are those of the log without its ``eval.task`` (whose samples' ids are still
the ids they were), in format version 3; one test has the calibcli of the commit before ids
carried the task write one (skipped where that commit is not at hand)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from harness import calibcli_at, refused, run, write_jsonl

from calibcli.io.inspect_log import forget_runs
from calibcli.summaries.encoding import from_bytes, to_bytes

EARLIER = "cf20de0~1"  # the last commit whose inspect-ai samples' ids carry no task
LOG = Path(__file__).parent / "fixtures" / "inspect_ai" / "toy_arithmetic.json"
SAMPLES = 20  # toy_arithmetic's samples, one epoch each
SCORER = ["--scorer", "match"]
AGAIN = "summarize its files again with this calibcli"
TASKLESS = "holds ids of inspect-ai samples without their log's task"


@pytest.fixture(autouse=True)
def _fresh_reads():
    forget_runs()
    yield
    forget_runs()


def write_log(path: Path, *, shift: float = 0.0, task: bool = True) -> Path:
    """toy_arithmetic's log, each answer token's logprob lowered by ``shift`` (a re-run of its
    samples: other bytes, other confidences); without ``eval.task`` and ``eval.model`` unless
    ``task`` (its samples' ids are then the ids they were before ids carried either)."""
    log = json.loads(LOG.read_text(encoding="utf-8"))
    if not task:
        del log["eval"]["task"], log["eval"]["model"]
    log["eval"]["eval_id"] = f"rerun-{shift}"  # a re-run has an eval_id of its own
    for sample in log["samples"]:
        sample["uuid"] = f"{sample['uuid']}-{shift}"
        for token in sample["output"]["choices"][0]["logprobs"]["content"]:
            token["logprob"] -= shift
    path.write_text(json.dumps(log), encoding="utf-8")
    return path


def summarize(source: Path, out: Path, *args: str) -> Path:
    made = run(["summarize", source, *SCORER, "-o", out, "-q", *args])
    assert made.exit_code == 0, made.stderr
    return out


def as_version(path: Path, version: int) -> Path:
    """The summary at ``path`` with the format version in its prefix set to ``version``."""
    data = bytearray(path.read_bytes())
    assert data[:16] == b"CALIBCLI SUMMARY" and struct.unpack_from("<I", data, 16)[0] == 5
    struct.pack_into("<I", data, 16, version)
    path.write_bytes(bytes(data))
    return path


def old_summary(tmp_path: Path, *args: str) -> Path:
    """The summary of toy_arithmetic's log as calibcli wrote it before format version 4: its
    samples' ids without the task (the ids of a log that names none, hashed as then), in a
    file of format version 3."""
    folder = tmp_path / "old"
    folder.mkdir(exist_ok=True)
    log = write_log(folder / "toy_arithmetic.json", task=False)
    return as_version(summarize(log, tmp_path / "old.cbs", *args), 3)


def n_check(result) -> dict:
    (check,) = [c for c in json.loads(result.stdout)["gate"]["checks"] if c["metric"] == "n"]
    return check


def test_a_new_summary_of_a_rerun_is_refused_beside_a_current_summary(tmp_path):
    """The contrast: summaries written now find the re-run they share."""
    first = summarize(write_log(tmp_path / "a.json"), tmp_path / "a.cbs")
    rerun = summarize(write_log(tmp_path / "b.json", shift=0.05), tmp_path / "b.cbs")
    line = refused("merge", first, rerun, "-o", tmp_path / "m.cbs", "-q")
    assert "a row is in two of the parts (the same id)" in line


def test_an_old_summary_merged_with_a_new_one_is_refused_naming_it(tmp_path):
    old = old_summary(tmp_path)
    rerun = summarize(write_log(tmp_path / "b.json", shift=0.05), tmp_path / "b.cbs")
    out = tmp_path / "m.cbs"
    for parts in ((old, rerun), (rerun, old)):
        line = refused("merge", *parts, "-o", out, "-q")
        assert line.startswith(f"Error: {old} holds ") and TASKLESS in line and AGAIN in line
        assert not out.exists()


def test_an_old_summary_read_with_a_rerun_log_is_refused(tmp_path):
    old = old_summary(tmp_path)
    rerun = write_log(tmp_path / "b.json", shift=0.05)
    for command in ("calibrate", "summarize"):
        out = tmp_path / f"{command}.out"
        line = refused(command, old, rerun, *SCORER, "-o", out, "-q")
        assert line.startswith(f"Error: {old}: a summary file of ") and TASKLESS in line
        assert AGAIN in line and not out.exists()


def test_an_old_summary_pooled_with_all_runs_is_refused(tmp_path):
    """Pooled with --all-runs, the re-run's samples were counted as other questions: 40
    questions where there are 20, and a gate of 21 passed."""
    old = old_summary(tmp_path, "--all-runs")
    rerun = write_log(tmp_path / "b.json", shift=0.05)
    new = summarize(rerun, tmp_path / "b.cbs", "--all-runs")
    current = summarize(write_log(tmp_path / "a.json"), tmp_path / "a.cbs", "--all-runs")
    gate = ["--all-runs", "--min-rows", str(SAMPLES + 1), "--json", "-q"]
    pooled = run(["calibrate", current, new, *gate])
    assert pooled.exit_code == 1, pooled.stderr
    assert n_check(pooled)["questions"] == SAMPLES  # written now: one task's 20 questions
    for inputs in ((old, new), (old, rerun)):
        line = refused("calibrate", *inputs, *SCORER, *gate)
        assert line.startswith(f"Error: {old}") and TASKLESS in line and AGAIN in line


def test_an_old_summary_reads_alone_and_stays_old_when_written_again(tmp_path):
    old = old_summary(tmp_path)
    alone = run(["calibrate", old, "--json", "-q"])
    assert alone.exit_code == 0, alone.stderr
    assert json.loads(alone.stdout)["n"] == SAMPLES
    assert from_bytes(old.read_bytes()).row_ids.taskless
    # written again by this calibcli, its ids are still the old ones, and say so
    again = tmp_path / "again.cbs"
    assert run(["merge", old, "-o", again, "-q"]).exit_code == 0
    assert struct.unpack_from("<I", again.read_bytes(), 16)[0] == 5
    summary = from_bytes(again.read_bytes())
    assert summary.row_ids.taskless and to_bytes(summary) == again.read_bytes()
    rerun = summarize(write_log(tmp_path / "b.json", shift=0.05), tmp_path / "b.cbs")
    line = refused("merge", again, rerun, "-o", tmp_path / "m.cbs", "-q")
    assert line.startswith(f"Error: {again} holds ") and TASKLESS in line


def test_a_summary_written_again_from_the_logs_finds_the_rerun(tmp_path):
    """The remedy the message gives: the same log summarized again by this calibcli."""
    log = write_log(tmp_path / "a.json")
    summary = summarize(log, tmp_path / "a.cbs")
    assert not from_bytes(summary.read_bytes()).row_ids.taskless
    line = refused("calibrate", summary, write_log(tmp_path / "b.json", shift=0.05), *SCORER)
    assert "re-runs of a task" in line and TASKLESS not in line


def test_old_summaries_of_other_ids_still_merge(tmp_path):
    """Only inspect-ai samples' ids changed: an old summary of rows identified otherwise (here
    --id-field) merges with a new one as before, and still finds the rows they share."""
    rows = [{"id": f"q{i}", "confidence": 0.6, "correct": i % 2 == 0} for i in range(30)]
    paths = [
        write_jsonl(tmp_path / "a.jsonl", rows[:20]),
        write_jsonl(tmp_path / "b.jsonl", rows[10:]),
        write_jsonl(tmp_path / "c.jsonl", [{**r, "id": f"x{i}"} for i, r in enumerate(rows)]),
    ]
    a, b, c = (tmp_path / f"{p.stem}.cbs" for p in paths)
    for path, out in zip(paths, (a, b, c), strict=True):
        made = run(["summarize", path, "--id-field", "id", "-o", out, "-q"])
        assert made.exit_code == 0, made.stderr
    as_version(a, 3)
    merged = run(["merge", a, c, "-o", tmp_path / "m.cbs", "-q"])
    assert merged.exit_code == 0, merged.stderr
    assert from_bytes((tmp_path / "m.cbs").read_bytes()).n == 50
    line = refused("merge", a, b, "-o", tmp_path / "m2.cbs", "-q")
    assert "a row is in two of the parts (the same id)" in line


def _earlier_summary(log: Path, out: Path) -> Path | None:
    """The summary of ``log`` the calibcli of ``EARLIER`` writes (None where git, that commit
    or its calibcli is not at hand)."""
    tree = calibcli_at(EARLIER, out.parent / "earlier")
    if tree is None:
        return None
    try:
        env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
        made = subprocess.run(
            [
                sys.executable,
                "-m",
                "calibcli",
                "summarize",
                str(log),
                *SCORER,
                "-q",
                "-o",
                str(out),
            ],
            env=env,
            cwd=tree,  # python -m looks in the working directory first
            capture_output=True,
            timeout=300,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out if made.returncode == 0 else None


def test_the_summary_the_earlier_calibcli_wrote_is_refused_beside_a_new_one(tmp_path):
    log = write_log(tmp_path / "a.json")
    old = _earlier_summary(log, tmp_path / "earlier.cbs")
    if old is None:
        pytest.skip(f"the calibcli of {EARLIER} is not at hand")
    assert struct.unpack_from("<I", old.read_bytes(), 16)[0] == 3
    # its ids are those of the log without its task, as this file's other old summaries hold
    built = from_bytes(old_summary(tmp_path).read_bytes()).row_ids
    assert sorted(from_bytes(old.read_bytes()).row_ids.hashes) == sorted(built.hashes)
    rerun = summarize(write_log(tmp_path / "b.json", shift=0.05), tmp_path / "b.cbs")
    line = refused("merge", old, rerun, "-o", tmp_path / "m.cbs", "-q")
    assert line.startswith(f"Error: {old} holds ") and TASKLESS in line and AGAIN in line


def test_a_summary_of_batched_ids_stays_so_when_written_again(tmp_path):
    """A version 1 or 2 summary hashed a row's id with the ids read beside it: read alone it
    counts, beside another summary it is refused, and written again by this calibcli (a merge
    of it alone) its ids are still those, so the copy is refused alike."""
    rows = [{"id": f"q{i}", "confidence": 0.6, "correct": i % 2 == 0} for i in range(30)]
    a, b = write_jsonl(tmp_path / "a.jsonl", rows[:20]), write_jsonl(tmp_path / "b.jsonl", rows)
    for path in (a, b):
        made = run(["summarize", path, "--id-field", "id", "-o", path.with_suffix(".cbs"), "-q"])
        assert made.exit_code == 0, made.stderr
    old, other = as_version(tmp_path / "a.cbs", 2), tmp_path / "b.cbs"
    again = tmp_path / "again.cbs"
    assert run(["merge", old, "-o", again, "-q"]).exit_code == 0
    assert struct.unpack_from("<I", again.read_bytes(), 16)[0] == 5
    summary = from_bytes(again.read_bytes())
    assert summary.row_ids.batched and summary.n == 20
    for first in (old, again):
        line = refused("merge", first, other, "-o", tmp_path / "m.cbs", "-q")
        assert line.startswith(f"Error: {first} was written by an earlier calibcli"), line


def test_old_summaries_of_one_scheme_still_merge(tmp_path):
    """Two summaries an earlier calibcli wrote hash their inspect-ai ids alike (without the
    task): merged, their 20 + 20 samples of two logs with other ids count 40 rows."""
    first = old_summary(tmp_path)
    other_log = json.loads(write_log(tmp_path / "other.json", task=False).read_text())
    for sample in other_log["samples"]:
        sample["id"] = f"other-{sample['id']}"
    (tmp_path / "other.json").write_text(json.dumps(other_log))
    second = as_version(summarize(tmp_path / "other.json", tmp_path / "other.cbs"), 3)
    merged = run(["merge", first, second, "-o", tmp_path / "m.cbs", "-q"])
    assert merged.exit_code == 0, merged.stderr
    assert from_bytes((tmp_path / "m.cbs").read_bytes()).n == 2 * SAMPLES
    line = refused("merge", first, first, "-o", tmp_path / "m2.cbs", "-q")
    assert "merge each part once" in line or "given twice" in line, line
