"""The episode request: every parameter of an episode, and the rules of an honest one, in one place.

Every face parses what it was given into an :class:`EpisodeRequest` and starts the episode from
it: ``opsgym.make``, the Gym face, TRL's environments, the row builders, the evaluation harness,
PPO's environments, the server (REST and WebSocket) and MCP. So each rule below is written once
and holds on every face:

* **Seeds and splits.** Seeds split by ``seed % 10`` (0-7 ``train``, 8 ``dev``, 9 ``test``). A
  given seed must lie in the given split; without a seed, one is drawn within the split (``train``
  by default) from the caller's generator, or from the operating system's randomness.
* **Held-out families never meet a train seed**, named as the scenario or forced as the
  ``family`` of a ``mixed`` episode: they measure generalisation to failure modes a policy has
  never met.
* **Overrides** force hidden facts with values of the kind the scenario declares
  (:attr:`Scenario.hidden`: a flag is a bool, a rank a number, a file name a string); a forced
  ``family`` is one of the split's families; the world checks names and ranges.
* **Config** is checked against the world's own model (:attr:`EnvSpec.config`), whose JSON Schema
  every face can show.
* **In an evaluation** (``evaluation=True``) nothing that leaks is allowed: no overrides, no
  ``reward_timing="dense"``.
* **No value nests deeper than** :data:`~opsgym.core.episode.MAX_DEPTH` levels (an honest one
  is flat or nearly): it is refused, naming the field, before any check that could recurse
  into it (an error message's ``repr`` of 5,000 nested lists is itself a ``RecursionError``).

The request is plain data (a frozen dataclass); :meth:`EpisodeRequest.resolve` checks it and
returns what it resolved to (the seed drawn, the split), and :meth:`Resolved.start` builds the
:class:`~opsgym.core.episode.Episode`.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from opsgym.core.episode import MAX_DEPTH, TOKEN_SOURCES, Episode, nests_deeper
from opsgym.core.errors import HeldOutFamilyError, OpsgymError, UnknownNameError
from opsgym.core.rewards import LeakingConfigError, check_reward_timing
from opsgym.core.scenarios import Scenario, check_seed, check_split, seed_in_split, split_of

if TYPE_CHECKING:
    from opsgym.core.spec import EnvSpec

SEED_INDEX_SPACE = 2**27
"""A seed drawn from a seeded stream (a Gym env reset without a seed, TRL's environments, the
batched lanes) is ``10 * index`` plus a residue of its split, with ``index`` below this. It fixes
those streams' episodes (and the batched twins mirror it), so it does not change."""

SEALED_INDEX_SPACE = 2**49
"""The same for a seed nobody may know in advance (an evaluation's sealed seeds, a server's
drawn ones): about 5.6e14 seeds in each residue, so that nobody can tabulate the episodes drawn
(a first-view lookup over them would take centuries of resets), and every seed below 2**53, so
that it survives JavaScript's numbers (the workbench) and JSON readers that use doubles."""


class SplitError(OpsgymError, ValueError):
    """A seed that does not lie in the split it was asked for."""


class OverrideError(OpsgymError, ValueError):
    """An override of a fact the scenario does not declare, or of a value of the wrong kind."""


class NestingError(OpsgymError, ValueError):
    """A field of the request nested deeper than :data:`~opsgym.core.episode.MAX_DEPTH`."""


def draw_seed(split: str, rng: np.random.Generator | None = None) -> int:
    """A seed of ``split``: drawn with ``rng`` from a seeded stream's space
    (:data:`SEED_INDEX_SPACE`), or, if ``None``, from the operating system's randomness over the
    sealed space (:data:`SEALED_INDEX_SPACE`). Never a global generator.
    """
    if rng is None:
        return _sealed(split, np.random.default_rng(secrets.randbits(128)))
    return seed_in_split(split, int(rng.integers(SEED_INDEX_SPACE)), rng)


def _sealed(split: str, rng: np.random.Generator) -> int:
    return seed_in_split(split, int(rng.integers(SEALED_INDEX_SPACE)), rng)


