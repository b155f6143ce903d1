"""A row's per-token log-probabilities beside its bytes and words.

A sequence's counts are those of its scored tokens (:func:`~calibcli.io.rows.check_scored`).
The one token a count may leave out unsaid is the first, unscored for want of context (the
leading ``null`` of OpenAI's echo and vLLM's ``prompt_logprobs``): bytes and words then count
the text after it. A ``null`` after the first position is a token of the text without a score,
whose NLL the row leaves out; bytes or words given beside it would still count that token's
text, and bits per byte or word perplexity would come out low by that token's share, unsaid.
Such a row is refused, naming the first such position: a row whose counts do leave those
tokens out gives its list without them (a null adds nothing to the NLL or the tokens). The
check holds for every row that carries the list (``--logprobs-field``): rows of the
``logprobs`` format, and native or sums rows giving it beside their totals.
"""

from __future__ import annotations

from typing import Any

from calibcli.io.logprob_rows import ListBeside
from calibcli.io.rows import show


class CountedList(ListBeside):
    """:class:`~calibcli.io.logprob_rows.ListBeside` of a
    :class:`~calibcli.io.rows.PerplexityRow` (``spec``), which also refuses bytes or words
    above 0 given beside a null after the list's first position (the module docstring)."""

    def __init__(self, spec: Any) -> None:
        super().__init__(spec.logprobs_field, spec.nll_field, spec.count_fields["tokens"])
        self.spec = spec

    def check(self, obj: dict, read: tuple | None = None) -> None:
        """ValueError when the row's list disagrees with a total or a count the row gives, or
        leaves a token after the first unscored beside bytes or words. ``read``: ``(nll,
        tokens, nulls)`` of the list when the caller has read it already."""
        super().check(obj, read)
        if read is not None and not read[2]:
            return  # a list without nulls
        values = self.listed(obj)
        if not values:
            return
        try:
            inside = values.index(None, 1)
        except ValueError:
            return  # no null after the first position
        if values.count(None) == len(values):
            return  # no scored token: check_scored names the counts given to it
        counts = self.spec.optional(obj)
        given = [(kind, v) for kind, v in zip(("bytes", "words"), counts, strict=True) if v]
        if not given:
            return
        kind, value = given[0]
        name = self.spec.count_fields[kind]
        raise ValueError(
            f"{name} {show(value)} with {self.field}[{inside}] null: the {kind} of a sequence "
            "must be those of its scored tokens, and a null after the first position is a "
            f"token of the text left unscored (its NLL missing, its {kind} counted): if the "
            f"{name} field counts none of those tokens, drop their nulls from the list, else "
            f"leave {name} out"
        )
