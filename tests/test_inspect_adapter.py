"""Inspect AI's face: tasks opsgym/<env>, tools from the models, the judge's verdict as score.

Offline with Inspect's ``mockllm/model``, scripted: every output carries its usage figures, as
otherwise mockllm counts tokens with a tiktoken vocabulary that it would download.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("inspect_ai")
pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.event import ModelEvent  # noqa: E402
from inspect_ai.model import (  # noqa: E402
    ChatMessageAssistant,
    ModelOutput,
    ModelUsage,
    get_model,
)
from inspect_ai.tool import ToolCall  # noqa: E402

import opsgym  # noqa: E402
from opsgym.adapters import inspect as face  # noqa: E402
from opsgym.adapters.toolcalls import MAX_CALLS  # noqa: E402
from opsgym.core.registry import spec  # noqa: E402

MODEL = "mockllm/model"
SPENT = 7
"""Output tokens every scripted reply reports."""


def usage(output: ModelOutput) -> ModelOutput:
    output.usage = ModelUsage(input_tokens=100, output_tokens=SPENT, total_tokens=100 + SPENT)
    return output


def call(name: str, arguments: dict, ident: str = "c") -> ModelOutput:
    return usage(ModelOutput.for_tool_call(MODEL, name, arguments, tool_call_id=ident))


def text(content: str) -> ModelOutput:
    return usage(ModelOutput.from_content(MODEL, content))


def calls(*made: ToolCall) -> ModelOutput:
    return usage(ModelOutput.from_message(ChatMessageAssistant(content="", tool_calls=list(made))))


def by_step(script: list[tuple[str, dict]], seen: list | None = None):
    """A scripted model: the call the script makes at the episode's step (read from the
    prompt's counters), so that epochs and samples may run in any order; text after the end."""

    def reply(messages, tools, tool_choice, config):
        if seen is not None:
            seen.append((messages, tools))
        step = int(re.search(r"\bstep: (\d+)", messages[-1].text).group(1))
        if step < len(script):
            return call(*script[step], ident=f"s{step}")
        return text("nothing more to do")

    return get_model(MODEL, custom_outputs=reply, memoize=False)


@pytest.fixture(autouse=True)
def logs_in_tmp(tmp_path, monkeypatch):
    """Inspect writes a log per eval: into the test's own folder (subprocesses inherit it)."""
    monkeypatch.setenv("INSPECT_LOG_DIR", str(tmp_path / "logs"))


def run(task, model, **kwargs):
    logs = inspect_eval(task, model=model, display="none", **kwargs)
    assert logs[0].status == "success", logs[0].error
    return logs[0]


@pytest.fixture
def kept(monkeypatch):
    """Keep the episodes the task's cleanup would forget, by sample uuid."""
    played: dict = {}

    async def keep(state):
        played[state.uuid] = face._RUNNING.pop(state.uuid)

    monkeypatch.setattr(face, "_forget", keep)
    return played


def oracle(env: str, scenario: str, seed: int) -> dict:
    return opsgym.run(env, scenario, seed, "oracle").record()


# -- registration -------------------------------------------------------------------------


def test_each_world_is_a_registered_task_named_opsgym_slash_env():
    from importlib.metadata import entry_points

    (point,) = [e for e in entry_points(group="inspect_ai") if e.name == "opsgym"]
    assert point.value == "opsgym.adapters.inspect"
    assert sorted(face.TASKS) == sorted(opsgym.list_envs())
    record = oracle("release", "nominal", 9)
    log = run(
        "opsgym/release",
        by_step([(c["tool"], c["args"]) for c in record["calls"]]),
        task_args={"n": 1, "scenario": "nominal", "seeds": "public"},
    )
    assert log.eval.task == "opsgym/release"
    assert log.eval.task_args["n"] == 1
    assert log.samples[0].metadata["seed"] == 9  # the first test seed


