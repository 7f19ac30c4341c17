"""Attacks on the seed (issue 20): what knowing an episode's seed is worth, and whether an agent
can learn it.

A seed *is* an episode's hidden facts. A policy is given only what the agent may see (each
observation and its own random generator, :func:`opsgym.agents.base.policy_rng`), but both are
functions of the seed, so over a fixed public sequence of seeds it can build a table from what
it sees first to the seed it plays (:class:`FirstViewTable`). Holding the seed, it can play
twins of its episode in its own process and keep the best call list (:class:`SeedTwin`): fewer
evidence calls, the same outcome, a higher return than any honest agent.

Sealed evaluation seeds (:mod:`opsgym.evaluation.runner`) are drawn from a space no table can
cover, so on them the lookup finds nothing and the twin earns what its own calls earn (it falls
back to the oracle's play). :func:`seed_checks` measures both on the public seeds (where the
attack works, which is why evaluations do not use them by default) and on sealed ones (where it
must not).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from opsgym.agents import play
from opsgym.agents.base import Call, policy_rng
from opsgym.audit.exploits import Played, main_scenario, play_many
from opsgym.audit.report import Check
from opsgym.core.episode import Episode, jsonable
from opsgym.core.request import draw_seeds
from opsgym.core.scenarios import seeds as split_seeds
from opsgym.core.spec import EnvSpec

SEALED_AUDIT_SEED = 0x5EA1ED
"""The generator the audit draws its sealed seeds with: a deterministic audit, and seeds that no
table built from the public sequence holds (what matters to the attack is that the agent cannot
tabulate them, not that the auditor cannot)."""

EPSILON = 1e-9
"""Returns within this of each other are equal (sums of the same float rewards)."""


def fingerprint(obs: dict[str, Any], rng: np.random.Generator) -> str:
    """What a policy sees before its first call, as one hash: the first observation and the
    state of the generator it was reset with.
    """
    seen = (jsonable(obs), repr(rng.bit_generator.state))  # a PCG64 state exceeds 64 bits
    return hashlib.sha256(orjson.dumps(seen, option=orjson.OPT_SORT_KEYS)).hexdigest()


class FirstViewTable:
    """A table from first views to seeds over ``seeds`` of ``scenario``: what an agent with the
    public seed sequence can build before it plays. A view two seeds share is ambiguous and
    looked up as nothing.
    """

    def __init__(self, spec: EnvSpec, scenario: str, seeds: list[int]):
        found: dict[str, int | None] = {}
        for seed in seeds:
            episode = Episode(spec, spec.scenario(scenario), seed)
            key = fingerprint(episode.observe(), policy_rng(seed))
            found[key] = None if key in found else seed
        self.table = found

    def lookup(self, obs: dict[str, Any], rng: np.random.Generator) -> int | None:
        """The seed whose first view this is, if the table knows it."""
        return self.table.get(fingerprint(obs, rng))


class SeedTwin:
    """Finds its seed in a :class:`FirstViewTable`, plays twins of the episode and follows the
    best call list it found; without the seed, it plays as the oracle does.

    The best list starts as the oracle's calls on the twin and drops any call whose removal
    keeps a safe outcome and raises the return (the evidence that turned out not to matter).
    """

    deterministic = True

    def __init__(
        self, spec: EnvSpec, scenario: str, table: FirstViewTable, name: str = "seed_twin"
    ):
        self.spec, self.scenario, self.table, self.name = spec, scenario, table, name
        self.oracle = spec.policies["oracle"]()
        self.identified = 0
        self._rng: np.random.Generator | None = None
        self._plan: list[Call] | None = None
        self._first = True

    def reset(self, rng: np.random.Generator | None = None) -> None:
        """A new episode: keep a copy of the generator as handed over (its state is a view)."""
        rng = policy_rng(0) if rng is None else rng
        self._rng = np.random.Generator(type(rng.bit_generator)())
        self._rng.bit_generator.state = rng.bit_generator.state
        self.oracle.reset(rng)
        self._plan, self._first = None, True

    def act(self, obs: dict[str, Any], legal: list[Call]) -> Call:
        """The next call of the best twin plan, or the oracle's."""
        if self._first:
            self._first = False
            assert self._rng is not None
            seed = self.table.lookup(obs, self._rng)
            if seed is not None:
                self.identified += 1
                self._plan = self._best(seed)
        if self._plan:
            return self._plan.pop(0)
        return self.oracle.act(obs, legal)  # type: ignore[no-any-return]

    def _twin(self, seed: int) -> Episode:
        return Episode(self.spec, self.spec.scenario(self.scenario), seed)

    def _replay(self, seed: int, calls: list[Call]) -> Episode:
        episode = self._twin(seed)
        for tool, args in calls:
            if episode.done:
                break
            episode.step(tool, args)
        return episode

    def _best(self, seed: int) -> list[Call]:
        reference = play(self._twin(seed), self.spec.policies["oracle"]())
        best = [(e["tool"], e["args"]) for e in reference.events]
        score = reference.total_reward
        safe = self.spec.safe_outcomes
        i = 0
        while i < len(best):
            trial = best[:i] + best[i + 1 :]
            episode = self._replay(seed, trial)
            verdict = episode.verdict if episode.done else None
            if verdict and verdict.outcome in safe and episode.total_reward > score + EPSILON:
                best, score = trial, episode.total_reward
            else:
                i += 1
        return best


