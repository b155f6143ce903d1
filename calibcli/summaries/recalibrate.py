"""Calibrator files, and recalibrated copies of what a reader returned.

A calibrator file is small strict JSON (``schema_version`` 1)::

    {"schema_version": 1, "kind": "calibcli-calibrator", "method": "platt",
     "params": {"a": 0.41, "b": -0.72},
     "fitted_on": {"n": 1000, "files": ["dev.jsonl"], "format": "jsonl"},
     "by": null, "groups": {}}

With ``by`` set, ``groups`` maps each group's name to its own ``{"method", "params", "n"}``;
rows of a group the file does not name are mapped by the pooled calibrator. No printing and no
typer here: the commands call these and turn ValueError into exit 2.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
KIND = "calibcli-calibrator"
_NUMPY_REPR = re.compile(r"\bnp\.(?:float|int|uint|bool_)\w*\(([^()]*)\)")


@dataclass(frozen=True)
class CalibratorFile:
    """A fitted calibrator (pooled) and, with ``by``, one per group."""

    method: str
    calibrator: Any
    fitted_on: dict[str, Any]
    by: str | None = None
    groups: dict[str, Any] = field(default_factory=dict)
    group_rows: dict[str, int] = field(default_factory=dict)
    path: Path | None = None  # the file it was read from

    def for_group(self, name: str | None) -> Any:
        """The calibrator that maps the rows of group ``name`` (the pooled one when None or
        when the file holds none for it)."""
        return self.groups.get(name, self.calibrator) if name is not None else self.calibrator

    def to_json(self) -> str:
        body = {
            "schema_version": SCHEMA_VERSION,
            "kind": KIND,
            "method": self.method,
            "params": self.calibrator.to_dict(),
            "fitted_on": self.fitted_on,
            "by": self.by,
            "groups": {
                name: {
                    "method": self.method,
                    "params": cal.to_dict(),
                    "n": self.group_rows.get(name),
                }
                for name, cal in self.groups.items()
            },
        }
        return json.dumps(body, allow_nan=False) + "\n"


def fit_data(
    data: Any, *, method: str, bins: int, fitted_on: dict[str, Any], by: str | None
) -> CalibratorFile:
    """Fit ``method`` on a reader's rows (pooled, and per --by group). Raises ValueError."""
    from calibcli.metrics.recalibration import fit

    def fit_columns(columns: Any, where: str) -> Any:
        if columns is None or columns.n == 0:
            raise ValueError(f"{where}: no rows to fit on")
        try:
            return fit(columns.confidences(), columns.correct(), method=method, bins=bins)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None

    pooled = fit_columns(data.columns, "the pooled rows")
    groups, rows = {}, {}
    for name, part in (data.groups or {}).items():
        groups[str(name)] = fit_columns(part.columns, f"group {name!r}")
        rows[str(name)] = int(part.columns.n)
    return CalibratorFile(method, pooled, fitted_on, by, groups, rows)


