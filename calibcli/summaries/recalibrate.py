"""Calibrator files, and recalibrated copies of summaries.

A calibrator file is small strict JSON (``schema_version`` 1)::

    {"schema_version": 1, "kind": "calibcli-calibrator", "method": "platt",
     "params": {"a": 0.41, "b": -0.72},
     "fitted_on": {"n": 1000, "files": ["dev.jsonl"], "format": "jsonl"},
     "by": null, "groups": {}}

With ``by`` set, ``groups`` maps each group's name to its own ``{"method", "params", "n"}``;
rows of a group the file does not name are mapped by the pooled calibrator. ``warnings``, the
fit's warnings (as its report and stderr say them), is there when the fit had any.
``fingerprint`` and ``sources`` (each input the fit read: ``{"file", "content", "rows",
"rows_hash"}``) tell the rows fitted on again (:mod:`calibcli.summaries.in_sample`). No printing
and no typer here: the commands call these and turn ValueError into exit 2.
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
    fingerprint: Any = None  # RowFingerprint of the rows it was fitted on (None: not recorded)
    rounded: Any = None  # their rounded fingerprints, by rounding (rounded_prints; None: none)
    warnings: tuple[str, ...] = ()  # the fit's warnings, as its report says them
    sources: tuple[Any, ...] | None = None  # the inputs its fit read (None: not recorded)

    def for_group(self, name: str | None) -> Any:
        """The calibrator that maps the rows of group ``name`` (the pooled one when None or
        when the file holds none for it)."""
        return self.groups.get(name, self.calibrator) if name is not None else self.calibrator

    def fitted(self, summary: Any, warnings: Any = ()) -> CalibratorFile:
        """The file with what it records of the rows it was fitted on, ``summary``'s: their
        fingerprint, the inputs read (:func:`~calibcli.summaries.in_sample.fitted_sources`),
        and the fit's ``warnings``."""
        from calibcli.summaries.in_sample import fitted_sources

        read = fitted_sources(summary.sources)
        return replace(
            self, fingerprint=summary.fingerprint, sources=read, warnings=tuple(warnings)
        )

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
        if self.warnings:  # a file without the key (written before, or no warning) reads alike
            body["warnings"] = list(self.warnings)
        from calibcli.summaries.in_sample import recorded_rows

        body.update(recorded_rows(self))
        return json.dumps(body, allow_nan=False) + "\n"


def pooled_map_note(calibrators: CalibratorFile, by: str | None, groups: Any) -> str | None:
    """A warning when rows of a calibrator fitted per --by group take its pooled map instead
    of a group's: every row when the rows are read without --by, or the rows of ``groups``
    (the --by group names read) the file holds no map for. None when every row takes its
    group's map, or the file holds none."""
    if not calibrators.groups:
        return None
    field = calibrators.by or "FIELD"
    if by is None:
        return (
            f"the calibrator holds a map per --by {field} group; without --by every row takes "
            f"its pooled map: give --by {field} for the groups' maps"
        )
    unseen = sorted({str(g) for g in groups or ()} - set(calibrators.groups))
    if not unseen:
        return None
    shown = ", ".join(repr(n) for n in unseen[:10])
    more = f" and {len(unseen) - 10} more" if len(unseen) > 10 else ""
    one = len(unseen) == 1
    return (
        f"the calibrator holds no map for --by {by} {'group' if one else 'groups'} "
        f"{shown}{more} (it was fitted on none of {'its' if one else 'their'} rows): "
        f"{'its' if one else 'their'} rows take the pooled map"
    )


def fit_data(
    summary: Any, *, method: str, bins: int, fitted_on: dict[str, Any], by: str | None
) -> CalibratorFile:
    """Fit ``method`` on a summary's kept rows (pooled, and per --by group). Raises ValueError."""
    from calibcli.metrics import fit_columns as fit
    from calibcli.summaries.fingerprint import rounded_prints

    def fit_columns(columns: Any, where: str) -> Any:
        if columns is None or columns.n == 0:
            raise ValueError(f"{where}: no rows to fit on")
        try:
            return fit(columns.conf_correct, columns.conf_wrong, method=method, bins=bins)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None

    pooled = fit_columns(summary.pooled().columns, "the pooled rows")
    groups, rows = {}, {}
    for name, part in (summary.by_group() or {}).items():
        groups[str(name)] = fit_columns(part.columns, f"group {name!r}")
        rows[str(name)] = int(part.columns.n)
    every = summary.pooled().columns  # the rows the file's fingerprints describe
    rounded = rounded_prints(every.conf_correct, every.conf_wrong)
    return CalibratorFile(method, pooled, fitted_on, by, groups, rows, rounded=rounded)


