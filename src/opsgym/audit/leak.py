"""The leak test: no hidden fact reaches the agent before a tool that may reveal it.

For each scenario, each hidden fact and a few seeds, one episode per value of the fact is
started with the fact forced (``overrides={fact: value}``), and all of them are driven in
lockstep by the same random sequence of calls: none to a tool in the fact's ``revealed_by``,
drawn from every argument form (see :mod:`opsgym.audit.calls`). After every step each
agent-visible channel is compared with the first episode's. The calls are drawn from what the
first episode shows, which is all the others show too for as long as nothing differs.

On the episode's last step the settled reward components and the terminal reward are paid:
they are computed from the truth by design, once the episode is over, and are left out of the
comparison on that step only.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from opsgym.adapters.toolcalls import render_text
from opsgym.audit.calls import (
    Call,
    argument_space,
    draw_args,
    malformed,
    takes_text,
    visible_strings,
)
from opsgym.core.episode import Episode, StepResult
from opsgym.core.registry import catalogue, legal_actions
from opsgym.core.scenarios import Scenario
from opsgym.core.spec import Encoder, EnvSpec

CHANNELS = (
    "done",
    "report",
    "rejected",
    "reward",
    "components",
    "observe",
    "mask",
    "vector",
    "prompt",
)
"""Everything an agent can see after a call, in the order they are compared: what the call
returned first (whether the episode ended, then what the observation repeats), then the view."""

P_CATALOGUE, P_FORMS = 0.5, 0.35
"""Share of calls drawn from the legal Gym catalogue (they move the episode on), from every
argument form of a tool; the rest are malformed."""


@dataclass(frozen=True)
class Difference:
    """The first place where forcing a fact changed what the agent sees."""

    scenario: str
    fact: str
    values: tuple[Any, Any]
    seed: int
    step: int
    channel: str
    call: Call | None
    seen: tuple[Any, Any]

    def __str__(self) -> str:
        a, b = self.values
        path, x, y = first_path(*self.seen)
        call = "at the start" if self.call is None else f"after {show_call(self.call)}"
        return (
            f"{self.fact}={a!r} vs {b!r}: {self.channel}{path} {_short(x, 40)} != "
            f"{_short(y, 40)}, step {self.step} {call}, seed {self.seed}"
        )


def show_call(call: Call) -> str:
    """``tool(arg=value, ...)``, as an agent would read it."""
    name, raw = call
    if isinstance(raw, dict):
        return f"{name}({', '.join(f'{k}={v!r}' for k, v in raw.items())})"
    return f"{name}({raw!r})"


@dataclass
class ScenarioLeaks:
    """What the leak test did on one scenario, and what it found."""

    scenario: str
    facts: int = 0
    values: int = 0
    sequences: int = 0
    steps: int = 0
    differences: list[Difference] = field(default_factory=list)


def leak_test(
    spec: EnvSpec,
    scenario: Scenario,
    seeds: list[int],
    steps: int,
    *,
    reward_timing: str = "end",
) -> ScenarioLeaks:
    """Force each hidden fact of ``scenario`` to each of its values on ``seeds``; drive the
    episodes with up to ``steps`` non-revealing calls; record each fact's first difference.

    ``reward_timing`` is not checked here, so that a test can plant the leak that ``"dense"``
    timing is (the audit itself refuses it).
    """
    found = ScenarioLeaks(scenario.name)
    encoder = spec.encoder()
    enders = {spec.terminal} if spec.terminal else set()
    for fact, info in scenario.hidden_facts().items():
        if len(info["values"]) < 2:
            continue
        found.facts += 1
        found.values += len(info["values"])
        for seed in seeds:
            episodes = [
                Episode(spec, scenario, seed, overrides={fact: v}, reward_timing=reward_timing)
                for v in info["values"]
            ]
            rng = np.random.default_rng([seed, zlib.crc32(fact.encode())])
            quiet = frozenset(info["revealed_by"])
            where, taken = _lockstep(spec, encoder, episodes, quiet, enders, rng, steps)
            found.sequences += 1
            found.steps += taken
            if where is not None:
                i, step, channel, call, seen = where
                values = (info["values"][0], info["values"][i])
                found.differences.append(
                    Difference(scenario.name, fact, values, seed, step, channel, call, seen)
                )
                break
    return found


def _lockstep(
    spec: EnvSpec,
    encoder: Encoder,
    episodes: list[Episode],
    revealers: frozenset[str],
    enders: set[str],
    rng: np.random.Generator,
    steps: int,
) -> tuple[tuple[int, int, str, Call | None, tuple[Any, Any]] | None, int]:
    """Drive ``episodes`` with the same calls, at most ``steps``.

    Random calls end most episodes within a few steps (a final hold, a reboot), and the states
    deeper in are where a leak hides. So each sequence draws a horizon and, before it, avoids
    the tools that ``enders`` has seen end an episode (the tool that ends this one joins it).

    Returns where one first differs from episode 0 (its index, the step, channel and call, both
    values), or ``None``; and the number of steps taken.
    """
    first, call = episodes[0], None
    horizon = int(rng.integers(1, steps + 1))
    views = [_view(spec, encoder, ep, None) for ep in episodes]
    for step in range(steps + 1):
        if step:
            avoid = revealers | enders if step < horizon else revealers
            call = _draw(first, views[0]["mask"], avoid, rng)
            views = [_view(spec, encoder, ep, ep.step(*call)) for ep in episodes]
        for i, view in enumerate(views[1:], start=1):
            for channel in CHANNELS:
                if channel in view and not _same(views[0][channel], view[channel]):
                    seen = (_plain(views[0][channel]), _plain(view[channel]))
                    return (i, step, channel, call, seen), step
        if first.done:
            if not first.truncated and isinstance(call[0], str):
                enders.add(call[0])
            return None, step
    return None, steps


def _view(
    spec: EnvSpec, encoder: Encoder, episode: Episode, result: StepResult | None
) -> dict[str, Any]:
    """Every agent-visible channel of ``episode`` now."""
    view: dict[str, Any] = {
        "observe": episode.observe(),
        "mask": legal_actions(episode),
        "vector": encoder.encode(episode),
    }
    view["prompt"] = (spec.prompt or render_text)(episode)
    if result is not None:
        # On the last step the truth is paid for by design: settled components, the outcome.
        hidden = (spec.settled | {"terminal"}) if result.done else frozenset()
        paid = {k: v for k, v in result.components.items() if k not in hidden}
        view.update(
            report=result.report,
            rejected=result.rejected,
            reward=sum(paid.values()),
            components=paid,
            done=(result.done, result.terminated, result.truncated),
        )
    return view


def _draw(
    episode: Episode, mask: list[int], avoid: frozenset[str], rng: np.random.Generator
) -> Call:
    """A call to no tool in ``avoid``: a legal catalogue call, any argument form, or garbage."""
    table = catalogue(episode.env)
    r = rng.random()
    legal = [table[i] for i in mask if table[i][0].name not in avoid]
    if r < P_CATALOGUE and legal:
        tool, args = legal[int(rng.integers(len(legal)))]
        return tool.name, args.model_dump(mode="json")
    tools = episode.world.tools
    allowed = [t for name, t in tools.items() if name not in avoid]
    if r < P_CATALOGUE + P_FORMS and allowed:
        tool = allowed[int(rng.integers(len(allowed)))]
        strings = visible_strings(episode.observe()) if takes_text(tool) else ()
        return tool.name, draw_args(argument_space(tool, strings), rng)
    return malformed(tools, rng)


def _plain(value: Any) -> Any:
    return value.tolist() if isinstance(value, np.ndarray) else value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b, equal_nan=True)
    return a == b


def first_path(a: Any, b: Any, path: str = "") -> tuple[str, Any, Any]:
    """Where two JSON-like values first differ: ``(path, a there, b there)``."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            if a.get(key, _MISSING) != b.get(key, _MISSING):
                return first_path(a.get(key, _MISSING), b.get(key, _MISSING), f"{path}[{key!r}]")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return first_path(x, y, f"{path}[{i}]")
    return path, a, b


_MISSING = "<absent>"


def _short(value: Any, width: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"
