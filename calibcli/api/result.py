"""What the Python API returns: a command's report (:class:`Result`) and a fitted calibrator
(:class:`Calibrator`), each with the command's JSON and, for Jupyter, the HTML report's
tables.

A Result holds the :class:`~calibcli.reports.Report` the command emits and nothing of its own:
``to_json()`` is the report's text, and ``_repr_html_`` is drawn from that JSON by the HTML
renderer (:func:`calibcli.render.html_fragment`), as every output of the commands is.
"""

from __future__ import annotations

import json
from typing import Any

from calibcli.errors import InputError

# The figures a Result's one-line repr names per command: (label, dotted key of the body)
HEADLINE = {
    "calibrate": (("n", "n"), ("accuracy", "accuracy"), ("ece", "ece"), ("brier", "brier")),
    "threshold": (
        ("n", "n"),
        ("target_accuracy", "target_accuracy"),
        ("threshold", "guaranteed.threshold"),
        ("coverage", "coverage"),  # on the evaluated rows, as the gate reads it
    ),
    "compare": (
        ("matched", "matched"),
        ("ece difference", "figures.ece.difference"),
        ("brier difference", "figures.brier.difference"),
    ),
    "fit": (("method", "method"), ("n", "n")),
}


class Result:
    """The report of ``calibrate``, ``threshold``, ``compare`` or ``fit``: what the command
    prints with ``--json``, and the gate's verdict.

    ``to_json()`` is the command's ``--json`` text; ``body`` its parsed JSON (``result["ece"]``
    a key of it); ``passed`` is False when a gate given (``max_ece=`` ...) failed, with
    ``failures`` saying why, one line per check (the command exits 1); ``warnings`` are the
    report's (the command prints them on stderr). ``report`` is the
    :class:`~calibcli.reports.Report` itself."""

    def __init__(self, report: Any, sources: tuple[str, ...] = ()) -> None:
        self.report = report
        self._sources = tuple(sources)
        self._text = report.to_json()

    def to_json(self) -> str:
        """The report as the command writes it with ``--json`` and ``-o``: strict JSON, one
        line and a newline."""
        return self._text

    @property
    def body(self) -> dict[str, Any]:
        """The report's JSON body, parsed afresh (``json.loads(result.to_json())``)."""
        return json.loads(self._text)

    def to_dict(self) -> dict[str, Any]:
        return self.body

    @property
    def command(self) -> str:
        return self.report.body["command"]

    @property
    def passed(self) -> bool:
        """Whether every gate given holds (True without gates)."""
        return self.report.passed

    @property
    def failures(self) -> list[str]:
        """Why the gate failed, one line per failed check (empty when it passed)."""
        return list(self.report.failures)

    @property
    def warnings(self) -> list[str]:
        return list(self.report.warnings)

    def __getitem__(self, key: str) -> Any:
        return self.body[key]

    def __contains__(self, key: object) -> bool:
        return key in self.report.body

    def _repr_html_(self) -> str:
        from calibcli.render import html_fragment

        return html_fragment(self.body, sources=self._sources)

    def __repr__(self) -> str:
        return f"<calibcli {self.command} report: {headline(self.body, self.passed)}>"


# what figures on rows mapped by the map they were fitted for are, and the ways out: the words
# of calibcli apply, with the keyword for its option
IN_SAMPLE = "figures computed on the output are in-sample for them and flatter the map"
WAYS_OUT = (
    "apply the calibrator to held-out rows (or fit it on other rows), or pass "
    "allow_in_sample=True to map them anyway"
)


class InSampleError(InputError, ValueError):
    """:meth:`Calibrator.apply` given rows the calibrator was fitted on: an InputError, as the
    API's refusals of what the command refuses are, and a ValueError (rows the map may not
    take)."""


