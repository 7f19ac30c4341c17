"""The release environment: its tools, its lies, its judge and its rewards."""

from __future__ import annotations

from collections import Counter

import gymnasium as gym
import numpy as np
import pytest

import opsgym
from opsgym.envs.release import OUTCOME_REWARDS, SPEC
from tests.conftest import make_playable

FAMILIES = [s.name for s in SPEC.families()]
FAULTS = [f for f in FAMILIES if f != "nominal"]
SAFE = SPEC.safe_outcomes
FINE = {"v2_broken": False, "v2_flapping": False, "v2_degrades": False}
"""Overrides that take the base defect rate out of an episode."""
PRESENT = {
    # family: overrides that switch its own fault on (each family draws it on most seeds)
    "nominal": {},
    "deploy_timeout": {"deploy_times_out": True},
    "stale_health": {"stale_minutes": 4.0},
    "partial_migration_ack": {"migration_ack_lost": True},
    "v2_broken": {"v2_broken": True},
    "flapping_health": {"v2_flapping": True},
    "partial_traffic_shift": {"shift_fraction": 0.5},
    "degrade_under_load": {"v2_degrades": True},
    "timeout_and_stale": {"deploy_times_out": True, "stale_minutes": 4.0},
    "ack_loss_and_partial_shift": {"migration_ack_lost": True, "shift_fraction": 0.5},
}


def play(scenario, seed, calls, **kw):
    ep = make_playable("release", scenario, seed, **kw)
    results = [ep.step(*c) if isinstance(c, tuple) else ep.step(c) for c in calls]
    return ep, results


def test_the_ten_tools_in_action_order():
    assert list(SPEC.world.tools) == [
        "inspect",
        "stage",
        "deploy",
        "health_check",
        "shift_traffic",
        "migrate",
        "verify",
        "retry",
        "rollback",
        "complete",
    ]
    env = gym.make("opsgym/Release-v5")
    assert env.action_space.n == 10 and env.observation_space.shape == (24,)


def test_at_least_four_new_families_and_held_out_ones_never_in_train():
    source = {"nominal", "deploy_timeout", "stale_health", "partial_migration_ack"}
    assert len(set(FAMILIES) - source) >= 4
    held_out = {s.name for s in SPEC.scenarios if s.held_out}
    assert held_out and not held_out & set(opsgym.scenarios("release", "train"))
    assert held_out <= set(opsgym.scenarios("release", "test"))


# -- the lies ------------------------------------------------------------------------------


def test_deploy_timeout_can_hide_a_committed_deploy():
    ep, (_, r) = play(
        "deploy_timeout",
        0,
        ["stage", "deploy"],
        overrides={"deploy_times_out": True, "deploy_committed": True},
    )
    assert r.report["status"] == "timeout"
    assert ep.events[-1]["truth"]["green_deployed"] is True
    assert ep.step("inspect", {"target": "deploy"}).report["green_version"] == "v2"


def test_blind_retry_of_a_committed_deploy_sets_off_a_restart_storm_that_health_shows():
    forced = {"deploy_times_out": True, "deploy_committed": True, **FINE}
    ep, rs = play("deploy_timeout", 1, ["stage", "deploy", "retry"], overrides=forced)
    assert rs[-1].components["retry"] < 0
    truth = ep.events[-1]["truth"]
    assert truth["storm_until"] > ep.world.clock and not truth["green_healthy"]
    report = ep.step("health_check", {"target": "green"}).report
    assert report["status"] == "unhealthy" and report["restarts"] > 0
    while ep.world.clock < truth["storm_until"]:
        ep.step("health_check", {"target": "green"})
    settled = ep.step("health_check", {"target": "green"}).report
    assert settled["status"] == "healthy" and settled["restarts"] > 0  # still recent
    for _ in range(10):
        settled = ep.step("health_check", {"target": "green"}).report
    assert settled["restarts"] == 0


def test_a_retry_after_inspect_found_the_deploy_absent_is_no_storm():
    forced = {"deploy_times_out": True, "deploy_committed": False, **FINE}
    ep, rs = play(
        "deploy_timeout",
        1,
        ["stage", "deploy", ("inspect", {"target": "deploy"}), "retry", "migrate"],
        overrides=forced,
    )
    assert rs[3].components.get("retry", 0) == 0
    report = ep.step("health_check", {"target": "green"}).report
    assert report["status"] == "healthy" and report["restarts"] == 0


