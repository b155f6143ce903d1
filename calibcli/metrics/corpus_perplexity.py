"""Corpus perplexity: perplexity, mean NLL and bits per token from per-sequence summed NLL.

Pure numpy: no I/O, no printing. Conventions:

* Logarithms are natural; NLL is in nats. ``bits = nats / ln 2``.
* Perplexity is token-weighted: ``exp(Σ NLL_i / Σ tokens_i)`` over sequences, never a mean of
  per-sequence perplexities. A zero-probability token (NLL ``+inf``) makes perplexity ``+inf``;
  nothing is clamped to an epsilon.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from calibcli.metrics.validation import as_vector, first_bad

__all__ = ["PerplexityResult", "bits_per_unit", "perplexity"]

LN2 = math.log(2.0)
_MAX_EXP_ARG = 709.782712893384  # math.exp overflows above this
_MAX_COUNT = 1 << 62  # the largest token count: int64 sums of its 31-bit halves stay exact
_HALF = 31


def _exp(x: float) -> float:
    if math.isnan(x):
        return math.nan
    return math.inf if x > _MAX_EXP_ARG else math.exp(x)


def _as_nll(values: object) -> np.ndarray:
    arr = as_vector(values, "neg_log_probs")
    if arr.dtype == bool or (arr.size and arr.dtype.kind not in "iuf"):
        raise ValueError(f"neg_log_probs must be numbers, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    bad = ~(arr >= 0.0)  # NaN and negatives (incl. -inf); +inf is valid
    if bad.any():
        i = first_bad(bad)
        v = arr[i].item()
        why = "is NaN" if math.isnan(v) else "is negative (a log-probability, not its negation?)"
        raise ValueError(f"neg_log_probs[{i}] = {v!r} {why}")
    return arr


def _as_tokens(values: object) -> np.ndarray:
    arr = as_vector(values, "token_counts")
    if arr.dtype == bool or (arr.size and arr.dtype.kind not in "iuf"):
        raise ValueError(f"token_counts must be non-negative integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        bad = ~(np.isfinite(arr) & (arr == np.floor(arr)) & (arr >= 0))
        if bad.any():
            i = first_bad(bad)
            raise ValueError(f"token_counts[{i}] = {arr[i].item()!r} is not a non-negative integer")
    elif arr.size and arr.min() < 0:
        i = first_bad(arr < 0)
        raise ValueError(f"token_counts[{i}] = {arr[i].item()!r} is not a non-negative integer")
    big = arr > _MAX_COUNT  # also before the cast: a larger one would wrap around in int64
    if big.any():
        i = first_bad(big)
        raise ValueError(f"token_counts[{i}] = {arr[i].item()!r} is larger than 2**62")
    return arr.astype(np.int64, copy=False)


def _total(tokens: np.ndarray) -> int:
    """Σ tokens, exact: the high and low 31-bit halves summed apart (an int64 sum of the counts
    themselves wraps around past 2**63)."""
    return (int(np.sum(tokens >> _HALF)) << _HALF) + int(np.sum(tokens & ((1 << _HALF) - 1)))


def bits_per_unit(total_nll: float, units: int) -> tuple[float, float]:
    """(perplexity per unit, bits per unit) for a pooled NLL over ``units`` tokens/bytes/words.

    ``exp(total_nll / units)`` and ``total_nll / units / ln 2``; NaN for zero units.
    """
    if not units:
        return math.nan, math.nan
    mean = total_nll / units
    return _exp(mean), mean / LN2


@dataclass(frozen=True)
class PerplexityResult:
    """Corpus perplexity from per-sequence summed NLL (nats) and token counts.

    perplexity = exp(total_nll / total_tokens); mean_nll in nats per token;
    bits_per_token = mean_nll / ln 2. Zero total tokens gives NaN for the three ratios.
    """

    perplexity: float
    mean_nll: float
    total_nll: float
    total_tokens: int
    sequences: int
    bits_per_token: float

    @classmethod
    def from_totals(cls, total_nll: float, total_tokens: int, sequences: int) -> PerplexityResult:
        total_nll = float(total_nll)
        total_tokens = int(total_tokens)
        if math.isnan(total_nll) or total_nll < 0:
            raise ValueError(f"total_nll = {total_nll!r} must be a number >= 0")
        if total_tokens < 0:
            raise ValueError(f"total_tokens = {total_tokens!r} must be >= 0")
        if total_tokens == 0 and total_nll > 0:
            raise ValueError(f"total_nll = {total_nll!r} over 0 tokens")
        ppl, bits = bits_per_unit(total_nll, total_tokens)
        mean = total_nll / total_tokens if total_tokens else math.nan
        return cls(ppl, mean, total_nll, total_tokens, int(sequences), bits)

    @classmethod
    def from_token_nll(cls, neg_log_probs: object, token_counts: object) -> PerplexityResult:
        """Validate per-sequence (summed NLL, token count) pairs and pool them."""
        nll = _as_nll(neg_log_probs)
        tokens = _as_tokens(token_counts)
        if nll.shape[0] != tokens.shape[0]:
            raise ValueError(
                f"neg_log_probs and token_counts differ in length: "
                f"{nll.shape[0]} != {tokens.shape[0]}"
            )
        bad = (tokens == 0) & (nll > 0)
        if bad.any():
            i = first_bad(bad)
            raise ValueError(f"sequence {i} has neg_log_probs = {nll[i].item()!r} but 0 tokens")
        try:
            total = math.fsum(nll) if not np.isinf(nll).any() else math.inf
        except OverflowError:  # finite NLLs whose sum passes the largest double
            total = math.inf
        return cls.from_totals(total, _total(tokens), nll.shape[0])


def perplexity(neg_log_probs: object, token_counts: object) -> float:
    """Corpus perplexity exp(Σ NLL / Σ tokens); +inf if any NLL is +inf or their sum passes the
    largest double; NaN for zero tokens."""
    return PerplexityResult.from_token_nll(neg_log_probs, token_counts).perplexity
