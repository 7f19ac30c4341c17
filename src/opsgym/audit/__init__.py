"""``opsgym audit``: the proof, per world, that the number is honest.

Five sections per world, each a list of checks with the bound it must meet:

* **leak** (:mod:`~opsgym.audit.leak`): with each hidden fact of each scenario forced to each of
  its values, random non-revealing calls of every argument form leave every agent-visible
  channel identical; for a world with a batched twin, one more row does the same on its lanes
  (:mod:`~opsgym.audit.lanes`);
* **exploits** (:mod:`~opsgym.audit.exploits`): the world's exploit suite, played on test-split
  seeds beside its oracle and the random policy, stays under its bounds;
* **rewards** (:mod:`~opsgym.audit.rewards`): one seed gives one return, the oracle out-earns
  every exploit and the random policy, and the world's own reward checks hold;
* **seeds** (:mod:`~opsgym.audit.twins`): on sealed seeds, a first-view lookup built over the
  public seeds names no episode, and a policy that plays twins of the episode it found earns no
  more than the oracle (both are measured on the public seeds too, where they work);
* **verify** (:mod:`~opsgym.audit.tamper`): every store tamper of a small evaluation makes
  ``opsgym eval --verify`` exit non-zero, naming what changed.

```python
from opsgym.audit import run_audit
report = run_audit(["release"], episodes=30)
report.passed, report.failures()
```
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict

from opsgym.audit.exploits import Suite
from opsgym.audit.lanes import LANES, STEPS, has_twin, lane_leaks
from opsgym.audit.leak import leak_test
from opsgym.audit.report import SECTIONS, AuditReport, Check
from opsgym.audit.rewards import reward_checks
from opsgym.audit.tamper import tamper_checks
from opsgym.audit.twins import seed_checks
from opsgym.core.registry import spec as spec_of
from opsgym.core.registry import specs
from opsgym.core.rewards import LeakingConfigError, check_reward_timing
from opsgym.core.scenarios import check_split, seeds
from opsgym.core.spec import EnvSpec

PARTS = ("play", "leak", "attacks")
"""The independent parts of a world's audit (the longest first, for parallel runs)."""

LEAK_STEPS = 60
"""Calls per leak-test sequence at most: deep enough for every fact a random agent can reach
without its revealing tools, cheap enough for CI (each call steps one episode per value)."""


def leak_seeds(episodes: int) -> int:
    """Seeds per hidden fact in the leak test: one per two episodes of the other sections
    (a sequence is up to :data:`LEAK_STEPS` calls on every value of the fact at once).
    """
    return (episodes + 1) // 2


def run_audit(
    envs: Iterable[str | EnvSpec] | None = None,
    episodes: int = 100,
    split: str = "test",
    reward_timing: str = "end",
    jobs: int = 1,
) -> AuditReport:
    """Audit ``envs`` (every registered world when ``None``).

    Args:
        envs: World names, or specs (a test may audit a spec it built).
        episodes: Episodes per policy; the leak test takes :func:`leak_seeds` seeds per fact.
        split: The seed split to draw episodes from.
        reward_timing: Must be ``"end"``: any timing that pays hidden-fact reward at once
            leaks by design, and is refused with :class:`LeakingConfigError`.
        jobs: Worlds audited at once, in as many processes (named worlds only); the report is
            the same whatever the number.

    Raises:
        UnknownNameError: An unknown world, split or reward timing.
        LeakingConfigError: A leaking reward timing.
    """
    if check_reward_timing(reward_timing) != "end":
        raise LeakingConfigError(
            f"reward_timing={reward_timing!r} pays reward computed from hidden facts at once and "
            "so leaks them; the audit runs with the default 'end'."
        )
    check_split(split)
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be an int >= 1, got {episodes!r}")
    envs = list(envs or specs())
    chosen = [spec_of(e) if isinstance(e, str) else e for e in envs]
    started = time.perf_counter()
    report = AuditReport(episodes, split)
    if jobs > 1 and all(isinstance(e, str) for e in envs):
        # Worlds and parts are independent and deterministic: processes change only the wall
        # time. Only registered names cross to a worker (a spec pickles by name).
        tasks = [(name, part) for name in envs for part in PARTS]
        with ProcessPoolExecutor(min(jobs, len(tasks))) as pool:
            futures = [pool.submit(_audit_named, n, part, episodes, split) for n, part in tasks]
            for (name, _), future in zip(tasks, futures, strict=True):
                report.worlds.setdefault(name, {}).update(future.result())
        for name, sections in report.worlds.items():
            report.worlds[name] = {k: sections[k] for k in SECTIONS}
    else:
        for spec in chosen:
            report.worlds[spec.name] = audit_world(spec, episodes, split)
    report.seconds = time.perf_counter() - started
    return report


