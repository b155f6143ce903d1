"""inspect-ai eval log samples: correctness from a scorer, confidence from output logprobs;
and the prompt logprobs of perplexity evals.

A sample is one element of a ``.json`` log's ``samples`` or one ``samples/<id>_epoch_<n>.json``
entry of a ``.eval`` log (:mod:`calibcli.io.documents` opens both). Each sample/epoch is one row.
Fields read follow inspect-ai's published log schema (``EvalSample``, ``ModelOutput``,
``ChatCompletionChoice``, ``Logprobs``, ``Logprob``): ``output.choices[0].logprobs.content[j]``
(``token``, ``logprob``, ``bytes``) and, for perplexity, ``output.choices[0].prompt_logprobs``
(the same ``Logprobs`` shape, one entry per prompt token).
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
from collections.abc import Mapping
from typing import Any

from calibcli.formats.fields import (
    CalibrationRow,
    PerplexityRow,
    json_type,
    sum_logprobs,
    token_logprob,
)

#: How :func:`inspect_sample_row` turns the output's token log-probabilities into a confidence
#: (``auto``: ``answer-token`` where it applies, else ``sequence``).
CONFIDENCES = ("auto", "answer-token", "sequence", "first-token", "mean-token")

# The answer line of inspect-ai's multiple_choice solver ("ANSWER: B"; "Answer: B" in prompts
# written after other harnesses): where it starts, and the capital letter of its plain form
# (group 1, after an optional "$") at the end of _ANSWER_START's match.
_ANSWER_START = re.compile(r"(?i:answer)\s*:\s*")
_PLAIN_LETTER = re.compile(r"\$?([A-Z])\$?")
# The other forms inspect-ai's solver grades: the letter in either case, inside balanced
# wrappers (LaTeX, Markdown emphasis and code, brackets), nested up to _MOST_WRAPPERS deep.
# Every form, the plain one too, is followed, after blanks, by no other letter, digit or comma
# (_LETTER_END), as the solver reads the run of letters, blanks and commas after "ANSWER:": a
# list of letters ("ANSWER: A, C", "A and C", the multiple_correct solver's "ANSWER:
# $LETTERS"), or prose such as "Answer: a bit of both", is not one answer, while "ANSWER: B.
# Because ..." and "ANSWER: B (as ...)" are B.
_WRAPPERS = (
    ("$$", "$$"),
    ("$", "$"),
    ("\\(", "\\)"),
    ("\\[", "\\]"),
    *((f"\\{name}{{", "}") for name in ("boxed", "textbf", "text", "mathbf", "mathrm")),
    ("**", "**"),
    ("__", "__"),
    ("*", "*"),
    ("_", "_"),
    ("`", "`"),
    ("(", ")"),
    ("[", "]"),
)
_MOST_WRAPPERS = 3
_LETTER_END = re.compile(r"(?![ \t]*[A-Za-z0-9,])")

# inspect-ai's score value constants: CORRECT, INCORRECT, NOANSWER, PARTIAL.
_CORRECT, _INCORRECT, _NOANSWER, _PARTIAL = "C", "I", "N", "P"


#: The files inspect-ai's eval_set writes into its log folder beside the logs, by name: the
#: log-folder manifest (``write_log_dir_manifest``: each log's header, keyed by the log's file
#: name) and the eval set's own record (``write_eval_set_info``: its id and tasks).
MANIFEST_NAMES = ("logs.json", "eval-set.json")
_LOG_NAME = re.compile(r"(?i)\.(eval|json)$")


def manifest_message(value: Any) -> str | None:
    """What a decoded JSON document is when it is one of inspect-ai's eval-set manifests (see
    :data:`MANIFEST_NAMES`), not a log: an object whose keys are log file names (``.eval``,
    ``.json``) and whose values are log headers (``eval`` and ``status`` or ``version``), or an
    object with an ``eval_set_id`` and a list of ``tasks``. None for anything else."""
    if not isinstance(value, Mapping) or not value:
        return None
    if "eval_set_id" in value and isinstance(value.get("tasks"), list):
        held = "the eval set's tasks"
    elif all(
        isinstance(name, str)
        and _LOG_NAME.search(name)
        and isinstance(head, Mapping)
        and isinstance(head.get("eval"), Mapping)
        and ("status" in head or "version" in head)
        for name, head in value.items()
    ):
        held = "the headers of the folder's logs"
    else:
        return None
    return f"an inspect-ai eval-set manifest ({held}), not a log"


def inspect_scorers(sample: Mapping[str, Any]) -> list[str]:
    """The scorer names of a sample's ``scores``, in logged order."""
    scores = sample.get("scores")
    return list(scores) if isinstance(scores, Mapping) else []


