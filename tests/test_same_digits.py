"""Every figure has the same digits on every x86-64 CPU: on a CPU with AVX-512, numpy's own
exp, log and log1p loops differ in the last bit from the C library's (which numpy uses on the
others), so the command line loads numpy without them. The reference is Python's math module,
which calls the C library."""

from __future__ import annotations

import os
import subprocess
import sys

CHECK = """
import math, sys
from calibcli.system import same_digits_on_every_cpu
same_digits_on_every_cpu()
import numpy as np
x = np.random.default_rng(0).random(200_000)
for f, g in ((np.log, math.log), (np.exp, math.exp), (np.log1p, math.log1p)):
    got, want = f(x).tolist(), list(map(g, x.tolist()))
    assert got == want, (f.__name__, sum(a != b for a, b in zip(got, want)))
print("same")
"""


def _run(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )


def test_numpy_loaded_as_the_command_line_loads_it_rounds_as_the_c_library():
    env = {k: v for k, v in os.environ.items() if k != "NPY_DISABLE_CPU_FEATURES"}
    result = _run(CHECK, env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "same"
    assert result.stderr == ""  # no warning about the names this numpy does not know


def test_a_setting_of_the_users_is_kept():
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": ""}
    code = (
        "import os\nfrom calibcli.system import same_digits_on_every_cpu\n"
        "same_digits_on_every_cpu()\nprint(repr(os.environ['NPY_DISABLE_CPU_FEATURES']))"
    )
    result = _run(code, env)
    assert result.stdout.strip() == "''", result.stderr


def test_this_process_loaded_numpy_so():
    """conftest loads numpy as the command line does: the figures computed in the tests have
    the digits the commands print."""
    import math

    import numpy as np

    x = np.random.default_rng(1).random(50_000)
    assert np.log(x).tolist() == list(map(math.log, x.tolist()))
    assert np.log1p(-x).tolist() == [math.log1p(-v) for v in x.tolist()]
