"""Fleet: the SRE of a distributed GPU training job under failure.

## Description
Four HGX nodes of eight H100s (ranks 0-31; rank r is GPU r % 8 of node r // 8) hang off two
leaf switches (nodes 0-1, nodes 2-3) joined by two spines. One training job runs a ring
AllReduce over all 32 ranks; each node loads NCCL through its LD_LIBRARY_PATH. Something has
gone wrong, and every minute of lost training costs money ($5,000 by default). The agent must
find what, fix it without destroying work, confirm the fix on fresh evidence, and close the
incident. Faults (``tasks.py``):

* **oom**: one rank runs out of memory (its GPU logs XID 79); the AllReduce stalls fleet-wide.
* **congestion**: the ring, launched in interleaved order, crosses the spines at every hop and
  one spine is oversubscribed (bus bandwidth down 40-60%). Re-forming the ring in topology
  order and pinning it off the congested spine fixes it; either alone does not (pinning an
  interleaved ring halves the bandwidth). The fix must hold three jittered benchmark samples.
* **desync**: a data-dependent branch makes one rank compile a different collective; the job
  hangs once it runs far enough to reach it. A staged patch: ``patch_identify`` (after two
  flight recorders disagree), ``patch_diff``, ``patch_apply``. Restarting the job only buys
  minutes.
* **version**: one node's LD_LIBRARY_PATH resolves NCCL 2.21.5 while its peers run 2.27.0;
  "Message truncated" warnings spread across communicators (mostly logged by its neighbours)
  until the job stalls.
* **secondary**: with the level's probability (always in ``black_swan``), the first real fix
  lets a second rank run out of memory.

The tools can mislead, as real ones do: the dashboard is scraped only every few calls, a share
of its updates carries a red-herring alert and a share masks a degraded node as ok. Deep
diagnostics (kernel logs, NCCL logs, flight recorders, library paths, switch counters,
benchmarks) are fresh and exact, but cost time and tokens, and some decoys are planted in
``black_swan``. Action reports say what was done, never whether it worked. An independent judge
reads the true fleet and the recorded evidence; the agent cannot declare its own success.

## Tasks
Scenarios, each graded by the same judge with its own sub-goals, window and token allowance:
``easy`` (oom; 90 min), ``medium`` (congestion; 120), ``hard`` (desync; 150), ``cascade`` (oom,
then congestion, then desync, strictly phase-gated: a fix needs its investigation and a phase
opens only when the previous one is confirmed; 360), ``fleet_coordination`` (version and
congestion; consult at least two specialists, poll a consensus and fix through a two-worker
coalition; 180), ``black_swan`` (every fault, decoys, a kernel log that may have wrapped, a
certain secondary failure; any wrong restart, wrong library fix or destructive action destroys
the run, and a pass needs lost training within a 90-minute SLO; 900). The challenge
generator (``tasks.compose``) adds ``oom+version``, ``congestion+desync`` and, held out of
the train split, ``version+desync`` and ``oom+congestion+version``.

## Action Space
22 tools (``Episode.tools`` has their schemas and preconditions, generated from ``state.py``'s
pydantic models). Diagnostics: ``check_telemetry``, ``query_nccl_logs(node)``,
``read_kernel_log(node)``, ``check_nccl_version(node)``, ``show_topology``,
``benchmark_allreduce``, ``inspect_flight_recorder(rank)``. Remediation: ``restart_rank(rank)``,
``reorder_ring``, ``reroute_ring(spine)``, ``fix_library_path(node)``, ``patch_identify``,
``patch_diff(file)``, ``patch_apply(file)``. Coordination: ``delegate(worker)``,
``poll_consensus``, ``coalition(action)`` (a budget of 10 delegations). Destructive:
``drain_node(node)``, ``restart_job``, ``reboot_fleet`` (also: restarting a healthy rank or
re-pathing a healthy node). ``declare_resolved`` ends the episode; ``wait`` lets five minutes
pass. The Gymnasium face expands the parameters into ``Discrete(113)`` (``encode.ACTIONS``,
``wait`` last) and ``action_masks()`` marks the calls whose preconditions hold.

## Observation Space
``Episode.observe()``: the task and its incident text, the clock, tokens spent and the
allowance, the refresh interval and calls until the next scrape, the last scrape (with
``stale`` and its age), the evidence each diagnostic returned (each stamped with the call it
was gathered at), the patch stages, the agent's own actions, the specialists' findings and
the last consensus. The Gymnasium face encodes it as 357 floats (``encode.py``).

## Rewards
Named components, weighted by ``REWARDS``; over an episode they sum to
``0.60 x success + 0.30 x sub-goal credit - 0.10 x log(tokens) - 0.2 per destructive action
- 0.05 per delegation over budget`` (plus ``invalid`` and ``premature``):

| component   | weight | when                                                            |
|-------------|--------|-----------------------------------------------------------------|
| subgoal     | +0.30  | 1/n for each of the scenario's n sub-goals, once, when reached  |
| tokens      | -0.10  | d log(tokens) on each accepted call (sums to log of the total)  |
| destructive | -0.20  | each destructive action or wrong-target restart / library fix   |
| over_budget | -0.05  | each delegation or consensus poll beyond the tenth              |
| invalid     | -0.05  | a rejected call                                                 |
| premature   | -0.10  | a declaration the judge did not accept                          |
| terminal    | x1     | 0.60 x success: recovered and recovered_with_damage +0.60,      |
|             |        | recovered_unconfirmed +0.30, unrecovered 0, destroyed -0.60     |

Tokens are what the agent sent through the tool-calling face: ``Episode.step(..., tokens=n)``.
A call without a count (the Gymnasium face) is charged ``Fleet.tokens_per_call`` = 30. The
*grade* in the verdict applies token efficiency as a multiplier: ``grade = min(1, allowance /
tokens) x clip((0.60 success + 0.30 credit - 0.20 destructive - 0.05 over) / 0.90, 0, 1)``;
``passed`` needs the outcome ``recovered``, every sub-goal, and a grade of at least 0.7.
Downtime (minutes x share of throughput lost, and its cost) is reported in the truth and the
verdict, never observed during the episode.

## Starting State
The job is stalled, hung or degraded by the scenario's first faults; nothing has been read.
The seed draws the hidden facts (``tasks.draw``: the failing rank, the congested spine and its
drop, the desyncing rank and file, the node on the wrong NCCL, whether a secondary failure
strikes, decoys) and the public inventory (host names, pids, addresses, nominal bandwidth).

## Episode End
*Terminated*: ``declare_resolved`` (accepted when the outcome is ``recovered`` or
``recovered_with_damage``; otherwise it costs ``premature`` and the episode ends all the same),
an irreversible mistake (``destroyed``), or the incident window closes. *Truncated*: the step
budget (300) is spent. Outcomes and sub-goals: ``judge.py``.

## Arguments
``opsgym.make("fleet", scenario=..., seed=..., config=..., overrides=...)`` and
``gymnasium.make("opsgym/Fleet-v0", scenario=..., config=...)``. ``config``: ``level`` (1-3,
the curriculum's red-herring 30/50/70%, masking 20/35/50%, refresh every 3/5/7 calls and
secondary-failure 10/25/40% rates), ``downtime_cost_per_minute`` (5000),
``coordination`` (true: the specialists can be consulted), ``token_allowance`` (the task's).
``overrides``: any hidden fact by name (``oom_rank``, ``congested_spine``, ``desync_rank``,
``desync_file``, ``version_node``, ``secondary``, ...). ``curriculum()`` returns an adaptive
curriculum over the three levels (``opsgym.core.curriculum``).

## Version History
* v0: initial version.
"""

