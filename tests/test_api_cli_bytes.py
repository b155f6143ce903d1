"""A function's ``to_json()`` is its command's ``--json`` output byte for byte, in a process
started as a user starts one: numpy loads after ``import calibcli``, with nothing set in the
environment. The command line loads numpy without its AVX-512 exp and log loops (and OpenBLAS
with its AVX2 kernels), whose results differ from the C library's in the last bit; the
functions did not, so on a CPU with AVX-512 smece (a Gaussian kernel) differed in its last
digit. conftest.py sets those variables for the test process, so both sides run in fresh
processes here without them. On a CPU without AVX-512 every case holds before and after."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_data"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
LM_EVAL = FIXTURES / "lm_eval"
SCIENCE = LM_EVAL / "samples_toy_mc_science_2026-11-29T18-50-52.260809.jsonl"
TOY_MC = FIXTURES / "openai_evals" / "toy-mc.jsonl"
CI = {"ci": 0.95, "bootstrap": 200, "seed": 1}
CI_ARGS = ["--ci", "0.95", "--bootstrap", "200", "--seed", "1"]


def _user_env() -> dict[str, str]:
    """The environment of a user's shell: without the variables conftest.py set."""
    dropped = ("NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE")
    return {k: v for k, v in os.environ.items() if k not in dropped}


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=_user_env(),
        cwd=ROOT,
        timeout=600,
    )


# every case in one process, as a notebook runs them: import calibcli, then the functions
API = """
import json, sys
import calibcli
for command, path, reading, options in json.loads(sys.argv[1]):
    rows = calibcli.read_predictions(path, **reading)
    sys.stdout.write(json.dumps(getattr(calibcli, command)(rows, **options).to_json()) + "\\n")
"""


def _ties(tmp_path: Path) -> Path:
    """400 rows on five confidences, each held by right and wrong answers alike."""
    path = tmp_path / "ties.jsonl"
    values = (0.3, 0.55, 0.7, 0.85, 0.95)
    with path.open("w", encoding="utf-8") as f:
        for i in range(400):
            c = values[i % 5]
            correct = (i * 7919) % 100 < c * 100
            f.write(json.dumps({"confidence": c, "correct": correct}) + "\n")
    return path


def _cases(tmp_path: Path) -> list[tuple[str, Path, dict, dict, list[str]]]:
    """(function, file, reading options, options, the command's arguments)"""
    over, well = SAMPLES / "overconfident.jsonl", SAMPLES / "well_calibrated.jsonl"
    by_subject, by_task = {"by": "subject"}, {"by": "task"}
    return [
        ("calibrate", over, {}, {}, []),
        ("calibrate", over, by_subject, {}, ["--by", "subject"]),
        ("calibrate", over, by_subject, CI, ["--by", "subject", *CI_ARGS]),
        ("calibrate", SAMPLES / "underconfident.jsonl", {}, CI, CI_ARGS),
        (
            "calibrate",
            well,
            by_subject,
            {"gate_each": True, "max_smece": 0.05},
            ["--by", "subject", "--gate-each", "--max-smece", "0.05"],
        ),
        ("calibrate", LM_EVAL, by_task, {}, ["--by", "task"]),
        ("calibrate", LM_EVAL, by_task, CI, ["--by", "task", *CI_ARGS]),
        ("calibrate", SCIENCE, {}, {}, []),
        ("calibrate", TOY_MC, {}, {}, []),
        ("calibrate", TOY_MC, {}, CI, CI_ARGS),
        ("calibrate", _ties(tmp_path), {}, {}, []),
        ("calibrate", _ties(tmp_path), {}, CI, CI_ARGS),
        ("threshold", over, {}, {"target_accuracy": 0.8}, ["--target-accuracy", "0.8"]),
        ("fit", over, by_subject, {"method": "platt"}, ["--by", "subject", "--method", "platt"]),
        ("fit", well, {}, {"method": "beta"}, ["--method", "beta"]),
    ]


def _api(cases: list) -> list[str]:
    given = [[command, str(path), reading, options] for command, path, reading, options, _ in cases]
    done = _python(API, json.dumps(given))
    assert done.returncode == 0, done.stderr
    assert "RuntimeWarning" not in done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def _cli(command: str, path: Path, args: list[str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "calibcli", command, str(path), "--json", "-q", *args],
        capture_output=True,
        text=True,
        env=_user_env(),
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def test_the_functions_print_the_commands_json_byte_for_byte(tmp_path):
    cases = _cases(tmp_path)
    got = _api(cases)
    differ = []
    for (command, path, _, _, args), text in zip(cases, got, strict=True):
        want = _cli(command, path, args)
        if text != want:
            a, b = json.loads(text), json.loads(want)
            keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            differ.append(f"{command} {path.name} {' '.join(args)}: {keys}")
    assert not differ, "\n".join(differ)


def test_the_smooth_ece_of_a_sample_file_has_the_commands_last_digit():
    # the function's smece of overconfident.jsonl's history rows is the command's, to the bit
    code = (
        "import calibcli\n"
        "rows = calibcli.read_predictions('sample_data/overconfident.jsonl', by='subject')\n"
        "print(calibcli.calibrate(rows)['groups']['history']['smece'].hex())\n"
    )
    api = _python(code)
    assert api.returncode == 0, api.stderr
    cli = json.loads(_cli("calibrate", SAMPLES / "overconfident.jsonl", ["--by", "subject"]))
    assert api.stdout.strip() == cli["groups"]["history"]["smece"].hex()


def _has_avx512() -> bool:
    try:
        return b" avx512f" in Path("/proc/cpuinfo").read_bytes()
    except OSError:
        return False


@pytest.mark.skipif(not _has_avx512(), reason="numpy has no AVX-512 loops on this CPU")
def test_numpy_loaded_before_calibcli_is_said_once():
    code = (
        "import numpy\nimport calibcli\n"
        "calibcli.calibrate([0.2, 0.9], [0, 1])\ncalibcli.calibrate([0.2, 0.9], [0, 1])\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("RuntimeWarning: numpy was loaded before calibcli") == 1


def test_numpy_loaded_after_calibcli_is_not_warned_of():
    code = "import calibcli\nimport numpy\ncalibcli.calibrate([0.2, 0.9], [0, 1])\n"
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_a_folder_without_by_byte_for_byte():
    got = _api([("calibrate", LM_EVAL, {}, {}, [])])[0]
    assert got == _cli("calibrate", LM_EVAL, [])
