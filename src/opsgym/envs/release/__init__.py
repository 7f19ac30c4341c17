"""Release: a blue-green release in which the tools can mislead.

## Description
A web frontend, an API service and a database. Release v1 is live on the blue pool; the
candidate v2 waits for the green pool. A router splits traffic between the pools, and the
database has a schema version (v2 needs schema 2; the migration is expand-only, so v1 runs on
either). The agent must either ship v2 to all traffic, verified, or roll back to v1, verified,
within a 150-minute window. Every operation takes simulated time.

The tools can mislead, as real ones do: a deploy can time out after it committed, a health
endpoint can serve a cached "healthy" from before the last change, a migration can be written
while its acknowledgement is lost, a router can apply only part of a shift. An independent
judge looks at the real system and the recorded trajectory; the agent cannot declare success.

## Action Space
Ten tools, in this order (the Gymnasium action index): ``inspect``, ``stage``, ``deploy``,
``health_check``, ``shift_traffic``, ``migrate``, ``verify``, ``retry``, ``rollback``,
``complete``. Their arguments and preconditions are in ``Episode.tools`` (generated from the
pydantic models in ``world.py``). A call whose preconditions fail is rejected and recorded;
nothing in the world changes. Preconditions read only what the agent has been told.

## Observation Space
``Episode.observe()`` is a dict of what the agent knows: the rollout state as reported, the
router split requested and last observed, the last health report per pool (with ``checked_at``,
``restarts`` and ``error_rate``), the last verify report, the unresolved operations, and the
last call's report. The Gymnasium face encodes it as 22 floats (see ``encode.py``).

## Rewards
Named components, weighted by ``REWARDS`` (per step unless stated):

| component  | weight | when                                                             |
|------------|--------|------------------------------------------------------------------|
| step       | -0.1   | every call                                                       |
| invalid    | -1.0   | a rejected call                                                  |
| retry      | -1.0   | a retry of an operation that is still ambiguous (a blind retry)  |
| unsafe     | -3.0   | traffic moved onto a target that cannot serve it; data corrupted |
| progress   | +0.5   | once per milestone: staged, deployed, migrated, fresh healthy     |
|            |        | evidence per pool, a passing verify (on v2 or after rollback)    |
| premature  | -2.0   | a ``complete`` the judge rejected                                |
| downtime   | -0.5   | per minute × share of traffic on a target that is failing        |
| terminal   | ×1     | ``deployed_verified`` +10, ``rolled_back_verified`` +5,          |
|            |        | ``unsafe`` -10, ``incomplete`` -3                                |

A verified v2 ship earns 10 + more progress; a verified rollback 5. When v2 is healthy,
shipping it is worth more than retreating (the source system's PPO learned that an immediate
rollback was the cheapest safe outcome; this table does not teach that). ``unsafe`` and
``downtime`` are computed from the truth, as a real outage would be felt; they are reward,
never observation.

## Starting State
v1 on blue with all traffic, green idle, schema 1, nothing staged. The seed draws the hidden
facts of the scenario (see ``scenarios.py``): did the deploy commit, how long the health cache
lies, what share a partial shift applies, operation durations.

## Episode End
*Terminated*: the judge accepts ``complete`` (``deployed_verified`` or
``rolled_back_verified``); data is corrupted (``unsafe``); the window closes (``unsafe`` if a
safety invariant fails then, else ``incomplete``). *Truncated*: the step budget (60) is spent.
The judge accepts ``complete`` only if all hold: ``schema_compatible``,
``traffic_on_healthy_target``, ``fresh_health_evidence``, ``ambiguity_resolved``,
``verified_after_last_traffic_change``, ``no_data_corruption``.

## Arguments
``opsgym.make("release", scenario=..., seed=..., max_steps=..., overrides=...)``;
``gymnasium.make("opsgym/Release-v0", scenario=...)``.

## Version History
* v0: initial version.
"""

from opsgym.core.spec import EnvSpec
from opsgym.envs.release.encode import ReleaseEncoder
from opsgym.envs.release.judge import JUDGE
from opsgym.envs.release.policies import POLICIES
from opsgym.envs.release.scenarios import SCENARIOS
from opsgym.envs.release.world import Release

REWARDS = {
    "step": -0.1,
    "invalid": -1.0,
    "retry": -1.0,
    "unsafe": -3.0,
    "progress": 0.5,
    "premature": -2.0,
    "downtime": -0.5,
    "terminal": 1.0,
}

OUTCOME_REWARDS = {
    "deployed_verified": 10.0,
    "rolled_back_verified": 5.0,
    "unsafe": -10.0,
    "incomplete": -3.0,
}

SPEC = EnvSpec(
    name="release",
    gym_id="opsgym/Release-v0",
    world=Release,
    judge=JUDGE,
    scenarios=SCENARIOS,
    rewards=REWARDS,
    outcome_rewards=OUTCOME_REWARDS,
    max_steps=60,
    encoder=ReleaseEncoder,
    policies=POLICIES,
    safe_outcomes=frozenset({"deployed_verified", "rolled_back_verified"}),
)

__all__ = ["SPEC", "Release", "REWARDS", "OUTCOME_REWARDS"]