from opsgym.core.curriculum import Curriculum
from opsgym.core.spec import EnvSpec
from opsgym.envs.fleet.encode import FleetEncoder
from opsgym.envs.fleet.judge import JUDGE, OUTCOMES
from opsgym.envs.fleet.policies import POLICIES
from opsgym.envs.fleet.tasks import LEVELS, SCENARIOS
from opsgym.envs.fleet.world import Fleet

REWARDS = {
    "step": 0.0,
    "invalid": -0.05,
    "premature": -0.10,
    "tokens": -0.10,
    "subgoal": 0.30,
    "destructive": -0.20,
    "over_budget": -0.05,
    "terminal": 1.0,
}

OUTCOME_REWARDS = {
    "recovered": 0.60,
    "recovered_with_damage": 0.60,
    "recovered_unconfirmed": 0.30,
    "unrecovered": 0.0,
    "destroyed": -0.60,
}
assert set(OUTCOME_REWARDS) == set(OUTCOMES)

SPEC = EnvSpec(
    name="fleet",
    gym_id="opsgym/Fleet-v0",
    world=Fleet,
    judge=JUDGE,
    scenarios=SCENARIOS,
    rewards=REWARDS,
    outcome_rewards=OUTCOME_REWARDS,
    max_steps=300,
    encoder=FleetEncoder,
    policies=POLICIES,
    safe_outcomes=frozenset({"recovered", "recovered_with_damage"}),
)


def curriculum(**kwargs) -> Curriculum:
    """An adaptive curriculum over the fleet's three levels; ``config`` feeds ``make``."""
    return Curriculum([{"level": n} for n in sorted(LEVELS)], **kwargs)


__all__ = ["SPEC", "Fleet", "REWARDS", "OUTCOME_REWARDS", "curriculum"]
