"""Per-file routing: the format of each file, whether its rows serve the command, and how each
decoded row becomes values.

The format is detected per file from its first row (:func:`calibcli.formats.detect_row_format`),
or forced by the caller. A format that carries no rows for the command (per-token logprobs for
calibrate, graded answers for perplexity) is refused with a ValueError. An lm-eval file whose
task is of another kind than the command reads (a generative task for calibrate, a
multiple-choice one for perplexity) is skipped: :meth:`Router.route` returns the reason, which
the reader turns into one warning line. Converters of the non-native formats return a list of
value tuples per decoded JSON value (an OpenAI response gives one row per choice). The
inspect-ai converter counts the samples each ``--inspect-confidence`` mode took
(:class:`InspectRows`), which a summary's sources and compare's sides carry.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

# Why an lm-eval file is skipped, by the kind of its first row; the kind a command reads has none.
_SKIP = {
    "generate_until": "{generative}",
    "loglikelihood": "loglikelihood task: one scored continuation per document, no {wanted}",
    "multiple_choice": "multiple-choice task: no {wanted} (read it with `calibrate`)",
    "loglikelihood_rolling": "loglikelihood_rolling task: no {wanted} (read it with `perplexity`)",
}


class Router:
    """Routing for one command: ``command`` is ``"calibration"`` or ``"perplexity"``.

    ``fields`` are the configured field names passed to format detection; ``convert(fmt)``
    builds the converter of a non-native format (a list of value tuples per row), and
    ``convert(fmt, target_delimiter)`` that of an lm-eval file of multiple-choice rows.
    """

    def __init__(
        self,
        command: str,
        *,
        fields: dict[str, str],
        lm_eval_kind: str,
        wanted: str,
        convert: Callable[..., Callable[[dict], list[tuple]]],
        check: Callable[[str, Mapping[str, Any]], None] | None = None,
    ) -> None:
        self.command = command
        self.fields = fields
        self.lm_eval_kind = lm_eval_kind
        self.wanted = wanted
        self._convert = convert
        self._check = check

    def route(self, row: Mapping[str, Any], forced: str | None) -> tuple[str, str | None]:
        """``(format, reason to skip the file or None)`` from a file's first row; ValueError
        when the format is unknown or carries no rows for this command."""
        from calibcli import formats

        fmt = forced or formats.detect_row_format(row, **self.fields)
        if fmt == "jsonl" and forced:
            return fmt, None  # the native checks word any problem
        if self.command not in formats.FORMAT_PROVIDES[fmt]:
            raise ValueError(refusal(fmt, self.command, self.fields))
        if fmt == "lm-eval":
            kind = formats.lm_eval_row_kind(row)
            if kind != self.lm_eval_kind:
                reason = _SKIP[kind].format(
                    generative=formats.GENERATIVE_WARNING, wanted=self.wanted
                )
                return fmt, f"{reason}; skipped"
        if self._check is not None:
            self._check(fmt, row)
        return fmt, None

    def converter(self, fmt: str, source: str | None = None) -> Callable[[dict], list[tuple]]:
        """Row -> list of value tuples for a non-native format; the rows of an lm-eval
        multiple-choice file (``source``) with its task's ``target_delimiter``, the samples of
        an inspect-ai log read for perplexity with its task's scorers, a HELM run's entries
        read for perplexity with its run folder's adapter method."""
        if fmt in ("inspect-ai", "helm") and self.command == "perplexity":
            return self._convert(fmt, source)
        if fmt != "lm-eval":
            return self._convert(fmt)
        if self.lm_eval_kind == "multiple_choice" and source is not None:
            from calibcli.io.task_config import target_delimiter

            convert = self._convert(fmt, target_delimiter(source))
        else:
            convert = self._convert(fmt)
        expected = self.lm_eval_kind

        def one_task(row: dict) -> list[tuple]:
            try:
                return convert(row)
            except ValueError as e:
                from calibcli.formats import lm_eval_row_kind

                try:
                    kind = lm_eval_row_kind(row)
                except ValueError:
                    raise e from None
                if kind == expected:
                    raise
                raise ValueError(
                    f"a {kind} row in a file of {expected} rows: one samples file holds one "
                    "task's rows (lm-eval writes a file per task)"
                ) from None

        return one_task