def inspect_sample_row(
    sample: Mapping[str, Any], *, scorer: str | None = None, confidence: str = "auto"
) -> CalibrationRow:
    """Confidence and correctness of one inspect-ai sample.

    correct = ``scores[scorer].value``: ``"C"`` (correct) -> True; ``"I"`` (incorrect) and
    ``"N"`` (no answer) -> False, as inspect-ai's ``accuracy`` counts them; ``true``/``false``;
    the numbers 1 and 0. Partial credit (``"P"``, other numbers) is not a binary outcome and
    raises ValueError. ``scorer`` may be omitted when the sample has one scorer; with several,
    ValueError lists them. A scorer whose value is an object (several values) is named as
    ``"<scorer>.<key>"``.

    confidence, from ``output.choices[0].logprobs.content[j].logprob`` (natural logs):

    - ``"answer-token"``: for a multiple-choice sample (its ``choices`` list the options, as
      inspect-ai's ``multiple_choice`` solver logs them) whose completion carries the solver's
      answer line ``ANSWER: X`` with X one of the options' letters: the probability of the
      token that carries the letter X (the last such line, where reasoning comes first). X is
      found in the forms the solver grades (:func:`answer_letter`): ``b``, ``(B)``, ``**B**``,
      ``$B$``; the token carrying it may hold a wrapper's characters too (``(B``), and its
      probability is the confidence all the same. The tokens before it (``ANSWER``, ``:``) are
      near-certain and say nothing about the choice.
    - ``"sequence"``: exp(sum_j logprob_j), the probability of the exact completion that was
      graded. Right for short answers (a letter, a number); it shrinks with length.
    - ``"first-token"``: exp(logprob_0), for answers decided by their first token.
    - ``"mean-token"``: exp(mean_j logprob_j), the geometric mean per-token probability.
    - ``"auto"`` (default): ``answer-token`` for a sample where it applies, else ``sequence``.

    ValueError when the sample errored, is unscored, or has no output logprobs, and for
    ``answer-token`` on a sample without the answer line.
    """
    return inspect_sample_taken(sample, scorer=scorer, confidence=confidence)[0]


def check_sample_error(sample: Mapping[str, Any]) -> None:
    """ValueError quoting the error a sample ended in (inspect-ai logs it in ``error``)."""
    if sample.get("error"):
        error = sample["error"]
        message = error.get("message", "") if isinstance(error, Mapping) else error
        raise ValueError(f"the sample ended in an error: {str(message)[:200]}")


def inspect_sample_taken(
    sample: Mapping[str, Any], *, scorer: str | None = None, confidence: str = "auto"
) -> tuple[CalibrationRow, str]:
    """:func:`inspect_sample_row`'s row and the mode its confidence was taken by
    (:func:`taken_mode`)."""
    if confidence not in CONFIDENCES:
        raise ValueError(f"confidence must be one of {', '.join(CONFIDENCES)}, not {confidence!r}")
    check_sample_error(sample)
    correct = _correct(sample, scorer)
    content = _output_content(sample)
    logprobs = _logprobs(content)
    found = None
    if confidence in ("auto", "answer-token"):
        found = answer_token(sample, content)
    row = CalibrationRow(token_confidence(logprobs, found, confidence), correct)
    return row, taken_mode(confidence, found)


def token_confidence(logprobs: list[float], found: int | None, confidence: str) -> float:
    """The confidence of a completion from its token log-probabilities (see
    :func:`inspect_sample_row`): ``found`` is the answer token's index (:func:`answer_token`)
    or None. ValueError for ``answer-token`` without one."""
    if confidence in ("auto", "answer-token"):
        if found is not None:
            return math.exp(logprobs[found])
        if confidence == "answer-token":
            raise ValueError(
                "--inspect-confidence answer-token: the completion has no 'ANSWER: X' line with "
                "X one of the sample's choices (a multiple_choice sample; a list of letters, "
                "'ANSWER: A, C', is no one answer)"
            )
    if confidence == "first-token":
        log_p = logprobs[0]
    else:
        try:
            log_p = math.fsum(logprobs)
        except OverflowError:  # finite terms summing past -1.8e308: the probability is 0
            log_p = -math.inf
        if confidence == "mean-token":
            log_p /= len(logprobs)
    return math.exp(log_p)