@pytest.mark.slow
def test_inspect_finds_the_tasks_through_the_entry_point_in_a_fresh_process():
    """What `inspect eval opsgym/oversight` does: resolve the name with nothing imported."""
    script = textwrap.dedent(
        """
        import sys
        from inspect_ai import eval
        from inspect_ai.model import ModelOutput, ModelUsage, get_model
        def reply(messages, tools, tool_choice, config):
            out = ModelOutput.from_content("mockllm/model", "no call")
            out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
            return out
        assert "opsgym" not in sys.modules
        log = eval("opsgym/oversight", model=get_model("mockllm/model", custom_outputs=reply),
                   task_args={"n": 1, "max_steps": 2}, display="none")[0]
        print(log.eval.task, log.samples[0].scores["verdict"].answer)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    name, outcome = done.stdout.split()
    assert name == "opsgym/oversight" and outcome in spec("oversight").outcome_rewards


# -- what the model meets -------------------------------------------------------------------


@pytest.mark.parametrize("env", opsgym.list_envs())
def test_the_model_is_shown_the_world_tools_as_their_models_define_them(env):
    seen: list = []
    run(face.episode_task(env, n=1, max_steps=1, seeds="public"), by_step([], seen))
    ((messages, tools),) = seen
    ep = opsgym.make(env, "mixed", 9)
    assert [t.name for t in tools] == [t["function"]["name"] for t in ep.tools]
    for shown, schema in zip(tools, ep.tools, strict=True):
        want = json.loads(json.dumps(schema["function"]["parameters"]))  # a copy: it is cached
        del want["description"]
        want.setdefault("required", [])
        for prop in want["properties"].values():  # a null default is no default to Inspect
            if "default" in prop and prop["default"] is None:
                del prop["default"]
        assert shown.description == schema["function"]["description"]
        assert shown.parameters.model_dump(exclude_none=True) == want
    assert messages[0].role == "system" and messages[1].role == "user"
    assert '"parameters"' not in messages[0].text  # tools travel natively, not in the prompt


def test_the_score_is_the_judges_verdict_with_outcome_and_failed_invariants(kept):
    record = oracle("release", "nominal", 9)
    log = run(
        face.episode_task("release", n=1, scenario="nominal", seeds="public"),
        by_step([(c["tool"], c["args"]) for c in record["calls"]]),
    )
    score = log.samples[0].scores["verdict"]
    assert score.value == "C" and score.answer == record["verdict"]["outcome"]
    assert score.metadata["failed"] == [] and score.metadata["ended"] is True
    assert score.metadata["return"] == pytest.approx(record["return"])
    (episode,) = kept.values()
    assert [e["tool"] for e in episode.events] == [c["tool"] for c in record["calls"]]
    assert episode.token_source == "provider"
    assert [e["tokens"] for e in episode.events] == [SPENT] * len(record["calls"])
    assert log.results.scores[0].metrics["accuracy"].value == 1.0

    log = run(
        face.episode_task("release", n=1, scenario="nominal", max_steps=3, seeds="public"),
        by_step([]),
    )
    score = log.samples[0].scores["verdict"]
    assert score.value == "I" and score.answer == "incomplete"
    assert score.metadata["failed"] and set(score.metadata["failed"]) <= {
        i["name"] for i in score.metadata["invariants"]
    }
    assert score.explanation == "incomplete; failed: " + ", ".join(score.metadata["failed"])


def test_an_inspect_limit_ends_the_sample_and_the_episode_is_settled_where_it_stopped():
    log = run(
        face.episode_task("release", n=1, scenario="nominal", seeds="public"),
        by_step([("stage", {}), ("deploy", {}), ("migrate", {})]),
        token_limit=250,  # each scripted turn uses 107
    )
    (sample,) = log.samples
    assert sample.limit is not None and sample.limit.type == "token"
    score = sample.scores["verdict"]
    assert score.metadata["ended"] is False and score.metadata["steps"] == 2
    assert score.value == "I" and score.answer == "incomplete"


def test_every_malformed_reply_is_a_recorded_rejection_never_a_run_call(kept):
    script = [
        text("I think we should deploy now."),
        call("delete_cluster", {"confirm": True}),
        calls(ToolCall(id="p", function="stage", arguments={}, parse_error="bad JSON")),
        call("deploy", {"force": True}),
        calls(*[ToolCall(id=f"m{i}", function="inspect", arguments={}) for i in range(5)]),
        calls(
            ToolCall(id="a", function="retry", arguments={}),
            ToolCall(id="b", function="stage", arguments={}),
        ),
    ]
    model = get_model(MODEL, custom_outputs=iter(script), memoize=False)
    log = run(
        face.episode_task("release", n=1, scenario="nominal", max_steps=9, seeds="public"), model
    )
    (episode,) = kept.values()
    steps = [(e["tool"], e["rejected"] is None) for e in episode.events]
    assert steps == [
        (None, False),  # a reply without a call
        ("delete_cluster", False),  # an injected non-tool: rejected by name, nothing runs
        (None, False),  # arguments that did not parse: never run as {}
        ("deploy", False),  # arguments the model does not allow
        *[("inspect", True)] * MAX_CALLS,
        (None, False),  # the calls past MAX_CALLS, rejected together
        ("retry", False),  # precondition unmet; the batch stops: `stage` is skipped
    ]
    assert [e["tokens"] for e in episode.events] == [SPENT] * 5 + [0, 0, 0, SPENT]
    assert log.samples[0].scores["verdict"].answer == "incomplete"


def test_epochs_give_pass_hat_k_through_inspect_reducers():
    record = oracle("release", "nominal", 9)
    log = run(
        face.episode_task("release", n=1, scenario="nominal", epochs=2, seeds="public"),
        by_step([(c["tool"], c["args"]) for c in record["calls"]]),
    )
    reduced = {s.reducer: s.metrics["accuracy"].value for s in log.results.scores}
    assert reduced == {"mean": 1.0, "pass_k_2": 1.0}
    assert len(log.samples) == 2
    with pytest.raises(ValueError, match="epochs"):
        face.episode_task("release", epochs=0, seeds="public")


# -- leaks --------------------------------------------------------------------------------


def transcript(log) -> list:
    """Everything the model was sent and said, and what the log keeps of the sample before
    its score: the transcript the truth must stay out of."""
    (sample,) = log.samples
    seen = [sample.input if isinstance(sample.input, str) else [m.text for m in sample.input]]
    seen += [sample.metadata, sample.store]
    for event in sample.events:
        if isinstance(event, ModelEvent):
            seen.append([(m.role, m.text) for m in event.input])
            seen.append([(t.name, t.description, t.parameters.model_dump()) for t in event.tools])
            message = event.output.message
            seen.append(
                (message.text, [(c.function, c.arguments) for c in message.tool_calls or []])
            )
    seen.append([(m.role, m.text) for m in sample.messages])
    return seen


@pytest.mark.parametrize(
    "env,fact,script",
    [
        (
            "release",
            "family",
            [("stage", {}), ("shift_traffic", {"percent": 10}), ("rollback", {}), ("nuke", {})],
        ),
        (
            "oversight",
            "payment_tests",
            [("approve_proposal", {"slot": 0}), ("hold_release", {"reason_code": "await_rework"})],
        ),
    ],
)
def test_the_transcript_is_the_same_whatever_a_hidden_fact_is(env, fact, script):
    """The forced-facts method through Inspect: force a fact of `mixed` to each of its values
    (three at most), drive the episodes with the same calls (none to a tool that may reveal it),
    and require the whole transcript the model saw to be identical."""
    info = opsgym.hidden_facts(env, "mixed")[fact]
    assert not {name for name, _ in script} & set(info["revealed_by"])
    seen = [
        transcript(
            run(
                face.episode_task(
                    env, n=1, max_steps=len(script), overrides={fact: value}, seeds="public"
                ),
                by_step(script),
            )
        )
        for value in info["values"][:3]
    ]
    for value, other in zip(info["values"][1:3], seen[1:], strict=False):
        for i, (a, b) in enumerate(zip(seen[0], other, strict=True)):
            assert a == b, f"{fact}={info['values'][0]!r} vs {value!r}: item {i} differs"


def test_samples_are_sealed_seeds_of_their_split_unless_asked_for_the_public_ones():
    sealed = [face.samples("release", "test", 20) for _ in range(2)]
    drawn = [[s.metadata["seed"] for s in made] for made in sealed]
    assert all(seed % 10 == 9 and 10 * 2000 < seed < 2**53 for seed in drawn[0] + drawn[1])
    assert len(set(drawn[0])) == 20 and drawn[0] != drawn[1]  # drawn afresh, never the table's
    assert all("seed" not in str(m.content) for s in sealed[0] for m in s.input)
    made = face.samples("oversight", "dev", 3, scenario="all", seeds="public")
    assert [s.metadata["seed"] for s in made] == [8, 18, 28]
    assert [s.id for s in made] == [f"{s.metadata['scenario']}-{s.metadata['seed']}" for s in made]
    assert {s.metadata["split"] for s in made} == {"dev"}
    names = {f.name for f in spec("oversight").families()}
    assert {s.metadata["scenario"] for s in made} <= names
    assert json.loads(made[0].metadata["config"]) == {}


def test_the_readmes_offline_recipe_runs_against_a_local_openai_compatible_server(monkeypatch):
    """README: ``inspect eval opsgym/release --model openai-api/local/MODEL`` with
    ``LOCAL_BASE_URL`` on this machine needs no download (tiktoken is never asked)."""
    pytest.importorskip("openai", reason="Inspect's openai-api provider needs openai")
    import tiktoken

    from tests.test_llm_agent import Endpoint

    def no_download(name: str) -> None:
        raise AssertionError(f"the recipe asked tiktoken for {name!r}")

    monkeypatch.setattr(tiktoken, "get_encoding", no_download)
    endpoint = Endpoint()
    try:
        monkeypatch.setenv("LOCAL_BASE_URL", endpoint.url)
        monkeypatch.setenv("LOCAL_API_KEY", "none")
        (log,) = inspect_eval(
            "opsgym/release",
            model="openai-api/local/any",
            task_args={"n": 1, "max_steps": 3},
            display="none",
        )
    finally:
        endpoint.close()
    assert log.status == "success", log.error
    (sample,) = log.samples
    assert sample.scores["verdict"].answer is not None
    assert len(endpoint.requests) == 3  # one turn a step, each one a reply without a call