def _audit_named(name: str, part: str, episodes: int, split: str) -> dict[str, list[Check]]:
    return audit_world(spec_of(name), episodes, split, parts=(part,))


def audit_world(
    spec: EnvSpec, episodes: int, split: str = "test", parts: tuple[str, ...] = PARTS
) -> dict[str, list[Check]]:
    """The sections of one world's audit, on seeds of ``split``.

    ``parts``: ``"play"`` (the exploit suite, then the reward audit that reads its returns),
    ``"leak"`` (the leak test), ``"attacks"`` (the seed attacks and the store tampers).
    """
    found = {}
    if "play" in parts:
        suite = Suite(spec, seeds(split, episodes))
        found["exploits"] = suite.checks()
        found["rewards"] = reward_checks(spec, suite, episodes)
    if "leak" in parts:
        found["leak"] = leak_checks(spec, seeds(split, leak_seeds(episodes)))
    if "attacks" in parts:
        found["seeds"] = seed_checks(spec, episodes, split)
        found["verify"] = tamper_checks(spec)
    return {k: found[k] for k in SECTIONS if k in found}


def leak_checks(
    spec: EnvSpec, episode_seeds: list[int], *, reward_timing: str = "end"
) -> list[Check]:
    """One leak row per scenario of ``spec``.

    ``reward_timing`` is only for tests that plant a leak; the audit always uses ``"end"``.
    """
    rows = []
    steps = min(spec.max_steps or LEAK_STEPS, LEAK_STEPS)
    for scenario in spec.scenarios:
        found = leak_test(spec, scenario, episode_seeds, steps, reward_timing=reward_timing)
        if found.differences:
            more = len(found.differences) - 1
            measured = str(found.differences[0]) + (f" (+{more} more facts)" if more else "")
        else:
            fact_s = "fact" if found.facts == 1 else "facts"
            measured = f"{found.steps} steps, {found.facts} {fact_s} x {len(episode_seeds)} seeds"
        rows.append(
            Check(
                scenario.name,
                measured,
                "identical",
                not found.differences,
                {
                    "facts": found.facts,
                    "sequences": found.sequences,
                    "steps": found.steps,
                    "differences": [asdict(d) | {"text": str(d)} for d in found.differences],
                },
            )
        )
    if has_twin(spec.name):
        rows.append(_lane_check(spec.name))
    return rows


def _lane_check(world: str) -> Check:
    """The leak test on the world's batched twin (:mod:`opsgym.audit.lanes`)."""
    facts, leaks = lane_leaks(world)
    measured = (
        str(leaks[0]) + (f" (+{len(leaks) - 1} more facts)" if len(leaks) > 1 else "")
        if leaks
        else f"{facts} facts x {LANES} lanes x {STEPS} calls"
    )
    details = {"facts": facts, "lanes": LANES, "steps": STEPS, "leaks": [str(x) for x in leaks]}
    return Check("batched face (mixed)", measured, "identical", not leaks, details)


__all__ = ["AuditReport", "Check", "audit_world", "leak_checks", "leak_seeds", "run_audit"]