def taken_mode(confidence: str, found: int | None) -> str:
    """The mode a sample's confidence was taken by when read with ``confidence``, as
    ``--inspect-confidence`` names it (``found``: the answer token's index, or None): ``auto``
    resolves per sample to ``answer-token`` or ``sequence``; any other mode is itself."""
    if confidence == "auto":
        return "sequence" if found is None else "answer-token"
    return confidence


def answer_token(sample: Mapping[str, Any], content: list[Any]) -> int | None:
    """Index in ``content`` of the token carrying the chosen letter of a multiple-choice
    sample's ``ANSWER: X`` line (:func:`answer_letter`), or None where the rule does not apply
    (no ``choices``, no such line, or a letter past the options)."""
    choices = sample.get("choices")
    if not isinstance(choices, list) or not choices:
        return None
    texts = [t.get("token") if isinstance(t, Mapping) else None for t in content]
    return answer_index(len(choices), texts)


def answer_index(options: int, texts: list[Any]) -> int | None:
    """:func:`answer_token` from the number of the sample's options (at least one) and the
    completion's token texts: None unless every text is a string."""
    try:
        completion = "".join(texts)
    except TypeError:  # a text that is not a string
        return None
    at = None
    for start in _ANSWER_START.finditer(completion):  # the last answer line is kept
        found = answer_letter(completion, start.end())
        if found is not None:
            at = found
    if at is None:
        return None
    letter = completion[at].upper()
    if not ord("A") <= ord(letter) < ord("A") + options:
        return None
    # the first token whose end is past the letter's position: the token holding the letter,
    # alone ("B") or with a wrapper's characters ("(B", "**B")
    return bisect.bisect_right(list(itertools.accumulate(map(len, texts))), at)


def answer_letter(text: str, at: int) -> int | None:
    """Where the chosen letter of an answer line stands in ``text``, whose answer starts at
    ``at`` (after ``ANSWER:`` and blanks), or None: a capital letter alone or after a ``$``
    (``B``, ``$B``, ``$B$``); else, as inspect-ai's solver grades it, a letter of either case
    inside balanced wrappers (``b``, ``(B)``, ``**B**``, ``$b$``, ``**(B)**``, ``\\boxed{B}``).
    Either way the letter (with its closing wrappers) is followed, after blanks, by no letter,
    digit or comma: ``ANSWER: A, C`` and ``ANSWER: A and C`` name two letters, not one, and
    ``ANSWER: B. Because ...``, ``ANSWER: B (as ...)`` or ``ANSWER: B`` then more lines name
    B."""
    plain = _PLAIN_LETTER.match(text, at)
    if plain is not None and _LETTER_END.match(text, plain.end()):
        return plain.start(1)
    closers: list[str] = []
    while len(closers) <= _MOST_WRAPPERS:
        if at < len(text) and text[at].isascii() and text[at].isalpha():
            end = at + 1
            for closer in reversed(closers):
                if not text.startswith(closer, end):
                    return None
                end += len(closer)
            return at if _LETTER_END.match(text, end) else None
        opened = next((w for w in _WRAPPERS if text.startswith(w[0], at)), None)
        if opened is None:
            return None
        closers.append(opened[1])
        at += len(opened[0])
    return None


