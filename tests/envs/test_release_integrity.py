"""Release integrity: the reward says only what the agent was told, the family is a prior and
never an answer, and no exploit out-earns the careful oracle (issue 7).

Figures are measured on 300 ``mixed`` test-split seeds, each policy on the same seeds.
"""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest

import opsgym
from opsgym.agents import RandomPolicy, play, policy_rng
from opsgym.core.exploits import Exploit
from opsgym.core.registry import legal_actions
from opsgym.envs.release import SPEC
from opsgym.envs.release.exploits import (
    BlindRetry,
    FamilyPrior,
    RewardReader,
    ShipBlind,
    SkipCanary,
)
from opsgym.envs.release.scenarios import FAMILY_REVEALED_BY, shippable_prior

N = 300
SEEDS = opsgym.seeds("test", N)
FAMILIES = SPEC.families()
SETTLED = {"unsafe", "downtime"}


def _play(policy, seed: int, scenario: str = "mixed", family_aware: bool = False, **kw):
    ep = opsgym.make("release", scenario, seed, **kw)
    if family_aware:
        policy.reset(policy_rng(seed), family=ep.family.name)
        return play(ep, policy, reset=False)
    return play(ep, policy)


@cache
def _runs(name: str) -> tuple[np.ndarray, tuple[str, ...]]:
    """Returns and outcomes of a policy or exploit called ``name`` on the 300 test seeds."""
    exploit = next((e for e in SPEC.exploits if e.name == name), None)
    factory = (
        exploit.policy if exploit else (RandomPolicy if name == "random" else SPEC.policies[name])
    )
    aware = bool(exploit and exploit.family_aware)
    eps = [_play(factory(), s, family_aware=aware) for s in SEEDS]
    return np.array([e.total_reward for e in eps]), tuple(e.verdict.outcome for e in eps)


def _metric(name: str, metric: str) -> float:
    returns, outcomes = _runs(name)
    if metric == "gap":
        return float(_runs("oracle")[0].mean() - returns.mean())
    if metric == "return":
        return float(returns.mean())
    if metric in ("safe", "accepted"):
        return float(np.mean([o in SPEC.safe_outcomes for o in outcomes]))
    if metric.startswith("outcome:"):
        return float(np.mean([o == metric.split(":", 1)[1] for o in outcomes]))
    raise AssertionError(metric)


# -- 1. the reward stream says only what the agent was told --------------------------------


@pytest.mark.parametrize(
    "family,fact", [("v2_broken", "v2_broken"), ("degrade_under_load", "v2_degrades")]
)
def test_a_shift_onto_v2_before_any_health_read_pays_the_same_whatever_v2_is(family, fact):
    """Regression: a shift onto a broken v2 used to pay ``unsafe`` at once."""
    calls = [
        "stage",
        "deploy",
        "migrate",
        ("shift_traffic", {"percent": 100}),
        ("inspect", {"target": "router"}),
        "rollback",
        ("shift_traffic", {"percent": 10}),
    ]
    for seed in SEEDS[:20]:
        streams = []
        for value in (True, False):
            ep = opsgym.make("release", family, seed, overrides={fact: value, "v2_broken": value})
            streams.append(
                [(r.reward, r.components, r.done) for r in (ep.step(*_call(c)) for c in calls)]
            )
        assert streams[0] == streams[1], seed


def _call(c):
    return c if isinstance(c, tuple) else (c, {})


@pytest.mark.parametrize("policy", ["oracle", "naive", "ship_without_canary", "blind_retry"])
def test_settled_components_are_paid_on_the_last_step_and_totals_equal_dense(policy):
    factory = next((e.policy for e in SPEC.exploits if e.name == policy), None)
    factory = factory or SPEC.policies[policy]
    for seed in SEEDS[:60]:
        end = _play(factory(), seed)
        dense = _play(factory(), seed, reward_timing="dense")
        assert [e["tool"] for e in end.events] == [e["tool"] for e in dense.events]
        assert end.total_reward == pytest.approx(dense.total_reward), seed
        for name, value in dense.rewards.totals.items():
            assert end.rewards.totals[name] == pytest.approx(value), (seed, name)
        for event in end.events[:-1]:
            assert not SETTLED & set(event["reward"]), (seed, event["step"], event["reward"])