def refusal(fmt: str, command: str, fields: dict[str, str]) -> str:
    """Why a format cannot be read by a command."""
    if command == "calibration":
        cf = fields.get("confidence_field", "confidence")
        yf = fields.get("correct_field", "correct")
        what = "per-sequence sums" if fmt == "sums" else "per-token logprobs"
        return f"{fmt} rows hold {what} (input for perplexity), not {cf!r}/{yf!r}"
    return f"{fmt} rows hold graded samples (input for calibrate), not sequence log-likelihoods"


def calibration_router(
    spec: Any,
    *,
    mc_norm: str,
    scorer: str | None,
    inspect_confidence: str = "auto",
    gold_field: str | None = None,
    options: tuple[str, ...] | None = None,
) -> Router:
    """Routing of the calibration reader (``spec`` a :class:`~calibcli.io.rows.CalibrationRow`);
    ``gold_field`` and ``options`` serve multiple-choice answers scored from token logprobs
    (OpenAI responses, OpenAI evals logs)."""

    def convert(fmt: str, delimiter: str = " ") -> Callable[[dict], list[tuple]]:
        from calibcli.formats import calibration_rows

        if fmt == "inspect-ai":
            return InspectRows(scorer, inspect_confidence)

        def rows(obj: dict) -> list[tuple]:
            found = calibration_rows(
                fmt,
                obj,
                mc_norm=mc_norm,
                scorer=scorer,
                confidence=inspect_confidence,
                gold_field=gold_field,
                options=options,
                target_delimiter=delimiter,
            )
            return [(float(c), bool(y)) for c, y in found]

        return rows

    def check(fmt: str, row: Mapping[str, Any]) -> None:
        if fmt != "inspect-ai" or scorer is not None:
            return
        from calibcli.formats import inspect_scorers

        names = inspect_scorers(row)
        if len(names) > 1:
            raise ValueError(
                f"the samples have {len(names)} scorers ({', '.join(names)}): choose one with "
                "--scorer NAME"
            )

    return Router(
        "calibration",
        fields={"confidence_field": spec.confidence_field, "correct_field": spec.correct_field},
        lm_eval_kind="multiple_choice",
        wanted="choice loglikelihoods",
        convert=convert,
        check=check,
    )


class InspectRows:
    """The converter of inspect-ai samples to calibration rows, which counts the samples each
    mode took the confidences of (``modes``: mode -> samples; --inspect-confidence auto takes
    answer-token or sequence per sample): a calibrator records the modes, and is applied to
    rows taken alike; the warning about rows auto took both ways counts them."""

    def __init__(self, scorer: str | None, confidence: str) -> None:
        self.scorer = scorer
        self.confidence = confidence
        self.modes: Counter[str] = Counter()

    def __call__(self, obj: dict) -> list[tuple]:
        from calibcli.formats import inspect_sample_taken

        row, mode = inspect_sample_taken(obj, scorer=self.scorer, confidence=self.confidence)
        self.modes[mode] += 1
        return [(float(row.confidence), bool(row.correct))]


def taken_modes(convert: Any) -> Counter[str]:
    """The modes the rows ``convert`` gave took their confidences by, each with its samples:
    an inspect-ai converter's (:class:`InspectRows`), none for the other formats'."""
    return convert.modes if isinstance(convert, InspectRows) else Counter()


def taken_counts(modes: Counter[str]) -> tuple[int, int] | None:
    """(samples taken by answer-token, samples taken by sequence) among the inspect-ai samples
    counted in ``modes`` (:func:`taken_modes`); None for none (rows of other formats)."""
    return (modes["answer-token"], modes["sequence"]) if modes else None


def compared_modes(base: str, new: str, read: Iterable[tuple[str, Any, Any]]) -> tuple:
    """How the confidences of each compared side's inspect-ai logs were taken, from compare's
    reading (``base`` and ``new``: the paths or folders given; ``read``: each file read, with
    its format and its samples taken by answer-token and by sequence,
    :func:`~calibcli.io.keyed.read_compared`): BASE's and NEW's logs, each (display name,
    samples taken by answer-token, samples taken by sequence)."""
    from calibcli.io.folders import expand
    from calibcli.io.sources import display_name

    read = list(read)
    sides = []
    for side in (base, new):
        given = set(expand([side]))
        logs = {path: taken for path, _, taken in read if taken is not None and path in given}
        sides.append(tuple((display_name(path), *taken) for path, taken in logs.items()))
    return sides[0], sides[1]


