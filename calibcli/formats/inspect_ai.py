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
import functools
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

# How inspect-ai's multiple_choice solver finds the answer it grades (parse_answers, in
# inspect_ai/solver/_multiple_choice.py): it first unwraps answers written $X$, **X** and
# (X), each pattern once over the text the one before it left (each beside a cheaper search
# that any text it matches holds a match of)...
_UNWRAPS = (
    (re.compile(r"\$\s*([A-Za-z\d][A-Za-z\d ,]*?)\s*\$"), (1,), re.compile(r"\$")),
    (re.compile(r"\*\*\s*([A-Za-z\d][A-Za-z\d ,]*?)\s*\*\*"), (1,), re.compile(r"\*\*")),
    (
        re.compile(r"(?i)(^|[:,])(\s*)\(([A-Za-z\d])\)(?=\s*(?:,|\.|\n|\Z))"),
        (1, 2, 3),
        re.compile(r"\([A-Za-z\d]\)"),
    ),
)
# ... then takes the last line that starts with "ANSWER:" and holds only letters, digits,
# blanks and commas up to its end or a full stop; with no such line, the last "ANSWER:"
# anywhere followed by such a run and then a character that is not a word's. The run, its
# ends' blanks stripped, must be one option's character ("A" for the first, "1" for the
# 27th) in either case, with nothing beside it but commas.
_ANSWER_LINE = re.compile(r"(?i)^ANSWER\s*:\s*([A-Za-z\d ,]+)\s*(?:$|\n|\.)", re.MULTILINE)
_ANSWER_ANYWHERE = re.compile(r"(?i)ANSWER\s*:\s*([A-Za-z\d ,]+)(?:[^\w]|\n|$|\.)")

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
      inspect-ai's ``multiple_choice`` solver logs them) whose completion names one option's
      letter X the way the solver grades it (:func:`graded_answer`: the last line opening with
      ``ANSWER:``, ``ANSWER: b``, ``(B)``, ``**B**``, ``$B$``): the probability of the token
      that carries the letter X, so that the confidence is that of the letter graded. The
      token carrying it may hold a wrapper's characters too (``(B``), and its probability is
      the confidence all the same. The tokens before it (``ANSWER``, ``:``) are near-certain
      and say nothing about the choice.
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
                "X one of the sample's choices, as inspect-ai's multiple_choice solver grades "
                "it (a list of letters, 'ANSWER: A, C', is no one answer)"
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
    """Index in ``content`` of the token carrying the letter of a multiple-choice sample's
    answer that inspect-ai's solver grades (:func:`graded_answer`), or None where the rule does
    not apply (no ``choices``, no answer graded)."""
    choices = sample.get("choices")
    if not isinstance(choices, list) or not choices:
        return None
    texts = [t.get("token") if isinstance(t, Mapping) else None for t in content]
    return answer_index(len(choices), texts)


def answer_index(options: int, texts: list[Any]) -> int | None:
    """:func:`answer_token` from the number of the sample's options (at least one) and the
    completion's token texts: None unless every text is a string, and where the letter the
    solver grades (:func:`graded_answer`) spans more than one token."""
    try:
        completion = "".join(texts)
    except TypeError:  # a text that is not a string
        return None
    found = graded_answer(completion, options)
    if found is None:
        return None
    # the token holding the answer's first character, alone ("B") or with a wrapper's
    # characters ("(B", "**B"), and its last
    ends = list(itertools.accumulate(map(len, texts)))
    first = bisect.bisect_right(ends, found[0])
    return first if bisect.bisect_right(ends, found[1] - 1) == first else None