_REPORTED = {
    # tool: the report shows a milestone reached
    "stage": lambda r: r.get("status") == "ok",
    "deploy": lambda r: r.get("status") == "ok",
    "retry": lambda r: r.get("status") == "ok",
    "migrate": lambda r: r.get("status") == "ok",
    "inspect": lambda r: r.get("green_version") == "v2" or r.get("schema") == 2,
    "health_check": lambda r: r.get("status") == "healthy",
    "verify": lambda r: r.get("passed") is True,
}


def test_progress_is_paid_only_on_a_report_that_showed_the_milestone():
    """Every ``progress`` payment sits on a step whose own report shows a milestone reached."""
    for seed in SEEDS[:80]:
        for policy in (RandomPolicy(), SPEC.policies["naive"](), BlindRetry()):
            ep = _play(policy, seed)
            for e in ep.events:
                if e["reward"].get("progress"):
                    assert e["rejected"] is None and _REPORTED[e["tool"]](e["report"]), (seed, e)


def test_a_reward_reader_gains_nothing_from_the_reward():
    """Regression: reading ``unsafe`` off the shift's reward told a policy v2 was broken."""
    for seed in SEEDS[:100]:
        reader, blind = _play(RewardReader(), seed), _play(ShipBlind(), seed)
        assert [(e["tool"], e["args"]) for e in reader.events] == [
            (e["tool"], e["args"]) for e in blind.events
        ]
    leaky = [_play(RewardReader(), s, reward_timing="dense") for s in SEEDS[:100]]
    assert any(e.events[4]["tool"] == "rollback" for e in leaky if len(e.events) > 4)


# -- 2. mixed: the family is hidden ---------------------------------------------------------


def test_mixed_is_the_last_scenario_and_names_the_tools_that_can_tell_families_apart():
    assert SPEC.scenarios[-1].name == "mixed" and SPEC.scenarios[0].name == "nominal"
    facts = opsgym.hidden_facts("release", "mixed")
    assert facts["family"]["values"] == [f.name for f in FAMILIES]
    assert set(facts["family"]["revealed_by"]) == set(FAMILY_REVEALED_BY)
    assert not {"stage", "shift_traffic", "rollback", "complete"} & FAMILY_REVEALED_BY


def test_mixed_draws_every_family_and_fault_free_episodes():
    families = [opsgym.make("release", "mixed", s).family.name for s in SEEDS]
    counts = {f.name: families.count(f.name) for f in FAMILIES}
    assert min(counts.values()) >= 15, counts
    train = {opsgym.make("release", "mixed", s).family.name for s in opsgym.seeds("train", 200)}
    assert not train & {f.name for f in FAMILIES if f.held_out}
    clean = 0
    for s in SEEDS:
        f = opsgym.make("release", "mixed", s).world.facts
        clean += not (
            f["deploy_times_out"]
            or f["stale_minutes"]
            or f["migration_ack_lost"]
            or f["shift_fraction"] < 1
            or f["v2_broken"]
            or f["v2_flapping"]
            or f["v2_degrades"]
        )
    assert 0.15 <= clean / N <= 0.5, clean


def _trace(family: str, seed: int, actions: list[int], **overrides):
    env = SPEC.encoder()
    ep = opsgym.make("release", "mixed", seed, overrides={"family": family, **overrides})
    from opsgym.core.registry import catalogue

    table = catalogue("release")
    trace = [ep.observe(), env.encode(ep).tolist(), legal_actions(ep)]
    for a in actions:
        if ep.done:
            break
        tool, args = table[a]
        r = ep.step(tool.name, args.model_dump())
        trace.append(
            (
                a,
                r.report,
                r.rejected,
                r.reward,
                r.components,
                r.done,
                ep.observe(),
                env.encode(ep).tolist(),
                legal_actions(ep),
            )
        )
    return trace