class FilteredRows:
    """The converter of perplexity rows (``convert``), which counts the sequences it left out
    for the content filter (``filtered``: OpenAI choices whose ``finish_reason`` is
    ``content_filter``, :func:`calibcli.formats.content_filtered`), for the source's record
    and the warning that says so (:func:`calibcli.summaries.filtered_said`)."""

    def __init__(self, convert: Callable[[dict], list[tuple]]) -> None:
        self.convert = convert
        self.filtered = 0

    def __call__(self, obj: dict) -> list[tuple]:
        return self.convert(obj)


def perplexity_router(spec: Any) -> Router:
    """Routing of the perplexity reader (``spec`` a :class:`~calibcli.io.rows.PerplexityRow`)."""

    def convert(fmt: str, source: str | None = None) -> Callable[[dict], list[tuple]]:
        if fmt in ("lm-eval", "logprobs", "sums"):
            single = spec.converter(fmt)
            return lambda obj: [single(obj)]
        from calibcli.formats import BY_NAME, content_filtered, inspect_prompt_row, perplexity_rows
        from calibcli.io.helm_adapter import perplexity_refusal
        from calibcli.io.inspect_log import log_scorers
        from calibcli.io.rows import check_counts

        counted = BY_NAME[fmt].counts  # --bytes-field / --words-field beside the response
        # the scorers the log's header names: a target_perplexity one scores the target's last
        # tokens, how many of which a sample without its score cannot say
        scorers = log_scorers(source) if fmt == "inspect-ai" and source is not None else ()
        # a HELM run folder naming another adapter method than language modelling scores no text
        refused = perplexity_refusal(source) if fmt == "helm" and source is not None else None

        def rows(obj: dict) -> list[tuple]:
            if refused is not None:
                raise ValueError(refused)
            filtered = 0
            if fmt == "inspect-ai":
                found = [inspect_prompt_row(obj, scorers=scorers)]
            else:
                found = perplexity_rows(fmt, obj)
                if fmt == "openai":
                    filtered = content_filtered(obj)
                    taken.filtered += filtered
            if counted and found:
                found = _counts_beside(spec, found, obj, filtered)
            # the last value says "this row's NLL overflowed a double"; an infinite NLL here is
            # a -inf logprob (a zero-probability token): a finite sum past 1.8e308 needs
            # logprobs no API writes
            return [
                check_counts(
                    (float(r.nll), r.tokens, r.bytes, r.words, r.nulls, r.sentinels, False)
                )
                for r in found
            ]

        taken = FilteredRows(rows)
        return taken

    return Router(
        "perplexity",
        fields={
            "nll_field": spec.nll_field,
            "tokens_field": spec.count_fields["tokens"],
            "logprobs_field": spec.logprobs_field,
        },
        lm_eval_kind="loglikelihood_rolling",
        wanted="rolling loglikelihoods",
        convert=convert,
    )


def _counts_beside(spec: Any, rows: list, obj: dict, filtered: int = 0) -> list:
    """The rows of one response (``formats.PerplexityRow`` values) with the bytes and words
    counts its own fields give (``spec`` a :class:`~calibcli.io.rows.PerplexityRow`, whose
    ``--bytes-field`` and ``--words-field`` are read at the response's top level).

    A count is of one scored sequence, so a response of several (choices, ``filtered`` of them
    left out for the content filter) cannot take one, nor a sequence that scores no token (a
    vLLM prompt of one token, its first, unscored). Where the format counts bytes itself
    (OpenAI chat tokens' ``bytes``), the two must agree: neither is taken over the other."""
    from calibcli.io.rows import check_scored

    counts = spec.optional(obj)
    if all(c is None for c in counts):
        return rows
    names = (spec.count_fields["bytes"], spec.count_fields["words"])
    named = [name for name, c in zip(names, counts, strict=True) if c is not None]
    if len(rows) + filtered != 1:
        raise ValueError(
            f"{named[0]} is given beside {len(rows) + filtered} scored sequences (choices), so "
            "which one it counts is unknown: give each sequence its own row"
        )
    (row,) = rows
    nbytes, words = counts
    if nbytes is not None and row.bytes is not None and nbytes != row.bytes:
        raise ValueError(
            f"{names[0]} {nbytes} and the {row.bytes} bytes of the scored tokens disagree"
        )
    check_scored(row.tokens, counts, names)
    return [
        row._replace(
            bytes=row.bytes if nbytes is None else nbytes,
            words=row.words if words is None else words,
        )
    ]
