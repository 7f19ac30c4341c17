"""Release lies: the reports that misled are marked in the hidden truth, and each is settled as
trusted or reconciled by the rule in the manual's "Lies" section (issue 8).

Figures are measured on 200 ``mixed`` test-split seeds, each policy on the same seeds.
"""

from __future__ import annotations

import json
import pickle
from collections import Counter
from functools import cache
from typing import Any

import pytest

import opsgym
from opsgym.agents import play
from opsgym.envs.release import SPEC
from tests.conftest import lie_counts, measure_lies

N = 200
SEEDS = opsgym.seeds("test", N)
KINDS = ("timeout_after_commit", "stale_health", "lost_ack", "partial_shift")
FINE = {"v2_broken": False, "v2_flapping": False, "v2_degrades": False}

LIE: dict[str, tuple[str, dict[str, Any]]] = {
    # kind: (family, facts that make its report a lie)
    "timeout_after_commit": (
        "deploy_timeout",
        {**FINE, "deploy_times_out": True, "deploy_committed": True},
    ),
    "lost_ack": (
        "partial_migration_ack",
        {**FINE, "migration_ack_lost": True, "migration_written": True},
    ),
    # A v2 that degrades under full load, not yet failing when verify runs: only a fresh probe
    # (which the naive policy never waits for) gives the cached "healthy" away.
    "stale_health": (
        "stale_health",
        {"stale_minutes": 5.0, "v2_broken": False, "v2_degrades": True, "degrade_after": 6.0},
    ),
    "partial_shift": ("partial_traffic_shift", {**FINE, "shift_fraction": 0.5}),
}
HONEST: dict[str, dict[str, Any]] = {
    # kind: the twin facts that make the same report true
    "timeout_after_commit": {"deploy_committed": False},
    "lost_ack": {"migration_written": False},
    "stale_health": {"v2_degrades": False},
    "partial_shift": {"shift_fraction": 1.0},
}
ORACLE_LIE = {
    **LIE,
    # The oracle's canary catches a degrading v2 on a fresh probe before any cache can lie;
    # it meets a stale "healthy" when it reads green before traffic moves.
    "stale_health": (
        "stale_health",
        {"stale_minutes": 5.0, "v2_broken": True, "migrate_minutes": 3.0},
    ),
}
BLIND = {
    # kind: a call sequence that sees each lie and acts on it without a check in between
    "timeout_after_commit": ["stage", "deploy", "retry"],
    "lost_ack": ["stage", "migrate", "retry"],
    "stale_health": [
        "stage",
        "deploy",
        "migrate",
        ("shift_traffic", {"percent": 100}),
        "health_check",
        "complete",
    ],
    "partial_shift": [
        "stage",
        "deploy",
        "migrate",
        ("shift_traffic", {"percent": 100}),
        "complete",
    ],
}
TWIN_CALLS = {
    # kind: calls short of any that could tell a lie from its honest twin
    "timeout_after_commit": [
        "stage",
        "deploy",
        "health_check",
        "shift_traffic",
        "verify",
        "complete",
    ],
    "lost_ack": ["stage", "migrate", "health_check", "verify", "complete"],
    "stale_health": BLIND["stale_health"],
    "partial_shift": [
        "stage",
        "deploy",
        "migrate",
        ("shift_traffic", {"percent": 100}),
        "health_check",
        "complete",
    ],
}


def _make(kind: str, seed: int = 0, honest: bool = False, facts=LIE):
    family, overrides = facts[kind]
    return opsgym.make(
        "release", family, seed, overrides={**overrides, **(HONEST[kind] if honest else {})}
    )


def _steps(ep, calls):
    return [ep.step(*c) if isinstance(c, tuple) else ep.step(c) for c in calls]


_kind = lie_counts


@cache
def _measure(name: str) -> tuple[Counter, dict[str, Counter]]:
    """Lies told, trusted and reconciled by ``name`` over the 200 test seeds, and per kind."""
    return measure_lies("release", name, SEEDS, KINDS)