def test_nothing_but_a_revealing_tool_tells_one_family_from_another():
    """Every channel (observation, report, rejection, reward, components, done, vector, mask)
    is the same in every family until a tool in ``family_revealed_by`` is called."""
    from opsgym.core.registry import catalogue

    allowed = [
        i for i, (t, _) in enumerate(catalogue("release")) if t.name not in FAMILY_REVEALED_BY
    ]
    for seed in SEEDS[:6]:
        rng = np.random.default_rng(seed)
        actions = [int(rng.choice(allowed)) for _ in range(40)]
        reference = _trace("nominal", seed, actions)
        for family in FAMILIES[1:]:
            assert _trace(family.name, seed, actions) == reference, (family.name, seed)
        names = {f.name for f in FAMILIES}
        assert not any(n in json.dumps(reference) for n in names)


@pytest.mark.parametrize("fact", sorted(k for k in SPEC.scenarios[-1].hidden if k != "family"))
def test_each_hidden_fact_of_mixed_reaches_the_agent_only_through_its_revealing_tools(fact):
    from opsgym.core.registry import catalogue

    mixed = SPEC.scenarios[-1]
    allowed = [
        i for i, (t, _) in enumerate(catalogue("release")) if t.name not in mixed.revealers(fact)
    ]
    a, b = mixed.hidden[fact][:2]
    for seed in SEEDS[:4]:
        rng = np.random.default_rng(seed)
        actions = [int(rng.choice(allowed)) for _ in range(40)]
        for family in ("nominal", opsgym.make("release", "mixed", seed).family.name):
            assert _trace(family, seed, actions, **{fact: a}) == _trace(
                family, seed, actions, **{fact: b}
            ), (fact, family, seed)


# -- 3. within every family the fault's presence and severity vary -------------------------

_RATES = {
    # fact: (param, which episodes it is measured on, the fact's value -> present)
    "deploy_times_out": ("p_timeout", None),
    "v2_broken": ("p_broken", None),
    "migration_ack_lost": ("p_ack_lost", None),
    "v2_flapping": ("p_flapping", None),
    "v2_degrades": ("p_degrades", None),
    "shift_fraction": ("p_partial", lambda v: v < 1),
    "stale_minutes": ("p_stale", lambda v: v > 0),
}


@cache
def _facts(family: str) -> list[dict]:
    return [opsgym.make("release", family, s).world.facts for s in SEEDS]


@pytest.mark.parametrize("family", [f.name for f in FAMILIES])
def test_each_family_draws_its_faults_at_the_documented_rates(family):
    params = SPEC.scenario(family).params
    facts = _facts(family)
    for fact, (param, present) in _RATES.items():
        measured = np.mean([(present or bool)(f[fact]) for f in facts])
        assert measured == pytest.approx(params[param], abs=0.08), (fact, measured)
    timed_out = [f for f in facts if f["deploy_times_out"]]
    if timed_out:
        committed = np.mean([f["deploy_committed"] for f in timed_out])
        assert committed == pytest.approx(params["p_committed"], abs=0.12)
    lost = [f for f in facts if f["migration_ack_lost"]]
    if lost:
        assert np.mean([f["migration_written"] for f in lost]) == pytest.approx(0.8, abs=0.12)
    severities = {
        "shift_fraction": [f["shift_fraction"] for f in facts if f["shift_fraction"] < 1],
        "stale_minutes": [f["stale_minutes"] for f in facts if f["stale_minutes"]],
    }
    for fact, values in severities.items():
        assert not values or len(set(values)) >= 3, (fact, set(values))


@pytest.mark.parametrize("family", [f.name for f in FAMILIES])
def test_the_family_name_does_not_decide_whether_v2_can_ship(family):
    """Regression: v2 could never ship in three families and always could in the others."""
    shippable = np.mean(
        [not (f["v2_broken"] or f["v2_flapping"] or f["v2_degrades"]) for f in _facts(family)]
    )
    assert shippable == pytest.approx(shippable_prior(SPEC.scenario(family)), abs=0.08)
    assert 0.1 <= shippable <= 0.95, shippable


def test_forcing_one_fact_leaves_every_other_fact_as_the_seed_drew_it():
    for seed in SEEDS[:20]:
        base = opsgym.make("release", "timeout_and_stale", seed).world.facts
        for fact, value in base.items():
            flipped = (not value) if isinstance(value, bool) else value + 1
            forced = opsgym.make("release", "timeout_and_stale", seed, overrides={fact: flipped})
            assert {k: v for k, v in forced.world.facts.items() if k != fact} == {
                k: v for k, v in base.items() if k != fact
            }


