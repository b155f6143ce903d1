"""A SIGTERM or Ctrl-C whose handler runs inside a callback whose exceptions Python ignores (a
weakref's, a ``__del__``: "Exception ignored in ...") still stops the command, where it can
unwind, with no traceback on stderr: the signal is sent once more. Landing there is a matter of
timing in a real run (importlib's weakref callbacks while modules load); here a ``__del__``
sends the signal itself, so it lands there every time."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

SCRIPT = """
import importlib, os, signal
app = importlib.import_module("calibcli.cli.app")  # the module, not the typer app it holds

class Late:
    def __del__(self):
        os.kill(os.getpid(), signal.{name})
        for _ in range(100_000):  # the handler runs here, in the callback
            pass

with app.sigterm_stops_commands():
    try:
        with app._interrupt_once():
            Late()
            for _ in range(10_000_000):
                pass
            print("ran to the end")
    except KeyboardInterrupt as stop:
        print(type(stop).__name__)
"""


@pytest.mark.parametrize(
    ("name", "raised"), [("SIGTERM", "_Terminated"), ("SIGINT", "KeyboardInterrupt")]
)
def test_a_signal_landing_in_a_callback_still_stops_the_command(name, raised):
    assert hasattr(signal, name)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(name=name)], capture_output=True, timeout=120
    )
    assert done.stdout.decode() == f"{raised}\n", done.stderr.decode()
    assert done.stderr == b""
