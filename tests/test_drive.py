"""The one drive loop: any backend, in either conversation format, plays and records alike.

The backends here are doubles (a scripted reply list, the oracle writing its calls); the real
ones are tested against a local endpoint (``tests/test_llm_agent.py``) and a tiny local model
(``tests/test_train_llm.py``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import opsgym
from opsgym.adapters.chat import History, Snapshot, call_message, conversation, tool_message
from opsgym.adapters.toolcalls import render_messages
from opsgym.agents import get_policy, play
from opsgym.agents.drive import ModelAgent, OutOfContext, Reply, Request, drive
from opsgym.core.episode import StepResult


class Scripted:
    """Answers each request with the next message of a script; keeps every request."""

    label = "scripted double"
    token_source = None
    needs_legal = False

    def __init__(self, *messages: dict[str, Any], fits: int | None = None):
        self.script = list(messages)
        self.requests: list[Request] = []
        self.fits = fits

    def reset(self, seed: int | None) -> None:
        pass

    def feedback(self, result: StepResult) -> None:
        pass

    def complete(self, request: Request) -> Reply:
        if self.fits is not None and len(request.messages) > self.fits:
            raise OutOfContext(f"{len(request.messages)} messages fill the double's context")
        self.requests.append(request)
        message = self.script.pop(0) if self.script else {"content": "nothing to add"}
        return Reply({"role": "assistant", **message}, {"completion_tokens": 5}, message)


class Oracle(Scripted):
    """The oracle's next call, written as the trainers write one (``call_message``)."""

    needs_legal = True

    def __init__(self, env: str):
        super().__init__()
        self.policy = get_policy(env, "oracle")

    def reset(self, seed: int | None) -> None:
        self.policy.reset(seed)

    def complete(self, request: Request) -> Reply:
        self.requests.append(request)
        name, args = self.policy.act(request.obs, request.legal)
        return Reply(call_message(name, args), None, None)


class Agent(ModelAgent):
    def __init__(self, env: str, backend: Any, format: str, **options: Any):
        self.env, self.backend, self.format, self.name = env, backend, format, "double"
        self.tools_in_prompt = options.get("tools_in_prompt", False)
        self.turns = options.get("turns")


def tag(name: str, arguments: dict | None = None) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments or {}}) + "</tool_call>"


# -- the formats ------------------------------------------------------------------------------


def test_the_snapshot_format_sends_the_state_now_and_the_last_turns_results():
    backend = Scripted({"content": tag("stage")}, {"content": tag("deploy")})
    ep = play(
        opsgym.make("release", "nominal", 3, max_steps=2), Agent("release", backend, "snapshot")
    )
    first, second = backend.requests
    assert first.messages == render_messages(
        opsgym.make("release", "nominal", 3, max_steps=2), tools_in_prompt=False
    )
    assert first.tools == ep.tools and len(second.messages) == 2
    assert "Your last turn:\n- stage -> " in second.messages[1]["content"]
    setup = ep.transcript[0]
    assert setup["format"] == "snapshot" and setup["system"] == first.messages[0]["content"]
    assert ep.transcript[1]["user"] == first.messages[1]["content"]


def test_the_history_format_is_the_conversation_the_trainers_teach():
    """An agent that makes the oracle's calls in the history format is sent, turn by turn, the
    SFT reference conversation of the same episode (:mod:`opsgym.training.data`)."""
    pytest.importorskip("transformers")
    from opsgym.adapters.episodes import rows
    from opsgym.training.data import FINAL, reference_conversation

    (row,) = rows("release", "train", 1, start=3)
    reference = reference_conversation(row)
    backend = Oracle("release")
    ep = opsgym.make("release", row["scenario"], row["seed"])
    play(ep, Agent("release", backend, "history"))
    assert ep.verdict.outcome == reference["outcome"]
    last = backend.requests[-1]
    assert last.messages == reference["messages"][:-3]  # all but the last call, its report, FINAL
    assert reference["messages"][-1]["content"] == FINAL
    assert last.tools == json.loads(reference["tools"])
    assert ep.transcript[0]["format"] == "history"
    assert ep.transcript[0]["first_message"] == reference["messages"][0]["content"]


def test_a_reply_without_a_call_is_answered_as_no_call_in_the_history_format():
    pytest.importorskip("transformers")
    backend = Scripted({"content": "I would rather not."}, {"content": tag("stage")})
    ep = play(
        opsgym.make("release", "nominal", 2, max_steps=2), Agent("release", backend, "history")
    )
    assert ep.events[0]["tool"] is None and ep.events[0]["rejected"] == "no tool call"
    assert ep.transcript[1]["calls"][0]["reason"] == "the reply made no tool call"
    said = json.dumps({"rejected": "the reply made no tool call"})
    assert backend.requests[1].messages[1:] == [
        {"role": "assistant", "content": "I would rather not."},
        tool_message("", said),
    ]
    assert "None" not in json.dumps(backend.requests[1].messages)


