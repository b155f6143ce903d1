"""Shell completion: typer's --show-completion and --install-completion, and the completions
the installed command gives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run(args, env):
    done = subprocess.run([str(a) for a in args], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done


def test_shell_completion(tmp_path):
    calibcli = Path(sys.executable).parent / "calibcli"
    env = {"HOME": str(tmp_path), "SHELL": "/bin/bash", "PATH": "/usr/bin:/bin"}
    shown = run([calibcli, "--show-completion", "bash"], env=env).stdout
    assert "complete -o default -F _calibcli_completion calibcli" in shown
    run([calibcli, "--install-completion", "bash"], env=env)
    assert (tmp_path / ".bash_completions" / "calibcli.sh").read_text().strip() == shown.strip()
    assert "calibcli.sh" in (tmp_path / ".bashrc").read_text()
    words = {"_CALIBCLI_COMPLETE": "complete_bash", "COMP_CWORD": "1"}
    done = run([calibcli], env={**env, **words, "COMP_WORDS": "calibcli cal"})
    assert done.stdout.split() == ["calibrate"]
    words["COMP_CWORD"] = "2"
    done = run([calibcli], env={**env, **words, "COMP_WORDS": "calibcli calibrate --max-e"})
    assert done.stdout.split() == ["--max-ece"]
