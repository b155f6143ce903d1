"""calibcli from Python: the commands' reports for notebooks and scripts.

:func:`read_predictions` reads rows as the commands read them and returns them as numpy arrays
(:class:`Predictions`); :func:`calibrate`, :func:`threshold`, :func:`compare` and :func:`fit`
take such rows (or any confidence and correctness arrays) and return what the commands print:
a :class:`Result` whose ``to_json()`` is the command's ``--json`` output for the same rows and
options, and which Jupyter shows as the HTML report's tables (``fit`` returns the
:class:`Calibrator` that ``calibcli fit`` writes). Bad rows and options that cannot work raise
:class:`~calibcli.errors.InputError` with the command line's message. Nothing here prints.

The functions build the summary the readers build (:mod:`calibcli.summaries`) and call the
report functions the commands call (:mod:`calibcli.reports`), so the two cannot drift apart.
Their figures are the command's to the last digit when numpy loads after ``import calibcli``
(:func:`calibcli.system.same_digits_on_every_cpu`); when it loaded before, with AVX-512 loops
the command line leaves out, a RuntimeWarning says that they may differ in the last digit.
Loaded lazily: ``import calibcli`` and ``import calibcli.api`` load no numpy.
"""

from __future__ import annotations

import importlib
from typing import Any

# modules are named apart from their functions: importing a module calibcli.api.calibrate
# would set the package's attribute ``calibrate`` to the module, hiding the function
_LAZY = {
    "Predictions": "calibcli.api.predictions",
    "read_predictions": "calibcli.api.predictions",
    "Result": "calibcli.api.result",
    "Calibrator": "calibcli.api.result",
    "calibrate": "calibcli.api.calibration",
    "threshold": "calibcli.api.thresholds",
    "compare": "calibcli.api.comparison",
    "fit": "calibcli.api.fitting",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        _warn_digits()
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'calibcli.api' has no attribute {name!r}")


def _warn_digits() -> None:
    """Warn (RuntimeWarning, once) when numpy was loaded with the AVX-512 loops that the
    command line leaves out, so the functions' figures may differ from its in the last digit."""
    from calibcli.system import warn_other_digits

    # the caller of calibcli.NAME (through calibcli's __getattr__ and this one)
    warn_other_digits(stacklevel=4)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