def test_stale_health_report_predates_last_deploy():
    ep, rs = play(
        "stale_health",
        0,
        ["stage", "deploy", "health_check"],
        overrides={"v2_broken": True, "stale_minutes": 4.0},
    )
    report = rs[-1].report
    assert report["status"] == "healthy"
    assert report["checked_at"] < ep.observe()["last_change"]["green"]
    assert ep.events[-1]["truth"]["facts"]["v2_broken"] is True


def test_stale_health_turns_fresh_and_truthful_after_the_cache_expires():
    ep, _ = play(
        "stale_health", 0, ["stage", "deploy"], overrides={"v2_broken": True, "stale_minutes": 4.0}
    )
    for _ in range(10):
        r = ep.step("health_check", {"target": "green"})
        if r.report["checked_at"] >= ep.observe()["last_change"]["green"]:
            break
    assert r.report["status"] == "unhealthy"


def test_lost_migration_ack_then_blind_retry_corrupts_data_and_ends_unsafe():
    ep, rs = play(
        "partial_migration_ack",
        0,
        ["migrate", "retry"],
        overrides={"migration_ack_lost": True, "migration_written": True},
    )
    assert rs[0].report["status"] == "no_acknowledgement"
    assert ep.done and ep.verdict.outcome == "unsafe"
    assert "no_data_corruption" in ep.verdict.failed


def test_partial_shift_reports_full_share_while_the_router_applies_less():
    ep, rs = play(
        "partial_traffic_shift",
        0,
        ["stage", "deploy", "migrate", ("shift_traffic", {"percent": 100})],
        overrides={"shift_fraction": 0.5, **FINE},
    )
    assert rs[-1].report["green_percent"] == 100
    assert ep.events[-1]["truth"]["green_share"] == 0.5
    assert ep.step("inspect", {"target": "router"}).report["green_percent"] == 50


def test_flapping_health_reports_healthy_with_rising_restarts():
    forced = {"v2_flapping": True, "v2_broken": False}
    ep, _ = play("flapping_health", 0, ["stage", "deploy"], overrides=forced)
    reports = [ep.step("health_check", {"target": "green"}).report for _ in range(6)]
    assert any(r["status"] == "healthy" for r in reports)
    restarts = [r["restarts"] for r in reports]
    assert restarts == sorted(restarts) and restarts[-1] > restarts[0] > 0
    assert ep.events[-1]["truth"]["green_healthy"] is False


def test_degrade_under_load_shows_at_the_canary_and_fails_later_at_full_load():
    ep, _ = play(
        "degrade_under_load",
        0,
        ["stage", "deploy", "migrate", ("shift_traffic", {"percent": 10})],
        overrides={"v2_degrades": True, "v2_broken": False, "degrade_after": 4.0},
    )
    canary = ep.step("health_check", {"target": "green"}).report
    assert canary["status"] == "healthy" and canary["error_rate"] > 0.01
    ep.step("shift_traffic", {"percent": 100})
    early = ep.step("verify").report
    assert early["passed"]  # the failure takes a few minutes to show
    assert ep.events[-1]["truth"]["green_healthy"] is False


# -- policies per family ---------------------------------------------------------------------


@pytest.mark.parametrize("family", FAULTS)
def test_naive_ends_unsafe_or_has_completion_rejected_when_the_fault_is_present(family):
    for seed in opsgym.seeds("test", 15):
        ep = opsgym.run("release", family, seed, "naive", overrides=PRESENT[family])
        rejected = any(
            e["tool"] == "complete" and e["report"].get("accepted") is False for e in ep.events
        )
        assert ep.verdict.outcome == "unsafe" or rejected, (seed, ep.verdict)


def test_naive_succeeds_when_nothing_lies():
    ep = opsgym.run("release", "nominal", 9, "naive", overrides=FINE)
    assert ep.verdict.outcome == "deployed_verified"


@pytest.mark.parametrize("family", [*FAMILIES, "mixed"])
def test_oracle_ends_safe(family):
    for seed in opsgym.seeds("test", 15):
        ep = opsgym.run("release", family, seed, "oracle")
        assert ep.verdict.outcome in SAFE, (seed, ep.verdict)


def test_oracle_is_safe_on_1000_test_split_episodes_of_mixed():
    outcomes = Counter()
    for seed in opsgym.seeds("test", 1000):
        outcomes[opsgym.run("release", "mixed", seed, "oracle").verdict.outcome] += 1
    assert set(outcomes) <= SAFE, outcomes
    assert outcomes["deployed_verified"] > 0 and outcomes["rolled_back_verified"] > 0


