"""Issue 7 on the fleet: the reward says only what the agent was told, the family is hidden,
recovered means nominal capacity, damage costs, view and judge agree, tokens are counted, and
each task's budget ends the episode. Each hole found is a regression test here."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import opsgym
from opsgym.agents import get_policy, play
from opsgym.envs.fleet import SETTLED
from opsgym.envs.fleet.domain import BENCH_TARGET, bench_holds
from opsgym.envs.fleet.encode import FleetEncoder
from opsgym.envs.fleet.exploits import BlindRestartJob, DrainAlertedNodes
from opsgym.envs.fleet.judge import _held_under_jitter
from opsgym.envs.fleet.scenarios import FAMILY_REVEALED_BY, TASKS
from opsgym.envs.fleet.state import R_ALERT

TEST = opsgym.seeds("test", 200)


def fleet(scenario="easy", seed=0, **kw) -> opsgym.Episode:
    return opsgym.make("fleet", scenario, seed, **kw)


def components(ep: opsgym.Episode, calls, implicate: int | None = None) -> list[dict]:
    """Each step's paid components; ``implicate`` marks a rank as alerted first (test setup)."""
    if implicate is not None:
        ep.world.view.ranks[implicate, R_ALERT] = 1.0
    out = []
    for name, args in calls:
        if ep.done:
            break
        out.append(ep.step(name, args).components)
    return out


def assert_same_until_the_end(a: list[dict], b: list[dict]) -> None:
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a[:-1], b[:-1], strict=True)):
        assert x == y, f"step {i + 1}: {x} != {y}"
    assert a[-1] != b[-1]  # the settled components, paid on the last step


# -- 1. the reward stream says only what the agent was told ----------------------------------


def test_settled_components_are_the_truth_dependent_ones():
    assert SETTLED == {"subgoal", "destructive"}


RESTART = [("restart_rank", {"rank": 9}), ("wait", {}), ("check_telemetry", {})]
RESTART += [("declare_resolved", {})]


def test_restarting_the_true_oom_rank_or_a_healthy_one_pays_alike_until_the_end():
    right = fleet("easy", 4, overrides={"oom_present": True, "oom_rank": 9, "oom_pair": False})
    wrong = fleet("easy", 4, overrides={"oom_present": True, "oom_rank": 10, "oom_pair": False})
    a, b = components(right, RESTART, implicate=9), components(wrong, RESTART, implicate=9)
    assert_same_until_the_end(a, b)
    assert right.rewards.totals["subgoal"] > 0 and wrong.rewards.totals["destructive"] < 0


def test_a_specialist_right_or_wrong_pays_alike_until_the_end():
    calls = [("delegate", {"worker": "log_inspector"}), ("wait", {}), ("declare_resolved", {})]
    facts = {"oom_present": True, "oom_rank": 9, "oom_pair": False}
    right = fleet("easy", 4, overrides={**facts, "worker_error": 0.0})
    wrong = fleet("easy", 4, overrides={**facts, "worker_error": 1.0})
    assert_same_until_the_end(components(right, calls), components(wrong, calls))
    assert right.world.truth()["subgoals"]["oom_located"]
    assert not wrong.world.truth()["subgoals"]["oom_located"]


def test_draining_a_node_whose_gpu_fell_off_or_a_healthy_one_pays_alike_until_the_end():
    calls = [("drain_node", {"node": 1}), ("reschedule", {"node": 1}), ("declare_resolved", {})]
    lost = fleet("gpu_lost", 3, overrides={"gpu_lost_present": True, "lost_rank": 12})
    elsewhere = fleet("gpu_lost", 3, overrides={"gpu_lost_present": True, "lost_rank": 20})
    assert_same_until_the_end(components(lost, calls), components(elsewhere, calls))
    assert lost.world.truth()["destructive"] == 0 and elsewhere.world.truth()["destructive"] == 1


def test_dense_timing_pays_at_once_and_so_leaks():
    facts = {"oom_present": True, "oom_pair": False}
    right = fleet("easy", 4, overrides={**facts, "oom_rank": 9}, reward_timing="dense")
    wrong = fleet("easy", 4, overrides={**facts, "oom_rank": 10}, reward_timing="dense")
    a, b = components(right, RESTART[:1], implicate=9), components(wrong, RESTART[:1], implicate=9)
    assert "destructive" in b[0] and "destructive" not in a[0]


