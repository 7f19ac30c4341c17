"""The Policy protocol, the generic random policy, and the loop that plays an episode.

A policy is given what the agent may see, and nothing else: each observation and the legal
calls (:meth:`Policy.act`), each call's result if it asks (``feedback``), and a random
generator of its own for the episode (:meth:`Policy.reset`). The episode's seed, the
:class:`~opsgym.core.episode.Episode` and its family reach it only after the end, through the
record: the seed *is* the episode's hidden truth (a policy holding it could play twins of the
episode and keep the best calls), so no face hands it to the agent while it plays.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

import numpy as np

from opsgym.core.episode import Episode
from opsgym.core.errors import PolicyRefusedError, UnknownNameError
from opsgym.core.registry import catalogue, legal_actions, spec
from opsgym.core.seat import Seat

Call = tuple[str, dict[str, Any]]


@runtime_checkable
class Policy(Protocol):
    """Anything that picks the next call from what the agent can see.

    ``obs`` is ``Episode.observe()``; ``legal`` lists the catalogue calls that pass validation
    now (a policy may also call anything else and be rejected). A policy may also define
    ``feedback(result)``: :func:`play` hands it each call's :class:`StepResult`, reward included,
    as an RL agent would see it.

    A policy is never handed the episode's seed, the episode or its family: ``reset`` gets a
    generator for the policy's own randomness (:func:`policy_rng`), from which the seed cannot
    be read back. Scripted references told more (the audit's family-aware exploits) declare it:
    see :class:`opsgym.core.exploits.Privileged`.
    """

    name: str

    def reset(self, rng: np.random.Generator | None = None) -> None:
        """Prepare for a new episode; ``rng`` is the policy's own randomness for it."""

    def act(self, obs: dict[str, Any], legal: list[Call]) -> Call:
        """The next ``(tool, args)``."""


def policy_rng(seed: int | None) -> np.random.Generator:
    """The generator a policy's own randomness comes from in the episode of ``seed``.

    It draws the numbers ``np.random.default_rng([0x0B5, seed])`` draws (so evaluations keep
    their numbers), from a bit generator that was handed only that generator's state: its
    ``seed_seq`` is a fresh one and holds no trace of ``seed``, so a policy cannot read the
    episode's seed off its generator. The state is still a function of the seed, and a policy
    could tabulate it over the public seeds to find which one it plays; sealed evaluation seeds
    (issue 20, item 2: drawn from a space too large to tabulate) close that.
    """
    source = np.random.default_rng([0x0B5, seed or 0])
    bits = np.random.PCG64()
    # numpy's stubs type the state as a Mapping, not the TypedDict its setter takes
    bits.state = cast(Any, source.bit_generator.state)
    return np.random.Generator(bits)


class RandomPolicy:
    """Uniform over the legal catalogue calls, from the generator it is reset with (its own:
    it never touches the world's stream, and it never sees the episode's seed).
    """

    name = "random"
    deterministic = False

    def __init__(self) -> None:
        self._rng = policy_rng(0)

    def reset(self, rng: np.random.Generator | None = None) -> None:
        """Take ``rng`` for the episode (``None``: the generator of seed 0)."""
        self._rng = policy_rng(0) if rng is None else rng

    def act(self, obs: dict[str, Any], legal: list[Call]) -> Call:
        """A uniformly drawn legal call, or ``complete`` when none is legal."""
        if not legal:
            return "complete", {}
        return legal[int(self._rng.integers(len(legal)))]


PREFIXED: dict[str, Callable[[str, str], Policy]] = {}
"""Policies named ``kind:argument`` (``llm:MODEL``, ``ppo:PATH``), by kind: ``factory(env, arg)``.
Registered by the modules that provide them."""


def policy_names(env: str) -> list[str]:
    """Every policy name ``env`` accepts (prefixed kinds end with ``:``)."""
    return ["random", *spec(env).policies, *(f"{kind}:" for kind in PREFIXED)]


FILE_KINDS = frozenset({"ppo", "hf", "hf+constrained", "hf+snapshot", "hf+constrained+snapshot"})
"""Prefixed kinds whose argument names files to load (models hold pickled code)."""

RUN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+@=-]{0,199}")
"""What a run's name may be: one folder name, no separators, not ``.`` or ``..``."""