# what each key of a calibrator's fitted_on holds, where it records it: the checks applying
# it read them, so a key of another type would be a check skipped without a word
_FITTED_TEXT = ("format", "confidence_field", "correct_field", "mc_norm", "inspect_confidence")
_FITTED_TEXT_OR_NULL = ("scorer", "gold_field")
_FITTED_NAMES = ("files", "choices", "models", "tasks")


def _fitted_on_problem(fitted_on: Any) -> str | None:
    """What is wrong with a calibrator file's ``fitted_on`` (None: nothing)."""
    if not isinstance(fitted_on, dict):
        return '"fitted_on" is not an object'
    n = fitted_on.get("n", 0)
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        return f"fitted_on.n is {n!r}, not a row count"
    for key in (*_FITTED_TEXT, *_FITTED_TEXT_OR_NULL):
        value = fitted_on.get(key)
        nullable = value is None and key in _FITTED_TEXT_OR_NULL
        if key in fitted_on and not isinstance(value, str) and not nullable:
            return f"fitted_on.{key} is {value!r}, not a name"
    for key in _FITTED_NAMES:
        value = fitted_on.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return f"fitted_on.{key} is {value!r}, not a list of names"
    return None


def _never_fitted(calibrator: Any, where: str) -> str | None:
    """What is wrong with parameters no fit writes (None: nothing): a temperature outside the
    search's [T_MIN, T_MAX], or a map whose argument overflows at a confidence of 0 or 1 (a
    parameter near the largest double), which a fit on any confidences never reaches."""
    import numpy as np

    from calibcli.metrics import T_MAX, T_MIN

    params = calibrator.to_dict()
    t = params.get("temperature")
    if isinstance(t, float) and not T_MIN <= t <= T_MAX:
        return f"{where}.temperature is {t!r}, outside [{T_MIN:g}, {T_MAX:g}], where a fit finds it"
    if calibrator.method not in ("platt", "beta"):
        return None
    with np.errstate(over="raise", invalid="raise"):
        try:
            calibrator.apply(np.array([0.0, 1.0]))
        except FloatingPointError:
            key = max(params, key=lambda k: abs(params[k]))
            return f"{where}.{key} is {params[key]!r}: the map overflows at confidence 0 or 1"
    return None


def load(path: str | Path) -> CalibratorFile:
    """Read and validate a calibrator file; ValueError with one line naming what is wrong."""
    from calibcli.metrics import calibrator_from_dict as from_dict

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
    version = body.get("schema_version")
    if version != SCHEMA_VERSION or not isinstance(version, int) or isinstance(version, bool):
        raise bad(f"schema_version {version!r}, expected {SCHEMA_VERSION}")
    method = body.get("method")
    try:
        pooled = from_dict(method, body.get("params"))
    except (ValueError, TypeError) as exc:
        raise bad(str(exc)) from None
    except OverflowError:
        raise bad(f"a {method} parameter is a number beyond the range of a double") from None
    problem = _never_fitted(pooled, "params")
    if problem is not None:
        raise bad(problem)
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
        problem = _never_fitted(groups[name], f"group {name!r}: params")
        if problem is not None:
            raise bad(problem)
        if isinstance(group.get("n"), int):
            rows[name] = group["n"]
    fitted_on = body.get("fitted_on", {})
    problem = _fitted_on_problem(fitted_on)
    if problem is not None:
        raise bad(problem)
    by = body.get("by")
    if by is not None and not isinstance(by, str):
        raise bad('"by" is not a field name or null')
    if by is None and groups:  # the maps would be taken whatever --by asks
        raise bad('"groups" holds maps but "by" names no field')
    warnings = body.get("warnings", [])
    if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
        raise bad('"warnings" is not a list of texts')
    from calibcli.summaries.in_sample import read_recorded

    try:
        fingerprint, rounded, sources = read_recorded(body)
    except ValueError as exc:
        raise bad(str(exc)) from None
    return CalibratorFile(
        method,
        pooled,
        fitted_on,
        by,
        groups,
        rows,
        Path(path),
        fingerprint,
        rounded,
        tuple(warnings),
        sources,
    )


