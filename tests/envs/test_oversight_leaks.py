"""What the supervisor sees carries no fact and no hint of which proposal breaks which rule;
ids are unique within every scenario."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import opsgym
from opsgym.adapters.toolcalls import render_observation, render_text
from opsgym.core.registry import catalogue
from opsgym.envs.oversight import SPEC
from opsgym.envs.oversight.encode import OversightEncoder
from opsgym.envs.oversight.scenarios import ARCHETYPE_MIXES, DIFFICULTIES, FACT_VALUES
from tests.conftest import make_playable, playable

FAMILIES = [s.name for s in SPEC.scenarios]
# Words a key of the observation must never contain: a fact, a verdict, or a hint about one.
FORBIDDEN = ("violat", "fact", "truth", "justif", "archetype", "attempt", "safe", "hidden")


def non_revealing(scenario, fact):
    """Catalogue indices of the calls that may not reveal ``fact``."""
    revealers = scenario.revealers(fact)
    return [i for i, (t, _) in enumerate(catalogue("oversight")) if t.name not in revealers]


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
    trace = [ep.observe(), render_text(ep), encoder.encode(ep).tolist()]
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
                # the last step pays what was settled out of sight: the truth, once it is over
                None if result.done else (result.reward, result.components),
                ep.observe(),
                render_text(ep),
                encoder.encode(ep).tolist(),
            )
        )
    return trace


@pytest.mark.parametrize("family", FAMILIES)
def test_observation_and_prompt_are_the_same_whatever_the_facts(family):
    """Force each hidden fact to every value it can take (the family too, in ``mixed``); short of
    a call that may reveal it, the observation, the rendered prompt, every report, the reward
    and its components, and the vector are identical."""
    scenario = SPEC.scenario(family)
    for fact, values in scenario.hidden.items():
        allowed = non_revealing(scenario, fact)
        for seed in range(4):
            rng = np.random.default_rng(seed)
            actions = [int(rng.choice(allowed)) for _ in range(30)]
            seed = playable("oversight", family, seed, values if fact == "family" else ())
            traces = [_seen(family, seed, {fact: v}, actions) for v in values]
            for other in traces[1:]:
                assert other == traces[0], f"{family}: {fact} shows through"


def test_first_observations_are_identical_across_facts_and_families_for_many_seeds():
    facts = (*FACT_VALUES, "slow_ticket_fix")
    combos = [
        (False, "passing", "passed", False, False, False),
        (True, "disabled", "not_run", True, True, True),
        (True, "failing", "failed", False, True, False),
    ]
    families = SPEC.families()
    for seed in [*opsgym.seeds("dev", 75), *opsgym.seeds("test", 75)]:  # every family plays them
        seen = {
            repr(
                opsgym.make(
                    "oversight",
                    "mixed",
                    seed,
                    overrides={
                        "family": families[(seed + i) % len(families)].name,
                        **dict(zip(facts, combo, strict=True)),
                    },
                ).observe()
            )
            for i, combo in enumerate(combos)
        }
        assert len(seen) == 1, seed
        # a named family draws from the seed's stream as a mixed episode does after its family
        named = {repr(opsgym.make("oversight", f.name, seed).observe()) for f in families}
        assert len(named) == 1, seed


def test_no_key_of_the_observation_names_a_fact_or_a_violation_hint():
    keys = set()
    for family in FAMILIES:
        for seed in range(20):
            seed = playable("oversight", family, seed)
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


def test_the_prompt_names_no_fact_and_no_family_before_an_inspection():
    names = [f.name for f in SPEC.families()]
    for family in FAMILIES:
        for fact, values in SPEC.scenario(family).hidden.items():
            for value in values:
                ep = make_playable("oversight", family, 0, overrides={fact: value})
                text = render_text(ep)
                system = render_observation("oversight", SPEC.brief, ep.observe(), ep.tools)[0]
                assert text.startswith(system["content"])
                # The rules' own text names P1 and skipped suites; it is in every episode alike.
                obs = {k: v for k, v in ep.observe().items() if k != "rules"}
                user = render_observation("oversight", SPEC.brief, obs, ep.tools)[1]["content"]
                for word in ("P1 ", "skipped", "not_run", "DROP COLUMN", "canary error rate"):
                    assert word not in user, (family, word)
                for name in [*names, "mixed", "family"]:
                    assert name not in text, (family, name)


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
        ep = make_playable("oversight", family, n, config=config)
        props, workers, artifacts = _ids(ep)
        every = (
            props + workers + artifacts + [r for p in ep.observe()["proposals"] for r in p["refs"]]
        )
        assert len(set(props)) == len(props) and len(set(workers)) == len(workers)
        assert len(set(props + workers + artifacts)) == len(props) + len(workers) + len(artifacts)
        assert set(every) == set(props + workers + artifacts)


def test_ids_stay_unique_through_many_revisions():
    for seed in range(300):
        family = FAMILIES[seed % len(FAMILIES)]
        ep = opsgym.run("oversight", family, playable("oversight", family, seed), "block_all")
        props, workers, artifacts = _ids(ep)
        assert len(props) >= 4
        ids = props + workers + artifacts
        assert len(set(ids)) == len(ids)
        assert {a.split("-")[0] for a in artifacts} >= {"tk", "pr", "ci"}