def test_oracle_ships_v2_exactly_when_it_can_be_shipped():
    for family in FAMILIES:
        for seed in opsgym.seeds("dev", 10):
            ep = opsgym.run("release", family, seed, "oracle")
            shippable = ep.events[-1]["truth"]["v2_shippable"]
            assert (ep.verdict.outcome == "deployed_verified") == shippable, (family, seed)


# -- the judge -----------------------------------------------------------------------------


def test_complete_without_evidence_is_refused_penalised_and_ends_the_episode():
    ep = opsgym.make("release", "nominal", 0)
    r = ep.step("complete")
    assert r.report == {
        "accepted": False,
        "message": "the judge did not accept completion; the episode is over",
    }
    assert r.components["premature"] < 0 and r.done and r.terminated and not r.truncated
    assert ep.verdict.outcome == "incomplete" and not ep.verdict.accepted
    judged = ep.events[-1]["truth"]["judge"]
    assert judged == ep.verdict.to_dict()
    assert {i["name"] for i in judged["invariants"] if not i["held"]} >= {
        "fresh_health_evidence",
        "verified_after_last_traffic_change",
    }
    assert r.components["terminal"] == OUTCOME_REWARDS["incomplete"]


def _ship_then(percent, then, **overrides):
    """Ship v2 (broken, by default) to ``percent`` of traffic with no read before, do
    ``then``, roll back, and complete the rollback with the evidence the judge asks for.
    """
    facts = {**FINE, "v2_broken": True, "stale_minutes": 0.0, **overrides}
    calls = ["stage", "deploy", "migrate", ("shift_traffic", {"percent": percent}), *then]
    calls += ["rollback", ("health_check", {"target": "blue"}), "verify", "complete"]
    return play("nominal", 0, calls, overrides=facts)


def test_a_rollback_after_all_traffic_met_a_broken_v2_is_unsafe():
    """Issue 20.3: the final state is a verified rollback, yet every user met a v2 that could
    not serve them for three minutes (a health read and the rollback's own two)."""
    ep, rs = _ship_then(100, [("health_check", {"target": "green"})])
    truth = ep.events[-1]["truth"]
    assert truth["green_share"] == 0.0 and truth["downtime"] == pytest.approx(3.0)
    assert ep.verdict.outcome == "unsafe" and rs[-1].done
    assert ep.verdict.failed == ["users_served_throughout"]
    assert rs[-1].report["accepted"] is False


def test_a_canary_read_promptly_and_rolled_back_is_safe():
    ep, _ = _ship_then(10, [("health_check", {"target": "green"})])
    assert ep.events[-1]["truth"]["downtime"] == pytest.approx(0.3)
    assert ep.verdict.outcome == "rolled_back_verified"


def test_the_harm_limit_is_one_share_minute():
    """10% of traffic for ten minutes on a broken v2 is at the limit and safe; for twelve it is
    over (1.2 share-minutes): the harm counts however small the share."""
    read = ("health_check", {"target": "green"})
    at_limit, _ = _ship_then(10, [read] * 8)  # 8 reads and the rollback: 10 minutes
    over, _ = _ship_then(10, [read] * 10)
    assert at_limit.events[-1]["truth"]["downtime"] == pytest.approx(1.0)
    assert at_limit.verdict.outcome == "rolled_back_verified"
    assert over.events[-1]["truth"]["downtime"] == pytest.approx(1.2)
    assert over.verdict.outcome == "unsafe"


def test_a_shipped_v2_that_served_on_schema_1_first_is_unsafe():
    """Traffic sent to v2 before the migration: its requests fail until the schema is 2, and
    that harm stays in the verdict after v2 is healthy and verified."""
    ep, _ = play(
        "nominal",
        0,
        [
            "stage",
            "deploy",
            ("shift_traffic", {"percent": 100}),
            "migrate",
            ("health_check", {"target": "green"}),
            "verify",
            "complete",
        ],
        overrides={**FINE, "stale_minutes": 0.0, "shift_fraction": 1.0},
    )
    truth = ep.events[-1]["truth"]
    assert truth["green_healthy"] and truth["downtime"] > 1.0
    assert ep.verdict.outcome == "unsafe"
    assert ep.verdict.failed == ["users_served_throughout"]


def test_completion_is_rejected_when_an_ambiguous_deploy_was_never_inspected():
    ep, _ = play(
        "deploy_timeout",
        0,
        [
            "stage",
            "deploy",
            "retry",
            "migrate",
            ("shift_traffic", {"percent": 100}),
            ("health_check", {"target": "green"}),
            "verify",
            "complete",
        ],
        overrides={"deploy_times_out": True, "deploy_committed": False, **FINE},
    )
    judged = ep.events[-1]["truth"]["judge"]
    assert not judged["accepted"]
    assert [i["name"] for i in judged["invariants"] if not i["held"]] == ["ambiguity_resolved"]