def draw_seeds(split: str, n: int, rng: np.random.Generator | None = None) -> list[int]:
    """``n`` distinct seeds of ``split`` from the sealed space (:data:`SEALED_INDEX_SPACE`):
    an evaluation's sealed seeds (unknown before the run, too many to tabulate, stored with its
    episodes), drawn with ``rng`` (the operating system's randomness if ``None``; the audit
    passes a fixed one).
    """
    if rng is None:
        rng = np.random.default_rng(secrets.randbits(128))
    out: dict[int, None] = {}
    while len(out) < n:
        out[_sealed(split, rng)] = None
    return list(out)


def held_out_refusal(env: str, scenario: Scenario) -> HeldOutFamilyError:
    """The one error every face raises for a held-out family on a train seed."""
    return HeldOutFamilyError(
        f"Scenario {scenario.name!r} of {env!r} is a held-out family: it is never in the train "
        "split. Use a dev or test seed (split='dev' or split='test') to play it."
    )


@dataclass(frozen=True)
class EpisodeRequest:
    """Everything that decides an episode before its first call.

    Attributes:
        env: The world (``release``, ``fleet``, ``oversight`` ...).
        scenario: Fault family, or ``mixed``; the world's first scenario when ``None``.
        seed: The episode's seed; ``None`` draws one within ``split``.
        split: ``train``, ``dev`` or ``test``: checked against a given seed, drawn from
            otherwise (``train`` when ``None``).
        config: Public settings, checked against the world's config model.
        overrides: Hidden facts to force (leak tests, curricula, debugging): never in an
            evaluation.
        max_steps: Step budget; ``None`` for the world's.
        reward_timing: ``"end"`` (settled components paid on the last step) or ``"dense"``
            (paid at once: leaks the truth, refused in evaluations).
        token_source: Who counts the tokens passed to ``Episode.step(tokens=...)``.
    """

    env: str
    scenario: str | None = None
    seed: int | None = None
    split: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    overrides: Mapping[str, Any] = field(default_factory=dict)
    max_steps: int | None = None
    reward_timing: str = "end"
    token_source: str = "caller"

    def resolve(
        self, rng: np.random.Generator | None = None, *, evaluation: bool = False
    ) -> Resolved:
        """Check every rule and draw the seed if there is none.

        Args:
            rng: Draws the seed when none was given (the OS's randomness if ``None``).
            evaluation: The episode is part of an evaluation: nothing that leaks.

        Raises:
            UnknownNameError: an unknown world, scenario, split, config key, hidden fact or
                token source (with close matches).
            InvalidSeedError, SplitError: a seed that is not an int >= 0, or not in ``split``.
            HeldOutFamilyError: a held-out family on a train seed.
            OverrideError, LeakingConfigError: overrides or timing that cannot be used here.
            NestingError: a field nested deeper than :data:`MAX_DEPTH` levels.
        """
        from opsgym.core.registry import spec as lookup  # the registry imports this module

        self._check_nesting()
        spec = lookup(self.env)
        scenario = spec.scenario(self.scenario)
        split = None if self.split is None else check_split(self.split)
        if self.seed is None:
            split = split or "train"
            seed, drawn = draw_seed(split, rng), True
        else:
            seed, drawn = check_seed(self.seed), False
            actual = split_of(seed)
            if split is not None and actual != split:
                raise SplitError(
                    f"seed {seed} is in the {actual!r} split, not {split!r}; seeds split by "
                    "seed % 10 (0-7 train, 8 dev, 9 test)"
                )
            split = actual
        if scenario.held_out and split == "train":
            raise held_out_refusal(spec.name, scenario)
        timing = check_reward_timing(self.reward_timing)
        overrides = dict(self.overrides or {})
        if evaluation and (overrides or timing != "end"):
            raise LeakingConfigError(
                "An evaluation runs with reward_timing='end' and no overrides: forced facts and "
                f"dense reward leak the truth (got overrides={sorted(overrides)}, "
                f"reward_timing={timing!r})."
            )
        check_overrides(spec, scenario, split, overrides)
        config = dict(self.config or {})
        spec.check_config(config)
        if self.max_steps is not None and (
            isinstance(self.max_steps, bool)
            or not isinstance(self.max_steps, int)
            or self.max_steps < 0
        ):
            raise ValueError(f"max_steps must be an int >= 0 or None, got {self.max_steps!r}")
        if self.token_source not in TOKEN_SOURCES:
            raise UnknownNameError("token source", self.token_source, TOKEN_SOURCES)
        return Resolved(self, spec, scenario, seed, split, drawn, config, overrides, timing)

    def _check_nesting(self) -> None:
        """Refuse a field nested deeper than :data:`MAX_DEPTH`, naming it (and not its value)."""
        for name in _FIELDS:
            if nests_deeper(getattr(self, name), MAX_DEPTH):
                raise NestingError(
                    f"{name}: nested deeper than {MAX_DEPTH} levels (episode settings are flat: "
                    "a name, a number, a mapping of facts or settings to plain values)."
                )

    def start(self, rng: np.random.Generator | None = None, *, evaluation: bool = False) -> Episode:
        """``resolve(rng, evaluation=evaluation).start()``."""
        return self.resolve(rng, evaluation=evaluation).start()


