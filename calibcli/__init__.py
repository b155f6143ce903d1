"""calibcli: perplexity, calibration error and Brier score for language-model evaluation dumps.

From Python (notebooks, scripts): :func:`read_predictions`, :func:`calibrate`,
:func:`threshold`, :func:`compare` and :func:`fit` return the commands' reports (see
:mod:`calibcli.api`). They load on first use, so ``import calibcli`` stays light.
"""

from calibcli.system import same_digits_on_every_cpu

# The functions give the command's figures to the last digit: numpy and its OpenBLAS, when
# they load after this, load as the command line loads them (on a CPU with AVX-512, without
# numpy's own exp and log loops and with OpenBLAS's AVX2 kernels). Loaded before, they are as
# they are, and the functions say so (calibcli.api).
same_digits_on_every_cpu()
del same_digits_on_every_cpu

API = (
    "Calibrator",
    "Predictions",
    "Result",
    "calibrate",
    "compare",
    "fit",
    "read_predictions",
    "threshold",
)
__all__ = list(API)


def __getattr__(name: str) -> object:
    # __version__ comes from the installed metadata, looked up only when asked for:
    # importlib.metadata costs tens of milliseconds that every run would otherwise pay.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("calibcli")
        except PackageNotFoundError:  # a source tree that was never installed
            return "0+unknown"
    if name in API:  # the Python API, imported on first use
        import calibcli.api

        return getattr(calibcli.api, name)
    raise AttributeError(f"module 'calibcli' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *API, "__version__"])