class Calibrator:
    """A recalibration map fitted by :func:`calibcli.fit`: the calibrator file that ``calibcli
    fit -o`` writes (``to_json()``, the command's ``--json`` output; ``save(path)``), the
    fit's report (``report``, a :class:`Result`) and ``apply(confidence)``. Give its saved
    file to ``--calibrator`` or ``calibcli apply``."""

    def __init__(self, calibrators: Any, report: Any, sources: tuple[str, ...] = ()) -> None:
        self.file = calibrators  # calibcli.summaries.CalibratorFile
        self.report = Result(report, sources)

    @property
    def method(self) -> str:
        return self.file.method

    @property
    def by(self) -> str | None:
        """The group field it was fitted per (None: one pooled map)."""
        return self.file.by

    @property
    def params(self) -> dict[str, Any]:
        """The pooled map's parameters, as the file writes them."""
        return self.file.calibrator.to_dict()

    def to_json(self) -> str:
        """The calibrator file: what ``calibcli fit -o`` writes and ``fit --json`` prints."""
        return self.file.to_json()

    def save(self, path: Any) -> None:
        """Write the calibrator file to ``path`` (for ``--calibrator`` and ``calibcli
        apply``), put in place only once written in full, as ``calibcli fit -o`` writes it: a
        write that fails leaves an existing file as it was."""
        from calibcli.io import AtomicFile

        with AtomicFile(path) as f:
            f.write(self.to_json().encode("utf-8"))

    def apply(self, confidence: Any, group: Any = None, *, allow_in_sample: bool = False) -> Any:
        """The confidences mapped (float64, in the order given): each row by its group's map
        when ``group`` names the rows' groups and the calibrator holds one for it, else by
        the pooled map. A calibrator fitted per group warns (``UserWarning``) when rows take
        its pooled map: every row without ``group``, or the rows of groups it holds no map
        for, as the commands warn. InputError for confidences the commands would refuse.

        ``confidence`` may be :class:`~calibcli.Predictions` (their own groups are taken): how
        they were read is then checked against what the calibrator records, as
        ``--calibrator`` checks it, by the same checks. Rows grouped by another ``by`` field
        than the calibrator's groups, other ``mc_norm`` scores, ``inspect_confidence`` mode or
        ``choices`` are an InputError (the map would score other numbers); rows read from
        another ``confidence_field``, of another format, graded another way, of another task
        or of another model are a UserWarning (a map of one model's confidences says nothing
        of another's: gate nothing on the figures after it). Predictions carry their outcomes,
        so they are also checked as ``calibcli apply`` checks rows that carry theirs: rows the
        calibrator was fitted on (by their confidences and outcomes, else by the files named)
        are refused with :class:`InSampleError` (an InputError and a ValueError), since figures
        computed on them after the map are in-sample and flatter it; ``allow_in_sample=True``
        maps them with a UserWarning, as ``--allow-in-sample`` writes them. Confidences given
        alone carry no outcome, and are not looked at."""
        import numpy as np

        from calibcli.api.predictions import Predictions, given
        from calibcli.reports import flag
        from calibcli.summaries import MULTICLASS

        allow_in_sample = flag("apply", "allow_in_sample", allow_in_sample)
        if self.file.method == MULTICLASS:  # no confidence to map: it scores every choice
            raise InputError(
                "apply",
                None,
                "this calibrator scales lm-eval choices' loglikelihoods; apply() maps native "
                "confidences (use calibcli calibrate --calibrator on lm-eval rows)",
            )
        if isinstance(confidence, Predictions):
            if group is not None:
                raise TypeError("apply() takes the groups of Predictions: give no group")
            self._check_read(confidence)
            self._check_in_sample(confidence, allow_in_sample)
            group = confidence.group if confidence.by is not None else None
            confidence = confidence.confidence
        rows = given(confidence, np.zeros(np.shape(confidence)[:1], bool), group=group)
        names = rows.groups
        if self.file.groups and len(rows):
            self._warn_pooled(None if names is None else dict.fromkeys(names))
        if names is None or not self.file.groups:
            return np.asarray(self.file.calibrator.apply(rows.confidence), np.float64)
        out = np.empty(len(rows), np.float64)
        for name in dict.fromkeys(names):
            mask = rows.group == name
            out[mask] = self.file.for_group(name).apply(rows.confidence[mask])
        return out

    def _check_read(self, rows: Any) -> None:
        """Check how ``rows`` (Predictions) were read against the calibrator's records, by the
        checks ``--calibrator`` makes (:func:`calibcli.io.calibrator_notes`): a refusal is an
        InputError, a warning a UserWarning."""
        import warnings

        from calibcli.io import RowsRead, calibrator_notes

        scored = rows.read_as
        read = RowsRead(
            fmt=rows.format,
            # each file's format: rows of several formats are read as "mixed"
            formats=frozenset(f for *_, f in rows.parts if f) or frozenset({rows.format}),
            confidence_field=rows.confidence_field,
            correct_field=rows.correct_field,
            mc_norm=rows.mc_norm,
            by=rows.by,
            scorer=scored.get("scorer"),
            gold_field=scored.get("gold_field"),
            inspect_taken=rows.inspect_confidence,
            read_as=scored,
            api=True,
        )
        # the groups met: rows each taking their own --by model group's map say nothing of
        # a map pooled over models
        groups = None if rows.by is None else dict.fromkeys(rows.group.tolist())
        try:
            said = calibrator_notes(self.file, read, groups)
        except ValueError as exc:
            raise InputError("apply", None, str(exc)) from None
        for text in said:
            warnings.warn(text, UserWarning, stacklevel=3)

    def _check_in_sample(self, rows: Any, allowed: bool) -> None:
        """Refuse ``rows`` (Predictions) when they are rows the calibrator was fitted on, told
        as ``calibcli apply`` tells the rows it reads that carry an outcome
        (:func:`calibcli.summaries.scored_in_sample`: by content, else by the files named when
        the calibrator records no fingerprint or the values repeat too much to tell), so that
        the function and the command give the same verdict on the same rows: an
        :class:`InSampleError` with the command's words, or a UserWarning when ``allowed``."""
        import warnings

        from calibcli.api.predictions import ARRAYS
        from calibcli.errors import shown_name
        from calibcli.io import file_content_id
        from calibcli.summaries import CalibrationSettings, from_columns, scored_in_sample

        if not len(rows):
            return
        fields = {"confidence_field": rows.confidence_field, "correct_field": rows.correct_field}
        settings = CalibrationSettings(**fields)
        scored = from_columns(
            settings, rows.confidence[rows.correct], rows.confidence[~rows.correct]
        )
        said = IN_SAMPLE if allowed else f"{IN_SAMPLE}; {WAYS_OUT}"
        files = list(rows.files)
        # the files read (older re-runs left out), compared with those the fit read
        read = [name for name, _, _ in rows.parts] or files
        told = {"here": "given here", "consequence": (said, said), "content_of": file_content_id}
        note = scored_in_sample(self.file, scored, read, **told)
        if note is None:
            return
        if allowed:
            warnings.warn(note, UserWarning, stacklevel=3)
            return
        names = [shown_name("<stdin>" if f == "-" else f) for f in files]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        raise InSampleError(shown or ARRAYS, None, note)

    def _warn_pooled(self, names: dict | None) -> None:
        """Warn that rows of a calibrator fitted per group take its pooled map: all of them
        (``names`` None: no groups given), or those of the groups it holds no map for."""
        import warnings

        if names is None:
            message = (
                f"the calibrator holds a map per {self.by!r} group; without group= every row "
                "takes its pooled map"
            )
        else:
            unseen = [n for n in names if n not in self.file.groups]
            if not unseen:
                return
            shown = ", ".join(repr(n) for n in unseen[:10])
            more = f" and {len(unseen) - 10} more" if len(unseen) > 10 else ""
            message = (
                f"the calibrator holds no map for group(s) {shown}{more} (it was fitted on none "
                "of their rows): their rows take the pooled map"
            )
        warnings.warn(message, UserWarning, stacklevel=3)

    def _repr_html_(self) -> str:
        return self.report._repr_html_()

    def __repr__(self) -> str:
        n = self.file.fitted_on.get("n")
        per = f", per {self.by} group" if self.by else ""
        return f"<calibcli calibrator: {self.method}, fitted on {n:,} rows{per}>"


def headline(body: dict[str, Any], passed: bool) -> str:
    """A report in one line: its headline figures and the gate's verdict."""
    from calibcli.reports import lookup

    shown = []
    for label, key in HEADLINE.get(body.get("command"), (("n", "n"),)):
        value = lookup(body, key)
        if isinstance(value, float):
            shown.append(f"{label}={value:.4g}")
        elif value is not None:
            shown.append(f"{label}={value}")
    if isinstance(body.get("gate"), dict):
        shown.append("gate passed" if passed else "gate FAILED")
    return ", ".join(shown)