def _regrouped(
    summary: Any,
    parts: list[tuple[Any, Any]],
    notes: tuple[str, ...] = (),
    keys: list[Any] | None = None,
) -> Any:
    """A summary of new kept rows: ``parts`` are (right, wrong) confidences, one pair for the
    pooled rows or one per group in the summary's group order (the pooled rows are then the
    groups' rows one group after another). Sources and warnings are kept; the sources' own
    tables are not (they describe the rows as read); ``notes`` are added to the warnings.
    ``keys`` are each part's (right, wrong) row keys, when the rows were keyed: a recalibration
    maps each row to a new confidence and keeps its answer, so each row keeps its key and the
    Poisson bootstrap draws the same weight for it before and after."""
    import numpy as np

    from calibcli.summaries.calibration import from_columns

    sources = tuple(replace(s, table=None) for s in summary.sources)
    warnings = (*summary.warnings, *notes)
    keyed = None
    if keys is not None and all(k is not None for k in keys):
        keyed = (
            np.concatenate([r for r, _ in keys]) if keys else np.zeros(0, np.uint64),
            np.concatenate([w for _, w in keys]) if keys else np.zeros(0, np.uint64),
        )
    # what the runs say of the rows holds of them recalibrated: several models', questions
    # repeated, pieces of an input missing; the gates on them fail closed as before
    said = {"mixed": summary.mixed, "repeats": summary.repeats, "partial": summary.partial}
    if summary.group_names is None:
        ((right, wrong),) = parts
        made = from_columns(
            summary.settings, right, wrong, keys=keyed, sources=sources, warnings=warnings
        )
        return replace(made, **said)
    ids = [
        (np.full(r.shape[0], g, np.intp), np.full(w.shape[0], g, np.intp))
        for g, (r, w) in enumerate(parts)
    ]
    made = from_columns(
        summary.settings,
        np.concatenate([r for r, _ in parts]) if parts else np.zeros(0),
        np.concatenate([w for _, w in parts]) if parts else np.zeros(0),
        groups=summary.group_names,
        right_ids=np.concatenate([r for r, _ in ids]) if ids else np.zeros(0, np.intp),
        wrong_ids=np.concatenate([w for _, w in ids]) if ids else np.zeros(0, np.intp),
        keys=keyed,
        sources=sources,
        warnings=warnings,
    )
    return replace(made, **said)


def apply_to_data(summary: Any, calibrators: CalibratorFile, *, bins: int) -> Any:
    """The summary with every kept confidence recalibrated (each --by group by its own
    calibrator when the file has one)."""
    groups = summary.by_group()
    if groups is None:
        columns = summary.pooled().columns
        cal = calibrators.calibrator
        return _regrouped(
            summary,
            [(cal.apply(columns.conf_correct), cal.apply(columns.conf_wrong))],
            keys=[summary.pooled().keys],
        )
    parts = []
    for name, view in groups.items():
        cal = calibrators.for_group(str(name))
        parts.append((cal.apply(view.columns.conf_correct), cal.apply(view.columns.conf_wrong)))
    return _regrouped(summary, parts, keys=[view.keys for view in groups.values()])


