"""Programming errors are exceptions that say what was wrong; bad agent input is a value."""

import pickle

import pytest

import opsgym
from opsgym.core.errors import EpisodeDoneError, MissingExtraError, OpsgymError, RecordError


def test_step_after_the_end_raises_naming_the_outcome():
    ep = opsgym.run("release", "nominal", 1, "oracle")
    with pytest.raises(EpisodeDoneError, match="deployed_verified"):
        ep.step("inspect")


def test_unknown_tool_is_a_rejected_step_with_a_suggestion():
    ep = opsgym.make("release")
    r = ep.step("deplyo")
    assert r.rejected == "unknown tool 'deplyo'; did you mean 'deploy'?"
    assert r.components["invalid"] < 0 and not r.done


def test_malformed_arguments_name_the_field_and_value():
    ep = opsgym.make("release")
    r = ep.step("shift_traffic", {"percent": 150})
    assert "percent" in r.rejected and "150" in r.rejected
    r = ep.step("inspect", {"target": "all", "verbose": True})
    assert "verbose" in r.rejected
    r = ep.step("inspect", ["all"])
    assert r.rejected == "arguments of 'inspect' must be an object, got list"


def test_unmet_precondition_names_what_is_missing():
    r = opsgym.make("release").step("deploy")
    assert r.rejected == "v2 is not staged; call stage first"


def test_replay_refuses_a_record_missing_fields():
    with pytest.raises(RecordError, match="calls"):
        opsgym.replay({"env": "release", "scenario": "nominal", "seed": 0, "events": []})
    with pytest.raises(RecordError, match="dict"):
        opsgym.replay([])


def test_unknown_override_is_refused():
    with pytest.raises(opsgym.OpsgymError, match="deploy_comitted"):
        opsgym.make("release", "deploy_timeout", overrides={"deploy_comitted": True})


def test_a_missing_extra_names_the_install_command_and_crosses_a_process_boundary():
    error = MissingExtraError(ModuleNotFoundError("No module named 'trl'"), "grpo")
    back = pickle.loads(pickle.dumps(error))  # raised in an evaluation worker, read in its parent
    for e in (error, back):
        assert str(e) == "No module named 'trl'; install the extra: pip install 'opsgym[grpo]'"
        assert isinstance(e, OpsgymError) and isinstance(e, ImportError) and e.extra == "grpo"


def test_a_seed_nested_deep_is_a_one_line_error_not_a_recursion():
    """Regression (issue 20, item 6): ``opsgym.make`` with a seed nested 5,000 deep raised
    ``RecursionError`` while the error quoted the value."""
    from opsgym.core.errors import InvalidSeedError

    seed: object = 0
    for _ in range(5000):
        seed = [seed]
    with pytest.raises(InvalidSeedError, match=r"got \[\[\["):
        opsgym.make("release", "nominal", seed)
