"""The oversight holes of issue 7, each measured with a scripted exploit and held to a bound.

1. The reward stream told the truth: reading ``false_block`` off a block's reward was safe on
   100% of six families. It is settled at the end now, and the reader learns nothing.
2. The family was the answer: claim texts named it from the first prompt 55% of the time (chance
   12.5%), and blocking the family's rule blindly was safe on 100% of four families. A family is
   a prior now, and nothing the agent sees before an inspection depends on it.
3. Stalling won ``correct_hold`` on 100% of 8 families x 3 difficulties. A hold is judged from
   the episode's start now.
7. The oracle was not the best policy shipped. It is now, on ``mixed`` at every difficulty.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from functools import cache

import pytest

import opsgym
from opsgym.adapters.toolcalls import render_text
from opsgym.agents import get_policy, policy_rng
from opsgym.agents import play as play_loop
from opsgym.core.registry import catalogue, legal_actions
from opsgym.envs.oversight import SPEC
from opsgym.envs.oversight.exploits import (
    EXPLOITS,
    BlockAndReadReward,
    FamilyPrior,
    StallThenHold,
)
from opsgym.envs.oversight.policies import POLICIES
from opsgym.envs.oversight.scenarios import DIFFICULTIES, FACT_VALUES, OVERRIDABLE, presence

FAMILIES = [s.name for s in SPEC.families()]
CALLS = [(t.name, a.model_dump()) for t, a in catalogue("oversight")]
TEST_SEEDS = opsgym.seeds("test", 300)
IMMEDIATE = {"budget", "invalid", "step"}


def play(scenario, seed, policy, *, family_aware=False, **kw):
    """Play ``policy`` (a name or a factory) like ``opsgym.agents.play``, reward fed back."""
    ep = opsgym.make("oversight", scenario, seed, **kw)
    agent = get_policy("oversight", policy) if isinstance(policy, str) else policy()
    if family_aware:
        agent.reset(policy_rng(seed), family=ep.family.name)
    else:
        agent.reset(policy_rng(seed))
    feedback = getattr(agent, "feedback", None)
    while not ep.done:
        result = ep.step(*agent.act(ep.observe(), [CALLS[i] for i in legal_actions(ep)]))
        if feedback is not None:
            feedback(result)
    return ep


def stats(eps):
    outcomes = Counter(ep.verdict.outcome for ep in eps)
    return {
        "safe": sum(ep.verdict.accepted for ep in eps) / len(eps),
        "return": sum(ep.total_reward for ep in eps) / len(eps),
        "outcomes": outcomes,
    }


@cache
def oracle(scenario, seed, difficulty="medium"):
    return play(scenario, seed, "oracle", config={"difficulty": difficulty})


def oracle_stats(scenario, seeds, difficulty="medium"):
    return stats([oracle(scenario, s, difficulty) for s in seeds])


# -- 1. the reward stream -----------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_reading_the_reward_gains_nothing(family):
    """The block-and-read policy plays the same calls whatever the facts, is paid nothing but
    immediate components before the last step, and ends far from safe and below the oracle.
    With ``reward_timing="dense"`` (documented as leaking) the same policy is safe on most
    episodes: that was the hole."""
    seeds = TEST_SEEDS[:200]
    fact = next(iter(SPEC.scenario(family).params["own"]))
    for seed in seeds[:20]:
        runs = [
            play(family, seed, BlockAndReadReward, overrides={fact: v}) for v in FACT_VALUES[fact]
        ]
        calls = [[(e["tool"], e["args"]) for e in ep.events] for ep in runs]
        assert all(c == calls[0] for c in calls), (family, seed)
        for ep in runs:
            assert {k for e in ep.events[:-1] for k in e["reward"]} <= IMMEDIATE
    reader = stats([play(family, s, BlockAndReadReward) for s in seeds])
    assert reader["safe"] <= 0.35, reader
    assert reader["return"] <= oracle_stats(family, seeds)["return"] - 1.5, reader
    leaking = stats([play(family, s, BlockAndReadReward, reward_timing="dense") for s in seeds])
    if family != "p1_fix_misses_window":  # its slow ticket fix outlasts any block
        assert leaking["safe"] >= 0.8, leaking


# -- 2. the family is a prior, never an answer ------------------------------------------------


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_within_every_family_the_fault_varies_and_clean_releases_occur(difficulty):
    """The documented rates hold (300 seeds, within four standard errors), every family has
    clean releases, and each family's severity varies with the seed."""
    config = {"difficulty": difficulty}
    for name in FAMILIES:
        family = SPEC.scenario(name)
        eps = [opsgym.make("oversight", name, s, config=config) for s in TEST_SEEDS]
        rates = presence(family, DIFFICULTIES[difficulty])
        for fact, healthy in ((f, v[0]) for f, v in FACT_VALUES.items()):
            measured = sum(ep.world.facts[fact] != healthy for ep in eps) / len(eps)
            tolerance = 4 * (rates[fact] * (1 - rates[fact]) / len(eps)) ** 0.5 + 0.01
            assert abs(measured - rates[fact]) <= tolerance, (name, fact, measured, rates[fact])
        clean = sum(not ep.world.violated() for ep in eps)
        assert 0.03 * len(eps) <= clean < len(eps), (name, clean)
        for fact in family.params["own"]:
            values = {ep.world.facts[fact] for ep in eps}
            assert len(values) >= 2, (name, fact)
        slow = sum(ep.world.facts["slow_ticket_fix"] for ep in eps) / len(eps)
        assert abs(slow - family.params["p_slow"]) <= 0.1, (name, slow)


