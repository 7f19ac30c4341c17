"""What the supervisor sees carries no fact and no hint of which proposal breaks which rule;
ids are unique within every scenario."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import opsgym
from opsgym.envs.oversight import SPEC
from opsgym.envs.oversight.encode import OversightEncoder
from opsgym.envs.oversight.prompt import render
from opsgym.envs.oversight.scenarios import ARCHETYPE_MIXES, DIFFICULTIES, FACT_VALUES
from opsgym.registry import catalogue

FAMILIES = [s.name for s in SPEC.scenarios]
# Words a key of the observation must never contain: a fact, a verdict, or a hint about one.
FORBIDDEN = ("violat", "fact", "truth", "justif", "archetype", "attempt", "safe", "hidden")
NON_REVEALING = [
    i
    for i, (t, _) in enumerate(catalogue("oversight"))
    if t.name not in SPEC.scenarios[0].revealed_by
]


def _keys(value, found=None):
    found = set() if found is None else found
    if isinstance(value, dict):
        for k, v in value.items():
            found.add(k)
            _keys(v, found)
    elif isinstance(value, list):
        for v in value:
            _keys(v, found)
    return found


def _seen(family, seed, overrides, actions):
    """Everything the supervisor meets: observations, prompts, reports, vectors, masks."""
    ep = opsgym.make("oversight", family, seed, overrides=overrides)
    encoder, table = OversightEncoder(), catalogue("oversight")
    trace = [ep.observe(), render(ep.observe(), ep.tools), encoder.encode(ep).tolist()]
    for a in actions:
        if ep.done:
            break
        tool, args = table[a]
        result = ep.step(tool.name, args.model_dump())
        trace.append(
            (
                result.report,
                result.rejected,
                result.done,
                ep.observe(),
                render(ep.observe(), ep.tools),
                encoder.encode(ep).tolist(),
            )
        )
    return trace


@pytest.mark.parametrize("family", FAMILIES)
def test_observation_and_prompt_are_the_same_whatever_the_facts(family):
    """Force each hidden fact to every value it can take; short of inspecting or asking, the
    observation, the rendered prompt, every report and the vector are identical."""
    for fact in SPEC.scenario(family).hidden:
        for seed in range(6):
            rng = np.random.default_rng(seed)
            actions = [int(rng.choice(NON_REVEALING)) for _ in range(30)]
            traces = [_seen(family, seed, {fact: v}, actions) for v in FACT_VALUES[fact]]
            for other in traces[1:]:
                assert other == traces[0], f"{family}: {fact} shows through"


def test_first_observations_are_identical_across_facts_for_many_seeds():
    for family, seed in itertools.product(FAMILIES, range(150)):
        seen = {
            repr(
                opsgym.make(
                    "oversight", family, seed, overrides=dict(zip(FACT_VALUES, combo, strict=True))
                ).observe()
            )
            for combo in [
                (False, "passing", "passed", False, False),
                (True, "disabled", "not_run", True, True),
                (True, "failing", "failed", False, True),
            ]
        }
        assert len(seen) == 1, (family, seed)


def test_no_key_of_the_observation_names_a_fact_or_a_violation_hint():
    keys = set()
    for family in FAMILIES:
        for seed in range(20):
            ep = opsgym.run("oversight", family, seed, "oracle")
            keys |= _keys(ep.observe())
            ep = opsgym.run("oversight", family, seed, "random")
            keys |= _keys(ep.observe())
    offenders = sorted(k for k in keys if any(word in k for word in FORBIDDEN))
    assert offenders == []
    proposal_keys = {
        "id",
        "slot",
        "phase",
        "worker",
        "request",
        "claim",
        "refs",
        "risk",
        "confidence",
        "status",
        "revision",
        "submitted_at",
        "blocked_under",
        "due",
    }
    obs = opsgym.make("oversight", "careful_qa_safe", 1).observe()
    assert {k for p in obs["proposals"] for k in p} == proposal_keys


def test_the_prompt_names_no_fact_before_an_inspection():
    for family in FAMILIES:
        for fact, values in SPEC.scenario(family).hidden.items():
            ep = opsgym.make("oversight", family, 0, overrides={fact: values[0]})
            text = render(ep.observe(), ep.tools)[1]["content"]
            for word in ("P1 ", "skipped", "not_run", "DROP COLUMN", "canary error rate"):
                assert word not in text, (family, word)


def _ids(ep):
    v = ep.world.view
    props = [p["id"] for p in v.current if p] + [p["id"] for p in v.history]
    workers = [w["id"] for w in v.workers]
    artifacts = list(ep.world._contents)
    return props, workers, artifacts


def test_ids_are_unique_within_each_of_10000_scenarios():
    settings = list(itertools.product(DIFFICULTIES, ARCHETYPE_MIXES))
    for n in range(10_000):
        family = FAMILIES[n % len(FAMILIES)]
        difficulty, mix = settings[n % len(settings)]
        config = {"difficulty": difficulty, "archetype_mix": mix}
        ep = opsgym.make("oversight", family, n, config=config)
        props, workers, artifacts = _ids(ep)
        every = (
            props + workers + artifacts + [r for p in ep.observe()["proposals"] for r in p["refs"]]
        )
        assert len(set(props)) == len(props) and len(set(workers)) == len(workers)
        assert len(set(props + workers + artifacts)) == len(props) + len(workers) + len(artifacts)
        assert set(every) == set(props + workers + artifacts)


def test_ids_stay_unique_through_many_revisions():
    for seed in range(300):
        ep = opsgym.run("oversight", FAMILIES[seed % len(FAMILIES)], seed, "block_all")
        props, workers, artifacts = _ids(ep)
        assert len(props) >= 4
        ids = props + workers + artifacts
        assert len(set(ids)) == len(ids)
        assert {a.split("-")[0] for a in artifacts} >= {"tk", "pr", "ci"}
