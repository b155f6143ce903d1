"""The perplexity report: token figures, bytes and words, logprob counts, groups and the gate."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from calibcli.reports.gate import Gate, Shortfall, floor_reason
from calibcli.reports.report import GROUPS_NAMED, Note, Report, Section, assemble

_PPL_KEYS = ("perplexity", "byte_perplexity", "word_perplexity")


def perplexity_section(data: Any) -> Section:
    """The perplexity figures of one set of rows (``data``: a
    :class:`~calibcli.summaries.PerplexityView`)."""
    from calibcli.metrics import bits_per_unit

    tokens = data.total_tokens
    section: dict[str, Any] = {
        "sequences": int(data.sequences),
        "total_tokens": None if tokens is None else int(tokens),
        "total_nll": float(data.total_nll),
    }
    notes: list[Note] = []
    closed: dict[str, str] = {}
    token_fields = ("mean_nll", "perplexity", "bits_per_token")
    if data.sequences == 0:
        notes.append(Note("empty", "no rows were read; perplexity is undefined", "", token_fields))
        closed["perplexity"] = "no rows were read"
    if tokens is None:
        section.update(dict.fromkeys(token_fields))
        notes.append(
            Note(
                "no_tokens",
                "token perplexity is unavailable: the input carries no token counts "
                "(see bits_per_byte, byte_perplexity and word_perplexity)",
            )
        )
        closed.setdefault("perplexity", "the input carries no token counts")
    else:
        ppl, bits = bits_per_unit(data.total_nll, tokens)
        section["mean_nll"] = data.total_nll / tokens if tokens else math.nan
        section["perplexity"], section["bits_per_token"] = ppl, bits
        if tokens == 0 and data.sequences:
            notes.append(
                Note(
                    "zero_tokens",
                    "zero tokens in the input; perplexity is undefined",
                    "",
                    token_fields,
                )
            )
            closed.setdefault("perplexity", "zero tokens in the input")
    if data.nll_overflow:
        notes.append(
            Note(
                "nll_overflow",
                "the total NLL overflows a double (finite NLLs whose sum exceeds 1.8e308); "
                "it and every figure built on it are written as null",
                "",
                ("total_nll", *token_fields, "bits_per_byte", "byte_perplexity", "word_perplexity"),
            )
        )
        closed.setdefault("perplexity", "the total NLL overflows a double")
    elif math.isinf(data.total_nll):
        notes.append(
            Note(
                "infinite",
                "perplexity is infinite: a sequence has an infinite NLL (a zero-probability "
                "token); infinite figures are written as null",
                "",
                ("total_nll", *token_fields, "bits_per_byte", "byte_perplexity", "word_perplexity"),
            )
        )
    total_bytes = data.total_bytes
    if total_bytes is not None:
        byte_ppl, bpb = bits_per_unit(data.total_nll, total_bytes)
        section.update(total_bytes=int(total_bytes), bits_per_byte=bpb, byte_perplexity=byte_ppl)
    total_words = data.total_words
    if total_words is not None:
        section.update(
            total_words=int(total_words),
            word_perplexity=bits_per_unit(data.total_nll, total_words)[0],
        )
    for key, total, unit in (
        ("bits_per_byte", total_bytes, "byte"),
        ("word_perplexity", total_words, "word"),
    ):  # why a gate on the figure per byte or per word cannot be held
        if data.sequences == 0:
            closed[key] = "no rows were read"
        elif total is None:
            closed[key] = f"the input carries no {unit} counts"
        elif total == 0:
            closed[key] = f"zero {unit}s in the input"
        elif data.nll_overflow:
            closed[key] = "the total NLL overflows a double"
    if (total_bytes == 0 or total_words == 0) and data.sequences:
        notes.append(
            Note(
                "zero_units",
                "zero bytes or words in the input; per-byte/per-word figures are undefined",
                "",
                ("bits_per_byte", "byte_perplexity", "word_perplexity"),
            )
        )
    overflowed = [k for k in _PPL_KEYS if k in section and section[k] == math.inf]
    if overflowed and math.isfinite(data.total_nll):
        notes.append(
            Note(
                "overflow",
                f"{', '.join(overflowed)} overflow(s) a double (exp of a mean NLL above 709 "
                "nats); written as null, see the mean NLL and bits figures",
                explains=tuple(overflowed),
            )
        )
    if data.fmt not in ("jsonl", "lm-eval"):  # per-token logprob input
        section["null_logprobs"] = int(data.null_logprobs)
        section["sentinel_logprobs"] = int(data.sentinel_logprobs)
        if data.sentinel_logprobs:
            notes.append(
                Note(
                    "sentinels",
                    f"{data.sentinel_logprobs} token logprob(s) are <= -9999: API sentinels for "
                    "'not in the top-k', not real probabilities; they are summed as given, which "
                    "inflates the NLL",
                    f"{data.sentinel_logprobs}",
                )
            )
    return Section(section, notes, closed)


MACRO_KEYS = ("perplexity", "bits_per_token", "bits_per_byte", "byte_perplexity", "word_perplexity")
"""The figures lm-eval's group rows average over tasks."""