# -- the rule, one kind at a time ---------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_acting_on_each_lie_unchecked_trusts_it(kind):
    ep = _make(kind)
    _steps(ep, BLIND[kind])
    assert _kind(ep, kind) == {"told": 1, "trusted": 1, "reconciled": 0}


@pytest.mark.parametrize("kind", ["timeout_after_commit", "lost_ack", "stale_health"])
def test_the_naive_policy_trusts_the_lie(kind):
    for seed in range(3):
        ep = play(_make(kind, seed), SPEC.policies["naive"]())
        assert _kind(ep, kind) == {"told": 1, "trusted": 1, "reconciled": 0}


def test_the_naive_verify_reconciles_a_partial_shift_though_it_reads_nothing():
    """The rule counts calls, not attention: naive's scripted verify reports the real split
    before its complete, so the short split is reconciled (and the judge still refuses)."""
    ep = play(_make("partial_shift"), SPEC.policies["naive"]())
    assert _kind(ep, "partial_shift") == {"told": 1, "trusted": 0, "reconciled": 1}
    assert ep.verdict.outcome not in SPEC.safe_outcomes


@pytest.mark.parametrize("kind", KINDS)
def test_the_oracle_reconciles_each_lie(kind):
    for seed in range(3):
        ep = play(_make(kind, seed, facts=ORACLE_LIE), SPEC.policies["oracle"]())
        counts = _kind(ep, kind)
        assert counts["told"] >= 1 and counts["reconciled"] == counts["told"], counts
        assert ep.verdict.outcome in SPEC.safe_outcomes


@pytest.mark.parametrize("kind", KINDS)
def test_the_same_report_when_true_is_no_lie(kind):
    for policy in ("naive", "oracle"):
        ep = play(_make(kind, honest=True), SPEC.policies[policy]())
        assert ep.world.lies.summary()["told"] == 0, policy


def test_a_fresh_probe_and_a_verify_that_shows_green_failing_reconcile_a_stale_healthy():
    facts = {"stale_minutes": 5.0, "v2_broken": True, "migrate_minutes": 3.0}
    ep = opsgym.make("release", "stale_health", 0, overrides=facts)
    _steps(ep, ["stage", "deploy", "migrate", ("health_check", {"target": "green"})])
    assert _kind(ep, "stale_health")["told"] == 1
    ep.step("health_check", {"target": "green"})  # 5 minutes after the deploy: fresh
    assert _kind(ep, "stale_health")["reconciled"] == 1
    ep = opsgym.make("release", "stale_health", 0, overrides=facts)
    _steps(ep, ["stage", "deploy", "migrate", ("shift_traffic", {"percent": 10}), "health_check"])
    assert _kind(ep, "stale_health")["told"] == 1
    ep.step("verify")  # a broken green fails the canary's transactions
    assert _kind(ep, "stale_health") == {"told": 1, "trusted": 0, "reconciled": 1}


def test_a_verify_blind_to_the_failure_does_not_reconcile_and_acting_later_trusts():
    ep = _make("stale_health")
    _steps(ep, ["stage", "deploy", "migrate", ("shift_traffic", {"percent": 100}), "health_check"])
    assert ep.step("verify").report["passed"]  # not failing yet under load
    assert _kind(ep, "stale_health") == {"told": 1, "trusted": 0, "reconciled": 0}
    ep.step("complete")
    assert _kind(ep, "stale_health")["trusted"] == 1


def test_a_retry_trusts_only_the_lie_about_the_operation_it_retries():
    facts = {**LIE["lost_ack"][1], "deploy_times_out": True, "deploy_committed": True}
    ep = opsgym.make("release", "partial_migration_ack", 0, overrides=facts)
    _steps(ep, ["stage", "migrate", "deploy", "retry"])  # the retry re-runs the deploy
    assert _kind(ep, "timeout_after_commit")["trusted"] == 1
    assert _kind(ep, "lost_ack") == {"told": 1, "trusted": 0, "reconciled": 0}
    ep.step("inspect", {"target": "migration"})
    assert _kind(ep, "lost_ack")["reconciled"] == 1


