"""The fleet world: its mechanics, its judge, its settings and its Gymnasium face."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import opsgym
from opsgym.core.errors import UnknownNameError
from opsgym.envs.fleet.domain import BAD_NCCL, GOOD_NCCL
from opsgym.envs.fleet.encode import ACTIONS, FleetEncoder
from opsgym.envs.fleet.scenarios import FleetConfigError
from opsgym.envs.fleet.state import R_ALERT

GYM_ID = "opsgym/Fleet-v2"


def fleet(scenario="easy", seed=0, **kw) -> opsgym.Episode:
    return opsgym.make("fleet", scenario, seed, **kw)


def run_oracle(ep: opsgym.Episode) -> opsgym.Episode:
    from opsgym.agents import get_policy, play

    return play(ep, get_policy("fleet", "oracle"))


def wait_for_fresh_scrape(ep: opsgym.Episode) -> dict:
    while ep.observe()["next_refresh_in"]:
        ep.step("wait")
    return ep.step("check_telemetry").report


def implicate(ep: opsgym.Episode, rank: int) -> None:
    """Test setup: as if the last scrape had alerted on ``rank`` (a restart needs evidence)."""
    ep.world.view.ranks[rank, R_ALERT] = 1.0


# -- the gym face --------------------------------------------------------------------------


def test_gym_make_per_task_gives_the_documented_spaces():
    env = gym.make(GYM_ID, scenario="cascade")
    obs, info = env.reset(seed=3)
    assert info["scenario"] == "cascade"
    assert env.observation_space.shape == (419,) == obs.shape
    assert env.action_space.n == 117 == len(ACTIONS)
    assert ACTIONS[-1] == ("wait", {})
    assert env.observation_space.contains(obs)
    mask = env.unwrapped.action_masks()
    names = {ACTIONS[i][0] for i in np.flatnonzero(mask)}
    assert not names & {"patch_identify", "reroute_ring", "restart_rank", "reschedule"}
    assert "check_telemetry" in names and "declare_resolved" in names


def test_the_gym_episode_ends_with_a_verdict_at_the_tasks_step_budget():
    for task, budget in (("easy", 50), ("cascade", 120)):
        env = gym.make(GYM_ID, scenario=task)
        env.reset(seed=0)
        assert env.spec.max_episode_steps == 300
        steps = 0
        terminated = truncated = False
        while not (terminated or truncated):
            _, _, terminated, truncated, info = env.step(len(ACTIONS) - 1)  # wait
            steps += 1
        assert steps == budget and terminated and "verdict" in info, (task, steps)
        assert info["verdict"]["step_budget"] == budget


def test_encoder_size_matches_its_docstring_and_bounds_hold_over_an_oracle_run():
    ep = fleet("black_swan", 9, config={"level": 3})
    enc = FleetEncoder()
    from opsgym.agents import get_policy

    policy = get_policy("fleet", "oracle")
    policy.reset(9)
    while not ep.done:
        vec = enc.encode(ep)
        assert vec.shape == (enc.size,) and vec.dtype == np.float32
        assert vec.min() >= -1.0 and vec.max() <= 1.0
        ep.step(*policy.act(ep.observe(), []))


def test_encoder_indices_follow_the_documented_layout():
    ep = fleet("easy", 2, overrides={"oom_present": True, "oom_rank": 12, "oom_pair": False})
    enc = FleetEncoder()
    vec = enc.encode(ep)
    assert vec[4] == 0.0 and vec[38] == pytest.approx(1 / 3)  # nothing read; level 1
    assert vec[39] == pytest.approx(0.5) and vec[13] == pytest.approx(1 / 3)  # x1; phase 1
    ep.step("check_telemetry")
    vec = enc.encode(ep)
    assert vec[4] == 1.0 and vec[7] == 1.0 and vec[11] == 0.0  # stalled, no throughput
    ep.step("patch_identify")
    assert enc.encode(ep)[27] == 1.0  # the last call was rejected
    ep.step("query_nccl_logs", {"node": 1})
    vec = enc.encode(ep)
    assert vec[55 + 10 * 12 + 5] == 1.0  # rank 12: an out-of-memory error in its log
    assert vec[375 + 11 * 1 + 3] == 1.0  # node 1: its log read


# -- partial observability -------------------------------------------------------------------


@pytest.mark.parametrize("level,k", [(1, 3), (2, 5), (3, 7)])
def test_the_dashboard_is_rescraped_only_every_k_calls(level, k):
    ep = fleet("easy", 1, config={"level": level})
    scrapes = []
    for _ in range(2 * k + 1):
        scrapes.append(ep.step("check_telemetry").report["scrape"])
    assert scrapes == [0] * k + [1] * k + [2]


def test_a_scrape_older_than_the_last_fix_is_flagged_stale_until_the_next_refresh():
    facts = {"oom_present": True, "oom_rank": 12, "oom_pair": False, "secondary": False}
    ep = fleet("easy", 2, overrides=facts, config={"level": 2})  # a scrape every 5 calls
    ep.step("query_nccl_logs", {"node": 1})
    first = ep.step("check_telemetry").report
    assert first["job"]["status"] == "stalled" and not first["stale"]
    ep.step("restart_rank", {"rank": 12})
    cached = ep.step("check_telemetry").report
    assert cached["stale"] and cached["job"]["status"] == "stalled"  # the fix is not seen yet
    assert ep.world.truth()["status"] == "running"
    fresh = wait_for_fresh_scrape(ep)
    assert not fresh["stale"] and fresh["job"]["status"] == "running"


def test_the_start_observation_reveals_nothing_of_the_task_or_its_faults():
    seen = [
        fleet(task, 5).observe()
        for task in ("easy", "medium", "hard", "cascade", "black_swan", "gpu_lost")
    ]
    assert all(obs == seen[0] for obs in seen) and seen[0]["telemetry"] is None
    assert "task" not in seen[0] and "faults" not in seen[0]
    assert "oom" not in seen[0]["incident"].lower() and "xid" not in seen[0]["incident"].lower()


def test_action_reports_say_what_was_done_not_whether_it_worked():
    right = fleet("easy", 4, overrides={"oom_present": True, "oom_rank": 9})
    wrong = fleet("easy", 4, overrides={"oom_present": True, "oom_rank": 10})
    for ep in (right, wrong):
        implicate(ep, 9)
    a, b = right.step("restart_rank", {"rank": 9}), wrong.step("restart_rank", {"rank": 9})
    assert a.report == b.report and a.components == b.components  # settled, not paid yet
    assert wrong.world.truth()["destructive"] == 1 and right.world.truth()["destructive"] == 0


# -- the faults ------------------------------------------------------------------------------


def test_a_restart_needs_evidence_that_implicates_the_rank():
    ep = fleet("easy", 6, overrides={"oom_present": True, "oom_rank": 21})
    assert "implicates rank 21" in ep.step("restart_rank", {"rank": 21}).rejected
    ep.step("query_nccl_logs", {"node": 2})
    assert ep.step("restart_rank", {"rank": 21}).rejected is None


def test_an_oom_rank_is_behind_its_peers_in_the_flight_recorder():
    ep = fleet("easy", 6, overrides={"oom_present": True, "oom_rank": 21, "oom_pair": False})
    behind = ep.step("inspect_flight_recorder", {"rank": 21}).report["summary"]
    peer = ep.step("inspect_flight_recorder", {"rank": 3}).report["summary"]
    assert behind["behind"] and behind["enqueued"] + 1 == peer["enqueued"]
    assert peer["state"] == "started" and peer["completed"] + 1 == peer["enqueued"]


@pytest.mark.parametrize(
    "calls,factor",
    [
        ([], 0.5),  # interleaved ring over ECMP, drop forced to 0.5 below
        ([("reorder_ring", {})], 0.75),
        ([("reroute_ring", {"spine": 1})], 0.5),
        ([("reorder_ring", {}), ("reroute_ring", {"spine": 0})], 0.5),
        ([("reorder_ring", {}), ("reroute_ring", {"spine": 1})], 1.0),
    ],
)
def test_only_a_topology_ordered_ring_pinned_off_the_congested_spine_restores_bandwidth(
    calls, factor
):
    ep = fleet(
        "medium", 1, overrides={"congestion_present": True, "congested_spine": 0, "bw_drop": 0.5}
    )
    ep.step("show_topology")  # a ring change needs the topology read first
    for name, args in calls:
        assert ep.step(name, args).rejected is None
    assert ep.world.truth()["fabric_factor"] == pytest.approx(factor)


def test_the_congested_spine_shows_in_the_switch_counters():
    for spine in (0, 1):
        ep = fleet("medium", 2, overrides={"congestion_present": True, "congested_spine": spine})
        ecn = [s["ecn_marked_packets_per_s"] for s in ep.step("show_topology").report["spines"]]
        assert ecn.index(max(ecn)) == spine and max(ecn) > 10 * (min(ecn) + 1)


def test_the_wrong_nccl_shows_in_the_library_path_while_its_neighbours_log_truncations():
    ep = fleet(
        "fleet_coordination",
        3,
        overrides={"version_present": True, "version_node": 1, "congestion_present": False},
    )
    for _ in range(3):
        ep.step("wait")  # the truncation errors start spreading from the bad node's neighbours
    for node in range(4):
        version = ep.step("check_nccl_version", {"node": node}).report
        assert version["version"] == (BAD_NCCL if node == 1 else GOOD_NCCL)
    logs = {n: ep.step("query_nccl_logs", {"node": n}).report["summary"] for n in (0, 1, 2)}
    assert logs[1]["version"] == BAD_NCCL and logs[1]["truncation_warnings"] == 0
    assert logs[0]["truncation_warnings"] > 0 and logs[2]["truncation_warnings"] > 0


def test_restarting_the_job_only_hides_a_desync_and_the_judge_is_not_fooled():
    ep = fleet("hard", 5, overrides={"desync_present": True})
    ep.step("restart_job")
    scrape = wait_for_fresh_scrape(ep)
    assert scrape["job"]["status"] == "running"  # the dashboard looks fine for a while
    ep.step("declare_resolved")
    assert ep.verdict.outcome == "unrecovered" and not ep.verdict.passed
    assert "unpatched desync" in {r.name: r.reason for r in ep.verdict.invariants}["job_recovered"]


def test_the_staged_patch_needs_a_mismatch_then_a_candidate_then_a_divergent_diff():
    facts = {"desync_present": True, "desync_rank": 13, "desync_file": "data/packing.py"}
    ep = fleet("hard", 8, overrides=facts)
    assert "collective mismatch" in ep.step("patch_identify").rejected
    assert "not among the files" in ep.step("patch_diff", {"file": "data/packing.py"}).rejected
    assert "no diff" in ep.step("patch_apply", {"file": "data/packing.py"}).rejected
    ep.step("inspect_flight_recorder", {"rank": 13})
    ep.step("inspect_flight_recorder", {"rank": 0})
    identified = ep.step("patch_identify").report
    assert "data/packing.py" in identified["candidates"] and len(identified["candidates"]) == 2
    decoy = next(f for f in identified["candidates"] if f != "data/packing.py")
    assert ep.step("patch_diff", {"file": decoy}).report["collectives_differ"] is False
    assert ep.step("patch_apply", {"file": decoy}).rejected
    assert ep.step("patch_diff", {"file": "data/packing.py"}).report["collectives_differ"]
    assert ep.step("patch_apply", {"file": "data/packing.py"}).rejected is None
    assert ep.world.truth()["healthy"]


def test_a_secondary_failure_strikes_when_the_first_fault_is_fixed():
    facts = {"oom_present": True, "oom_rank": 4, "oom_pair": False}
    ep = fleet("easy", 3, overrides={**facts, "secondary": True})
    implicate(ep, 4)
    ep.step("restart_rank", {"rank": 4})
    truth = ep.world.truth()
    assert truth["oom"] == [truth["facts"]["secondary_rank"]] and truth["oom"] != [4]
    calm = fleet("easy", 3, overrides={**facts, "secondary": False})
    implicate(calm, 4)
    calm.step("restart_rank", {"rank": 4})
    assert calm.world.truth()["oom"] == [] and calm.world.truth()["status"] == "running"


def test_black_swan_decoys_and_irreversible_mistakes():
    ep = fleet("black_swan", 0, overrides={"oom_present": True, "dmesg_wrapped": False})
    facts = ep.world.facts
    node, gpu = facts["stale_xid_node"], facts["stale_xid_gpu"]
    kernel = ep.step("read_kernel_log", {"node": node}).report["summary"]
    stale = [x for x in kernel["xids"] if x["xid"] == 79 and x["rank"] == node * 8 + gpu]
    assert stale and stale[0]["uptime_s"] < kernel["job_start_uptime_s"]
    assert node * 8 + gpu not in kernel["current_xid79_ranks"]  # from before the job
    healthy = next(r for r in range(32) if r not in ep.world.truth()["oom"])
    implicate(ep, healthy)
    result = ep.step("restart_rank", {"rank": healthy})
    assert result.done and ep.verdict.outcome == "destroyed"


def test_a_fleet_reboot_destroys_the_run():
    ep = fleet("easy", 1)
    assert ep.step("reboot_fleet").done
    assert ep.verdict.outcome == "destroyed" and ep.verdict.grade == 0.0


# -- coordination ----------------------------------------------------------------------------


def test_workers_answer_with_structure_and_are_sometimes_wrong():
    wrong = total = 0
    for seed in range(60):
        ep = fleet("fleet_coordination", seed, overrides={"version_present": True})
        found = ep.step("delegate", {"worker": "version_checker"}).report
        assert {"fault", "target", "confidence", "uncertainty", "recommended_action"} <= set(found)
        assert 0.0 <= found["confidence"] <= 1.0 and 0.0 <= found["uncertainty"] <= 1.0
        total += 1
        wrong += found["target"]["node"] != ep.world.facts["version_node"]
    assert 0 < wrong < total / 2


def test_delegations_over_the_budget_of_ten_cost_and_switching_coordination_off_blocks_them():
    ep = fleet("fleet_coordination", 2)
    costs = [ep.step("delegate", {"worker": "log_inspector"}).components for _ in range(12)]
    assert all("over_budget" not in c for c in costs[:10])
    assert [c["over_budget"] for c in costs[10:]] == [pytest.approx(-0.05)] * 2
    off = fleet("fleet_coordination", 2, config={"coordination": False})
    assert "switched off" in off.step("poll_consensus").rejected


def test_a_coalition_needs_both_workers_and_acts_on_their_findings():
    ep = fleet("fleet_coordination", 4, overrides={"version_present": True, "version_node": 3})
    assert "needs findings" in ep.step("coalition", {"action": "topology_version_fix"}).rejected
    ep.step("delegate", {"worker": "version_checker"})
    ep.step("delegate", {"worker": "topology_agent"})
    named = ep.observe()["coordination"]["findings"]["version_checker"]["target"]["node"]
    ep.step("coalition", {"action": "topology_version_fix"})
    assert (3 in ep.world.truth()["version_nodes"]) == (named != 3)


# -- the judge --------------------------------------------------------------------------------


def test_the_oracle_recovers_every_task_with_every_subgoal():
    for task in ("easy", "medium", "hard", "cascade", "fleet_coordination", "gpu_lost"):
        ep = run_oracle(fleet(task, 19))
        v = ep.verdict
        assert v.outcome == "recovered" and v.accepted and v.passed, (task, v.to_dict())
        assert all(reached for _, reached in v.subgoals)
        assert ep.rewards.totals["subgoal"] == pytest.approx(0.30)


def test_a_declaration_without_fresh_evidence_is_unconfirmed_and_premature():
    facts = {"oom_present": True, "oom_rank": 2, "oom_pair": False, "secondary": False}
    ep = fleet("easy", 7, overrides=facts)
    ep.step("query_nccl_logs", {"node": 0})
    ep.step("restart_rank", {"rank": 2})
    result = ep.step("declare_resolved")
    assert result.done and result.report["accepted"] is False
    assert result.components["premature"] == pytest.approx(-0.1)
    assert ep.verdict.outcome == "recovered_unconfirmed" and not ep.verdict.passed


def test_downtime_is_costed_at_the_configured_rate():
    for rate in (5000.0, 120.0):
        ep = fleet(
            "easy", 1, overrides={"oom_present": True}, config={"downtime_cost_per_minute": rate}
        )
        for _ in range(3):
            ep.step("wait")
        truth = ep.world.truth()
        assert truth["downtime_minutes"] == pytest.approx(15.0)
        assert truth["downtime_cost_usd"] == pytest.approx(15.0 * rate)
    ep.step("declare_resolved")
    assert ep.verdict.downtime_cost_usd == pytest.approx(ep.verdict.downtime_minutes * 120.0)


def test_tokens_come_from_the_caller_or_thirty_per_gym_call_and_cost_log_tokens():
    ep = fleet("easy", 1)
    ep.step("wait", tokens=400)
    ep.step("nonexistent_tool", tokens=100)  # rejected: counted, settled at the next call
    ep.step("wait")
    assert ep.world.tokens == 530 and ep.observe()["tokens"] == 530
    assert ep.rewards.totals["tokens"] == pytest.approx(-0.10 * math.log(530))
    env = gym.make(GYM_ID, scenario="easy")
    env.reset(seed=0)
    for _ in range(4):
        env.step(len(ACTIONS) - 1)
    assert env.unwrapped.episode.world.tokens == 4 * 30


# -- settings ----------------------------------------------------------------------------------


def test_unknown_or_bad_settings_and_overrides_raise_with_the_value():
    with pytest.raises(UnknownNameError, match="Did you mean 'level'"):
        fleet(config={"levle": 2})
    with pytest.raises(FleetConfigError, match="level.*got 4"):
        fleet(config={"level": 4})
    with pytest.raises(FleetConfigError, match="got -1"):
        fleet(config={"downtime_cost_per_minute": -1})
    with pytest.raises(FleetConfigError, match="difficulty_multiplier.*got 3"):
        fleet(config={"difficulty_multiplier": 3.0})
    with pytest.raises(UnknownNameError, match="oom_rank"):
        fleet(overrides={"oom_rnk": 3})
    with pytest.raises(FleetConfigError, match="got 40"):
        fleet(overrides={"oom_rank": 40})


def test_the_difficulty_multiplier_scales_the_level_rates():
    base = fleet("easy", 1).world.level
    hard = fleet("easy", 1, config={"difficulty_multiplier": 2.0}).world.level
    easy = fleet("easy", 1, config={"difficulty_multiplier": 0.5}).world.level
    assert hard.red_herring == pytest.approx(0.6) and hard.mask == pytest.approx(0.4)
    assert easy.secondary == pytest.approx(base.secondary / 2) and easy.refresh == base.refresh
    top = fleet("easy", 1, config={"level": 3, "difficulty_multiplier": 2.0}).world.level
    assert top.red_herring == 0.95  # capped


def test_five_challenges_two_held_out_of_the_train_split():
    from opsgym.envs.fleet.scenarios import CHALLENGES

    assert len(CHALLENGES) == 5
    train, test = opsgym.scenarios("fleet", "train"), opsgym.scenarios("fleet", "test")
    assert {"version+desync", "oom+congestion+version"} == set(test) - set(train)
    assert {"easy", "medium", "hard", "cascade", "fleet_coordination", "black_swan"} <= set(train)


def test_generated_challenges_are_solved_by_the_general_oracle():
    for name in (
        "oom+version",
        "congestion+desync",
        "gpu_lost+congestion",
        "version+desync",
        "oom+congestion+version",
    ):
        for seed in (9, 19):
            assert run_oracle(fleet(name, seed)).verdict.passed, (name, seed)


def test_a_composed_challenge_runs_as_an_episode_of_the_fleet():
    from opsgym.core.episode import Episode
    from opsgym.envs.fleet import SPEC
    from opsgym.envs.fleet.scenarios import compose

    scenario = compose("desync", "oom", name="desync_then_oom")
    assert {"desync_rank", "desync_file", "oom_rank", "oom_present"} <= scenario.hidden.keys()
    ep = run_oracle(Episode(SPEC, scenario, 29))
    assert ep.verdict.passed
    with pytest.raises(UnknownNameError, match="fleet fault"):
        compose("oom", "cosmic_ray")


def test_the_judge_and_the_stale_flag_agree_on_what_counts_as_a_remediation():
    from opsgym.envs.fleet.judge import REMEDIATIONS

    moved = set()
    for name, args in ACTIONS:
        ep = fleet("cascade", 1, config={"level": 1})
        w = ep.world
        w.view.gated = False  # let every call run: this test is about bookkeeping only
        w.view.mismatch, w.view.candidates = True, [args.get("file", "model/attention.py")]
        w.view.diffs = {args.get("file", "model/attention.py"): True}
        w.view.ranks[:, R_ALERT] = 1.0
        ep.step("show_topology")
        for node in range(4):
            ep.step("check_nccl_version", {"node": node})
        for worker in ("log_inspector", "topology_agent", "patch_agent", "version_checker"):
            ep.step("delegate", {"worker": worker})
        if name == "reschedule":
            ep.step("drain_node", args)
        before = ep.observe()["actions"]["last_remediation_call"]
        result = ep.step(name, args)
        if result.rejected is None and ep.observe()["actions"]["last_remediation_call"] != before:
            moved.add(name)
    assert moved == REMEDIATIONS
