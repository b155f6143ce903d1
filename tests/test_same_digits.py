"""Every figure has the same digits on every x86-64 CPU: on a CPU with AVX-512, numpy's own
exp, log and log1p loops differ in the last bit from the C library's (which numpy uses on the
others), and OpenBLAS's AVX-512 kernels sum a product's terms in another order than its AVX2
kernels, so the command line loads numpy without the first and OpenBLAS with the AVX2 kernels.
The references are Python's math module, which calls the C library, and OpenBLAS asked for its
AVX2 (Haswell) kernels by name, which is what it runs on an AVX2 CPU without AVX-512 (its Zen
kernels give the same bits)."""

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


# the Gram matrix and the gradient of a Newton step of a Platt or beta fit, on rows enough for
# OpenBLAS's blocking to matter
PRODUCTS = """
import sys
from calibcli.system import same_digits_on_every_cpu
same_digits_on_every_cpu()
import numpy as np
rng = np.random.default_rng(2)
x = np.ones((300_001, 3))
x[:, :2] = rng.standard_t(3.0, (300_001, 2))
w = x * rng.random(300_001)[:, None]
r = rng.random(300_001) - 0.5
sys.stdout.write((w.T @ x).tobytes().hex() + " " + (x.T @ r).tobytes().hex())
"""


def _without(*names: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in names}


def test_openblas_sums_products_as_its_avx2_kernels_do():
    env = {**_without("OPENBLAS_CORETYPE"), "OPENBLAS_NUM_THREADS": "1"}
    got = _run(PRODUCTS, env)
    want = _run(PRODUCTS, {**env, "OPENBLAS_CORETYPE": "Haswell"})
    assert got.returncode == want.returncode == 0, got.stderr + want.stderr
    assert got.stderr == ""
    assert got.stdout == want.stdout


def test_a_setting_of_the_users_is_kept():
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": "", "OPENBLAS_CORETYPE": "Sandybridge"}
    code = (
        "import os\nfrom calibcli.system import same_digits_on_every_cpu\n"
        "same_digits_on_every_cpu()\n"
        "print(repr(os.environ['NPY_DISABLE_CPU_FEATURES']), os.environ['OPENBLAS_CORETYPE'])"
    )
    result = _run(code, env)
    assert result.stdout.strip() == "'' Sandybridge", result.stderr


def test_this_process_loaded_numpy_so():
    """conftest loads numpy as the command line does: the figures computed in the tests have
    the digits the commands print."""
    import math

    import numpy as np

    x = np.random.default_rng(1).random(50_000)
    assert np.log(x).tolist() == list(map(math.log, x.tolist()))
    assert np.log1p(-x).tolist() == [math.log1p(-v) for v in x.tolist()]