def test_over_many_forced_facts_no_component_paid_before_the_end_depends_on_them():
    """A random sequence of the Gym catalogue on each task, every hidden fact forced both ways:
    the components of every step but the last are identical (``invalid`` aside: a read shows
    the agent the fact, and what it shows may make a later call valid)."""
    from opsgym.envs.fleet.encode import ACTIONS

    for task in TASKS:
        for fact, values in task.hidden.items():
            rng = np.random.default_rng(len(fact))
            calls = [ACTIONS[int(i)] for i in rng.integers(len(ACTIONS), size=40)]
            paid = []
            for value in values:
                ep = fleet(task.name, 11, overrides={fact: value})
                ep.world.view.ranks[:, R_ALERT] = 1.0  # let restarts run: they are the risk
                steps = components(ep, calls)[:-1]
                paid.append([{k: v for k, v in c.items() if k != "invalid"} for c in steps])
            n = min(len(p) for p in paid)
            assert paid[0][:n] == paid[1][:n], (task.name, fact)


# -- 2. the family is hidden ------------------------------------------------------------------


def test_nothing_the_agent_sees_at_the_start_depends_on_the_family():
    families = opsgym.hidden_facts("fleet", "mixed")["family"]["values"]
    for seed in (9, 19):
        starts = []
        for family in families:
            ep = fleet("mixed", seed, overrides={"family": family})
            starts.append((ep.observe(), FleetEncoder().encode(ep).tolist()))
        assert all(s == starts[0] for s in starts), seed


def test_calls_before_any_read_are_answered_alike_in_every_family():
    from opsgym.envs.fleet.encode import ACTIONS

    quiet = [i for i, (name, _) in enumerate(ACTIONS) if name not in FAMILY_REVEALED_BY]
    quiet = [i for i in quiet if ACTIONS[i][0] not in ("declare_resolved", "reboot_fleet")]
    rng = np.random.default_rng(7)
    calls = [ACTIONS[int(rng.choice(quiet))] for _ in range(45)]
    traces = []
    for family in opsgym.hidden_facts("fleet", "mixed")["family"]["values"]:
        ep = fleet("mixed", 29, overrides={"family": family})
        trace = []
        for name, args in calls:
            r = ep.step(name, args)
            trace.append((r.report, r.rejected, r.done, ep.observe(), r.components))
        traces.append(trace)
    assert all(t == traces[0] for t in traces)
    assert {r for _, r, *_ in traces[0]} - {None}  # the remediations were refused alike


def test_the_step_budget_is_the_only_signal_time_gives_and_it_is_declared():
    assert "wait" in opsgym.hidden_facts("fleet", "mixed")["family"]["revealed_by"]
    ends = {}
    for family in ("easy", "cascade", "black_swan"):
        ep = fleet("mixed", 9, overrides={"family": family})
        while not ep.done:
            ep.step("wait")
        ends[family] = ep.steps
    assert ends == {"easy": 50, "cascade": 120, "black_swan": 180}  # the window, 900 minutes


def test_within_each_task_the_fault_is_a_prior_not_an_answer():
    present = {t.name: 0 for t in TASKS}
    pairs = drops = 0
    for seed in TEST:
        for task in TASKS:
            facts = fleet(task.name, seed).world.facts
            present[task.name] += bool(facts["present"])
        facts = fleet("easy", seed).world.facts
        pairs += facts["oom_pair"]
        drops += 0.30 <= facts["bw_drop"] <= 0.60
    n = len(TEST)
    assert 0.78 <= present["easy"] / n <= 0.92  # 85%, within sampling error
    assert 0.95 <= present["black_swan"] / n < 1.0  # at least one of four: 1 - 0.15^4
    assert 0.12 <= pairs / n <= 0.28 and drops == n


def test_mixed_draws_every_family_and_a_false_alarm_share():
    families, false_alarms = set(), 0
    seeds = opsgym.seeds("test", 600)
    for seed in seeds:
        ep = fleet("mixed", seed)
        families.add(ep.family.name)
        false_alarms += not ep.world.present
    assert families == {s.name for s in opsgym.core.registry.spec("fleet").families()}
    assert 0.03 <= false_alarms / len(seeds) <= 0.09  # 6.0% expected on test seeds


# -- 3. recovered means nominal capacity; damage costs -------------------------------------


def test_draining_the_alerted_nodes_is_not_accepted_while_capacity_is_reduced():
    accepted = 0
    for seed in TEST[:100]:
        ep = play(fleet("easy", seed, overrides={"oom_present": True}), DrainAlertedNodes())
        truth = ep.world.truth()
        if truth["drained"]:
            assert truth["throughput_factor"] <= 0.75 and ep.verdict.outcome == "unrecovered"
        accepted += ep.verdict.accepted
    assert accepted == 0


