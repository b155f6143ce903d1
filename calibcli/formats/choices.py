"""Multiple-choice answers scored from token log-probabilities: an OpenAI chat completion whose
answer token carries ``top_logprobs``, with its gold label from a field of the row, and OpenAI
evals record logs (``sampling`` events joined to the ``match`` event of the same sample).

Options are recognised as tokens: the answer token is the first token of the completion whose
text, without surrounding spaces, is one of the options (by default the letters A to E, as
multiple-choice prompts ask for; ``options`` gives others, e.g. ``("yes", "no")``). The
confidence is that option's probability renormalised over the options found in the answer
token's ``top_logprobs``: p(chosen) = exp(lp_chosen) / sum over options of exp(lp_option), each
option at the best log-probability of a top token that spells it (" B" and "B" alike). An option
outside the top-k counts as probability 0: the k listed tokens each outscore it. That bound needs
a token listed beside the answer token itself; ``top_logprobs`` empty or holding only the answer
token (a request with ``top_logprobs`` 0 or 1, or none) bounds nothing, and would make every
confidence 1, so such a row is an error.

A gold label is the option's text or its 0-based index; an integer whose decimal text is itself
an option (gold ``2`` among the options 1 to 5) reads both ways, and is an error rather than a
guess (unless both readings name one option, as among the options 0 to 4): the text is written as
a string (``"2"``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from calibcli.formats.fields import CalibrationRow, json_type, lookup, token_logprob
from calibcli.formats.logprobs import CONTENT_FILTER, openai_body

#: The options recognised by default: the letters multiple-choice prompts ask for.
LETTERS = ("A", "B", "C", "D", "E")


def _shown(options: Sequence[str]) -> str:
    return ", ".join(options)


def option_confidence(content: Any, options: Sequence[str] = LETTERS) -> tuple[float, str]:
    """``(probability, option)`` of the answer token in a list of chat-completion logprob
    entries (``{"token", "logprob", "top_logprobs": [{"token", "logprob"}]}``); ValueError
    when no token is one of the options."""
    if not isinstance(content, list):
        raise ValueError(f"the logprobs' 'content' is {json_type(content)}, expected a list")
    for j, token in enumerate(content):
        if not isinstance(token, Mapping) or not isinstance(token.get("token"), str):
            raise ValueError(f"logprobs content[{j}] is {json_type(token)}, expected a token")
        chosen = token["token"].strip()
        if chosen not in options:
            continue
        best = {chosen: token_logprob(token.get("logprob"), f"content[{j}].logprob")}
        tops = token.get("top_logprobs") or []
        if not isinstance(tops, list):
            raise ValueError(f"content[{j}].top_logprobs is {json_type(tops)}, expected a list")
        listed_beside = False
        for k, top in enumerate(tops):
            text = top.get("token") if isinstance(top, Mapping) else None
            listed_beside = listed_beside or text != token["token"]
            if isinstance(text, str) and text.strip() in options:
                lp = token_logprob(top.get("logprob"), f"content[{j}].top_logprobs[{k}].logprob")
                best[text.strip()] = max(best.get(text.strip(), -math.inf), lp)
        if not listed_beside:
            # no other token is listed, so nothing bounds the other options' probabilities:
            # renormalising over the answer's option alone would give 1, whatever the model said
            raise ValueError(
                f"content[{j}].top_logprobs lists no token but the answer {token['token']!r}, "
                "so its option's probability among the options is unknown: request the "
                "completion with top_logprobs (e.g. 5 or more)"
            )
        top_lp = max(best.values())
        if top_lp == -math.inf:
            raise ValueError(f"every option of content[{j}] has logprob -inf")
        total = math.fsum(math.exp(lp - top_lp) for lp in best.values())
        return math.exp(best[chosen] - top_lp) / total, chosen
    raise ValueError(
        f"no token of the answer is one of the options ({_shown(options)}); name the options "
        "with --choices"
    )


def gold_option(value: Any, options: Sequence[str], what: str) -> str:
    """The gold option named by a label: the option's text (spaces ignored) or its 0-based
    index among the options. An integer whose decimal text is an option (options 1 to 5, gold
    2: the option "2", or "3" at index 2) raises ValueError rather than take either reading,
    unless that option is also the one at that index."""
    if isinstance(value, str) and value.strip() in options:
        return value.strip()
    indexed = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(options)
    if indexed and options[value] == str(value):
        return options[value]  # both readings name the same option (options 0, 1, 2, ...)
    if isinstance(value, int) and not isinstance(value, bool) and str(value) in options:
        at = f" and as the option {options[value]!r} at index {value}" if indexed else ""
        raise ValueError(
            f"{what} is the number {value}, which reads as the option {str(value)!r}{at}, the "
            f"options ({_shown(options)}) being numbers: write the gold as a string for the "
            f'option\'s text ("{value}")'
        )
    if indexed:
        return options[value]
    raise ValueError(f"{what} is {json_type(value)}, not one of the options ({_shown(options)})")


def openai_choice_row(
    obj: Mapping[str, Any], *, gold_field: str | None, options: Sequence[str] = LETTERS
) -> CalibrationRow:
    """An OpenAI chat completion (or Batch API output line) answering a multiple-choice
    question, with its gold label at ``gold_field`` (a dotted path into the row): the first
    choice's answer token gives the confidence (see the module docstring), correct when the
    chosen option is the gold one.

    A Batch API line of a failed request raises ValueError naming the failure before the gold
    label is looked up (its request's gold is not what is wrong). A choice the content filter
    stopped (``finish_reason`` ``"content_filter"``) is read as any other when its answer token
    came before the filter cut the text: that token and its ``top_logprobs`` are the model's
    own. Cut before it, the choice holds no answer, and ValueError says the filter cut it."""
    if gold_field is None:
        raise ValueError(
            "an OpenAI response is a calibration row with its gold label: pass --gold-field "
            "PATH (the field holding the right option)"
        )
    body = openai_body(obj)
    gold = gold_option(lookup(obj, gold_field), options, f"gold label {gold_field!r}")
    choices = body.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    logprobs = first.get("logprobs") if isinstance(first, Mapping) else None
    content = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    if isinstance(first, Mapping) and first.get("finish_reason") == CONTENT_FILTER:
        tokens = content if isinstance(content, list) else []
        if not any(_answers(token, options) for token in tokens):
            raise ValueError(
                'choices[0] was stopped by the content filter (finish_reason "content_filter") '
                "before an answer token: the filter cut its text, so it holds no answer to "
                "score (leave the request out, or send it again)"
            )
    if not isinstance(logprobs, Mapping) or "content" not in logprobs:
        raise ValueError(
            "choices[0].logprobs.content is missing: request the completion with logprobs=true "
            "and top_logprobs (e.g. 5)"
        )
    confidence, chosen = option_confidence(content, options)
    return CalibrationRow(confidence, chosen == gold)


def _answers(token: Any, options: Sequence[str]) -> bool:
    """Whether a chat-completion logprob entry is a token spelling one of the options."""
    text = token.get("token") if isinstance(token, Mapping) else None
    return isinstance(text, str) and text.strip() in options


def evals_match_row(row: Mapping[str, Any], *, options: Sequence[str] = LETTERS) -> CalibrationRow:
    """One sample of an OpenAI evals record log: its ``match`` event (``data.correct``) joined
    with the ``sampling`` event of the same sample (``sampling``), whose logged ``logprobs``
    (chat-completion ``{"content": [...]}`` or the list itself) give the confidence: the
    renormalised probability of the answer's option when the match's ``expected`` names one of
    the options, else the probability of the whole sampled completion (exp of the summed
    logprobs). ``expected`` is a list where a sample's ``ideal`` lists several spellings of its
    answer (``["B", "B)"]``: evals' ``record_match`` unwraps a list of one only); one of them
    an option makes the sample as multiple-choice as a string ``"B"`` does, so that every
    sample of such an eval takes the option's probability, not some the whole completion's."""
    data = row.get("data")
    if not isinstance(data, Mapping) or not isinstance(data.get("correct"), bool):
        raise ValueError("the match event has no 'correct' true/false in 'data'")
    sampling = row.get("sampling")
    if not isinstance(sampling, Mapping) and isinstance(row.get("matched_at"), int):
        # a verdict given again: its sampling event was the first match's
        raise ValueError(
            f"a second match event for sample {row.get('sample_id')!r} (first at line "
            f"{row['matched_at']})"
        )
    if not isinstance(sampling, Mapping):
        raise ValueError(
            f"no sampling event of sample {row.get('sample_id')!r} comes before its match event"
        )
    logprobs = sampling.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, Mapping) else logprobs
    if not isinstance(content, list) or not content:
        raise ValueError(
            "the sampling event logs no logprobs (data.logprobs): a confidence needs them"
        )
    expected = data.get("expected")
    spellings = expected if isinstance(expected, list) else [expected]
    if any(isinstance(e, str) and e.strip() in options for e in spellings):
        confidence, _ = option_confidence(content, options)
        return CalibrationRow(confidence, data["correct"])
    total = 0.0
    for j, token in enumerate(content):
        value = token.get("logprob") if isinstance(token, Mapping) else token
        total += token_logprob(value, f"sampling logprobs[{j}]")
    return CalibrationRow(math.exp(total), data["correct"])