MACRO_NOTE = (
    "the pooled figures weigh every token, byte and word alike; lm-eval's group row averages "
    "its tasks' figures weighted by their documents, shown as macro (by sequences)"
)


def macro_figures(groups: dict[str, Section]) -> dict[str, Any]:
    """The groups' figures averaged with each group weighted by its sequences, as lm-eval's
    group rows average their tasks (``aggregate_subtask_metrics``, weight_by_size): per key of
    :data:`MACRO_KEYS` held by every group, null where a group's is undefined, infinite where a
    group's is infinite (and the others are numbers), as the weighted mean of those values is."""
    out: dict[str, Any] = {"weights": "sequences"}
    sections = [g.figures for g in groups.values()]
    sizes = [s["sequences"] for s in sections]
    for key in MACRO_KEYS:
        if not sections or not all(key in s for s in sections):
            continue
        values = [s[key] for s in sections]
        usable = all(v is not None and not math.isnan(v) for v in values) and sum(sizes) > 0
        if not usable:
            out[key] = None
        elif any(math.isinf(v) for v in values):
            out[key] = math.inf  # figures are >= 0: one infinite group makes the mean infinite
        else:
            out[key] = math.fsum(v * n for v, n in zip(values, sizes, strict=True)) / sum(sizes)
    return out


_UNITS = (
    ("bytes", "total_bytes", "bits_per_byte and byte_perplexity count"),
    ("words", "total_words", "word_perplexity counts"),
)


def unitless_groups(pooled: Section, groups: dict[str, Section]) -> list[str]:
    """Warnings on the pooled per-byte and per-word figures when some --by groups carry no
    bytes (or words) and yet NLL: the pooled figure divides that NLL by the other groups'
    bytes, and comes out above the figure of those groups together (a group's own is
    undefined, and said so). A token of no bytes (an end-of-text token) is no error, so the
    figure stays; the warning names the groups, their sequences and tokens, and their share
    of the total NLL."""
    texts = []
    total = pooled.figures["total_nll"]
    for kind, key, figures in _UNITS:
        if not pooled.figures.get(key):  # none carried, or none in all: said per section
            continue
        held = [(name, g.figures) for name, g in groups.items() if g.figures.get(key) == 0]
        held = [(name, f) for name, f in held if f["total_nll"] > 0]
        if not held:
            continue
        if len(held) == 1:
            named = f"group {held[0][0]!r} carries"
        else:
            shown = ", ".join(name for name, _ in held[:GROUPS_NAMED])
            more = f" and {len(held) - GROUPS_NAMED:,} more" if len(held) > GROUPS_NAMED else ""
            named = f"{len(held):,} groups ({shown}{more}) carry"
        sequences = sum(f["sequences"] for _, f in held)
        of = f"{sequences:,} sequence{'s' if sequences != 1 else ''}"
        tokens = [f["total_tokens"] for _, f in held]
        if None not in tokens:
            of += f" of {sum(tokens):,} token{'s' if sum(tokens) != 1 else ''}"
        nll = math.fsum(f["total_nll"] for _, f in held)
        if math.isfinite(total) and math.isfinite(nll) and total > 0:
            of += f" and {100 * nll / total:.3g}% of the total NLL"
        texts.append(
            f"{named} no {kind}, yet {of}: the pooled {figures} that NLL against the other "
            f"groups' {kind}, which is right only for tokens of no text (an end-of-text token)"
        )
    return texts