def graded_answer(completion: str, options: int) -> tuple[int, int] | None:
    """Where in ``completion`` the one answer stands that inspect-ai's ``multiple_choice``
    solver grades for a question of ``options`` options (``parse_answers``, one answer):
    ``(start, end)`` of its letter (or number, past 26 options), or None when it grades none
    (no answer line; two letters, ``ANSWER: A, C``; a letter past the options; a form it
    does not read, ``ANSWER: \\boxed{B}``). The answer line is the last line opening with
    ``ANSWER:``, a note after it naming another letter aside (``ANSWER: A`` then ``the
    answer: D``); ``$B$``, ``**B**`` and ``(B)`` are read as ``B``."""
    text, unwrapped = completion, []
    for pattern, kept, hint in _UNWRAPS:
        if hint.search(text) is not None:
            text, gaps = _unwrap(pattern, kept, text)
            unwrapped.append(gaps)
    matches = list(_ANSWER_LINE.finditer(text)) or list(_ANSWER_ANYWHERE.finditer(text))
    if not matches:
        return None
    found = matches[-1]
    run = found[1].strip()
    start = found.start(1) + len(found[1]) - len(found[1].lstrip())
    pieces = []
    for piece in run.split(","):
        if piece:
            pieces.append((start, piece))
        start += len(piece) + 1
    if len(pieces) != 1:
        return None
    start, piece = pieces[0]
    if piece.upper() not in _option_characters(options):
        return None
    first, last = start, start + len(piece) - 1
    for gaps in reversed(unwrapped):  # back to the completion's positions
        first, last = _before(gaps, first), _before(gaps, last)
    return first, last + 1


def _unwrap(
    pattern: re.Pattern[str], kept: tuple[int, ...], text: str
) -> tuple[str, tuple[list[int], list[int]]]:
    """``pattern.sub`` of ``text`` by the groups ``kept`` of each match, and where it dropped
    characters: the positions in the new text after which characters were dropped, and how
    many had been dropped by then (for :func:`_before`)."""
    out: list[str] = []
    at: list[int] = []
    dropped: list[int] = []
    size = last = 0
    for match in pattern.finditer(text):
        pieces = [text[last : match.start()]]
        cut = match.start()
        for group in kept:
            if match.start(group) > cut:  # the characters before the group are dropped
                size += sum(map(len, pieces))
                out += pieces
                at.append(size)
                dropped.append((dropped[-1] if dropped else 0) + match.start(group) - cut)
                pieces = []
            pieces.append(match[group])
            cut = match.end(group)
        size += sum(map(len, pieces))
        out += pieces
        if match.end() > cut:
            at.append(size)
            dropped.append((dropped[-1] if dropped else 0) + match.end() - cut)
        last = match.end()
    out.append(text[last:])
    return "".join(out), (at, dropped)


def _before(gaps: tuple[list[int], list[int]], position: int) -> int:
    """Where the character at ``position`` of an unwrapped text stood before (``gaps``: what
    :func:`_unwrap` dropped)."""
    at, dropped = gaps
    k = bisect.bisect_right(at, position) - 1
    return position + (dropped[k] if k >= 0 else 0)


@functools.cache
def _option_characters(options: int) -> frozenset[str]:
    """The characters naming ``options`` options, as inspect-ai's ``answer_character`` gives
    them: ``A`` to ``Z``, then ``1``, ``2``, ..."""
    return frozenset(chr(ord("A") + i) if i < 26 else str(i - 25) for i in range(options))


def inspect_prompt_row(
    sample: Mapping[str, Any], *, scorers: tuple[str, ...] = ()
) -> PerplexityRow:
    """The perplexity row of one sample of a perplexity eval: NLL = -sum of
    ``output.choices[0].prompt_logprobs.content[j].logprob`` over the prompt tokens its scorer
    scored (:func:`scored_from`): every one for inspect-ai's ``perplexity`` scorer (and a
    sample scored by neither), the last ``num_tokens`` for ``target_perplexity``. ``scorers``:
    the names of the scorers the log's task was run with (``eval.scorers``), where one of
    ``target_perplexity`` says that a sample without a perplexity score cannot be read. The
    prompt's first token's null logprob, a position no model scores, is skipped and counted;
    bytes are the sum of each scored token's ``bytes`` when every one carries them.
    ValueError when the sample errored or logged no prompt logprobs, when the tokens scored
    cannot be told, and for a token without a logprob or with a null one after the first
    position (a missing score)."""
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
    start = scored_from(sample.get("scores"), len(content), scorers=scorers)
    for j in range(start, len(content)):
        token = content[j]
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


