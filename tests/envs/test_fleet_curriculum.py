"""The adaptive curriculum (``opsgym.core.curriculum``) and its fleet levels."""

from __future__ import annotations

import json

import pytest

import opsgym
from opsgym.agents import get_policy, play
from opsgym.core.curriculum import Curriculum
from opsgym.envs.fleet import curriculum


def levels(n: int = 3) -> list[dict]:
    return [{"level": i + 1} for i in range(n)]


def test_it_escalates_on_a_high_rising_pass_rate_only_after_the_cooldown():
    c = Curriculum(levels())
    for passed in [False] * 2 + [True] * 7:
        c.record(passed)
    assert c.pass_rate > 0.75 and c.trend > 0.01
    assert c.level == 0  # nine episodes: the cooldown of ten holds
    c.record(True)
    assert c.level == 1
    event = c.events[-1]
    assert event["kind"] == "escalate" and (event["from"], event["to"]) == (0, 1)
    assert event["pass_rate"] > 0.75 and event["trend"] > 0.01


def test_a_high_but_falling_pass_rate_does_not_escalate():
    c = Curriculum(levels())
    for passed in [True] * 8 + [False, True]:
        c.record(passed)
    assert c.pass_rate > 0.75 and c.trend < 0.0 and c.level == 0


def test_a_saturated_window_counts_as_rising():
    c = Curriculum(levels())
    for _ in range(10):
        c.record(True)
    assert c.level == 1 and c.trend == 0.0


def test_it_backs_off_below_twenty_percent_after_five_episodes():
    c = Curriculum(levels(), start=2)
    for _ in range(4):
        c.record(False)
    assert c.level == 2
    c.record(False)
    assert c.level == 1 and c.events[-1]["kind"] == "backoff"
    assert c.state()["cooldown_left"] == {"escalate": 10, "backoff": 5}


def test_it_never_leaves_its_levels():
    c = Curriculum(levels(2))
    for _ in range(50):
        c.record(True)
    assert c.level == 1
    for _ in range(50):
        c.record(False)
    assert c.level == 0


def test_the_meta_reward_pays_for_advancing_and_mastering_not_for_oscillating():
    """Regression (issue 7): alternating pass and fail earned 4.95 over 100 episodes and stayed
    at level 1, while passing every episode earned 0."""
    alternating, always = Curriculum(levels()), Curriculum(levels())
    paid_alternating = sum(alternating.record(i % 2 == 0) for i in range(100))
    paid_always = sum(always.record(True) for _ in range(100))
    assert alternating.level == 0 and always.level == 2
    assert paid_alternating <= 0.1 * 0.5 + 1e-9  # at most the pass rate it ends on
    assert paid_always == pytest.approx(0.1 * 3)  # two levels climbed, the top one mastered
    assert paid_always > 5 * paid_alternating
    longer = Curriculum(levels())
    assert sum(longer.record(i % 2 == 0) for i in range(1000)) == pytest.approx(paid_alternating)


def test_the_meta_reward_telescopes_and_a_backoff_costs_what_the_level_was_worth():
    c = Curriculum(levels(), meta_weight=0.5, start=1)
    paid = [c.record(p) for p in [True, False, False, False, False, False, False]]
    assert c.level == 0 and c.events[-1]["kind"] == "backoff"
    assert sum(paid) == pytest.approx(0.5 * (c.mastery - 1.0))
    assert min(paid) < 0  # the step that lost the level


def test_state_and_events_are_readable_and_json():
    c = Curriculum(levels())
    for _ in range(10):
        c.record(True, 1.0)
    state = c.state()
    json.dumps(state)
    assert state["level"] == 1 and state["config"] == {"level": 2}
    assert state["events"] == c.events and state["episodes"] == 10


def test_bad_curricula_are_refused_with_the_value():
    with pytest.raises(ValueError, match="got none"):
        Curriculum([])
    with pytest.raises(ValueError, match="got 3"):
        Curriculum(levels(), start=3)


def test_the_fleet_curriculum_follows_the_oracle_up_and_the_random_policy_stays():
    for policy, top in (("oracle", 2), ("random", 0)):
        c = curriculum()
        for seed in opsgym.seeds("train", 40):
            ep = opsgym.make("fleet", "easy", seed, config=c.config)
            assert ep.observe()["refresh_every"] == (3, 5, 7)[c.level]
            play(ep, get_policy("fleet", policy))
            c.record(ep.verdict.passed, ep.verdict.grade)
        assert c.level == top, (policy, c.state())
