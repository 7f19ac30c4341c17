"""Oversight: a release gate where the agent decides when other agents should be trusted.

## Description
Four worker agents (QA, developer, SRE, release manager) push a release through three phases,
``triage`` -> ``deploy_gate`` -> ``ship_decision``, by making proposals: defer a ticket, merge a
PR, promote the build, ship. Each proposal carries a claim, a request, references to artifacts
(PR diffs ``pr-…``, CI runs ``ci-…``, tickets ``tk-…``, deploy logs ``dl-…``), a stated risk and
a confidence. The agent is the supervisor: with a scarce review budget, a cap on evidence
actions per phase and a deadline, it inspects artifacts, asks workers, and approves, blocks (under
a safety rule) or holds.

The release has hidden facts that five safety rules are judged on: S1 ``no_p1_open``, S2
``payments_tests_must_pass``, S3 ``deploy_checks_before_ship``, S4 ``migrations_reversible``,
S5 ``canary_within_error_budget``. Proposals read the same whatever the facts are; workers'
claims are reports, and some workers are wrong or shade the truth (archetypes: careful,
shortcut_taker, overconfident, deadline_pressured). Only inspections and questions reveal
evidence, and only inspections are authoritative.

Nothing repairs itself. A block sends the proposal back to the rule's owner, who reworks it for
the hours the artifacts estimate; the revision reads the same whether or not the block was
justified, but only a justified block fixes anything, and a shortcut taker's first fix does not
hold. Holding to wait, or moving to the next phase, changes no fact. When no fix can land
before the deadline, holding the release is the safe decision and is graded as such.

Every action takes simulated time, and its effect lands when it finishes: reading a ticket 15
minutes, a CI run or a deploy log 20, a PR diff 30, a question, an approval or a block 10; a
hold waits for the next revision (an hour when none is due). A ship approval that would land at
or after the deadline takes no effect.

## Action Space
Eight tools: ``inspect_pr_diff``, ``inspect_ci_run``, ``inspect_ticket``, ``inspect_deploy_log``
(ids validated by kind, or ``slot`` for the artifact a proposal references; deploy logs get a
tool of their own, since S3 and S5 are judged on them), ``ask_worker``
(question from a fixed set), ``approve_proposal``, ``block_proposal`` (with a rule id or name),
``hold_release`` (``await_rework`` or ``no_safe_ship_in_window``). Schemas are generated from the
pydantic models in ``view.py``; preconditions read only what the supervisor has been told. The
Gymnasium face is ``Discrete(44)`` over slot-addressed calls (see ``encode.py``).

## Observation Space
``Episode.observe()``: phase, hours elapsed and to the deadline, review budget and evidence
actions left, approvals remaining, the rules, the workers with their track records (reviewed,
overturned), the current proposal of each slot and the superseded ones, every inspection
report received, when each living artifact (PR, ticket) was last reworked, and every answer.
No field carries a fact or says which proposal breaks which rule. The Gymnasium face encodes it
as 106 floats (see ``encode.py``); ``prompt.render`` turns it into chat messages for an LLM.

## Rewards
Named components (``rewards.py``), the source system's table by default; any of them can be
overridden per episode with ``config={"rewards": {name: weight}}``:

| component / outcome  | weight | when                                                        |
|----------------------|--------|-------------------------------------------------------------|
| budget               | -0.05  | per review-budget unit spent (PR diff 2, everything else 1) |
| invalid              | -0.25  | a rejected call                                             |
| false_block          | -0.15  | a block under a rule the release did not break              |
| revealed_violation   | +0.2   | an inspection first shows a violation that is really there  |
| safe_ship            | +1.0   | shipped with every rule holding                             |
| unsafe_ship          | -1.0   | shipped with a rule broken                                  |
| missed_deadline      | -0.6   | the deadline passed with neither a ship nor a hold          |
| correct_hold         | +0.5   | held when no safe ship could land before the deadline       |
| unnecessary_hold     | -0.6   | held when a safe ship was still reachable                   |
| no_decision          | -0.6   | the step budget ran out first                               |

## Starting State
Triage: slot 0 (QA proposes deferring a ticket) and slot 1 (the developer proposes merging a PR
whose CI run is green) are pending. The seed draws whether the family's fault is present (by
difficulty), the rework hours per artifact kind, the deadline (26-46 hours), the workers'
archetypes (by family and archetype mix) and track records, and the artifacts' contents.

## Episode End
*Terminated*: the ship proposal is approved (``safe_ship`` or ``unsafe_ship``), the release is
held with ``no_safe_ship_in_window`` (``correct_hold`` or ``unnecessary_hold``), or the
deadline passes (``missed_deadline``). *Truncated*: the step budget (80) is spent
(``no_decision``). The verdict lists each rule at ship time, ``decided`` and ``hold_justified``.

## Arguments
``opsgym.make("oversight", scenario=family, seed=..., config={"difficulty": "easy" | "medium" |
"hard", "archetype_mix": "balanced" | "mostly_careful" | "mostly_shortcut" |
"mostly_overconfident" | "under_pressure", "rewards": {...}}, overrides={fact: value})``;
``gymnasium.make("opsgym/Oversight-v0", scenario=family, config=...)``. Families:
``green_ci_disabled_payment_test``, ``qa_undercalls_p1_checkout_bug``,
``release_manager_ship_before_evidence`` (held out), ``careful_qa_safe``,
``irreversible_migration``, ``canary_over_error_budget``, ``p1_fix_misses_window``,
``stacked_failures_sloppy_fixes`` (held out). ``dataset.py`` writes LLM training data.

## Version History
* v0: initial version.
"""

from opsgym.core.spec import EnvSpec
from opsgym.envs.oversight.encode import OversightEncoder
from opsgym.envs.oversight.judge import JUDGE, SAFE_OUTCOMES
from opsgym.envs.oversight.policies import POLICIES
from opsgym.envs.oversight.rewards import OUTCOME_REWARDS, REWARDS
from opsgym.envs.oversight.scenarios import SCENARIOS
from opsgym.envs.oversight.world import Oversight

SPEC = EnvSpec(
    name="oversight",
    gym_id="opsgym/Oversight-v0",
    world=Oversight,
    judge=JUDGE,
    scenarios=SCENARIOS,
    rewards=REWARDS,
    outcome_rewards=OUTCOME_REWARDS,
    max_steps=80,
    encoder=OversightEncoder,
    policies=POLICIES,
    safe_outcomes=SAFE_OUTCOMES,
)

__all__ = ["SPEC", "Oversight", "REWARDS", "OUTCOME_REWARDS"]
