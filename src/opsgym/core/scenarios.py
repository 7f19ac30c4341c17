"""Scenarios, fault families and seed splits.

A *scenario* is a named fault family: which faults a world injects, and which of its hidden
facts vary with the seed. The seed draws the variation (did the timed-out deploy commit? how
long does the health cache lie?), so one family yields many distinct episodes.

Splits keep evaluation honest:

* seeds are split by ``seed % 10``: 0-7 ``train``, 8 ``dev``, 9 ``test``;
* families marked ``held_out`` never appear in ``train``: they measure generalisation to
  failure modes a policy has never met.

A real operator does not know which fault it faces, so each world also offers ``mixed``
(:func:`mixed`): the seed draws the family (from the families of the seed's own split, by their
``weight``) and then the family's facts. The drawn family is itself a hidden fact.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from opsgym.core.errors import InvalidSeedError, UnknownNameError

SPLITS = ("train", "dev", "test")


@dataclass(frozen=True)
class Scenario:
    """A named fault family of one environment.

    Attributes:
        name: Id used by ``opsgym.make(env, scenario=name)``.
        description: One sentence on what goes wrong.
        faults: The fault mechanisms the world switches on.
        held_out: An unseen family: excluded from the ``train`` split.
        hidden: Hidden facts that vary with the seed, each with the values it can take. The
            leak tests force each value and check the agent's view does not change until a
            tool in ``revealed_by`` is called.
        revealed_by: Tools that may legitimately reveal the hidden facts.
        reveals: Per-fact exceptions to ``revealed_by``: ``{fact: tools}``.
        params: Fixed parameters of the family (probabilities, ranges).
        weight: Relative probability of this family in a ``mixed`` draw.
        mixture: This is a ``mixed`` scenario: the seed draws the family.
    """

    name: str
    description: str
    faults: tuple[str, ...] = ()
    held_out: bool = False
    hidden: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    revealed_by: frozenset[str] = frozenset()
    params: dict[str, Any] = field(default_factory=dict)
    reveals: dict[str, frozenset[str]] = field(default_factory=dict)
    weight: float = 1.0
    mixture: bool = False

    def has(self, fault: str) -> bool:
        """Whether this family injects ``fault``."""
        return fault in self.faults

    def revealers(self, fact: str) -> frozenset[str]:
        """Tools that may legitimately reveal ``fact``."""
        return self.reveals.get(fact, self.revealed_by)

    def hidden_facts(self) -> dict[str, dict[str, list[Any]]]:
        """``{fact: {"values": [...], "revealed_by": [tool, ...]}}`` for every hidden fact."""
        return {
            fact: {"values": list(values), "revealed_by": sorted(self.revealers(fact))}
            for fact, values in self.hidden.items()
        }


MIXED = "mixed"


def mixed(
    families: Iterable[Scenario],
    *,
    family_revealed_by: Iterable[str],
    description: str = "The seed draws the fault family (fault-free included) and its facts; "
    "nothing the agent sees names it.",
) -> Scenario:
    """The ``mixed`` scenario over ``families``.

    Its hidden facts are the union of the families' (values merged, revealing tools merged)
    plus ``family`` itself, which ``family_revealed_by`` may reveal: every tool whose reports
    differ between families (a deploy that times out in one family and not in another).
    """
    families = [f for f in families if not f.mixture]
    hidden: dict[str, list[Any]] = {}
    reveals: dict[str, set[str]] = {}
    for f in families:
        for fact, values in f.hidden.items():
            known = hidden.setdefault(fact, [])
            known.extend(v for v in values if v not in known)
            reveals.setdefault(fact, set()).update(f.revealers(fact))
    hidden["family"] = [f.name for f in families]
    reveals["family"] = set(family_revealed_by)
    return Scenario(
        MIXED,
        description,
        hidden={k: tuple(v) for k, v in hidden.items()},
        reveals={k: frozenset(v) for k, v in reveals.items()},
        revealed_by=frozenset().union(*reveals.values()),
        mixture=True,
    )


def draw_family(scenarios: Iterable[Scenario], seed: int, rng: np.random.Generator) -> Scenario:
    """The family a ``mixed`` episode with ``seed`` faces: drawn by weight from the families
    of the seed's split (held-out families never for a ``train`` seed), with ``rng``.
    """
    split = split_of(seed)
    pool = [s for s in scenarios if not s.mixture and not (split == "train" and s.held_out)]
    weights = np.array([s.weight for s in pool], dtype=float)
    return pool[int(rng.choice(len(pool), p=weights / weights.sum()))]


def check_seed(seed: object) -> int:
    """Return ``seed`` if it is a valid episode seed, else raise :class:`InvalidSeedError`."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InvalidSeedError(seed)
    return seed


def check_split(split: str) -> str:
    """Return ``split`` if it names a split, else raise with the known names."""
    if split not in SPLITS:
        raise UnknownNameError("split", split, SPLITS)
    return split


def split_of(seed: int) -> str:
    """The split a seed belongs to."""
    r = check_seed(seed) % 10
    return "train" if r < 8 else ("dev" if r == 8 else "test")


def seeds(split: str, n: int, start: int = 0) -> list[int]:
    """The first ``n`` seeds of ``split`` at or after ``start``."""
    check_split(split)
    return list(_iter_seeds(split, start, n))


def _iter_seeds(split: str, start: int, n: int) -> Iterator[int]:
    seed, found = start, 0
    while found < n:
        if split_of(seed) == split:
            yield seed
            found += 1
        seed += 1


def families(scenarios: Iterable[Scenario], split: str) -> list[str]:
    """Names of the scenarios in ``split``; held-out families are never in ``train``."""
    check_split(split)
    return [s.name for s in scenarios if not (split == "train" and s.held_out)]


def seed_in_split(split: str, index: int, rng: np.random.Generator) -> int:
    """An episode seed of ``split``: ``10 * index`` plus a residue of that split drawn by
    ``rng`` (``train``: 0-7, ``dev``: 8, ``test``: 9).
    """
    check_split(split)
    residues = {"train": 8, "dev": 1, "test": 1}[split]
    base = {"train": 0, "dev": 8, "test": 9}[split]
    return 10 * int(index) + base + int(rng.integers(residues))