def test_completing_after_a_rollback_does_not_trust_a_short_split():
    ep = _make("partial_shift")
    _steps(ep, ["stage", "deploy", "migrate", ("shift_traffic", {"percent": 100}), "rollback"])
    ep.step("complete")
    assert _kind(ep, "partial_shift") == {"told": 1, "trusted": 0, "reconciled": 0}


# -- 200 mixed test seeds -------------------------------------------------------------------


def test_the_oracle_reconciles_every_lie_it_is_told_on_mixed_test_seeds():
    total, by_kind = _measure("oracle")
    assert total["trusted"] == 0 and total["reconciled"] == total["told"] > 0
    for kind in KINDS:
        assert by_kind[kind]["told"] > 0, kind  # it meets every kind
        assert by_kind[kind]["reconciled"] == by_kind[kind]["told"], kind


def test_the_naive_policy_trusts_the_lies_it_acts_on_before_checking():
    total, by_kind = _measure("naive")
    assert total["trusted"] > 0.5 * total["told"]
    for kind in ("timeout_after_commit", "lost_ack"):  # it retries each at once
        assert by_kind[kind]["trusted"] == by_kind[kind]["told"] > 0, kind
    # Its scripted verify comes before its complete: a short split is always reconciled, a
    # stale "healthy" whenever the verify can show green failing.
    assert by_kind["partial_shift"]["reconciled"] == by_kind["partial_shift"]["told"] > 0
    assert by_kind["stale_health"]["told"] > by_kind["stale_health"]["reconciled"] > 0


def test_the_random_policy_trusts_lies():
    # Since v5 a refused ``complete`` ends the episode, and a random policy calls it early: it
    # meets a quarter of the lies it met in v4 and no longer trusts every kind on these seeds.
    # Each kind is trusted by acting on it unchecked (test_acting_on_each_lie_unchecked...).
    total, by_kind = _measure("random")
    assert 0 < total["trusted"] < total["told"]
    assert sum(by_kind[k]["trusted"] > 0 for k in KINDS) >= 2


# -- hidden, recorded, replayable, picklable -----------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_a_lie_is_in_the_record_truth_and_nowhere_the_agent_looks(kind):
    """Each lie beside its honest twin: everything the agent sees is identical call for call;
    only the hidden truth says which report lied."""
    seen, told = [], []
    for honest in (False, True):
        ep = _make(kind, seed=3, honest=honest)
        trace = [ep.observe()]
        for c in TWIN_CALLS[kind]:
            result = _steps(ep, [c])[0]
            if result.done:  # a refused complete ends it (v5): the end pays what was settled
                result = result._replace(reward=None, components=None)  # out of sight
            trace.append((result, ep.observe(), ep.world.observe()))
            if result.done:
                break
        seen.append(trace)
        record = json.loads(json.dumps(ep.record()))
        told.append([lie for e in record["events"] for lie in e["truth"].get("lies", [])])
        assert "lies" not in json.dumps(trace, default=repr)
    assert seen[0] == seen[1]
    assert [lie["kind"] for lie in told[0]] == [kind] and told[1] == []
    assert told[0][0]["status"] == "open" and told[0][0]["detail"]


@pytest.mark.parametrize("kind", KINDS)
def test_episodes_with_lies_replay_exactly(kind):
    ep = play(_make(kind, seed=1), SPEC.policies["naive"]())
    assert ep.world.lies.summary()["told"] >= 1
    result = opsgym.replay(json.loads(json.dumps(ep.record())))
    assert result.match, result.first_difference


def test_an_open_lie_survives_pickling_and_settles_against_its_own_world():
    ep = _make("timeout_after_commit")
    _steps(ep, ["stage", "deploy"])
    clone = pickle.loads(pickle.dumps(ep))
    ep.step("retry")
    clone.step("inspect", {"target": "deploy"})
    assert _kind(ep, "timeout_after_commit")["trusted"] == 1
    assert _kind(clone, "timeout_after_commit") == {"told": 1, "trusted": 0, "reconciled": 1}
    clone.step("retry")  # the inspection found it committed: nothing left to retry
    assert clone.world.lies.summary()["trusted"] == 0