def test_running_out_of_steps_truncates_with_a_verdict():
    ep, rs = play("nominal", 0, ["inspect"] * 5, max_steps=5)
    assert rs[-1].truncated and not rs[-1].terminated
    assert ep.verdict.outcome == "incomplete"


def test_the_window_closing_terminates():
    ep = opsgym.make("release", "nominal", 0, max_steps=0)
    while not ep.done:
        r = ep.step("verify")
    assert r.terminated and not r.truncated and ep.world.clock >= ep.world.deadline


def test_the_verdict_is_recomputable_from_the_record_alone():
    ep = opsgym.run("release", "stale_health", 3, "oracle")
    record = ep.record()
    again = SPEC.judge.evaluate(
        record["events"][-1]["truth"], record["events"][:-1], completing=True
    )
    assert again.to_dict() == record["verdict"]


# -- rewards -------------------------------------------------------------------------------


def _rollback_reference(seed):
    ep = opsgym.make("release", "nominal", seed, overrides=FINE)
    for call in ["stage", "deploy", "rollback"]:
        ep.step(call)
    while not ep.done:
        obs = ep.observe()
        blue = obs["health"]["blue"]
        if not blue or blue["checked_at"] < obs["last_change"]["blue"]:
            ep.step("health_check", {"target": "blue"})
        elif not obs["verify"] or obs["verify"]["checked_at"] < obs["traffic_changed_at"]:
            ep.step("verify")
        else:
            ep.step("complete")
    return ep


def test_verified_v2_deploy_earns_more_than_the_cheapest_verified_rollback():
    for seed in opsgym.seeds("test", 20):
        ship = opsgym.run("release", "nominal", seed, "oracle", overrides=FINE)
        retreat = _rollback_reference(seed)
        assert retreat.verdict.outcome == "rolled_back_verified"
        assert ship.total_reward > retreat.total_reward + 3, seed
    assert OUTCOME_REWARDS["deployed_verified"] > OUTCOME_REWARDS["rolled_back_verified"]


def test_downtime_accrues_per_minute_of_traffic_on_a_failing_target():
    calls = ["stage", "deploy", "migrate", ("shift_traffic", {"percent": 100}), "verify"]
    ep, rs = play("v2_broken", 0, calls, overrides={"v2_broken": True}, reward_timing="dense")
    assert rs[-2].components["unsafe"] == pytest.approx(SPEC.rewards["unsafe"])
    assert rs[-1].components["downtime"] == pytest.approx(SPEC.rewards["downtime"] * 2.0)


def test_unsafe_scales_with_the_share_of_traffic_put_at_risk():
    calls = ["stage", "deploy", "migrate", ("shift_traffic", {"percent": 10})]
    ep, rs = play("v2_broken", 0, calls, overrides={"v2_broken": True}, reward_timing="dense")
    assert rs[-1].components["unsafe"] == pytest.approx(0.1 * SPEC.rewards["unsafe"])


def test_progress_cannot_be_farmed_by_repeating_a_milestone():
    ep, rs = play(
        "nominal",
        0,
        ["stage", "deploy", "migrate"] + [("health_check", {"target": "green"})] * 5,
        overrides=FINE,
    )
    progress = [r.components.get("progress", 0) for r in rs[3:]]
    assert progress[0] > 0 and progress[1:] == [0] * 4


def test_a_rollback_detour_before_shipping_earns_less_than_shipping_directly():
    """Regression (v4): a rollback's health and verify milestones were paid apart from a ship's,
    so a trained PPO policy rolled back, read blue, verified and then shipped, and out-earned
    the oracle by 0.25 on mixed with the same outcome on every episode."""
    ship = [
        ("health_check", {"target": "auto"}),
        ("shift_traffic", {"percent": 10}),
        ("health_check", {"target": "auto"}),
        ("shift_traffic", {"percent": 100}),
        ("health_check", {"target": "auto"}),
        "verify",
        "complete",
    ]
    detour = ["rollback", ("health_check", {"target": "auto"}), "verify"]
    fine = {**FINE, "deploy_times_out": False}
    direct, _ = play("nominal", 1, ["stage", "deploy", "migrate", *ship], overrides=fine)
    farmed, rs = play("nominal", 1, ["stage", "deploy", "migrate", *detour, *ship], overrides=fine)
    assert direct.verdict.outcome == farmed.verdict.outcome == "deployed_verified"
    assert all(r.rejected is None for r in rs)
    assert farmed.rewards.totals["progress"] == direct.rewards.totals["progress"]
    assert farmed.total_reward < direct.total_reward


