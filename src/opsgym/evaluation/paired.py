"""Two policies compared on the same seeds: a paired table and an exact McNemar test.

Two policies evaluated on the same seeds (the same scenario, seed and trial) meet the same
hidden facts, so the seeds where they *disagree* carry the comparison: ``only_a`` where A met the
criterion and B did not, ``only_b`` the other way. Under the hypothesis that neither is better,
each disagreement goes either way with probability 1/2, so the exact two-sided McNemar p-value
is a binomial test of ``only_a`` out of ``only_a + only_b`` (1 when they never disagree).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

CELLS = ("both", "only_a", "only_b", "neither")
"""The four cells of the paired table."""

Key = tuple[str, int, int]
"""What pairs two episodes: ``(scenario, seed, trial)``."""


def mcnemar(only_a: int, only_b: int) -> float:
    """The exact two-sided McNemar p-value of ``only_a`` against ``only_b`` discordant pairs."""
    if only_a < 0 or only_b < 0:
        raise ValueError(f"counts must be >= 0, got only_a={only_a}, only_b={only_b}")
    if only_a + only_b == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(only_a, only_a + only_b, 0.5, alternative="two-sided").pvalue)


def criterion(name: str, safe_outcomes: Iterable[str]) -> Callable[[Mapping[str, Any]], bool]:
    """Whether an episode row meets ``name``: ``accepted`` (the judge accepted), ``safe`` (its
    outcome is one of ``safe_outcomes``) or an outcome's name (its outcome is that one).
    """
    if name == "accepted":
        return lambda row: bool(row["accepted"])
    if name == "safe":
        safe = frozenset(safe_outcomes)
        return lambda row: row["outcome"] in safe
    return lambda row: row["outcome"] == name


def pair(
    a: Iterable[Mapping[str, Any]],
    b: Iterable[Mapping[str, Any]],
    met: Callable[[Mapping[str, Any]], bool],
) -> dict[str, Any]:
    """Pair the episode rows of ``a`` and ``b`` on ``(scenario, seed, trial)`` and count.

    Returns:
        ``{"counts": {cell: n}, "pairs", "unpaired": {"a", "b"}, "p_value", "rows"}``; each
        row is ``{"scenario", "seed", "trial", "cell", "a", "b"}`` with each side's episode
        ``{"id", "outcome", "accepted", "met"}``, in the order of the pairs' keys.

    Raises:
        ValueError: a side holds two episodes with the same key (it mixes policies).
    """
    side_a, side_b = _keyed(a, "a"), _keyed(b, "b")
    counts = dict.fromkeys(CELLS, 0)
    rows = []
    for key in sorted(side_a.keys() & side_b.keys()):
        x, y = side_a[key], side_b[key]
        hit_a, hit_b = met(x), met(y)
        cell = ("both" if hit_b else "only_a") if hit_a else ("only_b" if hit_b else "neither")
        counts[cell] += 1
        scenario, seed, trial = key
        rows.append(
            {
                "scenario": scenario,
                "seed": seed,
                "trial": trial,
                "cell": cell,
                "a": _side(x, hit_a),
                "b": _side(y, hit_b),
            }
        )
    return {
        "counts": counts,
        "pairs": len(rows),
        "unpaired": {
            "a": len(side_a.keys() - side_b.keys()),
            "b": len(side_b.keys() - side_a.keys()),
        },
        "p_value": mcnemar(counts["only_a"], counts["only_b"]),
        "rows": rows,
    }


def _keyed(rows: Iterable[Mapping[str, Any]], side: str) -> dict[Key, Mapping[str, Any]]:
    out: dict[Key, Mapping[str, Any]] = {}
    for row in rows:
        key = (row["scenario"], row["seed"], row["trial"])
        if key in out:
            raise ValueError(
                f"side {side} holds two episodes of scenario {key[0]!r}, seed {key[1]}, trial "
                f"{key[2]} (ids {out[key]['id']} and {row['id']}); name one policy for it"
            )
        out[key] = row
    return out


def _side(row: Mapping[str, Any], met: bool) -> dict[str, Any]:
    return {"id": row["id"], "outcome": row["outcome"], "accepted": row["accepted"], "met": met}
