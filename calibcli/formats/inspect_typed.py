"""inspect-ai samples decoded into typed structs holding only the fields the calibration row
function reads, and turned into (confidence, correct) values.

msgspec skips every other field of a sample (messages, events, top logprobs) without building
it, which is most of a log's bytes. A sample whose read fields have another shape than the
structs say (``scores`` or a token that is not an object, ``logprobs.content`` that is not a
list) fails to decode; :func:`calibration_values` returns None for a decoded sample that
:func:`~calibcli.formats.inspect_ai.inspect_sample_row` would refuse or read in any special
way (an error, no scorer or several, a score of several values, a token log-probability
above 0). Either way the caller then reads the sample as a dict through the row function,
which words the error: the typed path only takes samples whose values it computes as
that function does (the same float operations in the same order).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from calibcli.formats.inspect_ai import (
    CONFIDENCES,
    _binary,
    answer_index,
    taken_mode,
    token_confidence,
)

TYPED_FIELDS = ("id", "epoch", "error", "choices", "scores", "output")
"""The sample fields the structs read: the first four as any JSON value (``choices`` as a list
of texts left undecoded), the last two typed."""

_ANY_FIELDS = TYPED_FIELDS[:4]


@cache
def sample_type(extra: tuple[str, ...] = ()) -> Any:
    """The msgspec struct of a sample's read fields, plus the top-level fields ``extra`` as any
    JSON value (a ``--by`` or ``--id-field`` path's first name, and the whole path, which a key
    holding dots may match); None when one of ``extra`` is a typed field (``scores``,
    ``output``), which the struct does not hold whole."""
    import msgspec

    if any(name in TYPED_FIELDS[4:] for name in extra):
        return None
    unset = msgspec.UNSET
    # a number (an integer read as the float token_logprob makes of it); null, a string, a
    # boolean or a missing logprob fails to decode
    token = msgspec.defstruct("Token", [("logprob", float), ("token", Any, None)], gc=False)
    logprobs = msgspec.defstruct("Logprobs", [("content", list[token] | None, None)], gc=False)
    choice = msgspec.defstruct("Choice", [("logprobs", logprobs | None, None)], gc=False)
    output = msgspec.defstruct("Output", [("choices", list[choice] | None, None)], gc=False)
    score = msgspec.defstruct("Score", [("value", Any, None)], gc=False)
    names = [name for name in dict.fromkeys(extra) if name not in _ANY_FIELDS]
    fields = [
        ("id", Any, unset),
        ("epoch", Any, unset),
        ("error", Any, None),
        # the options are only counted (their texts skipped) unless a path reads them
        ("choices", Any if "choices" in extra else list[msgspec.Raw] | None, None),
        ("scores", dict[str, score] | None, None),
        ("output", output | None, None),
        *((f"x{k}", Any, unset) for k in range(len(names))),
    ]
    rename = {f"x{k}": name for k, name in enumerate(names)}
    return msgspec.defstruct("Sample", fields, rename=rename, gc=False)


@cache
def fields_reader(struct: Any, names: tuple[str, ...]) -> Any:
    """A function giving the top-level fields ``names`` that a sample decoded into ``struct``
    holds, as a dict (what an id or a group is looked up in)."""
    import msgspec

    unset = msgspec.UNSET
    pairs = [
        (attr, name)
        for attr, name in zip(
            struct.__struct_fields__, struct.__struct_encode_fields__, strict=True
        )
        if name in names
    ]

    def read(sample: Any) -> dict[str, Any]:
        out = {}
        for attr, name in pairs:
            value = getattr(sample, attr)
            if value is not unset:
                out[name] = value
        return out

    return read


def calibration_values(
    sample: Any, scorer: str | None, confidence: str
) -> tuple[float, bool, str] | None:
    """``(confidence, correct, mode)`` of a decoded sample as
    :func:`~calibcli.formats.inspect_ai.inspect_sample_taken` gives them (``mode``: the one its
    confidence was taken by), or None where that function raises or reads the sample otherwise
    (a score of several values)."""
    if sample.error or confidence not in CONFIDENCES:
        return None
    scores = sample.scores
    if not scores:
        return None
    if scorer is None:
        if len(scores) != 1:
            return None
        (score,) = scores.values()
        scorer = next(iter(scores))
    else:
        score = scores.get(scorer)
        if score is None:
            return None
    value = score.value
    if type(value) not in (str, bool, int, float):
        return None
    output = sample.output
    choices = None if output is None else output.choices
    if not choices or choices[0].logprobs is None:
        return None
    content = choices[0].logprobs.content
    if not content:
        return None
    logprobs = [t.logprob for t in content]
    if max(logprobs) > 0.0:  # token_logprob's rule (msgspec reads no NaN)
        return None
    try:
        correct = _binary(value, scorer)
        found = None
        if confidence in ("auto", "answer-token"):
            options = sample.choices
            if isinstance(options, list) and options:
                found = _answer(len(options), [t.token for t in content])
        return token_confidence(logprobs, found, confidence), correct, taken_mode(confidence, found)
    except ValueError:
        return None


MEMO_TOKENS = 16
"""Completions of at most this many tokens have their answer token remembered (a multiple-choice
log repeats a few, ``ANSWER: B`` tokenised alike)."""

_answers: dict[tuple, int | None] = {}


def _answer(options: int, texts: list[Any]) -> int | None:
    """:func:`~calibcli.formats.inspect_ai.answer_index`, remembered for short completions (up
    to 4,096 of them at a time)."""
    if len(texts) > MEMO_TOKENS:
        return answer_index(options, texts)
    key = (options, *texts)
    try:
        return _answers[key]
    except KeyError:
        pass
    except TypeError:  # a token text that is not a string (nor hashable)
        return answer_index(options, texts)
    if len(_answers) >= 4096:
        _answers.clear()
    found = _answers[key] = answer_index(options, texts)
    return found
