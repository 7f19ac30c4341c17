"""Scenarios, fault families and seed splits.

A *scenario* is a named fault family: which faults a world injects, and which of its hidden
facts vary with the seed. The seed draws the variation (did the timed-out deploy commit? how
long does the health cache lie?), so one family yields many distinct episodes.

Splits keep evaluation honest:

* seeds are split by ``seed % 10``: 0-7 ``train``, 8 ``dev``, 9 ``test``;
* families marked ``held_out`` never appear in ``train``: they measure generalisation to
  failure modes a policy has never met.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

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
        params: Fixed parameters of the family (probabilities, ranges).
    """

    name: str
    description: str
    faults: tuple[str, ...] = ()
    held_out: bool = False
    hidden: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    revealed_by: frozenset[str] = frozenset()
    params: dict[str, Any] = field(default_factory=dict)

    def has(self, fault: str) -> bool:
        """Whether this family injects ``fault``."""
        return fault in self.faults


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
    """Names of the families in ``split``; held-out families are never in ``train``."""
    check_split(split)
    return [s.name for s in scenarios if not (split == "train" and s.held_out)]
