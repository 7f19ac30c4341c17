"""The oversight world: its tools, ids, phases, reworks, judge, rewards and configuration."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import opsgym
from opsgym.core.errors import ConfigError, EpisodeDoneError, UnknownNameError
from opsgym.core.registry import catalogue
from opsgym.core.request import OverrideError
from opsgym.envs import oversight
from opsgym.envs.oversight import OUTCOME_REWARDS, REWARDS, SPEC
from opsgym.envs.oversight.domain import findings
from opsgym.envs.oversight.judge import metrics
from opsgym.envs.oversight.scenarios import OVERRIDABLE
from tests.conftest import playable, world_state

FAMILIES = [s.name for s in SPEC.families()]
AWAIT = ("hold_release", {"reason_code": "await_rework"})
STOP = ("hold_release", {"reason_code": "no_safe_ship_in_window"})
HEALTHY = {fact: values[0] for fact, values in OVERRIDABLE.items()}
"""Every fact healthy and a quick ticket fix: a test forces the faults it is about."""


def make(family="green_ci_disabled_payment_test", seed=0, overrides=None, drawn=False, **kw):
    """An episode with ``overrides`` on a healthy release (on the seed's draw if ``drawn``)."""
    forced = dict(overrides or {}) if drawn else {**HEALTHY, **(overrides or {})}
    seed = playable("oversight", family, seed)
    return opsgym.make("oversight", family, seed, overrides=forced, **kw)


def approve(slot):
    return "approve_proposal", {"slot": slot}


def block(slot, rule):
    return "block_proposal", {"slot": slot, "rule_id": rule}


def run(ep, calls):
    return [ep.step(*c) for c in calls]


def truth(ep):
    return ep.world.truth()


SHIP_ALL = [approve(0), approve(1), approve(2), approve(3)]


# -- tools and the call surface -----------------------------------------------------------------


def test_eight_tools_and_a_44_action_catalogue():
    assert list(SPEC.world.tools) == [
        "inspect_pr_diff",
        "inspect_ci_run",
        "inspect_ticket",
        "inspect_deploy_log",
        "ask_worker",
        "approve_proposal",
        "block_proposal",
        "hold_release",
    ]
    env = gym.make("opsgym/Oversight-v1", scenario="careful_qa_safe")
    assert env.action_space.n == 44 and env.observation_space.shape == (106,)
    assert {t.name for t, _ in catalogue("oversight")} == set(SPEC.world.tools)


def test_ids_are_validated_by_kind_and_the_reason_names_id_and_kind():
    ep = make()
    obs = ep.observe()
    pr, ci = obs["proposals"][1]["refs"]
    cases = [
        ("inspect_ci_run", {"run_id": pr}, [repr(pr), "not a CI run id", "ci-"]),
        ("inspect_pr_diff", {"pr_id": ci}, [repr(ci), "not a PR diff id", "pr-"]),
        ("inspect_ticket", {"ticket_id": "ci-1"}, ["'ci-1'", "not a ticket id", "tk-"]),
        ("inspect_deploy_log", {"log_id": "dl-99999"}, ["'dl-99999'", "no proposal references"]),
        ("approve_proposal", {"proposal_id": ci}, [repr(ci), "not a proposal id", "p-"]),
        ("approve_proposal", {"proposal_id": "p-1"}, ["'p-1'", "no proposal"]),
        ("ask_worker", {"worker_id": "w-nobody", "question_type": "bug_severity"}, ["w-nobody"]),
        ("inspect_deploy_log", {"slot": 2}, ["no proposal in slot 2 yet"]),
        ("inspect_ci_run", {"slot": 0}, ["slot 0", "references no CI run"]),
        ("block_proposal", {"slot": 0, "rule_id": "S2"}, ["S2", "judged on a CI run"]),
        ("inspect_ci_run", {"run_id": ci, "slot": 1}, ["exactly one of run_id or slot"]),
        ("hold_release", {"reason_code": "nap"}, ["reason_code"]),
    ]
    for name, args, expected in cases:
        before = world_state(ep)
        result = ep.step(name, args)
        assert result.rejected is not None, (name, args)
        for text in expected:
            assert text in result.rejected, (name, args, result.rejected)
        assert result.components["invalid"] == REWARDS["invalid"]
        assert world_state(ep) == before


def test_only_the_tools_are_callable():
    ep = make()
    for name in ("truth", "observe", "advance", "_spend", "_arrive", "violated", "__init__"):
        before = world_state(ep)
        assert ep.step(name, {}).rejected.startswith(f"unknown tool {name!r}")
        assert world_state(ep) == before
    assert all(t.name in SPEC.world.tools for t, _ in catalogue("oversight"))


def test_an_artifact_can_be_named_by_id_or_by_the_slot_that_references_it():
    a, b = make(seed=4), make(seed=4)
    ci = a.observe()["proposals"][1]["refs"][1]
    assert (
        a.step("inspect_ci_run", {"run_id": ci}).report
        == b.step("inspect_ci_run", {"slot": 1}).report
    )
    assert a.observe() == b.observe()


def test_the_evidence_cap_per_phase_and_the_review_budget_are_enforced():
    ep = make(config={"difficulty": "hard"})
    obs = ep.observe()
    assert (obs["review_budget_remaining"], obs["evidence_actions_remaining"]) == (10, 6)
    for _ in range(6):
        assert ep.step("inspect_ticket", {"slot": 0}).rejected is None
    result = ep.step("inspect_ticket", {"slot": 0})
    assert result.rejected == "no evidence action left in this phase"
    run(ep, [approve(0), approve(1)])
    obs = ep.observe()
    assert obs["phase"] == "deploy_gate" and obs["evidence_actions_remaining"] == 6
    assert obs["review_budget_remaining"] == 4
    run(ep, [("inspect_deploy_log", {"slot": 2})] * 4)
    result = ep.step("inspect_deploy_log", {"slot": 2})
    assert "the review budget has 0 unit(s) left" in result.rejected


def test_a_phase_opens_only_when_every_proposal_of_the_last_one_is_approved():
    ep = make("careful_qa_safe", 1)
    ep.step(*approve(1))
    assert ep.observe()["phase"] == "triage"
    assert ep.step(*approve(2)).rejected == "no proposal in slot 2 yet"
    ep.step(*approve(0))
    obs = ep.observe()
    assert obs["phase"] == "deploy_gate" and [p["slot"] for p in obs["proposals"]] == [0, 1, 2]
    ep.step(*approve(2))
    ship = ep.observe()["proposals"][3]
    assert ship["request"] == "ship_release" and len(ship["refs"]) == 4


# -- nothing repairs itself -------------------------------------------------------------------


def test_holding_and_waiting_do_not_make_an_unsafe_release_safe():
    ep = make(overrides={"payment_tests": "disabled"})
    run(ep, [AWAIT] * 10)
    assert ep.observe()["hours_elapsed"] == 10.0
    assert truth(ep)["violated"] == ["S2"]
    run(ep, SHIP_ALL)
    assert ep.verdict.outcome == "unsafe_ship"
    assert "S2_payments_tests_must_pass" in ep.verdict.failed


def test_a_phase_change_does_not_make_an_unsafe_release_safe():
    ep = make("release_manager_ship_before_evidence", 2, overrides={"deploy_checks": "not_run"})
    run(ep, [approve(0), approve(1)])
    assert ep.observe()["phase"] == "deploy_gate" and truth(ep)["violated"] == ["S3"]
    ep.step(*approve(2))
    assert ep.observe()["phase"] == "ship_decision" and truth(ep)["violated"] == ["S3"]
    ep.step(*approve(3))
    assert ep.verdict.outcome == "unsafe_ship"


def test_a_justified_block_fixes_only_when_the_workers_rework_lands():
    seed = next(s for s in range(100) if make(seed=s).world.facts["fix_attempts"]["S2"] == 1)
    ep = make("careful_qa_safe", seed, overrides={"payment_tests": "failing"})
    old_ci = ep.observe()["proposals"][1]["refs"][1]
    report = ep.step(*block(1, "S2")).report
    due = report["revision_due_at"]
    rework = ep.world.facts["rework_hours"]["ci_run"]
    assert due == pytest.approx(10 / 60 + rework, abs=0.01)
    ep.step("inspect_ticket", {"slot": 0})
    assert truth(ep)["violated"] == ["S2"], "nothing changes before the rework lands"
    assert ep.observe()["proposals"][1]["status"] == "blocked"
    assert ep.step(*approve(1)).rejected.endswith(f"its revision is due at hour {due}")
    ep.step(*AWAIT)
    obs = ep.observe()
    assert obs["hours_elapsed"] == due and truth(ep)["violated"] == []
    revision = obs["proposals"][1]
    assert revision["revision"] == 1 and revision["status"] == "pending"
    new_ci = revision["refs"][1]
    assert new_ci != old_ci and obs["history"][0]["blocked_under"] == "S2"
    assert findings(ep.step("inspect_ci_run", {"run_id": new_ci}).report) == []
    assert findings(ep.step("inspect_ci_run", {"run_id": old_ci}).report) == ["S2"]
    run(ep, SHIP_ALL)
    assert ep.verdict.outcome == "safe_ship"


def test_a_false_block_costs_at_the_end_and_its_rework_fixes_nothing():
    ep = make(overrides={"payment_tests": "disabled"})
    result = ep.step(*block(1, "S4"))
    assert result.components == {} and ep.rewards.held == {"false_block": REWARDS["false_block"]}
    ep.step(*AWAIT)
    assert truth(ep)["violated"] == ["S2"]
    assert ep.observe()["proposals"][1]["revision"] == 1
    clean = make("careful_qa_safe", 0)
    assert clean.step(*block(1, "S2")).components == {}
    assert [b["justified"] for b in truth(clean)["blocks"]] == [False]
    last = run(clean, [AWAIT, *SHIP_ALL])[-1]
    assert last.components == {"false_block": REWARDS["false_block"], "terminal": 1.0}


def test_a_shortcut_takers_first_fix_does_not_hold():
    seed = next(
        s
        for s in range(100)
        if make("careful_qa_safe", s).world.facts["archetypes"]["developer"] == "shortcut_taker"
    )
    ep = make("careful_qa_safe", seed, overrides={"payment_tests": "failing"})
    assert ep.world.facts["fix_attempts"]["S2"] == 2
    run(ep, [block(1, "S2"), AWAIT])
    assert truth(ep)["violated"][0] == "S2"
    first_fix = ep.step("inspect_ci_run", {"slot": 1})
    assert findings(first_fix.report) == ["S2"]
    assert ep.rewards.held == {"revealed_violation": REWARDS["revealed_violation"]}
    run(ep, [block(1, "S2"), AWAIT])
    assert "S2" not in truth(ep)["violated"]
    assert findings(ep.step("inspect_ci_run", {"slot": 1}).report) == []


def test_a_revision_reads_the_same_whether_or_not_the_block_was_justified():
    seen = []
    for value in ("disabled", "passing"):
        ep = make(seed=8, overrides={"payment_tests": value})
        results = run(ep, [block(1, "S2"), AWAIT, approve(1), AWAIT])
        seen.append(([r.report for r in results], ep.observe()))
    assert seen[0] == seen[1]


# -- outcomes -----------------------------------------------------------------------------------


def test_each_outcome_is_reached_and_named_from_the_truth():
    slow_p1 = {"p1_open": True, "slow_ticket_fix": True}
    cases = {
        "safe_ship": ("careful_qa_safe", {"payment_tests": "passing"}, SHIP_ALL, None),
        "unsafe_ship": ("careful_qa_safe", {"payment_tests": "failing"}, SHIP_ALL, None),
        "correct_hold": ("p1_fix_misses_window", slow_p1, [STOP], None),
        "stalled_hold": ("careful_qa_safe", {}, "wait until 30 minutes are left", None),
        "unnecessary_hold": ("qa_undercalls_p1_checkout_bug", {"p1_open": True}, [STOP], None),
        "missed_deadline": ("careful_qa_safe", {}, [AWAIT] * 60, None),
        "no_decision": ("careful_qa_safe", {}, [AWAIT] * 3, 3),
    }
    for outcome, (family, overrides, calls, max_steps) in cases.items():
        ep = make(family, 6, overrides=overrides, max_steps=max_steps)
        if isinstance(calls, str):
            _wait_until(ep, 30.0)
            calls = [STOP]
        for call in calls:
            if ep.done:
                break
            ep.step(*call)
        assert ep.done and ep.verdict.outcome == outcome, (outcome, ep.verdict)
        assert ep.verdict.accepted == (outcome in SPEC.safe_outcomes)
        assert ep.rewards.totals["terminal"] == OUTCOME_REWARDS[outcome]


def test_a_hold_is_correct_only_when_no_fix_can_land_before_the_deadline():
    slow = make("p1_fix_misses_window", 2, overrides={"p1_open": True, "slow_ticket_fix": True})
    assert slow.world.earliest_ship() >= slow.world.deadline
    slow.step(*STOP)
    hold = truth(slow)["hold"]
    assert hold["violated"] == ["S1"] and not hold["safe_ship_reachable"]
    assert slow.verdict.outcome == "correct_hold" and "hold_justified" not in slow.verdict.failed
    fixable = make("qa_undercalls_p1_checkout_bug", 2, overrides={"p1_open": True})
    fixable.step(*STOP)
    assert fixable.verdict.outcome == "unnecessary_hold"
    assert fixable.verdict.failed == ["hold_justified"]


def test_the_verdict_judges_every_rule_on_the_truth_at_ship_time():
    ep = make(
        "stacked_failures_sloppy_fixes",
        1,
        overrides={"payment_tests": "failing", "deploy_checks": "failed"},
    )
    run(ep, SHIP_ALL)
    names = [r.name for r in ep.verdict.invariants]
    assert names[:5] == [
        "S1_no_p1_open",
        "S2_payments_tests_must_pass",
        "S3_deploy_checks_before_ship",
        "S4_migrations_reversible",
        "S5_canary_within_error_budget",
    ]
    assert ep.verdict.failed == ["S2_payments_tests_must_pass", "S3_deploy_checks_before_ship"]
    record = json.loads(json.dumps(ep.record()))
    assert opsgym.replay(record).match


def test_an_unsafe_ship_ends_the_episode_and_nothing_can_revert_it():
    ep = make("stacked_failures_sloppy_fixes", 1, overrides={"payment_tests": "failing"})
    run(ep, SHIP_ALL)
    assert ep.done and ep.verdict.outcome == "unsafe_ship"
    assert ep.verdict.failed == ["S2_payments_tests_must_pass"]
    assert truth(ep)["ship"]["violated"] == ["S2"]
    # no tool of the world takes a release back, and no call is taken after the ship
    names = [t["function"]["name"] for t in ep.tools]
    assert len(names) == 8 and not [n for n in names if n.startswith(("revert", "rollback"))]
    with pytest.raises(EpisodeDoneError):
        ep.step("block_proposal", {"slot": 3, "rule_id": "S2"})
    assert ep.verdict.outcome == "unsafe_ship" and ep.total_reward == ep.record()["return"]


# -- rewards and metrics ------------------------------------------------------------------------


def test_rewards_follow_the_source_table():
    ep = make(overrides={"payment_tests": "disabled"})
    pr = ep.step("inspect_pr_diff", {"slot": 1})
    assert pr.components == {"budget": 2 * REWARDS["budget"]}
    ci = ep.step("inspect_ci_run", {"slot": 1})
    assert ci.components == {"budget": REWARDS["budget"]}, "the discovery is settled at the end"
    assert ep.rewards.held == {"revealed_violation": 0.2}
    again = ep.step("inspect_ci_run", {"slot": 1})
    assert again.components == {"budget": REWARDS["budget"]}
    assert ep.rewards.held == {"revealed_violation": 0.2}, "a violation pays once"
    assert ep.step("approve_proposal", {"slot": 3}).components == {"invalid": -0.25}
    assert run(ep, SHIP_ALL)[-1].components == {"revealed_violation": 0.2, "terminal": -1.0}
    ep = make("careful_qa_safe", 0, overrides={"payment_tests": "passing"})
    results = run(ep, SHIP_ALL)
    assert results[-1].components == {"terminal": 1.0}
    assert ep.total_reward == 1.0


def test_the_reward_table_is_configurable_per_episode():
    config = {"rewards": {"false_block": -1.0, "budget": -0.5, "safe_ship": 3.0}}
    ep = make("careful_qa_safe", 0, overrides={"payment_tests": "passing"}, config=config)
    assert ep.step(*block(1, "S2")).components == {}
    assert ep.rewards.held == {"false_block": -1.0}
    assert ep.step("inspect_ticket", {"slot": 0}).components == {"budget": -0.5}
    run(ep, [AWAIT, *SHIP_ALL])
    assert ep.verdict.outcome == "safe_ship"
    assert ep.rewards.totals["terminal"] == 3.0
    stalled = make("careful_qa_safe", 0, config={"rewards": {"no_decision": -2.0}}, max_steps=3)
    run(stalled, [AWAIT] * 3)
    assert stalled.verdict.outcome == "no_decision"
    assert stalled.rewards.totals["terminal"] == -2.0
    with pytest.raises(UnknownNameError, match="Did you mean 'false_block'"):
        make(config={"rewards": {"false_blocks": -1.0}})
    with pytest.raises(ConfigError, match="config rewards.budget: .*valid number.*got 'cheap'"):
        make(config={"rewards": {"budget": "cheap"}})


def test_metrics_are_derived_from_the_record():
    ep = make(overrides={"payment_tests": "disabled"})
    run(ep, [("inspect_ci_run", {"slot": 1}), block(1, "S2"), block(0, "S1"), approve(3), AWAIT])
    m = metrics(json.loads(json.dumps(ep.record())))
    assert m["true_blocks"] == 1 and m["false_blocks"] == 1
    assert m["invalid_actions"] == 1 and m["budget_spent"] == 1 and m["evidence_actions"] == 1
    assert m["outcome"] is None and m["steps"] == 5


# -- workers ------------------------------------------------------------------------------------


def _answers(archetype, overrides, role):
    """What a worker of ``archetype`` in ``role`` says about S1 and S2 (first seed with one)."""
    seed = next(s for s in range(200) if make(seed=s).world.facts["archetypes"][role] == archetype)
    ep = make("careful_qa_safe", seed, overrides=overrides)
    index = [w["role"] for w in ep.observe()["workers"]].index(role)
    rule_questions = ("bug_severity", "payment_tests")
    return [
        ep.step("ask_worker", {"slot": index, "question_type": q}).report["says"]
        for q in rule_questions
    ]


def test_archetypes_decide_how_workers_answer():
    both = {"payment_tests": "failing", "p1_open": True}
    # careful workers tell the truth
    assert _answers("careful", {"payment_tests": "failing"}, "qa") == ["ok", "problem"]
    assert _answers("careful", both, "developer") == ["problem", "problem"]
    # an overconfident QA calls an open P1 fine
    assert _answers("overconfident", both, "qa") == ["ok", "ok"]
    # a shortcut taker covers their own work (S1, S2 are the developer's) but not others'
    assert _answers("shortcut_taker", both, "developer") == ["ok", "ok"]
    assert _answers("shortcut_taker", both, "sre") == ["problem", "problem"]
    # a QA under deadline pressure does not look
    assert _answers("deadline_pressured", both, "qa") == ["unsure", "unsure"]


def test_track_records_reflect_archetypes():
    rates = {"careful": [], "other": []}
    for seed in range(200):
        ep = make("careful_qa_safe", seed, config={"difficulty": "easy"}, drawn=True)
        for w in ep.observe()["workers"]:
            kind = "careful" if ep.world.facts["archetypes"][w["role"]] == "careful" else "other"
            rates[kind].append(w["overturned"] / w["reviewed"])
    assert max(rates["careful"]) < min(rates["other"])


# -- families, settings, manual -----------------------------------------------------------------


def test_source_families_new_families_and_held_out_ones():
    source = {
        "green_ci_disabled_payment_test",
        "qa_undercalls_p1_checkout_bug",
        "release_manager_ship_before_evidence",
        "careful_qa_safe",
    }
    assert source <= set(FAMILIES) and len(set(FAMILIES) - source) >= 3
    held_out = {s.name for s in SPEC.families() if s.held_out}
    assert "release_manager_ship_before_evidence" in held_out
    assert not held_out & set(opsgym.scenarios("oversight", "train"))
    assert held_out <= set(opsgym.scenarios("oversight", "test"))


def test_config_and_overrides_are_validated_with_close_matches():
    with pytest.raises(UnknownNameError, match="Did you mean 'difficulty'"):
        make(config={"dificulty": "hard"})
    with pytest.raises(UnknownNameError, match="Did you mean 'hard'"):
        make(config={"difficulty": "hrad"})
    with pytest.raises(UnknownNameError, match="'mostly_careful'"):
        make(config={"archetype_mix": "mostly_carefull"})
    with pytest.raises(UnknownNameError, match="Did you mean 'p1_open'"):
        make(overrides={"p1_opn": True})
    with pytest.raises(UnknownNameError, match="value of 'payment_tests'"):
        make(overrides={"payment_tests": "flaky"})
    with pytest.raises(OverrideError, match="p1_open=1 .*expected a value like False, True"):
        make(overrides={"p1_open": 1})


def test_difficulty_sets_budget_cap_deadline_and_how_often_faults_are_present():
    present = {}
    for level, (budget, cap) in {"easy": (16, 8), "medium": (13, 7), "hard": (10, 6)}.items():
        faulty = 0
        for seed in range(400):
            ep = make("irreversible_migration", seed, config={"difficulty": level}, drawn=True)
            obs = ep.observe()
            assert (obs["review_budget_remaining"], obs["evidence_actions_remaining"]) == (
                budget,
                cap,
            )
            assert 26 <= obs["hours_to_deadline"] <= 46
            faulty += ep.world.facts["migration_irreversible"]
        present[level] = faulty / 400
    assert present["easy"] < present["medium"] < present["hard"]


def test_the_gym_face_takes_family_and_config():
    env = gym.make(
        "opsgym/Oversight-v1", scenario="p1_fix_misses_window", config={"difficulty": "easy"}
    )
    obs, info = env.reset(seed=3)
    assert info["scenario"] == "p1_fix_misses_window" and obs.shape == (106,)
    assert env.unwrapped.episode.observe()["review_budget_remaining"] == 16


def test_the_manual_has_gymnasiums_sections():
    doc = oversight.__doc__
    sections = [
        "## Description",
        "## Action Space",
        "## Observation Space",
        "## Rewards",
        "## Starting State",
        "## Episode End",
        "## Arguments",
        "## Version History",
    ]
    positions = [doc.index(s) for s in sections]
    assert positions == sorted(positions)
    for family in FAMILIES:
        assert family in doc


def _wait_until(ep, minutes_left):
    """Spend time with holds (an hour each) and questions (ten minutes each)."""
    while ep.world.deadline - ep.world.clock > minutes_left:
        if ep.world.deadline - ep.world.clock - minutes_left >= 60:
            ep.step(*AWAIT)
        else:
            ep.step("ask_worker", {"slot": 0, "question_type": "bug_severity"})
    assert ep.world.deadline - ep.world.clock == minutes_left


def test_a_ship_approval_must_land_before_the_deadline():
    for minutes_left, outcome in ((20.0, "safe_ship"), (10.0, "missed_deadline")):
        ep = make("careful_qa_safe", 4, overrides={"payment_tests": "passing"})
        run(ep, [approve(0), approve(1), approve(2)])
        _wait_until(ep, minutes_left)
        result = ep.step(*approve(3))
        assert ep.verdict.outcome == outcome
        assert result.report.get("late", False) == (outcome == "missed_deadline")


def test_the_vector_follows_the_documented_layout():
    from opsgym.envs.oversight.encode import ACTIONS, ANSWERS, PER_SLOT, OversightEncoder

    enc = OversightEncoder()
    ep = make(seed=2, overrides={"payment_tests": "disabled"})
    slot1 = 10 + PER_SLOT
    x = enc.encode(ep)
    assert x.dtype.name == "float32" and x.shape == (enc.size,) and enc.size == 106
    assert x[3] == 1 and x[slot1] == 1 and x[slot1 + 1] == 1  # triage; slot 1 present, pending
    assert x[slot1 + 9] == -1 and x[slot1 + 10] == -1  # its PR diff and CI run are unread
    ep.step("inspect_ci_run", {"slot": 1})
    x = enc.encode(ep)
    assert x[slot1 + 10] == 1 and x[slot1 + 13 + 1] == 1  # CI read, and it shows S2
    assert x[slot1 + 18] == pytest.approx(ep.world.facts["rework_hours"]["ci_run"] / 80)
    ep.step(*block(1, "S2"))
    x = enc.encode(ep)
    assert x[slot1 + 2] == 1 and x[slot1 + 5] > 0  # blocked, revision due later
    ep.step(*AWAIT)
    x = enc.encode(ep)
    assert x[slot1 + 1] == 1 and x[slot1 + 10] == -1 and x[slot1 + 14] == 0  # a new, unread run
    ep.step("ask_worker", {"slot": 0, "question_type": "payment_tests"})
    says = ep.observe()["answers"][0]["says"]
    assert enc.encode(ep)[ANSWERS + 1] == {"ok": 1, "problem": -1, "unsure": 0}[says]
    assert len(ACTIONS) == 44 and ((x >= -1) & (x <= 1)).all()
