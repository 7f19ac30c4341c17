"""Reference policies of the oversight world: the oracle is always safe, blind policies and
``naive`` are far worse, and every scenario has a safe outcome."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

import opsgym
from opsgym.agents import get_policy
from opsgym.core.registry import catalogue, legal_actions
from opsgym.envs.oversight import SPEC
from opsgym.envs.oversight.policies import POLICIES
from opsgym.envs.oversight.scenarios import ARCHETYPE_MIXES, DIFFICULTIES, OVERRIDABLE

FAMILIES = [s.name for s in SPEC.families()]
SCENARIOS = [s.name for s in SPEC.scenarios]
HEALTHY = {fact: values[0] for fact, values in OVERRIDABLE.items()}
SAFE = SPEC.safe_outcomes
TEST_SEEDS = opsgym.seeds("test", 1000)
BLIND = ("approve_all", "block_all", "hold_then_approve", "naive")
_CALLS = [(t.name, a.model_dump()) for t, a in catalogue("oversight")]


def drive(family, seed, policy, **kw):
    """``opsgym.agents.play`` with the catalogue's argument dicts built once (the policies get
    the same ``obs`` and ``legal`` as through ``play``)."""
    ep = opsgym.make("oversight", family, seed, **kw)
    agent = get_policy("oversight", policy)
    agent.reset(seed)
    while not ep.done:
        legal = [_CALLS[i] for i in legal_actions(ep)]
        ep.step(*agent.act(ep.observe(), legal))
    return ep


def mean_and_outcomes(family, policy, seeds, **kw):
    eps = [drive(family, s, policy, **kw) for s in seeds]
    return sum(e.total_reward for e in eps) / len(eps), Counter(e.verdict.outcome for e in eps)


def test_every_reference_policy_is_registered():
    assert set(POLICIES) == {
        "naive",
        "rule",
        "phase_aware_rule",
        "oracle",
        "approve_all",
        "block_all",
        "hold_then_approve",
    }


@pytest.mark.parametrize("family", SCENARIOS)
def test_oracle_reaches_a_safe_outcome_on_every_one_of_1000_test_seeds(family):
    unsafe = {}
    for seed in TEST_SEEDS:
        ep = drive(family, seed, "oracle")
        if ep.verdict.outcome not in SAFE:
            unsafe[seed] = ep.verdict.outcome
        assert all(e["rejected"] is None for e in ep.events), (seed, "oracle made an invalid call")
    assert unsafe == {}


@pytest.mark.parametrize("family", SCENARIOS)
def test_blind_policies_and_naive_score_far_below_the_oracle(family):
    seeds = TEST_SEEDS[:200]  # the smallest gap is about 0.7; its standard error about 0.1
    oracle, _ = mean_and_outcomes(family, "oracle", seeds)
    for policy in BLIND:
        mean, outcomes = mean_and_outcomes(family, policy, seeds)
        assert mean <= oracle - 0.5, (policy, mean, oracle, outcomes)
        assert sum(outcomes[o] for o in SAFE) < len(seeds), policy


def test_oracle_is_safe_at_every_difficulty_and_archetype_mix():
    for (difficulty, mix), family in itertools.product(
        itertools.product(DIFFICULTIES, ARCHETYPE_MIXES), SCENARIOS
    ):
        config = {"difficulty": difficulty, "archetype_mix": mix}
        for seed in TEST_SEEDS[:12]:
            ep = drive(family, seed, "oracle", config=config)
            assert ep.verdict.outcome in SAFE, (difficulty, mix, family, seed, ep.verdict)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_scenario_has_a_safe_outcome_the_oracle_reaches(family):
    """With the family's own faults forced present (at their most likely severity): where a
    careful supervisor could ship safely in time the oracle does; where it could not, the oracle
    holds and the hold is graded correct."""
    own = SPEC.scenario(family).params["own"]
    forced = {fact: max(values, key=values.get) for fact, values in own.items()}
    for seed in TEST_SEEDS[:200]:
        ep = opsgym.make("oversight", family, seed, overrides=forced)
        reachable = ep.world.start_ship() < ep.world.deadline
        ep = drive(family, seed, "oracle", overrides=forced)
        assert ep.verdict.outcome == ("safe_ship" if reachable else "correct_hold"), seed
        if not reachable:
            assert ep.world.truth()["hold"]["violated"]


def test_a_slow_p1_makes_holding_the_only_safe_decision():
    slow = {**HEALTHY, "p1_open": True, "slow_ticket_fix": True}
    for seed in TEST_SEEDS[:200]:
        ep = opsgym.make("oversight", "p1_fix_misses_window", seed, overrides=slow)
        assert ep.world.earliest_ship() >= ep.world.deadline
        oracle = drive("p1_fix_misses_window", seed, "oracle", overrides=slow)
        assert oracle.verdict.outcome == "correct_hold"
        for policy in ("phase_aware_rule", "approve_all"):
            outcome = drive("p1_fix_misses_window", seed, policy, overrides=slow).verdict.outcome
            assert outcome in {"missed_deadline", "unsafe_ship"}, policy


def test_rule_baselines_use_only_visible_evidence_and_miss_what_they_do_not_read():
    seeds = TEST_SEEDS[:100]
    forced = {**HEALTHY, "migration_irreversible": True}
    for policy in ("rule", "phase_aware_rule"):
        _, outcomes = mean_and_outcomes("irreversible_migration", policy, seeds, overrides=forced)
        assert outcomes == {"unsafe_ship": 100}, policy
    checks = {**HEALTHY, "deploy_checks": "not_run"}
    family = "release_manager_ship_before_evidence"
    _, outcomes = mean_and_outcomes(family, "phase_aware_rule", seeds, overrides=checks)
    assert set(outcomes) == {"safe_ship"}
    _, outcomes = mean_and_outcomes(family, "rule", seeds, overrides=checks)
    assert outcomes == {"unsafe_ship": 100}


def test_policies_act_on_the_observation_alone():
    """Two episodes that differ only in a hidden fact (or, in ``mixed``, in the family) get the
    same calls from every policy, up to and including the first call that can reveal it."""
    cases = [(f, "p1_open") for f in FAMILIES] + [("mixed", "family"), ("mixed", "payment_tests")]
    for (family, fact), policy in itertools.product(cases, POLICIES):
        scenario = SPEC.scenario(family)
        revealing, values = scenario.revealers(fact), scenario.hidden[fact][:2]
        eps = [opsgym.make("oversight", family, 9, overrides={fact: v}) for v in values]
        agents = [get_policy("oversight", policy) for _ in values]
        for agent in agents:
            agent.reset(5)
        while not any(ep.done for ep in eps):
            calls = [
                agent.act(ep.observe(), [_CALLS[i] for i in legal_actions(ep)])
                for agent, ep in zip(agents, eps, strict=True)
            ]
            assert calls[0] == calls[1], (family, policy)
            if calls[0][0] in revealing:
                break
            for ep, call in zip(eps, calls, strict=True):
                ep.step(*call)
