"""compare --unpaired carries what the runs say of rows that repeat their questions, as the
paired comparison and the Python API do: lm-eval re-runs pooled with --all-runs and an
inspect-ai run's epochs are said to repeat each question, the unpaired bootstrap draws each
side's questions whole (so a gate on an interval's upper end reads it), and --min-rows counts
each question once, in calibrate's words. The command and ``calibcli.compare`` of the rows read
by ``read_predictions`` give the same report, byte for byte.

The inputs are copies of committed real runs, so the counts are known without calibcli: the
lm-eval task ``toy_mc_trivia`` has 40 documents (doc_id 0 to 39), three runs of it hold
3 x 40 = 120 rows and two runs 80, each side 40 questions; the inspect-ai log has 20 samples,
and a run of three epochs 60 rows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness import run
from test_epochs import epochs_log

ROOT = Path(__file__).resolve().parent.parent
LM_EVAL = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
STAMPS = ("2026-11-28T09-00-00.000001", "2026-11-29T08-00-00", "2026-11-29T18-50-52.260809")
SOURCE = LM_EVAL / f"samples_toy_mc_trivia_{STAMPS[-1]}.jsonl"
DOCUMENTS = 40
GATE = ["--max-increase", "brier=0.5", "--gate-on", "upper", "--ci", "0.95", "--bootstrap", "200"]
API_GATE = {"max_increase": {"brier": 0.5}, "gate_on": "upper", "ci": 0.95, "bootstrap": 200}
RERUNS = (
    "lm-eval re-runs of a task are pooled (--all-runs), so each document is answered several "
    "times: "
)
DRAWN = "the figures weigh every answer, and the bootstrap draws each question's answers together"


def runs_folder(tmp_path: Path, folder: str, runs: int) -> Path:
    """A model's run folder (``org__m``, as lm-eval v0.4.3+ names it) holding ``runs`` runs of
    one task, each the committed run's rows and results file (each run names one model)."""
    out = tmp_path / folder / "org__m"
    out.mkdir(parents=True)
    text = SOURCE.read_text()
    for stamp in STAMPS[-runs:]:
        (out / f"samples_toy_mc_trivia_{stamp}.jsonl").write_text(text)
        results = json.loads((LM_EVAL / f"results_{STAMPS[-1]}.json").read_text())
        results["date"] = stamp  # each run's own (files of the same bytes are refused)
        (out / f"results_{stamp}.json").write_text(json.dumps(results, indent=2))
    return out


