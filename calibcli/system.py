"""The machine calibcli runs on: the CPUs this process may use, how many worker processes a
job gets, and the same digits on every CPU. Below every stage, like :mod:`calibcli.errors`; it
reads no environment variable of calibcli's (``CALIBCLI_WORKERS`` is the command line's).

One rule for every command: a job gets what was asked (``--workers N``), never more processes
than CPUs; left to itself (``None``) it gets two processes on a machine with two CPUs or more
once the work is large enough to pay for them (reading: an input of 32 MB or more; the
bootstrap: 20 million resampled rows or more), else one. No figure depends on the count.
"""

from __future__ import annotations

import os

PARALLEL_MIN_BYTES = 32 << 20
"""Reading: inputs of at least this many (decompressed) bytes get a worker by default."""
BOOTSTRAP_MIN_WORK = 20_000_000
"""The bootstrap: rows times resamples from which a second process pays off by default."""
DEFAULT_PROCESSES = 2
"""Processes a large job gets by default (capped by the CPUs)."""


def cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def workers(requested: int | None, large: bool, available: int | None = None) -> int:
    """Processes for a job: ``requested`` capped at the CPUs, or by default two for a
    ``large`` job on a machine with two CPUs or more, else one."""
    have = cpus() if available is None else available
    if requested is not None:
        return max(1, min(requested, have))
    return min(DEFAULT_PROCESSES, have) if large else 1


# numpy's loops for exp, log and log1p of float64 on CPUs with AVX-512 are its own vectorised
# approximations: about one result in 300 (log) to one in 12 (log1p) differs in the last bit
# from the C library's, which numpy calls on every other x86-64 CPU. The log loss and the
# smooth ECE (a Gaussian kernel) then differ in their last digits from machine to machine.
# numpy reads NPY_DISABLE_CPU_FEATURES once, when it loads; these are the names of its AVX-512
# targets in numpy 1.x and 2.x (a name a build does not dispatch to is only noted, as an
# ImportWarning, which Python does not show by default).
_AVX512_TARGETS = (
    "X86_V4 AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL "
    "AVX512_ICL AVX512_SPR"
)


# OpenBLAS picks its kernels for the CPU it loads on. On CPUs with AVX-512 (SkylakeX, Cooperlake,
# SapphireRapids and Zen 4 kernels) its dgemm and dgemv sum their products in another order than
# the AVX2 kernels every other x86-64 CPU of the last decade runs (Haswell; its Zen target gives
# the same bits), so a Platt or beta fit's parameters differed in their last digits between
# machines. Every AVX-512 CPU runs the AVX2 kernels, and OpenBLAS reads OPENBLAS_CORETYPE once,
# as it loads with numpy. Another BLAS (MKL, Accelerate) ignores the variable.
_OPENBLAS_CORE = "Haswell"


def same_digits_on_every_cpu() -> None:
    """Ask numpy and its OpenBLAS, before they load, to leave their AVX-512 code out on a CPU
    that has it, so that every figure has the digits it has on any other x86-64 machine with
    AVX2: numpy's AVX2 and baseline loops call the C library's exp and log, and OpenBLAS's AVX2
    kernels sum a product's terms in one order. Does nothing when numpy is loaded already or on
    a CPU without AVX-512; a variable the user set (``NPY_DISABLE_CPU_FEATURES``,
    ``OPENBLAS_CORETYPE``) is kept. The variables stay set for the processes this one
    starts."""
    import sys

    if "numpy" in sys.modules or not _has_avx512():
        return
    os.environ.setdefault("NPY_DISABLE_CPU_FEATURES", _AVX512_TARGETS)
    os.environ.setdefault("OPENBLAS_CORETYPE", _OPENBLAS_CORE)


def numpy_has_avx512_loops() -> bool:
    """Whether numpy is loaded with AVX-512 loops that :func:`same_digits_on_every_cpu` would
    have left out (it loaded before that could act, or the user asked for them): its exp, log
    and log1p, and so the log loss and the smooth ECE, may then differ in their last digits
    from the command line's, and OpenBLAS, loaded with it, picked its own kernels too. Looks
    at a numpy already loaded and never loads one (False when none is)."""
    import sys

    core = sys.modules.get("numpy._core._multiarray_umath") or sys.modules.get(
        "numpy.core._multiarray_umath"
    )
    if core is None:
        return False
    # a target named in the variable but not dispatched by this build stays on, unused
    features = getattr(core, "__cpu_features__", {})
    dispatched = set(getattr(core, "__cpu_dispatch__", ())) & set(_AVX512_TARGETS.split())
    return any(features.get(name) for name in dispatched)


def _has_avx512() -> bool:
    """Whether the CPU reports AVX-512 (Linux: /proc/cpuinfo; elsewhere, False: numpy's
    macOS and Windows wheels are not the ones found to differ)."""
    try:
        with open("/proc/cpuinfo", "rb") as f:
            for line in f:
                if line.startswith(b"flags"):
                    return b" avx512f" in line
    except OSError:
        return False
    return False


DIGITS = (
    "numpy was loaded before calibcli, with AVX-512 exp and log loops (and OpenBLAS kernels) "
    "that the command line leaves out: nll, smece and fitted maps may differ from its figures "
    "in the last digit; import calibcli before numpy, pandas or anything else that loads numpy "
    "for the command's digits"
)
_said: list[bool] = []  # DIGITS is said once a process


def warn_other_digits(stacklevel: int = 2) -> None:
    """Warn (RuntimeWarning, once a process) when numpy was loaded with the AVX-512 loops that
    the command line leaves out (:func:`numpy_has_avx512_loops`): figures computed here (the
    Python functions', an engine's report) may then differ from the command's in the last
    digit. ``stacklevel`` as :func:`warnings.warn` takes it, counted from the caller."""
    if not _said and numpy_has_avx512_loops():
        import warnings

        _said.append(True)
        warnings.warn(DIGITS, RuntimeWarning, stacklevel=stacklevel + 1)