_FIELDS = tuple(EpisodeRequest.__dataclass_fields__)


@dataclass(frozen=True)
class Resolved:
    """A checked request: the seed it drew (if it drew one) and the split it lies in.

    Attributes:
        request: What was asked.
        spec: The world.
        scenario: The scenario.
        seed: The episode's seed.
        split: The seed's split.
        drawn: Whether the seed was drawn here (then no one chose it).
        config: The public settings.
        overrides: The forced facts.
        reward_timing: ``end`` or ``dense``.
    """

    request: EpisodeRequest
    spec: EnvSpec
    scenario: Scenario
    seed: int
    split: str
    drawn: bool
    config: dict[str, Any]
    overrides: dict[str, Any]
    reward_timing: str

    def start(self) -> Episode:
        """The episode."""
        return Episode(
            self.spec,
            self.scenario,
            self.seed,
            max_steps=self.request.max_steps,
            overrides=self.overrides or None,
            config=self.config or None,
            reward_timing=self.reward_timing,
            token_source=self.request.token_source,
        )


def check_overrides(
    spec: EnvSpec, scenario: Scenario, split: str, overrides: Mapping[str, Any]
) -> None:
    """Refuse a held-out ``family`` on a train seed, and a value of another kind than the
    scenario declares for its hidden facts (a flag forced to ``"yes"``).

    A world may draw more facts than its scenarios declare (fleet's decoys and offsets, with
    their own ranges): those the world checks when it applies them, and refuses unknown names.
    """
    for fact, value in overrides.items():
        if fact == "family" and not scenario.mixture:
            raise OverrideError(
                f"override family={value!r}: only a mixed scenario draws its family "
                f"({spec.name}/{scenario.name} is one family)"
            )
        if fact == "family":
            family = spec.scenario(value if isinstance(value, str) else repr(value))
            if family.mixture:
                raise UnknownNameError("family", value, [s.name for s in spec.families()])
            if family.held_out and split == "train":
                raise held_out_refusal(spec.name, family)
            continue
        if fact not in scenario.hidden:
            continue
        kinds = {_kind(v) for v in scenario.hidden[fact]}
        if _kind(value) not in kinds:
            declared = ", ".join(repr(v) for v in scenario.hidden[fact])
            raise OverrideError(
                f"override {fact}={value!r} of {spec.name}/{scenario.name}: expected a value "
                f"like {declared}, got {type(value).__name__}"
            )


def _kind(value: Any) -> str:
    """A value's kind for overrides: ``bool``, ``number`` (int or float), ``str`` or other."""
    if isinstance(value, bool) or value is None:
        return type(value).__name__
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__
