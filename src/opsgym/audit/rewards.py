"""The reward audit: one seed gives one return, the oracle out-earns every other policy, and
each world's own statements about its reward hold.
"""

from __future__ import annotations

from opsgym.agents import RandomPolicy, play
from opsgym.audit.exploits import Suite, main_scenario
from opsgym.audit.report import Check
from opsgym.core.episode import Episode
from opsgym.core.spec import EnvSpec

REPLAYED_SEEDS = 3
"""Seeds on which the oracle and the random policy each play twice."""


def reward_checks(spec: EnvSpec, suite: Suite, episodes: int) -> list[Check]:
    """Every reward row of ``spec``; ``suite`` has already played the exploit section."""
    rows = [_one_seed_one_return(spec, suite.seeds[:REPLAYED_SEEDS])]
    exploits = {k: v for k, v in suite.played.items() if k != "random"}
    if exploits:
        gaps = {name: oracle.mean - played.mean for name, (played, oracle) in exploits.items()}
        closest = min(gaps, key=gaps.get)
        rows.append(
            Check(
                "oracle > every exploit",
                f"closest {closest}: gap {gaps[closest]:+.2f}",
                "gap > 0 for each",
                gaps[closest] > 0,
                {"gaps": gaps},
            )
        )
    played, oracle = suite.played["random"]
    gap = oracle.mean - played.mean
    rows.append(
        Check(
            "oracle > random",
            f"gap {gap:+.2f} on {main_scenario(spec)}",
            "gap > 0",
            gap > 0,
            {"gap": gap},
        )
    )
    for check in spec.reward_checks:
        held, measured = check.check(episodes, play)
        rows.append(Check(check.name, measured, check.description, bool(held)))
    return rows


def _one_seed_one_return(spec: EnvSpec, seeds: list[int]) -> Check:
    scenario = spec.scenario(main_scenario(spec))
    differ = []
    for name, make in (("oracle", spec.policies["oracle"]), ("random", RandomPolicy)):
        for seed in seeds:
            a, b = (play(Episode(spec, scenario, seed), make()) for _ in range(2))
            if (a.total_reward, a.record()["hash"]) != (b.total_reward, b.record()["hash"]):
                differ.append(f"{name} seed {seed}: {a.total_reward:+.3f} vs {b.total_reward:+.3f}")
    return Check(
        "one seed, one return",
        "; ".join(differ) or f"oracle, random twice on {len(seeds)} seeds: equal",
        "equal return and record",
        not differ,
    )