def cross_fit_data(summary: Any, *, method: str, folds: int, seed: int, bins: int) -> Any:
    """The summary with out-of-fold recalibrated confidences: each row mapped by a calibrator
    fitted on the other folds (per --by group when grouped). A --by group with fewer rows than
    ``folds`` cannot be cut into folds: its confidences are kept as they are, and a warning
    names it (the other groups are recalibrated). Raises ValueError when a fit fails, or when
    the pooled rows (no --by) are fewer than ``folds``.

    The folds are drawn over each class's confidences in ascending order (right answers
    first), not in the order the rows were read: rows are interchangeable within a class at
    one confidence, so the figures depend on the rows alone, the same from a file, its
    shuffled lines, or any split of it into summary parts."""
    import numpy as np

    from calibcli.metrics import cross_fit

    def crossed(view: Any, where: str) -> tuple[Any, Any]:
        columns = view.columns
        if columns.n == 0:
            return columns.conf_correct, columns.conf_wrong
        right = columns.conf_correct.shape[0]
        by_right = np.argsort(columns.conf_correct, kind="stable")
        by_wrong = np.argsort(columns.conf_wrong, kind="stable")
        ordered = np.concatenate([columns.conf_correct[by_right], columns.conf_wrong[by_wrong]])
        # keyed rows are keyed by question: a sample's epochs are held out together
        keys = view.keys
        asked = None if keys is None else np.concatenate([keys[0][by_right], keys[1][by_wrong]])
        try:
            out = cross_fit(
                ordered,
                columns.correct(),
                method=method,
                folds=folds,
                seed=seed,
                bins=bins,
                clusters=asked,
            )
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        # each row's value back at its place among the summary's rows
        mapped_right, mapped_wrong = np.empty(right), np.empty(out.shape[0] - right)
        mapped_right[by_right], mapped_wrong[by_wrong] = out[:right], out[right:]
        return mapped_right, mapped_wrong

    groups = summary.by_group()
    if groups is None:
        pooled = summary.pooled()
        return _regrouped(summary, [crossed(pooled, "--recalibrate")], keys=[pooled.keys])
    small = [str(name) for name, view in groups.items() if 0 < view.columns.n < folds]
    parts = [
        (view.columns.conf_correct, view.columns.conf_wrong)
        if str(name) in small
        else crossed(view, f"--recalibrate, group {name!r}")
        for name, view in groups.items()
    ]
    notes = (_too_small(small, folds),) if small else ()
    return _regrouped(summary, parts, notes, keys=[view.keys for view in groups.values()])


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
    summary: Any,
    *,
    calibrators: CalibratorFile | None,
    method: str | None,
    folds: int,
    bins: int,
    files: list[str],
    choices: Any = None,
) -> tuple[Any, dict[str, Any], list[str]]:
    """The summary recalibrated by a calibrator file or by cross-fitting ``method``,
    the report's ``recalibration`` settings, and warnings (scoring the rows a calibrator was
    fitted on). ``choices`` (lm-eval rows with their choices' scores) is needed for temperature
    over the choices. Raises ValueError when a fit fails."""
    if calibrators is not None:
        if calibrators.method == MULTICLASS:
            if choices is None:
                where = f"{calibrators.path}: " if calibrators.path is not None else ""
                raise ValueError(
                    f"{where}this calibrator scales lm-eval choices' loglikelihoods (fitted "
                    f"with --method temperature on lm-eval rows); the input is {summary.fmt}"
                )
            after = choices_data(choices, calibrators, bins=bins, read=summary)
        else:
            after = apply_to_data(summary, calibrators, bins=bins)
        settings = {
            "method": calibrators.method,
            "mode": "calibrator",
            "calibrator": str(calibrators.path) if calibrators.path else None,
            "fitted_on": calibrators.fitted_on,
        }
        from calibcli.summaries.in_sample import scored_in_sample

        shared = scored_in_sample(calibrators, summary, files)
        return after, settings, [shared] if shared else []
    if choices is not None and method == "temperature":
        after = cross_fit_choices(choices, folds=folds, seed=FOLD_SEED, bins=bins, read=summary)
        method, grouped = MULTICLASS, choices.groups is not None
    else:
        after = cross_fit_data(summary, method=method, folds=folds, seed=FOLD_SEED, bins=bins)
        grouped = summary.group_names is not None
    settings = {"method": method, "mode": "cross-fitted", "folds": folds, "seed": FOLD_SEED}
    # each --by group is cross-fitted on its own rows: the pooled figures after it are those of
    # per-group maps, which a reader of the pooled figures must be told
    settings["maps"] = "per_group" if grouped else "pooled"
    return after, settings, [per_group_maps_note(summary.settings.by)] if grouped else []