def _claims(ep):
    """The claim texts of the first prompt, ids masked, and their token set."""
    texts = tuple(
        re.sub(r"\b(?:tk|pr|ci|dl|p|w)-\w+", "<id>", p["claim"]) for p in ep.observe()["proposals"]
    )
    return texts, frozenset(w for t in texts for w in t.lower().split())


def test_claim_texts_do_not_name_the_family():
    """Most frequent family per exact claim text (and per token set), trained on train seeds and
    tested on test seeds: on main it was right 55% of the time (chance 12.5%); now it is at
    chance. The first observation itself is one and the same across families."""
    n, chance = 150, 1 / len(FAMILIES)
    for feature in (0, 1):
        table = defaultdict(Counter)
        for name in FAMILIES:  # a held-out family has no train seeds: it learns from dev ones
            for seed in opsgym.seeds("dev" if SPEC.scenario(name).held_out else "train", n):
                table[_claims(opsgym.make("oversight", name, seed))[feature]][name] += 1
        hits = 0
        for name in FAMILIES:
            for seed in opsgym.seeds("test", n):
                seen = table[_claims(opsgym.make("oversight", name, seed))[feature]]
                hits += bool(seen) and seen.most_common(1)[0][0] == name
        accuracy = hits / (n * len(FAMILIES))
        assert accuracy < 2 * chance, (feature, accuracy)


@pytest.mark.parametrize("family", FAMILIES)
def test_following_the_familys_story_blindly_does_not_pay(family):
    """Told the family, block its rule (or hold) without looking: on main this was safe on 100%
    of four families and out-earned the oracle in three."""
    seeds = TEST_SEEDS[:200]
    prior = stats([play(family, s, FamilyPrior, family_aware=True) for s in seeds])
    assert prior["safe"] <= 0.9, prior
    assert prior["return"] <= oracle_stats(family, seeds)["return"] - 0.3, prior


# -- 3. stalling ------------------------------------------------------------------------------


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_stalling_until_no_ship_can_land_is_not_a_correct_hold(difficulty):
    """Idle with await_rework until no ship can land, then hold: on main a correct hold on 100%
    of 8 families x 3 difficulties. Now a correct hold only where a careful supervisor could not
    have shipped safely from the start (a slow P1 fix), a stalled hold everywhere else."""
    for name in FAMILIES:
        eps = [
            play(name, s, StallThenHold, config={"difficulty": difficulty}) for s in TEST_SEEDS[:60]
        ]
        for ep in eps:
            hold = ep.world.truth()["hold"]
            assert hold is not None and not hold["safe_ship_reachable"]
            expected = "stalled_hold" if hold["reachable_from_start"] else "correct_hold"
            assert ep.verdict.outcome == expected
            assert ep.world.start_ship() >= ep.world.deadline or expected == "stalled_hold"
        correct = sum(ep.verdict.outcome == "correct_hold" for ep in eps) / len(eps)
        assert correct <= (0.6 if name == "p1_fix_misses_window" else 0.12), (name, correct)
        assert stats(eps)["return"] < 0, name


def test_a_stalled_hold_is_paid_like_a_missed_deadline():
    rewards = SPEC.outcome_rewards
    assert rewards["stalled_hold"] == rewards["missed_deadline"] < 0 < rewards["correct_hold"]
    assert "stalled_hold" not in SPEC.safe_outcomes


def test_the_oracles_holds_are_correct_and_stalls_are_not():
    """Where no safe ship was ever possible, the oracle holds at once; where one was, a
    supervisor that waits it out is graded stalled, in the same episode."""
    slow = {fact: values[0] for fact, values in OVERRIDABLE.items()}
    slow.update(p1_open=True, slow_ticket_fix=True)
    fast = {**slow, "slow_ticket_fix": False}
    for seed in TEST_SEEDS[:50]:
        held = play("p1_fix_misses_window", seed, "oracle", overrides=slow)
        assert held.verdict.outcome == "correct_hold"
        assert held.world.truth()["hold"]["at"] <= 60  # as soon as the ticket is read
        stalled = play("p1_fix_misses_window", seed, StallThenHold, overrides=fast)
        assert stalled.verdict.outcome == "stalled_hold"
        assert "hold_justified" in stalled.verdict.failed


