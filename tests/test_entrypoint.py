"""End-to-end runs of the installed console script (.venv/bin/calibcli) and `python -m calibcli`."""

from __future__ import annotations

import gzip
import json
import math
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from harness import read_pty

from calibcli import cli

BIN = Path(sys.executable).parent
CALIBCLI = BIN / "calibcli"
ROWS = [{"confidence": (i % 20) / 20 + 0.01, "correct": i % 3 != 0} for i in range(400)]
PPL = [{"nll": 3.0, "tokens": 2}, {"nll": 5.0, "tokens": 4}]

pytestmark = pytest.mark.skipif(not CALIBCLI.exists(), reason="calibcli is not installed in venv")


def calibcli(*args, input=None, env=None):
    full_env = {**os.environ, **(env or {})}
    full_env.pop("FORCE_COLOR", None)
    return subprocess.run(
        [str(CALIBCLI), *map(str, args)],
        input=input,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=120,
    )


@pytest.fixture
def preds(tmp_path):
    path = tmp_path / "preds.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return path


def test_version_and_python_dash_m():
    from importlib.metadata import version

    assert calibcli("--version").stdout == f"calibcli {version('calibcli')}\n"
    module = subprocess.run(
        [sys.executable, "-m", "calibcli", "--version"], capture_output=True, text=True
    )
    assert module.returncode == 0 and module.stdout == f"calibcli {version('calibcli')}\n"
    usage = subprocess.run([sys.executable, "-m", "calibcli", "nope"], capture_output=True)
    assert usage.returncode == 2
    assert usage.stderr == b"Error: No such command 'nope'. (see 'calibcli -h')\n"


def test_stdin(preds):
    result = calibcli("calibrate", "-", "--json", input=preds.read_text())
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["n"] == 400
    assert report["accuracy"] == pytest.approx(sum(r["correct"] for r in ROWS) / 400, abs=1e-15)


def test_gzip_file(tmp_path):
    path = tmp_path / "ppl.jsonl.gz"
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in PPL).encode()))
    result = calibcli("perplexity", path, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["perplexity"] == pytest.approx(math.exp(8 / 6), rel=1e-15)


def test_output_file_written_and_left_untouched_on_error(preds, tmp_path):
    out = tmp_path / "report.json"
    result = calibcli("calibrate", preds, "-o", out)
    assert result.returncode == 0
    assert "ECE" in result.stdout
    written = out.read_bytes()
    assert json.loads(written)["n"] == 400
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"confidence": 0.5, "correct": true}\n{"confidence": 2, "correct": true}\n')
    result = calibcli("calibrate", bad, "-o", out)
    assert result.returncode == 2
    assert result.stderr == f"Error: {bad}:2: " + result.stderr.split(": ", 2)[2]
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    assert out.read_bytes() == written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "preds.jsonl", "report.json"]


def test_exit_codes(preds, tmp_path):
    assert calibcli("calibrate", preds, "--max-ece", "1").returncode == 0
    failed = calibcli("calibrate", preds, "--max-ece", "0.0001")
    assert failed.returncode == 1 and failed.stderr.startswith("gate failed: ece = ")
    assert calibcli("calibrate", preds, "--bins", "0").returncode == 2
    assert calibcli("calibrate", tmp_path / "missing.jsonl").returncode == 2


def test_piped_and_no_color_output_has_no_escape_codes(preds):
    for env in ({}, {"NO_COLOR": "1"}, {"TERM": "xterm-256color"}):
        for command in ("calibrate", "reliability"):
            result = calibcli(command, preds, "--max-ece", "0.0001", env=env)
            assert "\x1b[" not in result.stdout and "\x1b[" not in result.stderr


def run_in_pty(args, env):
    """Run calibcli with stdout on a pseudo-terminal; return what it printed there."""
    leader, follower = pty.openpty()
    full_env = {**os.environ, "COLUMNS": "100", "TERM": "xterm-256color", **env}
    for name in ("FORCE_COLOR", "NO_COLOR"):
        if name not in env:
            full_env.pop(name, None)
    proc = subprocess.Popen(
        [str(CALIBCLI), *map(str, args)], stdout=follower, stderr=subprocess.DEVNULL, env=full_env
    )
    os.close(follower)
    text = read_pty(leader)
    proc.wait(timeout=120)
    return text


def test_no_color_on_a_terminal_has_no_escape_codes(preds):
    coloured = run_in_pty(["reliability", preds], {})
    assert "\x1b[" in coloured  # a terminal gets styles: the check below can fail
    plain = run_in_pty(["reliability", preds], {"NO_COLOR": "1"})
    assert "Reliability diagram" in plain and "\x1b[" not in plain


def test_main_maps_an_unexpected_exception_to_exit_3(preds, monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("simulated bug in a reader")

    monkeypatch.setattr("calibcli.io.read_calibration", broken)
    with pytest.raises(SystemExit) as exc:
        cli.main(["calibrate", str(preds)])
    assert exc.value.code == 3
    captured = capsys.readouterr()
    assert "Traceback (most recent call last)" in captured.err
    assert "ZeroDivisionError: simulated bug in a reader" in captured.err
    assert captured.out == ""


def test_main_keeps_gate_and_usage_codes_distinct_from_crashes(preds, capsys):
    for argv, code in (
        (["calibrate", str(preds), "--max-ece", "1"], 0),
        (["calibrate", str(preds), "--max-ece", "0.0001"], 1),
        (["calibrate", str(preds), "--strategy", "nope"], 2),
    ):
        with pytest.raises(SystemExit) as exc:
            cli.main(argv)
        assert (exc.value.code or 0) == code
    assert "Traceback" not in capsys.readouterr().err


def test_closed_stdout_is_not_a_failed_gate(preds):
    """`calibcli ... | head -1` under pipefail (GitHub Actions' bash default) keeps the verdict."""
    shell = f"set -o pipefail; {CALIBCLI} reliability {preds} | head -1"
    for _ in range(3):
        result = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr and "Error" not in result.stderr
    gated = f"set -o pipefail; {CALIBCLI} calibrate {preds} --max-ece 0.0001 | head -1"
    assert subprocess.run(["bash", "-c", gated], capture_output=True).returncode == 1