# inspect-ai's perplexity scorers by the names their scores are logged under (a scorer given
# twice is named again with a number: "perplexity1"): ``perplexity`` scores every prompt token,
# ``target_perplexity`` the last ``metadata.num_tokens`` of them (the target's).
_WHOLE_PROMPT = re.compile(r"perplexity\d*")
_PROMPT_END = re.compile(r"target_perplexity\d*")


def scored_from(scores: Any, count: int, *, scorers: tuple[str, ...] = ()) -> int:
    """Where the prompt tokens a sample's perplexity scorer scored start among its ``count``
    prompt logprobs: ``count - N`` for inspect-ai's ``target_perplexity``, which scores the
    last N (``scores.target_perplexity.metadata.num_tokens``), else 0 (``perplexity``, which
    scores every token, or no perplexity scorer). ValueError when N cannot be told (not
    logged, or not a count of 1 to ``count``), and when the sample's scorers score different
    tokens (``perplexity`` and ``target_perplexity``, or two ``target_perplexity`` of
    different N): one figure cannot be both. ``scorers``: see :func:`inspect_prompt_row`;
    naming a ``target_perplexity``, ValueError for a sample without a perplexity score (a log
    written with ``--no-score``), which cannot say N."""
    if not isinstance(scores, Mapping):
        scores = {}
    whole = [name for name in scores if _WHOLE_PROMPT.fullmatch(name)]
    ends = {
        name: _target_tokens(name, scores[name]) for name in scores if _PROMPT_END.fullmatch(name)
    }
    if whole and ends:
        name, tokens = next(iter(ends.items()))
        raise ValueError(
            f"the sample was scored by {whole[0]!r} (every prompt token) and by {name!r} (the "
            f"prompt's last {_tokens(tokens)}), which score different tokens: score the log "
            "with one of them"
        )
    if len(set(ends.values())) > 1:
        said = ", ".join(f"{name} {_tokens(n)}" for name, n in ends.items())
        raise ValueError(
            f"the sample's target_perplexity scorers scored different numbers of the prompt's "
            f"last tokens ({said}): score the log with one of them"
        )
    if not ends:
        task = next((name for name in scorers if _PROMPT_END.fullmatch(name)), None)
        if task is not None and not whole:
            raise ValueError(
                f"the log's task is scored by {task}, which scores the target's last tokens, "
                "and the sample holds no score saying how many (a log written with "
                "--no-score): run `inspect score` on the log first"
            )
        return 0
    name, tokens = next(iter(ends.items()))
    if tokens > count:
        raise ValueError(
            f"scores.{name}.metadata.num_tokens is {tokens}, more than the {count} tokens of "
            "output.choices[0].prompt_logprobs: the tokens it scored cannot be told"
        )
    return count - tokens


def _target_tokens(name: str, score: Any) -> int:
    """How many of the prompt's last tokens a ``target_perplexity`` score says it scored
    (``metadata.num_tokens``); ValueError when it does not say (an unscored sample: inspect-ai
    logs why in ``explanation``)."""
    metadata = score.get("metadata") if isinstance(score, Mapping) else None
    tokens = metadata.get("num_tokens") if isinstance(metadata, Mapping) else None
    if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
        return tokens
    explanation = score.get("explanation") if isinstance(score, Mapping) else None
    why = ""
    if isinstance(explanation, str) and explanation.strip():
        why = f" ({' '.join(explanation.split())[:100]})"
    held = isinstance(metadata, Mapping) and "num_tokens" in metadata
    shown = json_type(tokens) if held else "missing"
    raise ValueError(
        f"scores.{name}.metadata.num_tokens is {shown}{why}: how many of the prompt's last "
        "tokens the target_perplexity scorer scored cannot be told"
    )


def _tokens(count: int) -> str:
    return f"{count} token{'' if count == 1 else 's'}"


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