def test_every_native_call_id_is_answered_even_when_skipped_or_extra():
    """An endpoint wants an answer to each call id: the history format answers a call that did
    not run with why, and a text reply's reply-wide rejection without a tool's name."""
    pytest.importorskip("transformers")
    calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": "{}"}}
        for i, n in enumerate(["deploy", "stage", "verify", "stage", "stage"])
    ]
    backend = Scripted({"content": None, "tool_calls": calls})
    ep = play(
        opsgym.make("release", "nominal", 2, max_steps=3), Agent("release", backend, "history")
    )
    assert [c["status"] for c in ep.transcript[1]["calls"]] == [
        "rejected",
        "skipped",
        "skipped",
        "extra",
        "extra",
    ]
    answers = backend.requests[1].messages[2:]
    assert [m["tool_call_id"] for m in answers] == ["c0", "c1", "c2", "c3", "c4"]
    assert json.loads(answers[0]["content"]) == {"rejected": ep.events[0]["rejected"]}
    assert json.loads(answers[1]["content"]) == {"rejected": "skipped: call 1 rejected"}
    assert json.loads(answers[3]["content"])["rejected"].startswith("extra: more than 3 calls")
    assert backend.requests[1].messages[1]["content"] is None  # native calls, no text
    text = Scripted({"content": "".join(tag("stage") for _ in range(4))})
    ep = play(opsgym.make("release", "nominal", 2, max_steps=6), Agent("release", text, "history"))
    answers = text.requests[1].messages[2:]
    statuses = [c["status"] for c in ep.transcript[1]["calls"]]
    assert statuses == ["ran", "rejected", "skipped", "extra"]  # staged twice: the 2nd refused
    assert [m["name"] for m in answers] == ["stage", "stage", ""]
    assert all("tool_call_id" not in m for m in answers)
    assert "more than 3 calls" in answers[-1]["content"]


def test_a_format_and_its_options_are_checked():
    ep = opsgym.make("release", "nominal", 1)
    assert isinstance(conversation("snapshot", ep), Snapshot)
    with pytest.raises(ValueError, match="format must be one of snapshot, history, got 'chat'"):
        conversation("chat", ep)
    with pytest.raises(ValueError, match="tools_in_prompt is the snapshot format's option"):
        conversation("history", ep, tools_in_prompt=True)
    pytest.importorskip("transformers")
    assert isinstance(conversation("history", ep), History)


# -- the loop ---------------------------------------------------------------------------------


def test_a_conversation_that_outgrows_the_model_stops_the_episode_unfinished():
    pytest.importorskip("transformers")
    backend = Scripted(*[{"content": tag("inspect", {"target": "all"})}] * 5, fits=4)
    ep = play(opsgym.make("release", "nominal", 1), Agent("release", backend, "history"))
    assert ep.steps == 2 and not ep.done and ep.verdict is None
    assert ep.transcript[-1] == {
        "kind": "stop",
        "reason": "5 messages fill the double's context",
    }
    assert [t["turn"] for t in ep.transcript if t["kind"] == "turn"] == [1, 2]


def test_a_backend_failure_keeps_the_turn_with_its_error():
    class Broken(Scripted):
        def complete(self, request: Request) -> Reply:
            raise RuntimeError("the model fell over")

    ep = opsgym.make("release", "nominal", 1)
    with pytest.raises(RuntimeError, match="fell over"):
        drive(ep, Broken(), conversation("snapshot", ep), agent="broken")
    assert ep.steps == 0 and ep.transcript[-1]["error"] == "the model fell over"
    assert ep.transcript[-1]["user"].startswith("State now:")


def test_tokens_are_the_usage_the_backend_reports_charged_to_a_turns_first_step():
    backend = Scripted({"content": tag("stage") + tag("deploy")})
    ep = play(
        opsgym.make("release", "nominal", 1, max_steps=2), Agent("release", backend, "snapshot")
    )
    assert [e["tokens"] for e in ep.events] == [5, 0]
    assert ep.record()["token_source"] == "provider"


def test_the_turn_budget_leaves_the_episode_unfinished_and_says_so():
    backend = Scripted()
    ep = play(opsgym.make("release", "nominal", 1), Agent("release", backend, "snapshot", turns=3))
    assert ep.steps == 3 and ep.verdict is None
    assert ep.transcript[-1] == {"kind": "stop", "reason": "the decision budget (3 turns) is spent"}