def report(args: list, code: int) -> dict:
    result = run(["compare", *args, "--unpaired", "--json", "-q"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout)


def checks(body: dict) -> dict:
    return {check["metric"]: check for check in body["gate"]["checks"]}


def test_pooled_re_runs_are_said_to_repeat_and_gated_on_the_interval_by_question(tmp_path):
    base, new = runs_folder(tmp_path, "base", 3), runs_folder(tmp_path, "new", 2)
    body = report([base, new, "--all-runs", *GATE], 0)
    assert (body["n_base"], body["n_new"]) == (3 * DOCUMENTS, 2 * DOCUMENTS)
    names = [f"samples_toy_mc_trivia_{stamp}.jsonl" for stamp in STAMPS]
    assert f"{RERUNS}{', '.join(f'{n} (3 runs)' for n in names)}: {DRAWN}" in body["warnings"]
    said = ", ".join(f"{n} (2 runs)" for n in names[1:])
    assert f"{RERUNS}{said}: {DRAWN}" in body["warnings"]
    brier = checks(body)["brier_increase"]
    assert brier["passed"] and "reason" not in brier
    # the estimate is gated as before: the sides hold the same answers, so it is 0
    estimate = ["--max-increase", "brier=0.5", "--gate-on", "estimate"]
    kept = report([base, new, "--all-runs", *estimate], 0)
    assert checks(kept)["brier_increase"]["value"] == 0.0


def test_min_rows_counts_the_documents_of_pooled_re_runs(tmp_path):
    base, new = runs_folder(tmp_path, "base", 3), runs_folder(tmp_path, "new", 2)
    body = report([base, new, "--all-runs", "--min-rows", str(DOCUMENTS + 1)], 1)
    rows = checks(body)["rows"]
    assert rows["value"] == 2 * DOCUMENTS  # the smaller side's rows, as before
    assert rows["reason"] == (
        "the 80 rows repeat their questions (see the warning) and hold 40, fewer than 41; each "
        "question counts once"
    )
    assert report([base, new, "--all-runs", "--min-rows", str(DOCUMENTS)], 0)["gate"]["passed"]


def test_the_newest_run_alone_repeats_nothing(tmp_path):
    # without --all-runs each side reads its task's newest run: 40 rows, 40 questions
    base, new = runs_folder(tmp_path, "base", 3), runs_folder(tmp_path, "new", 2)
    body = report([base, new, "--min-rows", "40", *GATE], 0)
    assert (body["n_base"], body["n_new"]) == (DOCUMENTS, DOCUMENTS)
    assert not any(w.startswith(RERUNS) for w in body["warnings"])


def test_min_rows_counts_the_samples_of_an_inspect_run_s_epochs(tmp_path):
    base = epochs_log(tmp_path, "base.json", epochs=3)
    new = epochs_log(tmp_path, "new.json", flip=(1, 2), epochs=3)
    body = report([base, new, "--scorer", "match", "--min-rows", "21"], 1)
    assert (body["n_base"], body["n_new"]) == (60, 60)
    assert checks(body)["rows"]["reason"] == (
        "the 60 rows repeat their questions (see the warning) and hold 20, fewer than 21; each "
        "question counts once"
    )
    assert report([base, new, "--scorer", "match", "--min-rows", "20"], 0)["gate"]["passed"]


# the API's report, in a fresh process as a notebook makes it (see test_api_cli_bytes.py)
API = """
import json, sys
import calibcli
base, new, reading, options = json.loads(sys.argv[1])
rows = [calibcli.read_predictions(side, **reading) for side in (base, new)]
sys.stdout.write(json.dumps(calibcli.compare(*rows, unpaired=True, **options).to_json()) + "\\n")
"""


def _fresh(args: list) -> subprocess.CompletedProcess:
    from test_api_cli_bytes import _user_env

    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=_user_env(), cwd=ROOT
    )


def test_the_command_and_the_function_give_the_same_report(tmp_path):
    lm = runs_folder(tmp_path, "base", 3), runs_folder(tmp_path, "new", 2)
    logs = epochs_log(tmp_path, "a.json", epochs=3), epochs_log(tmp_path, "b.json", epochs=3)
    # 40 questions of 3 epochs, the NEW side's samples in another order than BASE's
    more = epochs_log(tmp_path, "c.json", epochs=3, copies=2)
    log = json.loads(epochs_log(tmp_path, "d.json", flip=(1, 2), epochs=3, copies=2).read_text())
    log["samples"] = log["samples"][::-1]
    (tmp_path / "d.json").write_text(json.dumps(log))
    match = {"scorer": "match"}
    cases = [
        (lm, {"all_runs": True}, {"min_rows": 41}, ["--all-runs", "--min-rows", "41"], 1),
        (lm, {"all_runs": True}, API_GATE, ["--all-runs", *GATE], 0),
        (logs, match, {"min_rows": 21}, ["--scorer", "match", "--min-rows", "21"], 1),
        (logs, match, API_GATE, ["--scorer", "match", *GATE], 1),  # 20 questions
        ((more, tmp_path / "d.json"), match, API_GATE, ["--scorer", "match", *GATE], 0),
    ]
    for (base, new), reading, options, args, code in cases:
        given = json.dumps([str(base), str(new), reading, options])
        api = _fresh(["-c", API, given])
        assert api.returncode == 0, api.stderr
        command = [*("-m", "calibcli", "compare", base, new, "--unpaired", "--json", "-q")]
        cli = _fresh([*map(str, command), *args])
        assert cli.returncode == code, cli.stderr
        assert json.loads(api.stdout) == cli.stdout, args
        assert json.loads(cli.stdout)["gate"]["passed"] is (code == 0)
