"""Reference policies on the fleet's tasks: the oracle passes, random and naive do not."""

from __future__ import annotations

import pytest

import opsgym
from opsgym.agents import get_policy, play

TASKS = ("easy", "medium", "hard", "cascade", "fleet_coordination")
TEST_SEEDS = opsgym.seeds("test", 500)


def pass_rate(task: str, policy: str, seeds: list[int], **config) -> float:
    passed = 0
    for seed in seeds:
        ep = play(
            opsgym.make("fleet", task, seed, config=config or None), get_policy("fleet", policy)
        )
        passed += ep.verdict.passed
    return passed / len(seeds)


@pytest.mark.parametrize("task", TASKS)
def test_the_oracle_passes_at_least_99_percent_of_500_test_seeds(task):
    assert pass_rate(task, "oracle", TEST_SEEDS) >= 0.99


def test_black_swan_is_a_stress_task_the_oracle_does_not_always_pass():
    rate = pass_rate("black_swan", "oracle", TEST_SEEDS)
    print(f"oracle black_swan pass rate over 500 test seeds: {rate:.3f}")
    assert 0.5 <= rate < 1.0  # reported as it is; the bounds only catch a broken task


@pytest.mark.parametrize("task", [*TASKS, "black_swan"])
def test_the_oracle_still_passes_at_the_hardest_level(task):
    floor = 0.3 if task == "black_swan" else 0.98
    assert pass_rate(task, "oracle", TEST_SEEDS[:100], level=3) >= floor


@pytest.mark.parametrize("task", [*TASKS, "black_swan"])
def test_the_random_policy_passes_at_most_10_percent(task):
    assert pass_rate(task, "random", TEST_SEEDS[:200]) <= 0.10


@pytest.mark.parametrize("task", [*TASKS, "black_swan"])
def test_the_naive_policy_that_acts_on_the_first_alert_fails(task):
    assert pass_rate(task, "naive", TEST_SEEDS[:100]) <= 0.05


def test_naive_sometimes_restarts_the_right_rank_but_never_confirms_it():
    outcomes = set()
    for seed in TEST_SEEDS[:50]:
        ep = play(opsgym.make("fleet", "easy", seed), get_policy("fleet", "naive"))
        outcomes.add(ep.verdict.outcome)
    assert "recovered_unconfirmed" in outcomes and "recovered" not in outcomes


def test_fixing_the_coordination_task_without_the_specialists_does_not_pass():
    for seed in TEST_SEEDS[:20]:
        ep = opsgym.make("fleet", "fleet_coordination", seed, config={"coordination": False})
        play(ep, get_policy("fleet", "oracle"))
        missing = [name for name, reached in ep.verdict.subgoals if not reached]
        assert ep.verdict.outcome == "recovered" and not ep.verdict.passed
        assert {"specialists_consulted", "consensus_polled", "coalition_fixed"} <= set(missing)