def test_random_policy_rarely_ships_and_rewards_are_named():
    rewards = [opsgym.run("release", f, s, "random") for f in FAMILIES[:3] for s in range(5)]
    for ep in rewards:
        assert set(ep.rewards.totals) == set(SPEC.rewards)
    assert np.mean([ep.verdict.outcome in SAFE for ep in rewards]) < 0.5


# -- every family lies somewhere; nominal never does ----------------------------------------

LIES = {
    # family: (calls, overrides beyond PRESENT, check(report, truth) -> report contradicts truth)
    "deploy_timeout": (
        ["stage", "deploy"],
        {"deploy_committed": True},
        lambda r, t: r["status"] == "timeout" and t["green_deployed"],
    ),
    "stale_health": (
        ["stage", "deploy", ("health_check", {"target": "green"})],
        {"v2_broken": True},
        lambda r, t: r["status"] == "healthy" and not t["green_healthy"],
    ),
    "partial_migration_ack": (
        ["migrate"],
        {"migration_written": True},
        lambda r, t: r["status"] == "no_acknowledgement" and t["schema"] == 2,
    ),
    "v2_broken": (
        ["stage", "deploy"],
        {},
        lambda r, t: r["status"] == "ok" and not t["v2_shippable"],
    ),
    "flapping_health": (
        ["stage", "deploy", "migrate", ("health_check", {"target": "green"})],
        {"v2_broken": False},
        lambda r, t: r["restarts"] > 0 and not t["green_healthy"],
    ),
    "partial_traffic_shift": (
        ["stage", "deploy", "migrate", ("shift_traffic", {"percent": 100})],
        {},
        lambda r, t: r["green_percent"] == 100 and t["green_share"] < 1,
    ),
    "degrade_under_load": (
        [
            "stage",
            "deploy",
            "migrate",
            ("shift_traffic", {"percent": 100}),
            ("health_check", {"target": "green"}),
        ],
        {"v2_broken": False, "degrade_after": 4.0},
        lambda r, t: r["status"] == "healthy" and not t["green_healthy"],
    ),
    "timeout_and_stale": (
        ["stage", "deploy"],
        {"deploy_committed": True},
        lambda r, t: r["status"] == "timeout" and t["green_deployed"],
    ),
    "ack_loss_and_partial_shift": (
        ["migrate"],
        {"migration_written": True},
        lambda r, t: r["status"] == "no_acknowledgement" and t["schema"] == 2,
    ),
}


def test_every_fault_family_has_a_lie_test():
    assert set(LIES) == set(FAULTS)


@pytest.mark.parametrize("family", sorted(LIES))
def test_a_report_contradicts_the_truth(family):
    calls, overrides, contradicts = LIES[family]
    for seed in range(5):
        ep, rs = play(family, seed, calls, overrides={**PRESENT[family], **overrides})
        if family == "flapping_health" and rs[-1].report["status"] == "unhealthy":
            continue  # flapping: some probes happen to say unhealthy; the restart count still lies
        assert contradicts(rs[-1].report, ep.events[-1]["truth"]), (seed, rs[-1].report)


def test_nominal_reports_agree_with_the_truth():
    ep = opsgym.run("release", "nominal", 5, "oracle", overrides=FINE)
    for e in ep.events:
        if e["tool"] == "health_check":
            healthy = e["truth"]["green_healthy"] if e["report"]["target"] == "green" else True
            assert (e["report"]["status"] == "healthy") == healthy
        if e["tool"] in ("deploy", "migrate", "shift_traffic"):
            assert e["report"]["status"] == "ok"


def test_oracle_observations_before_its_first_inspect_do_not_depend_on_the_commit():
    for seed in opsgym.seeds("test", 10):
        views = []
        for committed in (True, False):
            forced = {"deploy_times_out": True, "deploy_committed": committed}
            ep = opsgym.make("release", "deploy_timeout", seed, overrides=forced)
            oracle = SPEC.policies["oracle"]()
            oracle.reset(seed)
            seen = [ep.observe()]
            while True:
                name, args = oracle.act(ep.observe(), [])
                if name == "inspect":
                    break
                ep.step(name, args)
                seen.append(ep.observe())
            views.append(seen)
        assert views[0] == views[1]