@dataclass(frozen=True)
class SeedAttack:
    """The lookup and the twin on one set of seeds, beside the oracle on the same seeds."""

    seeds: str
    identified: int
    episodes: int
    twin: Played
    oracle: Played

    @property
    def gain(self) -> float:
        """The twin's mean return minus the oracle's (> 0: knowing the seed paid)."""
        return self.twin.mean - self.oracle.mean


def attack(
    spec: EnvSpec, table: FirstViewTable, scenario: str, seeds: list[int], label: str
) -> SeedAttack:
    """Play the twin and the oracle on ``seeds``."""
    twin = SeedTwin(spec, scenario, table)
    played = play_many(spec, twin, scenario, seeds)
    oracle = play_many(spec, spec.policies["oracle"](), scenario, seeds)
    return SeedAttack(label, twin.identified, len(seeds), played, oracle)


def sealed_seeds(split: str, n: int) -> list[int]:
    """``n`` seeds drawn as a sealed evaluation draws them (from a fixed generator: the audit
    must give the same report twice).
    """
    return draw_seeds(split, n, np.random.default_rng(SEALED_AUDIT_SEED))


def seed_checks(spec: EnvSpec, episodes: int, split: str = "test") -> list[Check]:
    """Two rows: the first-view lookup and the seed twin, each on the public seeds and on
    sealed ones. Bounds: on sealed seeds the lookup identifies no episode and the twin earns
    no more than the oracle.
    """
    scenario = main_scenario(spec)
    public = split_seeds(split, episodes)
    table = FirstViewTable(spec, scenario, public)
    on_public = attack(spec, table, scenario, public, "public")
    on_sealed = attack(spec, table, scenario, sealed_seeds(split, episodes), "sealed")
    n = episodes
    lookup = Check(
        "first_view_lookup",
        f"public: {on_public.identified}/{n} seeds named by the first view; "
        f"sealed: {on_sealed.identified}/{n}",
        "sealed: 0 named",
        on_sealed.identified == 0,
        {"public": on_public.identified, "sealed": on_sealed.identified, "episodes": n},
    )
    twin = Check(
        "seed_twin",
        f"public: {on_public.gain:+.3f} over the oracle; sealed: {on_sealed.gain:+.3f} "
        f"(return {on_sealed.twin.mean:+.2f} vs {on_sealed.oracle.mean:+.2f})",
        "sealed: gain <= 0",
        on_sealed.gain <= EPSILON,
        {
            "public_gain": on_public.gain,
            "sealed_gain": on_sealed.gain,
            "sealed_return": on_sealed.twin.mean,
            "oracle_return": on_sealed.oracle.mean,
        },
    )
    return [lookup, twin]