def repeat_floors(summary: Any, gate: Gate | None) -> Callable[[Any, str | None], dict[str, str]]:
    """Why the floors of ``gate`` on the sequences (--min-rows) and the tokens (--min-tokens)
    of a view (pooled when its group is None) fail closed when the runs read scored each
    question several times (their recorded epochs or train trials, or re-runs pooled with
    --all-runs whose ids repeat): each question counts once. The pooled rows' questions and
    their tokens are exact where the reading counted them (the summary's ``distinct``).
    Otherwise the rows carry no question keys, so the questions are a lower bound: the rows
    of the runs scored alike over that many times, rounded up (a group's over the most of its
    own runs where its sources are known, an lm-eval task's under --by task, else of any run);
    the tokens likewise, over the most, a question's repeats scoring the same tokens."""
    from calibcli.summaries import most_epochs

    sources = [s for s in getattr(summary, "sources", ()) if s.skipped is None]
    most_of = most_epochs(sources)
    floors = gate.minimums if gate and most_of else {}
    distinct = getattr(summary, "distinct", None)
    rows_of: dict[int, int] = {}  # times scored -> the rows of the runs scored that many times
    for s in sources:
        k = max(s.epochs or 1, s.pooled or 1)
        rows_of[k] = rows_of.get(k, 0) + s.rows

    def closed(view: Any, group: str | None) -> dict[str, str]:
        out: dict[str, str] = {}
        n, tokens = int(view.sequences), view.total_tokens
        exact = group is None and distinct is not None
        known = getattr(summary, "groups_known", None)  # a group's own runs, where known
        most = most_of if known is None else known.repeats(group, most_of)
        if not most:
            return out
        least = floors.get("sequences")
        if least is not None:
            questions = -(-n // most)
            if exact:
                questions = distinct[0]
            elif group is None and sum(rows_of.values()) == n:
                questions = sum(-(-rows // k) for k, rows in rows_of.items())
            why = floor_reason(n, questions, least, exact=exact)
            if why is not None:
                out["sequences"] = why
        least = floors.get("total_tokens")
        if least is None or tokens is None:
            return out
        held = distinct[1] if exact else None
        exact = held is not None
        if held is None:
            held, said = -(-tokens // most), f"as few as {-(-tokens // most):,}"
        else:
            said = f"{held:,}"
        if held < least:
            out["total_tokens"] = Shortfall(
                f"the {tokens:,} tokens are of rows that repeat their questions (see the "
                f"warning) and hold {said} tokens of distinct questions, fewer than "
                f"{least:,}; each question's tokens count once",
                held,
                exact,
                "question_tokens",
            )
        return out

    return closed


def perplexity_report(summary: Any, gate: Gate) -> Report:
    """The perplexity report: token figures, bytes and words, logprob counts, groups (and,
    beside the pooled figures, their macro average as lm-eval's group rows show it), gate."""

    unitless: list[str] = []  # the pooled warnings the groups' sections give

    def closing(pooled: Section, groups: dict[str, Section] | None) -> dict[str, Any]:
        if groups is None:
            return {}
        unitless.extend(unitless_groups(pooled, groups))
        return {"macro": macro_figures(groups)}

    # the note answers the question a harness user asks: why the group row differs. lm-eval's
    # group rows average tasks, so the macro row is theirs only when the groups are the tasks
    harness = (
        summary.group_names is not None
        and summary.fmt == "lm-eval"
        and summary.settings.by == "task"
    )
    notes = [Note("macro", MACRO_NOTE)] if harness else []
    repeats = repeat_floors(summary, gate)

    def build(view: Any, group: str | None) -> Section:
        section = perplexity_section(view)
        return Section(section.figures, section.notes, {**repeats(view, group), **section.closed})

    report = assemble(
        "perplexity",
        summary,
        build,
        gate=gate,
        closing=closing,
        notes=notes,
    )
    if not unitless:
        return report
    body = {**report.body, "warnings": [*report.body["warnings"], *unitless]}
    return Report(body, report.failures)