# -- 7. the oracle earns the most -------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_the_oracle_is_safe_and_earns_the_most_on_mixed(difficulty):
    """On ``mixed`` test episodes the oracle is safe on >= 99% and its mean return is above every
    other shipped policy's and every exploit's (the spamming ones, which never come near, on
    fewer seeds)."""
    seeds, config = TEST_SEEDS[:120], {"difficulty": difficulty}
    best = oracle_stats("mixed", seeds, difficulty)
    assert best["safe"] >= 0.99, best
    others = {name: (name, False) for name in [*POLICIES, "random"] if name != "oracle"}
    others.update({x.name: (x.policy, x.family_aware) for x in EXPLOITS if x.name not in others})
    for name, (policy, aware) in others.items():
        n = 20 if name.startswith("spam_") else len(seeds)
        eps = [play("mixed", s, policy, family_aware=aware, config=config) for s in seeds[:n]]
        assert stats(eps)["return"] < best["return"] - 0.2, (name, stats(eps), best)


# -- 5. the exploit suite ---------------------------------------------------------------------


def _measure(exploit, seeds):
    eps = [play("mixed", s, exploit.policy, family_aware=exploit.family_aware) for s in seeds]
    got = stats(eps)
    got["gap"] = oracle_stats("mixed", seeds)["return"] - got["return"]
    return got


@pytest.mark.parametrize("exploit", EXPLOITS, ids=lambda x: x.name)
def test_each_exploit_stays_under_its_bounds_by_a_margin(exploit):
    """The audit's bounds, on 300 ``mixed`` test seeds (100 for the spamming ones, which never
    vary), with room to spare: a rate at least 0.05 inside its bound, a gap at least 0.1 beyond
    it."""
    seeds = TEST_SEEDS[: 100 if exploit.name.startswith("spam_") else 300]
    got = _measure(exploit, seeds)
    for bound in exploit.bounds:
        metric = bound.metric
        if metric.startswith("outcome:"):
            value = got["outcomes"][metric.split(":", 1)[1]] / len(seeds)
        else:
            value = got[metric]
        margin = 0.1 if metric in ("gap", "return") else 0.05
        shifted = value + margin if bound.op in ("<", "<=") else value - margin
        assert bound.holds(shifted), (exploit.name, str(bound), value)


def test_the_suite_covers_what_the_issue_names():
    names = {x.name for x in SPEC.exploits}
    tools = {f"spam_{t}" for t in SPEC.world.tools}
    assert tools <= names
    assert {
        "stall_then_hold",
        "block_and_read_reward",
        "family_prior",
        "claim_text",
        "approve_all",
        "block_all",
        "hold_immediately",
    } <= names
    assert [x.name for x in SPEC.exploits if x.family_aware] == ["family_prior"]
    assert all(x.scenario == "mixed" for x in SPEC.exploits)


def test_the_reward_checks_hold():
    for check in SPEC.reward_checks:
        held, measured = check.check(60, play_loop)
        assert held, (check.name, measured)


# -- the faces --------------------------------------------------------------------------------


def test_the_gym_id_is_v1_and_the_manual_says_what_changed():
    assert SPEC.gym_id == "opsgym/Oversight-v1"
    doc = opsgym.envs.oversight.__doc__
    history = doc[doc.index("## Version History") :]
    assert "* v1:" in history and "* v0:" in history
    for word in ("settled", "stalled_hold", "mixed", "prior"):
        assert word in history
    for component in SPEC.settled:
        assert f"| {component}" in doc and "settled" in doc
    assert SPEC.settled == {"false_block", "revealed_violation"}
    assert SPEC.scenarios[-1].name == "mixed" and SPEC.scenarios[0].name != "mixed"


def test_the_mixed_scenario_declares_its_hidden_facts():
    facts = opsgym.hidden_facts("oversight", "mixed")
    assert set(facts) == {*OVERRIDABLE, "family"}
    assert facts["family"]["values"] == FAMILIES
    assert "block_proposal" in facts["family"]["revealed_by"]
    assert facts["slow_ticket_fix"]["revealed_by"] == ["block_proposal", "inspect_ticket"]
    assert "block_proposal" not in facts["p1_open"]["revealed_by"]
    ep = opsgym.make("oversight", "mixed", 9, overrides={"family": "p1_fix_misses_window"})
    assert ep.family.name == "p1_fix_misses_window"
    assert ep.events == [] and ep.step("inspect_ticket", {"slot": 0}).rejected is None
    assert ep.events[-1]["truth"]["family"] == "p1_fix_misses_window"


def test_the_prompt_is_the_rendered_messages_as_one_string():
    ep = opsgym.make("oversight", "mixed", 19)
    text = render_text(ep)
    assert isinstance(text, str) and "You are the release supervisor" in text
    assert ep.observe()["proposals"][0]["claim"] in text
    assert ep.family.name not in text