def resolve_run(runs_dir: str | os.PathLike[str], name: str) -> Path:
    """The folder of run ``name`` directly inside ``runs_dir``, with no symbolic link in it.

    Raises:
        PolicyRefusedError: ``name`` is not a plain folder name, or the run (or anything in it)
            is a symbolic link, which could point a loader at any file on the machine.
        UnknownNameError: no such run (the message lists the runs there are).
    """
    if not RUN_NAME.fullmatch(name):
        raise PolicyRefusedError(
            f"run name {name!r} must be one folder name inside the runs folder (letters, digits, "
            "'_.+@=-'; no '/', no '..')"
        )
    root = Path(runs_dir)
    path = root / name
    if path.is_symlink():
        raise PolicyRefusedError(
            f"run {name!r} is a symbolic link: runs are loaded only as folders of their own"
        )
    if not path.exists():
        known = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
        raise UnknownNameError(f"run in {str(root)!r}", name, known)
    for folder, dirs, files in os.walk(path):
        for entry in (*dirs, *files):
            if os.path.islink(os.path.join(folder, entry)):
                inner = os.path.relpath(os.path.join(folder, entry), path)
                raise PolicyRefusedError(
                    f"run {name!r} holds a symbolic link ({inner}): runs are loaded only when "
                    "every file in them is the run's own"
                )
    return path


def get_policy(env: str, name: str, *, runs_dir: str | os.PathLike[str] | None = None) -> Policy:
    """A fresh policy called ``name`` for ``env`` (``random`` works for every env).

    A trained policy (``ppo:``, ``hf:``, ``hf+constrained:``) takes a path, or ``runs:NAME``: the
    run called NAME in ``runs_dir`` (``runs`` by default; see :func:`resolve_run`).
    """
    if name == "random":
        return RandomPolicy()
    kind, _, arg = name.partition(":") if isinstance(name, str) else ("", "", "")
    if arg and kind in PREFIXED:
        if kind in FILE_KINDS and arg.startswith("runs:"):
            arg = str(resolve_run(runs_dir if runs_dir is not None else "runs", arg[5:]))
        return PREFIXED[kind](env, arg)
    scripted = spec(env).policies
    if name not in scripted:
        raise UnknownNameError(f"policy for {env!r}", name, policy_names(env))
    return scripted[name]()


def is_deterministic(
    env: str, name: str, *, runs_dir: str | os.PathLike[str] | None = None
) -> bool:
    """Whether ``name`` always makes the same calls from the same observations (scripted
    policies do unless they say ``deterministic = False``).
    """
    return bool(getattr(get_policy(env, name, runs_dir=runs_dir), "deterministic", True))


def legal_calls(episode: Episode | Seat) -> list[Call]:
    """The catalogue calls that pass validation now, as ``(tool, args)``."""
    table = catalogue(episode.env)
    indices = episode.legal_actions() if isinstance(episode, Seat) else legal_actions(episode)
    return [(table[i][0].name, table[i][1].model_dump()) for i in indices]


def play(episode: Episode, policy: Policy, *, reset: bool = True) -> Episode:
    """Let ``policy`` act until the episode ends; return the episode.

    Each call is charged the world's fixed token cost: a policy cannot report its own tokens.
    A policy that steps episodes itself (``drive(seat)``: the LLM agent, which makes several
    calls a turn and counts its tokens through its face; a trained PPO policy) is handed a
    :class:`Seat` on the episode, which shows what the agent may see and carries its calls, not
    the episode. The policy is reset with :func:`policy_rng` of the seed, never the seed.
    ``reset=False`` leaves a policy that was already reset (a reference told more) as it is.
    """
    if reset:
        policy.reset(policy_rng(episode.seed))
    drive = getattr(policy, "drive", None)
    if drive is not None:
        drive(Seat(episode))
        return episode
    feedback = getattr(policy, "feedback", None)
    while not episode.done:
        name, args = policy.act(episode.observe(), legal_calls(episode))
        result = episode.step(name, args)
        if feedback is not None:
            feedback(result)
    return episode
