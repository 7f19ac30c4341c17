"""Reference policies on the fleet's tasks: the oracle, never told the task, passes; random
and naive do not."""

from __future__ import annotations

import pytest

import opsgym
from opsgym.agents import get_policy, play

TASKS = ("easy", "medium", "hard", "cascade", "fleet_coordination", "gpu_lost")
TEST_SEEDS = opsgym.seeds("test", 300)


def played(task: str, policy: str, seeds: list[int], **config) -> list[opsgym.Episode]:
    return [
        play(opsgym.make("fleet", task, seed, config=config or None), get_policy("fleet", policy))
        for seed in seeds
    ]


def pass_rate(task: str, policy: str, seeds: list[int], **config) -> float:
    return sum(ep.verdict.passed for ep in played(task, policy, seeds, **config)) / len(seeds)


@pytest.mark.parametrize("task", TASKS)
def test_the_oracle_passes_at_least_99_percent_of_200_test_seeds(task):
    assert pass_rate(task, "oracle", TEST_SEEDS[:200]) >= 0.99


def test_the_oracle_on_mixed_is_safe_and_passes_on_99_percent_of_300_test_seeds():
    episodes = played("mixed", "oracle", TEST_SEEDS)
    safe = sum(ep.verdict.outcome == "recovered" for ep in episodes)
    passed = sum(ep.verdict.passed for ep in episodes)
    assert safe / len(episodes) >= 0.99 and passed / len(episodes) >= 0.99, (safe, passed)


def test_black_swan_is_a_stress_task_the_oracle_recovers_but_sometimes_late():
    episodes = played("black_swan", "oracle", TEST_SEEDS[:200])
    outcomes = [ep.verdict.outcome for ep in episodes]
    recovered = outcomes.count("recovered") / len(episodes)
    late = outcomes.count("recovered_late") / len(episodes)
    rate = sum(ep.verdict.passed for ep in episodes) / len(episodes)
    print(f"oracle black_swan over 200 test seeds: recovered {recovered:.3f}, late {late:.3f}")
    # the misses: lost training over the 90-minute SLO, a harmed outcome, never a pass
    assert recovered + late == 1.0 and 0.9 <= recovered < 1.0 and rate == recovered


@pytest.mark.parametrize("task", [*TASKS, "black_swan"])
def test_the_oracle_still_passes_at_the_hardest_level(task):
    floor = 0.3 if task == "black_swan" else 0.98  # the SLO, with a scrape every 7 calls
    assert pass_rate(task, "oracle", TEST_SEEDS[:60], level=3) >= floor


@pytest.mark.parametrize("task", [*TASKS, "black_swan", "mixed"])
def test_the_random_policy_passes_at_most_10_percent(task):
    assert pass_rate(task, "random", TEST_SEEDS[:100]) <= 0.10


@pytest.mark.parametrize("task", [*TASKS, "black_swan"])
def test_the_naive_policy_that_acts_on_the_first_alert_passes_only_false_alarms(task):
    for ep in played(task, "naive", TEST_SEEDS[:100]):
        faulty = bool(ep.world.truth()["faults"])
        assert not (faulty and ep.verdict.passed), (task, ep.seed)


def test_naive_sometimes_restarts_the_right_rank_but_never_confirms_it():
    outcomes = {
        ep.verdict.outcome
        for ep in played("easy", "naive", TEST_SEEDS[:50])
        if ep.world.truth()["faults"]
    }
    assert "recovered_unconfirmed" in outcomes and "recovered" not in outcomes


def test_fixing_the_coordination_task_without_the_specialists_does_not_pass():
    for seed in TEST_SEEDS[:20]:
        ep = opsgym.make(
            "fleet",
            "fleet_coordination",
            seed,
            config={"coordination": False},
            overrides={"version_present": True},
        )
        play(ep, get_policy("fleet", "oracle"))
        missing = [name for name, reached in ep.verdict.subgoals if not reached]
        assert ep.verdict.outcome == "recovered" and not ep.verdict.passed
        assert {"specialists_consulted", "consensus_polled", "coalition_fixed"} <= set(missing)