def test_a_gpu_off_the_bus_needs_a_drain_and_a_reschedule_onto_the_spare():
    facts = {"gpu_lost_present": True, "lost_rank": 12}
    ep = fleet("gpu_lost", 5, overrides=facts)
    ep.step("read_kernel_log", {"node": 1})
    ep.step("restart_rank", {"rank": 12})
    assert ep.world.truth()["lost"] == [12] and ep.world.truth()["destructive"] == 0
    ep.step("drain_node", {"node": 1})
    truth = ep.world.truth()
    assert truth["status"] == "degraded" and truth["capacity"] == 0.75 and not truth["healthy"]
    report = ep.step("reschedule", {"node": 1}).report
    assert report["host"] == ep.observe()["hosts"][1] == ep.observe()["spares"][0]["host"]
    truth = ep.world.truth()
    assert truth["healthy"] and truth["capacity"] == 1.0 and truth["subgoals"]["lost_replaced"]
    assert not ep.observe()["spares"][0]["free"]  # one spare per leaf: node 0 shares it
    ep.step("drain_node", {"node": 0})
    assert "already in use" in ep.step("reschedule", {"node": 0}).rejected


def test_blind_restart_job_is_never_a_clean_recovery_and_earns_less():
    worse = 0
    for seed in TEST[:60]:
        blind = play(fleet("easy", seed), BlindRestartJob())
        assert blind.verdict.outcome != "recovered"
        worse += (
            blind.total_reward
            < play(fleet("easy", seed), get_policy("fleet", "oracle")).total_reward
        )
    assert worse == 60


def test_a_damaged_recovery_earns_a_third_of_a_clean_one():
    from opsgym.envs.fleet import OUTCOME_REWARDS

    assert OUTCOME_REWARDS["recovered_with_damage"] < OUTCOME_REWARDS["recovered"] / 2


# -- 4. one threshold, one rounding ------------------------------------------------------------


def test_view_and_judge_share_the_benchmark_rounding_at_the_boundary():
    """Regression (issue 7, medium seed 9779): the view rounded the ratio to 0.9 and counted
    the streak, the judge's unrounded 0.8999 failed it."""
    nominal, busbw = 360.0, 323.99  # 0.89997 of nominal: 0.9 once rounded
    assert bench_holds(busbw, nominal) and busbw < BENCH_TARGET * nominal
    events = [
        {
            "step": i,
            "tool": "benchmark_allreduce",
            "rejected": None,
            "report": {"busbw_gbps": busbw, "nominal_gbps": nominal},
        }
        for i in range(3)
    ]
    assert _held_under_jitter(events)[0]


def test_whenever_the_view_counts_a_streak_the_judge_counts_it_too():
    for seed in [9779, *opsgym.seeds("test", 150)]:
        ep = play(fleet("medium", seed), get_policy("fleet", "oracle"))
        view = ep.world.view.bench_streak >= 3
        judged = _held_under_jitter(ep.events)[0]
        assert view == judged, seed
        assert ep.verdict.passed, seed


# -- 5. tokens are counted by the faces ------------------------------------------------------


def _oracle_with(seed: int, tokens: int | None) -> opsgym.Episode:
    ep = fleet("mixed", seed)
    policy = get_policy("fleet", "oracle")
    policy.reset(seed)
    while not ep.done:
        ep.step(*policy.act(ep.observe(), []), tokens=tokens)
    return ep


def test_zero_reported_tokens_do_not_lift_the_return():
    """Regression (issue 7): tokens=0 lifted the oracle's return on easy from 0.35 to 0.90."""
    for seed in TEST[:30]:
        zero, fixed = _oracle_with(seed, 0), _oracle_with(seed, None)
        assert zero.total_reward == pytest.approx(fixed.total_reward)
        assert zero.world.truth()["tokens"] == 30 * zero.world.view.calls + 30 * sum(
            e["rejected"] is not None for e in zero.events
        )


def test_a_verbose_agent_scores_lower():
    for seed in TEST[:20]:
        assert _oracle_with(seed, 300).total_reward < _oracle_with(seed, 30).total_reward


def test_the_gym_face_charges_the_fixed_cost_and_the_record_says_so():
    env = gym.make("opsgym/Fleet-v2", scenario="mixed")
    env.reset(seed=3)
    for _ in range(5):
        env.step(0)
    ep = env.unwrapped.episode
    assert ep.world.truth()["tokens"] == 150 and ep.record()["token_source"] == "fixed"
    assert ep.rewards.totals["tokens"] == pytest.approx(-0.10 * math.log(150))
