"""What the supervisor is shown: the generic renderer with the world's brief, from the
observation alone."""

from __future__ import annotations

import opsgym
from opsgym.adapters.toolcalls import render_messages, render_observation
from opsgym.envs.oversight import SPEC


def test_the_prompt_is_a_system_and_a_user_message_from_the_observation_alone():
    ep = opsgym.run("oversight", "stacked_failures_sloppy_fixes", 9, "oracle")
    messages = render_messages(ep)
    assert [m["role"] for m in messages] == ["system", "user"]
    system, user = (m["content"] for m in messages)
    assert SPEC.brief in system
    for rule in ("S1|no_p1_open", "S2|payments_tests_must_pass", "S3|deploy_checks"):
        assert rule in user
    for tool in SPEC.world.tools:
        assert f'"name":"{tool}"' in system
    obs = ep.observe()
    assert render_observation("oversight", SPEC.brief, obs, ep.tools) == messages
    for prop in obs["proposals"]:
        assert prop["id"] in user and prop["claim"] in user
    for ident in obs["evidence"]:
        assert ident in user
    assert "payments" in user and "history (blocked_under|claim|" in user
    bare = render_messages(ep, tools_in_prompt=False)[0]["content"]
    assert bare != system and "Tools" not in bare


def test_the_prompt_shows_answers_and_rejections():
    ep = opsgym.make("oversight", "careful_qa_safe", 2)
    ep.step("ask_worker", {"slot": 1, "question_type": "payment_tests"})
    ep.step("inspect_ci_run", {"run_id": "pr-0"})
    user = render_messages(ep)[1]["content"]
    assert "answers (asked_at|confidence|question|rule|says|text|worker):" in user
    assert "|payment_tests|S2|" in user
    assert "rejected:\"'pr-0' is not a CI run id" in user and "tool:inspect_ci_run" in user