def inspect_prompt_row(sample: Mapping[str, Any]) -> PerplexityRow:
    """The perplexity row of one sample of a perplexity eval: NLL = -sum of
    ``output.choices[0].prompt_logprobs.content[j].logprob`` over the prompt's tokens (the first
    token's null logprob, a position no model scores, is skipped and counted), bytes the sum of
    each scored token's ``bytes`` when every one carries them. ValueError when the sample
    errored or logged no prompt logprobs, and for a token without a logprob or with a null one
    after the first position (a missing score)."""
    check_sample_error(sample)
    output = sample.get("output")
    choices = output.get("choices") if isinstance(output, Mapping) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    logprobs = first.get("prompt_logprobs") if isinstance(first, Mapping) else None
    content = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    if not isinstance(content, list) or not content:
        raise ValueError(
            "the sample has no output.choices[0].prompt_logprobs: run the eval with "
            "prompt_logprobs on a provider that returns them (vLLM)"
        )
    values: list[float] = []
    nulls = 0
    nbytes: int | None = 0
    for j, token in enumerate(content):
        what = f"output.choices[0].prompt_logprobs.content[{j}]"
        if not isinstance(token, Mapping):
            raise ValueError(f"{what} is {json_type(token)}, expected an object")
        if "logprob" not in token:
            raise ValueError(f"{what} has no logprob: a token's log-probability is missing")
        if token["logprob"] is None:
            # only the prompt's first token goes unscored (it has no context), as in vLLM's
            # prompt_logprobs: a null elsewhere is a token whose score is missing, and skipping
            # it would give the perplexity of fewer tokens than the prompt holds
            if j > 0:
                raise ValueError(
                    f"{what}.logprob is null: only the prompt's first token goes unscored, so "
                    "a token's log-probability is missing"
                )
            nulls += 1
            continue
        values.append(token_logprob(token.get("logprob"), f"{what}.logprob"))
        raw = token.get("bytes")
        nbytes = nbytes + len(raw) if isinstance(raw, list) and nbytes is not None else None
    row = sum_logprobs(values, nulls, nbytes)
    return row


def _correct(sample: Mapping[str, Any], scorer: str | None) -> bool:
    scores = sample.get("scores")
    if not isinstance(scores, Mapping) or not scores:
        raise ValueError(f"'scores' is {json_type(scores)}: the sample was not scored")
    names = list(scores)
    key = None
    if scorer is None:
        if len(names) > 1:
            raise ValueError(
                f"the sample has {len(names)} scorers ({', '.join(names)}): choose one"
            )
        scorer = names[0]
    elif scorer not in scores and "." in scorer and scorer.split(".", 1)[0] in scores:
        scorer, key = scorer.split(".", 1)
    if scorer not in scores:
        raise ValueError(f"no scorer {scorer!r} in 'scores' (scorers: {', '.join(names)})")
    score = scores[scorer]
    value = score.get("value") if isinstance(score, Mapping) else None
    name = scorer
    if key is not None:
        if not isinstance(value, Mapping) or key not in value:
            keys = ", ".join(value) if isinstance(value, Mapping) else json_type(value)
            raise ValueError(f"scorer {scorer!r} has no value {key!r} (value: {keys})")
        value, name = value[key], f"{scorer}.{key}"
    elif isinstance(value, Mapping):
        options = ", ".join(f"{scorer}.{k}" for k in value)
        raise ValueError(f"scorer {scorer!r} has several values: choose one of {options}")
    return _binary(value, name)


def is_outcome(value: Any) -> bool:
    """Whether a score's value is an outcome a calibration row reads (:func:`_binary`)."""
    try:
        _binary(value, "")
    except ValueError:
        return False
    return True


def _binary(value: Any, name: str) -> bool:
    if value in (_CORRECT, True):
        return True
    if value in (_INCORRECT, _NOANSWER, False):
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value in (0, 1):
        return bool(value)
    what = "partial credit, not a binary outcome" if value == _PARTIAL else "not binary"
    raise ValueError(
        f"score {name!r} is {json_type(value)}: {what} (calibcli reads 'C'/'I'/'N', "
        "true/false or 0/1)"
    )


def _output_content(sample: Mapping[str, Any]) -> list[Any]:
    output = sample.get("output")
    choices = output.get("choices") if isinstance(output, Mapping) else None
    if not isinstance(choices, list) or not choices:
        raise ValueError("the sample has no output.choices: nothing to take a confidence from")
    logprobs = choices[0].get("logprobs") if isinstance(choices[0], Mapping) else None
    content = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    if not isinstance(content, list) or not content:
        raise ValueError(
            "the sample has no output.choices[0].logprobs: run the eval with logprobs "
            "(--logprobs) on a model that returns them"
        )
    return content


def _logprobs(content: list[Any]) -> list[float]:
    values = []
    for j, token in enumerate(content):
        what = f"output.choices[0].logprobs.content[{j}]"
        if not isinstance(token, Mapping):
            raise ValueError(f"{what} is {json_type(token)}, expected an object")
        values.append(token_logprob(token.get("logprob"), f"{what}.logprob"))
    return values