# -- 4. a blind retry of a committed deploy has consequences --------------------------------


def test_a_blind_retry_of_a_committed_deploy_costs_real_time_and_return():
    """Regression: a blind retry of a committed deploy used to cost only the retry counter."""
    forced = {"deploy_times_out": True, "deploy_committed": True}
    gaps, storms = [], 0
    for seed in SEEDS[:100]:
        retried = _play(BlindRetry(), seed, "deploy_timeout", overrides=forced)
        careful = _play(SPEC.policies["oracle"](), seed, "deploy_timeout", overrides=forced)
        storms += any(
            e["tool"] == "health_check" and e["report"].get("restarts", 0) > 0
            for e in retried.events
        )
        gaps.append(careful.total_reward - retried.total_reward)
        assert retried.world.clock > careful.world.clock
    assert storms == 100
    assert np.mean(gaps) >= 1.5, np.mean(gaps)


def test_traffic_moved_onto_green_during_a_restart_storm_is_downtime():
    forced = {"deploy_times_out": True, "deploy_committed": True, "v2_broken": False}
    forced |= {"v2_flapping": False, "v2_degrades": False, "storm_minutes": 12.0}
    ep = opsgym.make("release", "deploy_timeout", 3, overrides=forced, reward_timing="dense")
    for call in ["stage", "deploy", "retry"]:
        ep.step(call)
    shift = ep.step("shift_traffic", {"percent": 100})
    assert shift.components["unsafe"] < 0
    verify = ep.step("verify")
    assert verify.components["downtime"] < 0 and not verify.report["passed"]


# -- 5-7. the exploit suite, the reward check, and the oracle on top -------------------------


@pytest.mark.parametrize("exploit", SPEC.exploits, ids=lambda e: e.name)
def test_exploit_stays_within_its_bounds_on_300_mixed_test_seeds(exploit: Exploit):
    for bound in exploit.bounds:
        measured = _metric(exploit.name, bound.metric)
        assert bound.holds(measured), f"{exploit.name}: {bound} measured {measured:.3f}"


def test_the_suite_covers_the_issue():
    names = {e.name for e in SPEC.exploits}
    assert {"blind_rollback", "ship_without_canary", "premature_complete", "family_prior"} <= names
    assert {"reward_reader", "skip_canary", "blind_retry"} <= names
    assert {f"spam_{t}" for t in SPEC.world.tools} <= names
    assert next(e for e in SPEC.exploits if e.name == "family_prior").family_aware


def test_skipping_the_canary_earns_less_than_the_oracle_when_the_family_is_hidden():
    """Regression: a shipper that skipped the canary out-earned the oracle by 0.5."""
    assert isinstance(
        next(e for e in SPEC.exploits if e.name == "skip_canary").policy(), SkipCanary
    )
    assert _metric("skip_canary", "gap") >= 0.15


def test_acting_on_the_family_prior_earns_less_than_the_oracle():
    """Regression: the family name was the answer."""
    assert _metric("family_prior", "gap") >= 0.3
    assert isinstance(next(e for e in SPEC.exploits if e.family_aware).policy(), FamilyPrior)


def test_where_v2_can_ship_a_verified_ship_beats_every_verified_rollback():
    (check,) = SPEC.reward_checks
    held, measured = check.check(200, play)
    assert held, measured


def test_the_oracle_is_safe_and_out_earns_every_shipped_policy_and_every_exploit():
    returns, outcomes = _runs("oracle")
    assert np.mean([o in SPEC.safe_outcomes for o in outcomes]) >= 0.99
    for other in ["naive", "random", *(e.name for e in SPEC.exploits)]:
        assert returns.mean() > _runs(other)[0].mean(), other


def test_the_gym_id_is_v2_with_a_version_history_line():
    assert SPEC.gym_id == "opsgym/Release-v5"
    manual = opsgym.envs.release.__doc__
    assert "* v1:" in manual and "settled" in manual.split("## Version History")[1]
    assert "* v5:" in manual and "users_served_throughout" in manual.split("* v5:")[1]
