"""A run of one command imports only that command's module; help, completion and the package's
``app`` still see every command, in the same order."""

from __future__ import annotations

import subprocess
import sys

from calibcli import cli


def run_python(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout


def test_every_registered_command_is_listed_under_its_module():
    listed = {
        command: module for module, commands in cli.COMMAND_MODULES.items() for command in commands
    }
    registered = {
        info.name or info.callback.__name__: info.callback.__module__.rsplit(".", 1)[1]
        for info in cli.app.registered_commands
    }
    assert registered == listed


def test_one_command_run_imports_only_its_module():
    out = run_python(
        "import sys\n"
        "from calibcli.cli import main\n"
        "try:\n    main(['perplexity', '-h'])\nexcept SystemExit:\n    pass\n"
        "commands = [m for m in sys.modules if m.startswith('calibcli.cli.commands.')]\n"
        "print('MODULES', *sorted(commands))"
    )
    modules = out.rsplit("MODULES", 1)[1].split()
    assert modules == ["calibcli.cli.commands.perplexity"]


def test_help_after_one_command_lists_every_command_in_order():
    before = run_python(
        "from calibcli.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
    )
    after = run_python(
        "from calibcli.cli import main\n"
        "for args in (['threshold', '-h'], ['--help']):\n"
        "    print('RUN')\n"
        "    try:\n        main(args)\n    except SystemExit:\n        pass\n"
    )
    assert after.rsplit("RUN\n", 1)[1] == before
    for command in ("perplexity", "calibrate", "threshold", "summarize", "render"):
        assert f"  {command} " in before


def test_command_help_is_the_same_with_every_command_loaded():
    code = (
        "from calibcli import cli\n"
        "{load}"
        "try:\n    cli.main(['calibrate', '-h'])\nexcept SystemExit:\n    pass\n"
    )
    alone = run_python(code.format(load=""))
    loaded = run_python(code.format(load="assert len(cli.app.registered_commands) == 10\n"))
    assert alone.startswith("Usage: calibcli calibrate [OPTIONS]")
    assert alone == loaded