def per_group_maps_note(by: str) -> str:
    """The warning of --recalibrate with --by: which maps the pooled figures after it are of."""
    return (
        f"--recalibrate with --by {by}: each group's rows are mapped by calibrators cross-fitted "
        "on that group alone, so the pooled figures after recalibration (and their gates) are "
        "those of per-group maps and differ from --recalibrate without --by; for pooled maps "
        "run --recalibrate without --by, or calibcli fit without --by (on other rows) and "
        f"give --calibrator FILE --by {by}"
    )


# --------------------------------------------------------------------------- multiple choice

MULTICLASS = "multiclass_temperature"  # temperature over an lm-eval row's choices


def _with_gold(choices: Any, where: str) -> Any:
    missing = choices.gold < 0
    if missing.any():
        first = choices.where[int(missing.argmax())]
        why = choices.unknown.get(
            first,
            "the gold choice is not logged (its 'target' is not a choice index and the row "
            "is scored wrong)",
        )
        raise ValueError(
            f"{where}: {first}: {why}, so temperature over the choices cannot be fitted"
        )
    return choices


def _group_rows(choices: Any) -> dict[str, Any]:
    import numpy as np

    names = np.asarray(choices.groups, dtype=object)
    return {name: np.flatnonzero(names == name) for name in sorted(set(choices.groups))}


def fit_choices(choices: Any, *, fitted_on: dict[str, Any], by: str | None) -> CalibratorFile:
    """Temperature over the choices of lm-eval rows (pooled, and per --by group)."""
    from calibcli.metrics import fit_multiclass_temperature

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


def _calibration_data(
    conf: Any, correct: Any, groups: dict[str, Any] | None, *, bins: int, read: Any = None
) -> Any:
    """The summary of lm-eval rows given as arrays, in row order (``groups``: name -> the
    indices of its rows). ``read``: the summary of the same rows as read, whose sources,
    warnings and what the runs say of them (several models', questions repeated, part of an
    input: the gates fail closed) they keep, as :func:`_regrouped` keeps them."""
    import numpy as np

    from calibcli.summaries.calibration import CalibrationSettings, from_columns

    read_as = CalibrationSettings(fmt="lm-eval") if read is None else read.settings
    settings, kept = replace(read_as, bins=bins), {"sources": ()}  # as read: --by, --mc-norm
    if read is not None:
        kept = {"sources": tuple(replace(s, table=None) for s in read.sources)}
        kept["warnings"] = read.warnings
    ids = np.zeros(conf.shape[0], np.intp)
    for g, idx in enumerate((groups or {}).values()):
        ids[idx] = g
    if groups is not None:
        kept.update(groups=tuple(groups), right_ids=ids[correct], wrong_ids=ids[~correct])
    made = from_columns(settings, conf[correct], conf[~correct], **kept)
    if read is None:
        return made
    return replace(made, mixed=read.mixed, repeats=read.repeats, partial=read.partial)


def choices_data(choices: Any, calibrators: CalibratorFile, *, bins: int, read: Any = None) -> Any:
    """Calibration data of lm-eval rows whose confidence is the largest tempered softmax
    probability over their choices (each --by group with its own temperature if fitted);
    ``read``: the summary of the rows as read (:func:`_calibration_data`)."""
    import numpy as np

    conf = np.empty(choices.n, dtype=np.float64)
    groups = None if choices.groups is None else _group_rows(choices)
    if groups is None:
        conf[:] = calibrators.calibrator.apply(choices.values, choices.offsets)
    else:
        for name, idx in groups.items():
            part = choices.take(idx)
            conf[idx] = calibrators.for_group(name).apply(part.values, part.offsets)
    return _calibration_data(conf, choices.correct, groups, bins=bins, read=read)


def cross_fit_choices(choices: Any, *, folds: int, seed: int, bins: int, read: Any = None) -> Any:
    """Out-of-fold temperature over the choices (per --by group when grouped; ``read``: see
    :func:`choices_data`)."""
    import numpy as np

    from calibcli.metrics import cross_fit_multiclass_temperature

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
    return _calibration_data(conf, choices.correct, groups, bins=bins, read=read)
