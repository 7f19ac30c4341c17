"""Property tests: arbitrary call sequences, malformed ones included, never raise, never change
the world when rejected, and always replay to an exact match."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import opsgym
from opsgym.core.registry import catalogue, specs
from tests.conftest import make_playable, world_state

ENVS = sorted(specs())

junk = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=True)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def calls(draw, env: str):
    table = catalogue(env)
    names = [t.name for t, _ in table]
    kind = draw(st.integers(0, 9))
    if kind <= 5:  # a catalogue call, as the Gym face would make it
        tool, args = table[draw(st.integers(0, len(table) - 1))]
        return tool.name, args.model_dump(mode="json")
    if kind <= 7:  # a known tool with arbitrary arguments
        return draw(st.sampled_from(names)), draw(junk)
    return draw(st.text(max_size=12) | st.integers() | st.none()), draw(junk)


def _check(env: str, scenario: str, seed: int, sequence: list) -> None:
    ep = make_playable(env, scenario, seed, max_steps=40)
    for name, args in sequence:
        if ep.done:
            break
        before = world_state(ep)
        result = ep.step(name, args)
        if result.rejected is not None:
            after = world_state(ep)
            assert after == before, f"rejected {name!r}({args!r}) changed the world"
            assert result.components.get("invalid", 0) < 0
    record = json.loads(json.dumps(ep.record()))
    replayed = opsgym.replay(record)
    assert replayed.match, replayed.first_difference


@pytest.mark.parametrize("env", ENVS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_random_call_sequences_are_safe_and_replayable(env, data, seed):
    scenario = data.draw(st.sampled_from([s.name for s in specs()[env].scenarios]))
    sequence = data.draw(st.lists(calls(env), max_size=40))
    _check(env, scenario, seed, sequence)