def load(path: str | Path) -> CalibratorFile:
    """Read and validate a calibrator file; ValueError with one line naming what is wrong."""
    from calibcli.metrics.recalibration import from_dict

    def bad(detail: str) -> ValueError:
        # the validation's messages may show a value as numpy's repr (np.float64(0.4))
        detail = _NUMPY_REPR.sub(r"\1", detail)
        return ValueError(f"{path}: not a calibcli calibrator file: {detail}")

    try:  # utf-8-sig: a byte-order mark, as some Windows editors save one, is dropped
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise ValueError(f"{path}: cannot read the calibrator: {reason}") from None

    def no_constants(name: str) -> None:
        raise bad(f"{name} is not a number")

    try:
        body = json.loads(text, parse_constant=no_constants)
    except json.JSONDecodeError as exc:
        raise bad(f"invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise bad("invalid JSON (nested too deeply)") from None
    except ValueError:  # int() refuses a number of more than 4,300 digits
        raise bad("invalid JSON (a number with too many digits)") from None
    if not isinstance(body, dict) or body.get("kind") != KIND:
        raise bad(f'"kind" is not "{KIND}"')
    if body.get("schema_version") != SCHEMA_VERSION:
        raise bad(f"schema_version {body.get('schema_version')!r}, expected {SCHEMA_VERSION}")
    method = body.get("method")
    try:
        pooled = from_dict(method, body.get("params"))
    except (ValueError, TypeError) as exc:
        raise bad(str(exc)) from None
    except OverflowError:
        raise bad(f"a {method} parameter is a number beyond the range of a double") from None
    groups, rows = {}, {}
    group_bodies = body.get("groups") or {}
    if not isinstance(group_bodies, dict):
        raise bad('"groups" is not an object')
    for name, group in group_bodies.items():
        if not isinstance(group, dict) or group.get("method") != method:
            raise bad(f"group {name!r} is not a {method} calibrator")
        try:
            groups[name] = from_dict(method, group.get("params"))
        except (ValueError, TypeError) as exc:
            raise bad(f"group {name!r}: {exc}") from None
        except OverflowError:
            raise bad(
                f"group {name!r}: a parameter is a number beyond the range of a double"
            ) from None
        if isinstance(group.get("n"), int):
            rows[name] = group["n"]
    fitted_on = body.get("fitted_on") if isinstance(body.get("fitted_on"), dict) else {}
    by = body.get("by") if isinstance(body.get("by"), str) else None
    return CalibratorFile(method, pooled, fitted_on, by, groups, rows, Path(path))


def _mapped(columns: Any, mapping: Any) -> Any:
    """``columns`` with every confidence passed through ``mapping`` (rows keep their class)."""
    from calibcli.metrics import PredictionColumns

    return PredictionColumns(mapping(columns.conf_correct), mapping(columns.conf_wrong))


def _with_columns(data: Any, columns: Any, bins: int) -> Any:
    from calibcli.metrics import BinStats

    if columns is None:
        return replace(data, per_source=None)
    stats = BinStats.from_arrays(columns.confidences(), columns.correct(), bins=bins)
    return replace(data, stats=stats, columns=columns, per_source=None)


def apply_to_data(data: Any, calibrators: CalibratorFile, *, bins: int) -> Any:
    """The reader's result with every confidence recalibrated (each --by group by its own
    calibrator when the file has one); the pooled rows are the groups' mapped rows."""
    from calibcli.metrics import PredictionColumns

    if data.groups is None:
        cal = calibrators.calibrator
        return _with_columns(data, _mapped(data.columns, cal.apply), bins)
    groups = {
        name: _with_columns(
            part, _mapped(part.columns, calibrators.for_group(str(name)).apply), bins
        )
        for name, part in data.groups.items()
    }
    pooled = PredictionColumns.concat(g.columns for g in groups.values())
    return replace(_with_columns(data, pooled, bins), groups=groups)


def cross_fit_data(data: Any, *, method: str, folds: int, seed: int, bins: int) -> Any:
    """The reader's result with out-of-fold recalibrated confidences: each row mapped by a
    calibrator fitted on the other folds (per --by group when grouped). A --by group with fewer
    rows than ``folds`` cannot be cut into folds: its confidences are kept as they are, and a
    warning names it (the other groups are recalibrated). Raises ValueError when a fit fails,
    or when the pooled rows (no --by) are fewer than ``folds``."""
    from calibcli.metrics import PredictionColumns
    from calibcli.metrics.recalibration import cross_fit

    def crossed(columns: Any, where: str) -> Any:
        if columns is None or columns.n == 0:
            return columns
        right = columns.conf_correct.shape[0]
        try:
            out = cross_fit(
                columns.confidences(),
                columns.correct(),
                method=method,
                folds=folds,
                seed=seed,
                bins=bins,
            )
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        return PredictionColumns(out[:right], out[right:])

    if data.groups is None:
        return _with_columns(data, crossed(data.columns, "--recalibrate"), bins)
    small = [
        str(name)
        for name, part in data.groups.items()
        if part.columns is not None and 0 < part.columns.n < folds
    ]
    groups = {
        name: part
        if str(name) in small
        else _with_columns(part, crossed(part.columns, f"--recalibrate, group {name!r}"), bins)
        for name, part in data.groups.items()
    }
    pooled = PredictionColumns.concat(g.columns for g in groups.values() if g.columns is not None)
    result = replace(_with_columns(data, pooled, bins), groups=groups)
    if small:
        result = replace(result, warnings=(*result.warnings, _too_small(small, folds)))
    return result


def _too_small(names: list[str], folds: int) -> str:
    shown = ", ".join(repr(n) for n in names[:10])
    more = f" and {len(names) - 10} more" if len(names) > 10 else ""
    which = "group" if len(names) == 1 else "groups"
    holds = "holds" if len(names) == 1 else "hold"
    return (
        f"--recalibrate: {which} {shown}{more} {holds} fewer rows than --folds {folds}: "
        "confidences kept as they are, not recalibrated (lower --folds to recalibrate them)"
    )


FOLD_SEED = 0  # cross-fitting's fold permutation: fixed, so the same input gives the same report


def recalibrated(
    data: Any,
    *,
    calibrators: CalibratorFile | None,
    method: str | None,
    folds: int,
    bins: int,
    files: list[str],
    choices: Any = None,
) -> tuple[Any, dict[str, Any], list[str]]:
    """The reader's result recalibrated by a calibrator file or by cross-fitting ``method``,
    the report's ``recalibration`` settings, and warnings (scoring the rows a calibrator was
    fitted on). ``choices`` (lm-eval rows with their choices' scores) is needed for temperature
    over the choices. Raises ValueError when a fit fails."""
    if calibrators is not None:
        if calibrators.method == MULTICLASS:
            if choices is None:
                raise ValueError(
                    "this calibrator scales lm-eval choices' loglikelihoods (fitted with "
                    f"--method temperature on lm-eval rows); the input is {data.fmt}"
                )
            after = choices_data(choices, calibrators, bins=bins)
        else:
            after = apply_to_data(data, calibrators, bins=bins)
        settings = {
            "method": calibrators.method,
            "mode": "calibrator",
            "calibrator": str(calibrators.path) if calibrators.path else None,
            "fitted_on": calibrators.fitted_on,
        }
        notes = []
        fitted = {_same_file(f) for f in calibrators.fitted_on.get("files") or []}
        overlap = sorted(f for f in files if _same_file(f) in fitted and f != "-")
        if overlap:
            notes.append(
                f"the calibrator was fitted on {', '.join(overlap)}, which is scored here too: "
                "the figures after recalibration are in-sample and flatter it; score held-out "
                "rows, or use --recalibrate METHOD --folds K"
            )
        return after, settings, notes
    if choices is not None and method == "temperature":
        after = cross_fit_choices(choices, folds=folds, seed=FOLD_SEED, bins=bins)
        method = MULTICLASS
    else:
        after = cross_fit_data(data, method=method, folds=folds, seed=FOLD_SEED, bins=bins)
    settings = {"method": method, "mode": "cross-fitted", "folds": folds, "seed": FOLD_SEED}
    return after, settings, []


def _same_file(name: str) -> str:
    """A file name compared across runs: its resolved path when it exists, else as given."""
    path = Path(name)
    return str(path.resolve()) if path.exists() else name


# --------------------------------------------------------------------------- multiple choice

MULTICLASS = "multiclass_temperature"  # temperature over an lm-eval row's choices


def _with_gold(choices: Any, where: str) -> Any:
    missing = choices.gold < 0
    if missing.any():
        first = choices.where[int(missing.argmax())]
        raise ValueError(
            f"{where}: {first}: the gold choice is not logged (its 'target' is not a choice "
            "index and the row is scored wrong), so temperature over the choices cannot be fitted"
        )
    return choices


def _group_rows(choices: Any) -> dict[str, Any]:
    import numpy as np

    names = np.asarray(choices.groups, dtype=object)
    return {name: np.flatnonzero(names == name) for name in sorted(set(choices.groups))}


def fit_choices(choices: Any, *, fitted_on: dict[str, Any], by: str | None) -> CalibratorFile:
    """Temperature over the choices of lm-eval rows (pooled, and per --by group)."""
    from calibcli.metrics.recalibration import fit_multiclass_temperature

    def fit_one(part: Any, where: str) -> Any:
        if part.n == 0:
            raise ValueError(f"{where}: no rows to fit on")
        part = _with_gold(part, where)
        try:
            return fit_multiclass_temperature(part.values, part.offsets, part.gold)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None

    pooled = fit_one(choices, "the pooled rows")
    groups, rows = {}, {}
    if choices.groups is not None:
        for name, idx in _group_rows(choices).items():
            groups[name] = fit_one(choices.take(idx), f"group {name!r}")
            rows[name] = len(idx)
    return CalibratorFile(MULTICLASS, pooled, fitted_on, by, groups, rows)


def _calibration_data(conf: Any, correct: Any, groups: dict[str, Any] | None, *, bins: int) -> Any:
    from calibcli.io.data import CalibrationData
    from calibcli.metrics import BinStats, PredictionColumns

    def data_of(c: Any, y: Any) -> Any:
        return CalibrationData(
            stats=BinStats.from_arrays(c, y, bins=bins),
            columns=PredictionColumns.from_arrays(c, y, validate=False),
            rows=int(c.shape[0]),
            fmt="lm-eval",
        )

    pooled = data_of(conf, correct)
    if groups is None:
        return pooled
    parts = {name: data_of(conf[idx], correct[idx]) for name, idx in groups.items()}
    return replace(pooled, groups=parts)


def choices_data(choices: Any, calibrators: CalibratorFile, *, bins: int) -> Any:
    """Calibration data of lm-eval rows whose confidence is the largest tempered softmax
    probability over their choices (each --by group with its own temperature if fitted)."""
    import numpy as np

    conf = np.empty(choices.n, dtype=np.float64)
    groups = None if choices.groups is None else _group_rows(choices)
    if groups is None:
        conf[:] = calibrators.calibrator.apply(choices.values, choices.offsets)
    else:
        for name, idx in groups.items():
            part = choices.take(idx)
            conf[idx] = calibrators.for_group(name).apply(part.values, part.offsets)
    return _calibration_data(conf, choices.correct, groups, bins=bins)


def cross_fit_choices(choices: Any, *, folds: int, seed: int, bins: int) -> Any:
    """Out-of-fold temperature over the choices (per --by group when grouped)."""
    import numpy as np

    from calibcli.metrics.recalibration import cross_fit_multiclass_temperature

    def crossed(part: Any, where: str) -> Any:
        part = _with_gold(part, where)
        try:
            return cross_fit_multiclass_temperature(
                part.values, part.offsets, part.gold, folds=folds, seed=seed
            )
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None

    groups = None if choices.groups is None else _group_rows(choices)
    conf = np.empty(choices.n, dtype=np.float64)
    if groups is None:
        conf[:] = crossed(choices, "--recalibrate")
    else:
        for name, idx in groups.items():
            conf[idx] = crossed(choices.take(idx), f"--recalibrate, group {name!r}")
    return _calibration_data(conf, choices.correct, groups, bins=bins)
