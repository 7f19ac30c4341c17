"""The statistics of an evaluation: rates with Wilson intervals, means with bootstrap intervals,
and pass^k / pass@k over repeated trials of one seed.

The Wilson interval is SciPy's (``binomtest(...).proportion_ci(method="wilson")``), computed
by its formula directly: ``binomtest`` would also search for a p-value nobody reads, which cost
an evaluation's summary more than the rest of it. Means take SciPy's ``bootstrap``. The tests
check both against hand-computed values, and the rate against SciPy's to the last bit.

pass^k follows the τ-bench convention: for a seed tried ``n`` times with ``c`` successes,
``C(c, k) / C(n, k)`` is the chance that ``k`` trials drawn without replacement *all* succeed;
pass^k is its mean over seeds. pass@k, ``1 - C(n - c, k) / C(n, k)``, is the chance that *at
least one* does. A deterministic policy has pass^k = pass^1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95


@dataclass(frozen=True, slots=True)
class Estimate:
    """A point estimate with its interval (``nan`` bounds when there is no data)."""

    value: float
    low: float
    high: float

    def to_dict(self) -> dict[str, float | None]:
        """JSON form (``None`` for ``nan``)."""
        return {
            k: (None if math.isnan(v) else v)
            for k, v in (("value", self.value), ("low", self.low), ("high", self.high))
        }


NAN = Estimate(math.nan, math.nan, math.nan)


def rate(successes: int, n: int, confidence: float = CONFIDENCE) -> Estimate:
    """``successes / n`` with its Wilson score interval (Newcombe 1998, as SciPy computes it:
    the same operations in the same order, so the same bits).
    """
    if n <= 0:
        return NAN
    from scipy.special import ndtri

    k, n = int(successes), int(n)
    p = k / n
    z = ndtri(0.5 + 0.5 * confidence)
    denom = 2 * (n + z**2)
    centre = (2 * n * p + z**2) / denom
    delta = z / denom * math.sqrt(4 * n * p * (1 - p) + z**2)
    low = 0.0 if k == 0 else centre - delta
    high = 1.0 if k == n else centre + delta
    return Estimate(p, float(low), float(high))


def mean(
    values: Sequence[float], confidence: float = CONFIDENCE, seed: int = 0, resamples: int = 2000
) -> Estimate:
    """The mean of ``values`` with a percentile bootstrap interval (seeded: reproducible)."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return NAN
    centre = float(data.mean())
    if data.size == 1 or np.all(data == data[0]):
        return Estimate(centre, centre, centre)
    from scipy.stats import bootstrap

    ci = bootstrap(
        (data,),
        np.mean,
        confidence_level=confidence,
        n_resamples=resamples,
        method="percentile",
        rng=np.random.default_rng(seed),
    ).confidence_interval
    return Estimate(centre, float(ci.low), float(ci.high))


def pass_hat_k(trials: Sequence[tuple[int, int]], k: int) -> float:
    """pass^k: the mean over seeds of ``C(c, k) / C(n, k)``, for ``(n, c)`` per seed.

    Seeds with fewer than ``k`` trials are left out; ``nan`` when none is left.
    """
    terms = [math.comb(c, k) / math.comb(n, k) for n, c in trials if n >= k >= 1]
    return float(np.mean(terms)) if terms else math.nan


def pass_at_k(trials: Sequence[tuple[int, int]], k: int) -> float:
    """pass@k: the mean over seeds of ``1 - C(n - c, k) / C(n, k)``, for ``(n, c)`` per seed."""
    terms = [1 - math.comb(n - c, k) / math.comb(n, k) for n, c in trials if n >= k >= 1]
    return float(np.mean(terms)) if terms else math.nan
