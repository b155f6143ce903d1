"""Rows read from several files keep which file each came from, so the functions' reports give
each file's figures (``per_file``) and say what the commands say of the files' formats, as the
commands do: a function's ``to_json()`` is the command's ``--json`` output for those files, and
each file's figures are the ones ``calibrate`` gives for that file alone."""

from __future__ import annotations

import json
from pathlib import Path

from test_api_cli_bytes import FIXTURES, SAMPLES, _cli, _python
from test_epochs import epochs_log

OVER, WELL = SAMPLES / "overconfident.jsonl", SAMPLES / "well_calibrated.jsonl"
SCIENCE = FIXTURES / "lm_eval" / "samples_toy_mc_science_2026-11-29T18-50-52.260809.jsonl"

# each case in a fresh process as a user runs it: (function, files, reading options, options,
# files the --fit rows are read from or None)
API = """
import json, sys
import calibcli
for command, paths, reading, options, fit in json.loads(sys.argv[1]):
    rows = calibcli.read_predictions(paths, **reading)
    if fit is not None:
        options["fit"] = calibcli.read_predictions(fit, **reading)
    sys.stdout.write(json.dumps(getattr(calibcli, command)(rows, **options).to_json()) + "\\n")
"""


def _api(cases: list) -> list[str]:
    done = _python(API, json.dumps(cases))
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def _command(command: str, paths: list[str], args: list[str]) -> str:
    first, *rest = paths
    return _cli(command, Path(first), [*rest, *args])


def _one_epoch_log(tmp_path: Path) -> Path:
    """The committed inspect-ai log's samples, each once and under other ids."""
    log = json.loads(epochs_log(tmp_path, "once.json", epochs=1).read_text())
    for sample in log["samples"]:
        sample["id"] += 1000
    path = tmp_path / "other.json"
    path.write_text(json.dumps(log))
    return path


def test_two_files_give_the_commands_per_file_figures():
    paths = [str(OVER), str(WELL)]
    (got,) = _api([["calibrate", paths, {}, {}, None]])
    assert got == _command("calibrate", paths, [])
    per_file = json.loads(got)["per_file"]
    assert list(per_file) == paths
    for path in paths:
        alone = json.loads(_cli("calibrate", Path(path), []))
        for key in ("n", "accuracy", "ece", "brier", "populated_bins"):
            assert per_file[path][key] == alone[key], (path, key)
    # 2000 rows each (the sample files' own size), pooled to 4000
    assert [per_file[p]["n"] for p in paths] == [2000, 2000]
    assert json.loads(got)["n"] == 4000


def test_files_of_other_formats_with_bootstrap_intervals():
    paths = [str(SCIENCE), str(OVER)]
    ci = {"ci": 0.95, "bootstrap": 200, "seed": 1}
    args = ["--ci", "0.95", "--bootstrap", "200", "--seed", "1"]
    (got,) = _api([["calibrate", paths, {}, ci, None]])
    assert got == _command("calibrate", paths, args)
    report = json.loads(got)
    assert report["format"] == "mixed"
    assert report["per_file"][str(SCIENCE)]["n"] == 48


def test_each_log_keeps_its_own_epochs(tmp_path):
    # a run of two epochs beside one of one: each file's intervals count its own questions
    paths = [str(epochs_log(tmp_path, "twice.json")), str(_one_epoch_log(tmp_path))]
    reading = {"scorer": "match"}
    got = _api(
        [
            ["calibrate", paths, reading, {}, None],
            ["fit", paths, reading, {"method": "platt"}, None],
        ]
    )
    assert got[0] == _command("calibrate", paths, ["--scorer", "match"])
    assert got[1] == _command("fit", paths, ["--scorer", "match", "--method", "platt"])
    per_file = json.loads(got[0])["per_file"]
    assert [per_file[p]["n"] for p in paths] == [40, 20]


def test_groups_give_no_per_file():
    paths = [str(OVER), str(WELL)]
    (got,) = _api([["calibrate", paths, {"by": "subject"}, {}, None]])
    assert got == _command("calibrate", paths, ["--by", "subject"])
    assert "per_file" not in json.loads(got)


def test_a_threshold_chosen_on_rows_of_another_format_is_said(tmp_path):
    # the command warns that a threshold chosen on lm-eval rows is a cut on another kind of
    # number than the JSON Lines rows it is evaluated on; so does the function
    options = {"target_accuracy": 0.6}
    (got,) = _api([["threshold", [str(OVER)], {}, options, [str(SCIENCE)]]])
    want = _cli("threshold", OVER, ["--fit", str(SCIENCE), "--target-accuracy", "0.6"])
    assert got == want
    warnings = json.loads(got)["warnings"]
    assert any(
        "chosen on lm-eval rows (--fit) and is evaluated on jsonl rows" in w for w in warnings
    )
