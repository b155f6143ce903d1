"""Per-token log-probabilities: a plain list, OpenAI responses, vLLM outputs.

Every function returns :class:`~calibcli.formats.fields.PerplexityRow` values (nats) and raises
ValueError naming the offending position. Conventions shared by all of them:

- ``null`` entries are skipped and counted in ``nulls``: anywhere in a plain list
  (:func:`logprobs_row`), only at the first position in OpenAI and vLLM output, where the
  first token has no context and goes unscored (OpenAI ``echo``, vLLM ``prompt_logprobs``); a
  null after it is a missing score and raises ValueError;
- ``-inf`` is a zero-probability token (the NLL becomes ``inf``);
- finite values <= -9999 are API sentinels for "not in the top-k": counted in ``sentinels`` and
  summed as given, so the caller can warn that the NLL is inflated by them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from calibcli.formats.fields import (
    PerplexityRow,
    json_type,
    lookup,
    sum_logprobs,
    token_logprob,
)


def logprobs_row(row: Mapping[str, Any], *, field: str = "logprobs") -> tuple[float, int, int, int]:
    """``(nll, tokens, nulls, sentinels)`` of a row of per-token natural-log probabilities.

    ``row[field]`` (``field`` may be a dotted path, e.g. ``logprobs.token_logprobs``) is a list of
    numbers or nulls. nll = -sum of the numbers (``math.fsum``); tokens = how many numbers.
    A value > 0, NaN, or anything but a number or null raises ValueError naming its index.
    """
    values = lookup(row, field)
    if not isinstance(values, list):
        raise ValueError(f"{field!r} is {json_type(values)}, expected a list of numbers or nulls")
    kept, nulls = _kept(values, field)
    result = sum_logprobs(kept, nulls, None)
    return result.nll, result.tokens or 0, result.nulls, result.sentinels


# --------------------------------------------------------------------------- OpenAI


def openai_rows(obj: Mapping[str, Any]) -> list[PerplexityRow]:
    """One :class:`PerplexityRow` per choice of an OpenAI response with logprobs.

    ``obj`` is a chat completion (``choices[i].logprobs.content[j].logprob``), a legacy
    completion (``choices[i].logprobs.token_logprobs``, whose first entry is null with
    ``echo=True``), or a Batch API output line ``{"custom_id", "response": {"status_code",
    "body": <completion>}, "error"}``. Each choice is its own sampled sequence, so each gives a
    row, in the order of ``choices``; pooled totals are the same as one row per response. A
    completion that echoes its prompt (``echo=True``) gives the prompt's tokens alone, each
    prompt once however many choices echo it (:func:`_echoed_prompts`).

    ``bytes`` is the sum of ``len(content[j].bytes)`` for chat logprobs when every token carries
    its byte list, else ``None`` (legacy completions log no bytes); the perplexity reader takes
    the counts --bytes-field and --words-field name beside a one-choice response, bytes that
    must agree with the tokens'. A batch line with an error or a status other than 200, a
    choice without logprobs, a legacy ``token_logprobs`` null after the first position (a
    missing score) or a chat token whose ``bytes`` is null raise ValueError.

    A choice the content filter stopped (``finish_reason`` ``"content_filter"``) gives no row
    and is not read: the filter cut its text, so its logprobs are not those of the text the
    model would have written (:func:`content_filtered` counts them). A completion that echoes
    its prompt keeps such a choice, its row being the prompt's tokens, which the filter does
    not cut.
    """
    body = openai_body(obj)
    choices = _choices(body)
    left_out = _filtered_choices(choices)
    rows = [_openai_choice(choice, i) for i, choice in enumerate(choices) if i not in left_out]
    if left_out:
        return rows
    return _echoed_prompts(body, choices, rows)


#: the ``finish_reason`` of a choice the content filter stopped
CONTENT_FILTER = "content_filter"


def content_filtered(obj: Mapping[str, Any]) -> int:
    """How many choices of an OpenAI response (or Batch API output line) :func:`openai_rows`
    leaves out, the content filter having stopped them; ValueError as it raises."""
    return len(_filtered_choices(_choices(openai_body(obj))))


def _choices(body: Mapping[str, Any]) -> list:
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ValueError(f"'choices' is {json_type(choices)}, expected a non-empty list")
    return choices


def _filtered_choices(choices: list) -> set[int]:
    """The indices of the choices the content filter stopped, unless a choice echoes its
    prompt (a legacy completion's first logprob null): an echoed prompt is scored whole."""
    found = {
        i
        for i, choice in enumerate(choices)
        if isinstance(choice, Mapping) and choice.get("finish_reason") == CONTENT_FILTER
    }
    if found and any(_echoes(choice) for choice in choices):
        return set()
    return found


def _echoes(choice: Any) -> bool:
    """Whether a choice, checked or not, holds legacy logprobs whose first entry is null, as
    :func:`_echoed` reads them."""
    logprobs = choice.get("logprobs") if isinstance(choice, Mapping) else None
    if not isinstance(logprobs, Mapping) or isinstance(logprobs.get("content"), list):
        return False
    values = logprobs.get("token_logprobs")
    return isinstance(values, list) and bool(values) and values[0] is None


def openai_body(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The completion object itself, unwrapped from a Batch API output line when it is one."""
    if "custom_id" not in obj or "response" not in obj:
        return obj
    custom_id = obj.get("custom_id")
    error = obj.get("error")
    response = obj.get("response")
    if error:
        message = error.get("message", error) if isinstance(error, Mapping) else error
        raise ValueError(f"batch request {custom_id!r} failed: {message}")
    if not isinstance(response, Mapping):
        raise ValueError(f"batch request {custom_id!r} has 'response' {json_type(response)}")
    status = response.get("status_code")
    if status != 200:
        raise ValueError(f"batch request {custom_id!r} has status_code {status!r}, not 200")
    body = response.get("body")
    if not isinstance(body, Mapping):
        raise ValueError(f"batch request {custom_id!r} has 'response.body' {json_type(body)}")
    return body


def _openai_choice(choice: Any, i: int) -> PerplexityRow:
    where = f"choices[{i}]"
    if not isinstance(choice, Mapping):
        raise ValueError(f"{where} is {json_type(choice)}, expected an object")
    logprobs = choice.get("logprobs")
    if not isinstance(logprobs, Mapping):
        raise ValueError(
            f"{where}.logprobs is {json_type(logprobs)}: request the completion with "
            "logprobs=true (chat) or logprobs=0 (completions)"
        )
    if isinstance(logprobs.get("content"), list):
        content = logprobs["content"]
        values, nbytes = [], 0
        for j, token in enumerate(content):
            what = f"{where}.logprobs.content[{j}]"
            if not isinstance(token, Mapping) or "logprob" not in token:
                raise ValueError(f"{what} is {json_type(token)}, expected an object with logprob")
            values.append(token_logprob(token["logprob"], f"{what}.logprob"))
            raw = token.get("bytes")
            if raw is None and "bytes" in token:
                # the API writes null for a token without a byte representation: the sequence's
                # byte count is unknown, which the pooling (bytes on every row or on none) could
                # only call a missing field, so the token is named here
                raise ValueError(
                    f"{what}.bytes is null: the token's bytes, and so the sequence's byte "
                    "count, are unknown"
                )
            if isinstance(raw, list) and nbytes is not None:
                nbytes += len(raw)
            else:
                nbytes = None
        return sum_logprobs(values, 0, nbytes)
    if "token_logprobs" in logprobs:
        values = logprobs["token_logprobs"]
        what = f"{where}.logprobs.token_logprobs"
        if not isinstance(values, list):
            raise ValueError(f"{what} is {json_type(values)}, expected a list")
        kept, nulls = _kept(values, what, first_only=True)
        return sum_logprobs(kept, nulls, None)
    raise ValueError(
        f"{where}.logprobs has neither 'content' (chat completions) nor 'token_logprobs' "
        "(legacy completions)"
    )


def _echoed_prompts(
    body: Mapping[str, Any], choices: list, rows: list[PerplexityRow]
) -> list[PerplexityRow]:
    """The rows of a legacy completion that echoes its prompts: each prompt's tokens, once.

    With ``echo=True`` a choice's ``token_logprobs`` are its prompt's (the first null) and then
    those of the tokens the model generated after it: lm-evaluation-harness asks for one
    (``max_tokens=1``) and drops it. Those are the model's own samples, not the text scored,
    so a row holds its prompt's tokens alone, cut where ``usage.prompt_tokens`` (each prompt
    counted once) says the prompt ends. OpenAI and vLLM give each of a prompt's ``n`` samples
    its own choice, the prompt echoed into every one and the choices of a prompt next to each
    other: a prompt gives one row however many choices echo it.

    ``usage.prompt_tokens`` settles one choice or one prompt's ``n`` choices (cut where it
    says), every choice's positions together (nothing generated, ``max_tokens=0``: each
    choice a prompt whole), and runs of ``n`` choices that agree on exactly their prompt's
    tokens, their lengths summing to it. The rest raises ValueError rather than count
    generated tokens as the prompt's: several prompts whose generated tokens usage only sums
    (a batch of prompts at ``n`` = 1, or samples sharing generated tokens), more prompt tokens
    counted than echoed, and choices the API finished (``finish_reason`` set) without usage,
    where ``max_tokens=1`` cannot be told from ``max_tokens=0``. Choices with neither
    ``finish_reason`` nor usage (logprobs taken out of a response) are read as prompts whole,
    consecutive equal choices being one prompt's samples and giving one row.
    """
    echoed = [_echoed(choice) for choice in choices]
    plain = [i for i, s in enumerate(echoed) if s is None]
    if len(plain) == len(echoed):  # chat logprobs, or completions that do not echo
        return rows
    if plain:
        first = next(i for i, s in enumerate(echoed) if s is not None)
        raise ValueError(
            f"choices[{first}] echoes its prompt (its first logprob null) and choices"
            f"[{plain[0]}] does not, so the choices are not one request's and where a prompt "
            "ends is not known"
        )
    echoes = [s for s in echoed if s is not None]
    prompts = _echo_lengths(body, choices, echoes)
    if prompts is None:
        return [row for i, row in enumerate(rows) if i == 0 or echoes[i] != echoes[i - 1]]
    if not prompts:
        return rows
    n = len(echoes) // len(prompts)
    kept: list[PerplexityRow] = []
    for k, prompt in enumerate(prompts):
        head = echoes[k * n][:prompt]
        values = [value for _, value in head if value is not None]
        kept.append(sum_logprobs(values, len(head) - len(values), None))
    return kept


def _echo_lengths(
    body: Mapping[str, Any], choices: list, echoed: list[list[tuple[Any, float | None]]]
) -> list[int] | None:
    """Each prompt's length in positions, its choices being runs of equal size in order; ``[]``
    when every choice is a prompt whole (nothing generated), None without usage where the
    choices hold no sign of having generated. ValueError where the ends are not known."""
    usage = body.get("usage")
    counted = usage.get("prompt_tokens") if isinstance(usage, Mapping) else None
    if type(counted) is not int or counted < 1:
        for i, choice in enumerate(choices):
            if choice.get("finish_reason") is not None:
                raise ValueError(
                    f"choices[{i}] echoes its prompt and has finish_reason "
                    f"{choice['finish_reason']!r}, and no usage.prompt_tokens says where the "
                    "prompt ends and any generated tokens begin: keep the response's usage"
                )
        return None
    total = sum(len(s) for s in echoed)
    if counted == total:
        return []
    if counted > total:
        raise ValueError(
            f"usage.prompt_tokens counts {counted} prompt tokens, more than the {total} "
            "positions the choices echo, so the echo is not the prompt's tokens"
        )
    m = len(echoed)
    if m == 1:
        return [counted]
    for n in range(m, 1, -1):
        if m % n:
            continue
        shared = [_shared_length(echoed[k : k + n]) for k in range(0, m, n)]
        if len(shared) == 1 and shared[0] >= counted:
            return [counted]
        if len(shared) > 1 and min(shared) > 0 and sum(shared) == counted:
            return shared
        if len(shared) > 1 and min(shared) > 0 and len(shared) <= counted < sum(shared):
            # each prompt ends somewhere in its run's shared tokens, and only the sum is known
            raise ValueError(
                f"the response's n={n} choices of {len(shared)} prompts share generated "
                f"tokens ({sum(shared)} shared leading tokens, usage.prompt_tokens {counted}), "
                f"so where each prompt ends is not known: {_ONE_PROMPT}"
            )
    made = _generated_alike(usage, counted, choices, echoed)
    if made is not None:
        return [len(s) - made for s in echoed]
    raise ValueError(
        f"usage.prompt_tokens counts {counted} prompt tokens for {m} choices that echo {total} "
        "positions, and no run of choices shares a prompt that fits it, so where each prompt "
        f"ends and its generated tokens begin is not known: {_ONE_PROMPT}"
    )


def _generated_alike(
    usage: Mapping[str, Any], counted: int, choices: list, echoed: list
) -> int | None:
    """How many tokens each choice generated when every one stopped at ``max_tokens``
    (``finish_reason`` "length", as lm-evaluation-harness's batches of prompts at
    ``max_tokens=1`` do): ``usage.completion_tokens`` split evenly, each choice then keeping a
    prompt of at least one position and the prompts summing to ``counted``; None when the
    choices may have generated unequal counts or usage does not add up to the echoed positions."""
    made = usage.get("completion_tokens")
    if type(made) is not int or made < 1 or made % len(choices):
        return None
    if any(choice.get("finish_reason") != "length" for choice in choices):
        return None
    each = made // len(choices)
    if sum(len(s) for s in echoed) != counted + made:
        return None
    return each if all(len(s) > each for s in echoed) else None


#: what a request whose echoed prompts can be told apart sends
_ONE_PROMPT = (
    "send one prompt per request, or max_tokens=0 (logprobs without echo would score the "
    "completions instead)"
)


def _echoed(choice: Mapping[str, Any]) -> list[tuple[Any, float | None]] | None:
    """A legacy choice's ``(token, logprob)`` pairs when it echoes its prompt (its first
    logprob null), the token None where ``tokens`` is not logged; None for any other choice.
    Called on choices :func:`_openai_choice` has checked."""
    logprobs = choice["logprobs"]
    values = logprobs.get("token_logprobs")
    if isinstance(logprobs.get("content"), list) or not values or values[0] is not None:
        return None
    tokens = logprobs.get("tokens")
    if not isinstance(tokens, list) or len(tokens) != len(values):
        tokens = [None] * len(values)
    return [
        (token, None if value is None else float(value))
        for token, value in zip(tokens, values, strict=True)
    ]


def _shared_length(run: list[list[tuple[Any, float | None]]]) -> int:
    """How many leading positions every choice of ``run`` holds alike."""
    first = run[0]
    length = min(len(choice) for choice in run)
    for choice in run[1:]:
        length = next((j for j in range(length) if choice[j] != first[j]), length)
    return length


# --------------------------------------------------------------------------- vLLM


def vllm_rows(obj: Mapping[str, Any], *, part: str = "prompt") -> list[PerplexityRow]:
    """Perplexity rows of a vLLM output: the prompt's tokens or each generated output's.

    ``part="prompt"`` (one row): ``prompt_logprobs[i]`` maps token ids (JSON keys, so strings)
    to ``{"logprob", "rank", "decoded_token"}``; the token scored at position ``i`` is
    ``prompt_token_ids[i]``, looked up by its id, not the rank-1 entry. The leading null (the
    first token has no context) counts in ``nulls``; a null elsewhere is an error. Without
    ``prompt_token_ids`` each position must hold exactly one entry (``prompt_logprobs=0``). The
    fields are read at the top level (``LLM.generate`` outputs) or, for a response of vLLM's
    OpenAI-compatible server, in each of ``choices[]``: one row per prompt, not per choice (see
    :func:`_server_prompt_rows`).

    ``part="outputs"`` (one row per ``outputs[k]``): ``outputs[k].logprobs[j]`` scored at
    ``outputs[k].token_ids[j]`` the same way. Each output is its own sampled completion, a
    distinct sequence, so the ``n`` samples of one prompt give ``n`` rows.

    ``bytes`` is ``None``: ``decoded_token`` is not a faithful byte count for tokens that split
    a UTF-8 character. (The perplexity reader takes bytes and words from the fields
    --bytes-field and --words-field name beside a one-sequence output.)
    """
    if part == "prompt":
        if "prompt_logprobs" not in obj and isinstance(obj.get("choices"), list):
            return _server_prompt_rows(obj)
        return [_scored_by_id(obj, "prompt_logprobs", "prompt_token_ids", "")]
    if part == "outputs":
        outputs = obj.get("outputs")
        if not isinstance(outputs, list) or not outputs:
            raise ValueError(f"'outputs' is {json_type(outputs)}, expected a non-empty list")
        return [
            _scored_by_id(out, "logprobs", "token_ids", f"outputs[{k}].")
            for k, out in enumerate(outputs)
        ]
    raise ValueError(f"part must be 'prompt' or 'outputs', not {part!r}")


def _server_prompt_rows(obj: Mapping[str, Any]) -> list[PerplexityRow]:
    """The prompt rows of a vLLM server response: one per prompt, however many choices it has.

    The server gives each of a prompt's ``n`` samples its own choice and copies the prompt's
    ``prompt_logprobs`` (and ``prompt_token_ids``) into every one of them, the ``n`` choices of
    a prompt next to each other; a batch request's prompts follow one another the same way. So
    a choice holding the same prompt as the choice before it is that prompt again and gives no
    row (scored ``n`` times, each prompt token would count ``n`` times); a choice whose prompt
    differs starts a row of its own. A batch that sends one prompt twice in a row, at ``n`` = 1,
    gives two equal choices that are two requests: ``usage.prompt_tokens`` (the server counts
    each prompt once) then equals the positions of every choice together, and each choice keeps
    its row. (One prompt sent twice in a row at ``n`` > 1 cannot be told from one prompt's
    samples: it gives one row.)
    """
    choices = obj["choices"]
    for i, choice in enumerate(choices):
        if not isinstance(choice, Mapping):
            raise ValueError(f"choices[{i}] is {json_type(choice)}, expected an object")
    usage = obj.get("usage")
    counted = usage.get("prompt_tokens") if isinstance(usage, Mapping) else None
    positions = [c.get("prompt_logprobs") for c in choices]
    each_own = isinstance(counted, int) and counted == sum(
        len(p) if isinstance(p, list) else 0 for p in positions
    )
    rows: list[PerplexityRow] = []
    previous: tuple[Any, Any] | None = None
    for i, choice in enumerate(choices):
        prompt = (choice.get("prompt_logprobs"), choice.get("prompt_token_ids"))
        if each_own or prompt != previous:
            rows.append(
                _scored_by_id(choice, "prompt_logprobs", "prompt_token_ids", f"choices[{i}].")
            )
        previous = prompt
    return rows


def _scored_by_id(obj: Any, field: str, ids_field: str, prefix: str) -> PerplexityRow:
    if not isinstance(obj, Mapping):
        raise ValueError(f"{prefix.rstrip('.')} is {json_type(obj)}, expected an object")
    positions = obj.get(field)
    if not isinstance(positions, list):
        raise ValueError(
            f"{prefix}{field} is {json_type(positions)}, expected a list (request it with "
            f"SamplingParams({'prompt_logprobs' if field == 'prompt_logprobs' else 'logprobs'}=0))"
        )
    ids = obj.get(ids_field)
    if ids is not None and (not isinstance(ids, list) or len(ids) != len(positions)):
        shown = f"{len(ids)} ids" if isinstance(ids, list) else json_type(ids)
        raise ValueError(f"{prefix}{ids_field} has {shown} for {len(positions)} {field} positions")
    values, nulls = [], 0
    for i, candidates in enumerate(positions):
        what = f"{prefix}{field}[{i}]"
        if candidates is None:
            # vLLM leaves only the prompt's first token unscored (it has no context): a null
            # elsewhere is a token whose score is missing, not one to leave out unsaid
            if i > 0 or field != "prompt_logprobs":
                raise ValueError(
                    f"{what} is null: vLLM scores every position but the prompt's first, so "
                    "a token's log-probability is missing"
                )
            nulls += 1
            continue
        if not isinstance(candidates, Mapping):
            raise ValueError(f"{what} is {json_type(candidates)}, expected an object or null")
        if ids is None:
            if len(candidates) != 1:
                raise ValueError(
                    f"{what} holds {len(candidates)} candidate tokens and there is no "
                    f"{ids_field} to tell which one was scored"
                )
            (entry,) = candidates.values()
            token = next(iter(candidates))
        else:
            token = ids[i]
            entry = candidates.get(str(token), candidates.get(token))  # type: ignore[call-overload]
            if entry is None:
                raise ValueError(
                    f"{what} has no entry for the scored token {ids_field}[{i}] = {token!r} "
                    f"(keys: {', '.join(map(str, list(candidates)[:8]))})"
                )
        if isinstance(entry, Mapping):
            entry = entry.get("logprob")
        values.append(token_logprob(entry, f"{what}[{str(token)!r}].logprob"))
    return sum_logprobs(values, nulls, None)


# --------------------------------------------------------------------------- helpers


def _kept(values: list, field: str, *, first_only: bool = False) -> tuple[list[float], int]:
    """The numbers of ``values`` and how many nulls were skipped; with ``first_only`` a null
    after position 0 (the unscored first token of an echoed prompt) raises ValueError."""
    kept: list[float] = []
    nulls = 0
    for i, v in enumerate(values):
        if v is None:
            if first_only and i > 0:
                raise ValueError(
                    f"{field}[{i}] is null: only an echoed prompt's first token goes unscored, "
                    "so a token's log-probability is missing"
                )
            nulls += 1
        elif isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"{field}[{i}] is {json_type(v)}, expected a number or null")
        else:
            kept.append(token_logprob(v, f"{field}[{i}]"))
    return kept, nulls
