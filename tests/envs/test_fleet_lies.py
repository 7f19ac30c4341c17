"""Fleet lies: the reports that misled are marked in the hidden truth, and each is settled as
trusted or reconciled by the rule in the manual's "Lies" section (issue 8).

Figures are measured on 200 ``mixed`` test-split seeds, each policy on the same seeds.
"""

from __future__ import annotations

import json
import pickle
from collections import Counter
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

import opsgym
from opsgym.adapters.toolcalls import render_text
from opsgym.agents import play
from opsgym.core.lies import LieLedger
from opsgym.envs.fleet import SPEC
from opsgym.envs.fleet.encode import FleetEncoder
from tests.conftest import lie_counts, measure_lies

N = 200
SEEDS = opsgym.seeds("test", N)
KINDS = (
    "red_herring",
    "masked",
    "stale_dashboard",
    "wrong_finding",
    "wrong_vote",
    "decoy_watermark",
    "decoy_xid",
    "decoy_straggler",
)
QUIET = {
    "oom_present": False,
    "version_present": False,
    "congestion_present": False,
    "desync_present": False,
}
STALE = ["restart_job", *["wait"] * 6, "check_telemetry", *["wait"] * 5, "check_telemetry"]
"""A job restart hides a desync for 15 + 20 minutes; the scrape of call 7 shows the job running
and is served, unflagged, at call 13, once the job hangs again (level 3: a scrape every 7)."""

CASES: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    # kind: (family, facts, config) of an episode in which its report lies
    "red_herring": ("easy", {"oom_present": False}, {"level": 3}),
    "masked": ("easy", {"oom_rank": 13, "oom_pair": False, "secondary": False}, {"level": 3}),
    "stale_dashboard": ("hard", {"desync_present": True, "recur_minutes": 20.0}, {"level": 3}),
    "wrong_finding": (
        "fleet_coordination",
        {"version_present": True, "version_node": 1, "congestion_present": False},
        {},
    ),
    "wrong_vote": ("gpu_lost", {"lost_rank": 12}, {}),
    "decoy_watermark": ("black_swan", QUIET, {}),
    "decoy_xid": ("black_swan", {**QUIET, "dmesg_wrapped": False, "stale_xid_node": 2}, {}),
    "decoy_straggler": ("black_swan", QUIET, {}),
}
WRONG = {"worker_error": 1.0}
"""Forces every specialist to name a wrong target (the finding and vote cases)."""


def _make(kind: str, seed: int = 0, **facts: Any) -> opsgym.Episode:
    family, overrides, config = CASES[kind]
    if kind in ("wrong_finding", "wrong_vote"):
        overrides = {**overrides, **WRONG}
    return opsgym.make("fleet", family, seed, overrides={**overrides, **facts}, config=config)


def _herring(report: dict[str, Any]) -> int | None:
    """The rank of a warning that names one (a dead rank's alert is critical)."""
    ranks = [
        a["rank"] for a in report["alerts"] if a["severity"] == "warning" and a["rank"] is not None
    ]
    return ranks[0] if ranks else None


def _decoy(report: dict[str, Any]) -> int:
    """A GPU the dashboard shows hot with a live heartbeat: black_swan's watermark decoy."""
    return next(g["rank"] for g in report["hot_gpus"] if g["heartbeat_s"] < 30)


def _vote_node(report: dict[str, Any]) -> int:
    return int(report["votes"]["log_inspector"].split("node=")[1].split(")")[0])


# Each: the calls of an agent that is told the lie and acts on it unchecked (they read the
# targets off the reports, as an agent would).


def _trust_red_herring(ep):
    ep.step("restart_rank", {"rank": _herring(ep.step("check_telemetry").report)})


def _trust_masked(ep):
    ep.step("check_telemetry")
    ep.step("declare_resolved")


def _trust_stale(ep):
    for call in STALE:
        ep.step(call)
    ep.step("declare_resolved")


def _trust_finding(ep):
    ep.step("delegate", {"worker": "version_checker"})
    ep.step("delegate", {"worker": "topology_agent"})
    ep.step("coalition", {"action": "topology_version_fix"})


def _trust_vote(ep):
    ep.step("drain_node", {"node": _vote_node(ep.step("poll_consensus").report)})


def _trust_watermark(ep):
    ep.step("restart_rank", {"rank": _decoy(ep.step("check_telemetry").report)})


def _trust_xid(ep):
    ep.step("read_kernel_log", {"node": 2})
    ep.step("drain_node", {"node": 2})


def _trust_straggler(ep):
    rank = _decoy(ep.step("check_telemetry").report)
    ep.step("inspect_flight_recorder", {"rank": rank})
    ep.step("restart_rank", {"rank": rank})


TRUST: dict[str, Callable[[opsgym.Episode], None]] = {
    "red_herring": _trust_red_herring,
    "masked": _trust_masked,
    "stale_dashboard": _trust_stale,
    "wrong_finding": _trust_finding,
    "wrong_vote": _trust_vote,
    "decoy_watermark": _trust_watermark,
    "decoy_xid": _trust_xid,
    "decoy_straggler": _trust_straggler,
}
READY: dict[str, Callable[[opsgym.Episode], bool]] = {
    # kind: what the seed must make the first report show (read as the agent would)
    "red_herring": lambda ep: _herring(ep.step("check_telemetry").report) is not None,
    "masked": lambda ep: ep.step("check_telemetry").report["nodes"][1]["status"] == "ok",
    "wrong_vote": lambda ep: _vote_node(ep.step("poll_consensus").report) != 1,
}


@cache
def _seed(kind: str, start: int = 0) -> int:
    """The first seed at or after ``start`` whose reports set up ``kind``'s lie."""
    ready = READY.get(kind)
    return next(s for s in range(start, start + 200) if ready is None or ready(_make(kind, s)))


_kind = lie_counts


@cache
def _measure(name: str) -> tuple[Counter, dict[str, Counter]]:
    """Lies told, trusted and reconciled by ``name`` over the 200 test seeds, and per kind."""
    return measure_lies("fleet", name, SEEDS, KINDS)


# -- the rule, one kind at a time ---------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_acting_on_each_lie_unchecked_trusts_it(kind):
    ep = _make(kind, _seed(kind))
    TRUST[kind](ep)
    assert _kind(ep, kind) == {"told": 1, "trusted": 1, "reconciled": 0}
    lies = [lie for e in ep.record()["events"] for lie in e["truth"].get("lies", [])]
    assert kind in {lie["kind"] for lie in lies} and all(lie["detail"] for lie in lies)


@pytest.mark.parametrize("kind", ["red_herring", "masked"])
def test_the_naive_policy_trusts_the_dashboard(kind):
    ep = play(_make(kind, _seed(kind)), SPEC.policies["naive"]())
    assert _kind(ep, kind) == {"told": 1, "trusted": 1, "reconciled": 0}


@pytest.mark.parametrize("kind", KINDS)
def test_the_oracle_trusts_nothing_and_recovers(kind):
    for start in (0, 50):
        ep = play(_make(kind, _seed(kind, start)), SPEC.policies["oracle"]())
        summary = ep.world.lies.summary()
        assert summary["trusted"] == 0, summary
        assert ep.verdict.outcome == "recovered"
    if kind in ("red_herring", "masked", "decoy_watermark", "wrong_finding"):
        assert _kind(ep, kind)["told"] >= 1  # it meets the lie, and does not act on it


def test_a_true_alert_and_a_right_finding_are_no_lies():
    facts = {"oom_rank": 13, "oom_pair": False, "secondary": False}
    for seed in range(50):
        ep = opsgym.make("fleet", "easy", seed, overrides=facts)
        report = ep.step("check_telemetry").report
        if _herring(report) is None and report["nodes"][1]["status"] == "degraded":
            break
    assert [a["rank"] for a in report["alerts"]] == [13]
    ep.step("restart_rank", {"rank": 13})
    assert ep.world.lies.summary()["told"] == 0
    ep = _make("wrong_finding", worker_error=0.0)
    _trust_finding(ep)
    assert ep.world.lies.summary()["told"] == 0 and ep.world.truth()["version_nodes"] == []
    ep = _make("stale_dashboard", desync_present=False)
    _trust_stale(ep)
    assert ep.world.lies.summary()["told"] == _kind(ep, "red_herring")["told"]


def test_each_lie_is_reconciled_by_a_deep_read_of_what_it_is_about():
    ep = _make("red_herring", _seed("red_herring"))
    rank = _herring(ep.step("check_telemetry").report)
    ep.step("query_nccl_logs", {"node": (rank // 8 + 1) % 4})  # another node: settles nothing
    assert _kind(ep, "red_herring") == {"told": 1, "trusted": 0, "reconciled": 0}
    ep.step("inspect_flight_recorder", {"rank": rank})
    ep.step("restart_rank", {"rank": rank})  # checked first: a mistake, not trust
    assert _kind(ep, "red_herring") == {"told": 1, "trusted": 0, "reconciled": 1}

    ep = _make("masked", _seed("masked"))
    ep.step("check_telemetry")
    ep.step("query_nccl_logs", {"node": 1})
    ep.step("declare_resolved")
    assert _kind(ep, "masked") == {"told": 1, "trusted": 0, "reconciled": 1}

    ep = _make("stale_dashboard")
    for call in STALE:
        ep.step(call)
    assert ep.observe()["next_refresh_in"] == 0
    ep.step("check_telemetry")  # a new scrape: the job shows hung
    assert _kind(ep, "stale_dashboard") == {"told": 1, "trusted": 0, "reconciled": 1}

    ep = _make("decoy_xid")
    ep.step("read_kernel_log", {"node": 2})
    ep.step("query_nccl_logs", {"node": 2})
    ep.step("drain_node", {"node": 2})
    assert _kind(ep, "decoy_xid") == {"told": 1, "trusted": 0, "reconciled": 1}


def test_a_lie_told_against_evidence_in_hand_is_reconciled_by_the_next_call():
    """Every node's log read, then the dashboard: its red herring misleads no one."""

    def reads_then_herring(seed: int) -> bool:
        ep = _make("red_herring", seed)
        for node in range(4):
            ep.step("query_nccl_logs", {"node": node})
        return _herring(ep.step("check_telemetry").report) is not None

    seed = next(s for s in range(100) if reads_then_herring(s))
    ep = _make("red_herring", seed)
    for node in range(4):
        ep.step("query_nccl_logs", {"node": node})
    rank = _herring(ep.step("check_telemetry").report)
    assert _kind(ep, "red_herring") == {"told": 1, "trusted": 0, "reconciled": 0}
    ep.step("restart_rank", {"rank": rank})
    assert _kind(ep, "red_herring") == {"told": 1, "trusted": 0, "reconciled": 1}


def test_the_coalition_trusts_only_the_finding_it_acts_on():
    """Asked again and now right, the version checker's new finding is what the coalition
    fixes: the first, wrong one stays open."""
    ep = _make("wrong_finding")
    ep.step("delegate", {"worker": "version_checker"})
    assert _kind(ep, "wrong_finding")["told"] == 1
    ep.world.facts["worker_error"] = 0.0  # test setup: the specialist is right from now on
    ep.step("delegate", {"worker": "version_checker"})
    ep.step("delegate", {"worker": "topology_agent"})
    ep.step("coalition", {"action": "topology_version_fix"})
    assert _kind(ep, "wrong_finding") == {"told": 1, "trusted": 0, "reconciled": 0}
    assert ep.world.truth()["version_nodes"] == []


def test_a_wrong_rank_finding_is_trusted_by_the_restart_it_recommends():
    ep = opsgym.make("fleet", "easy", 0, overrides={"oom_rank": 5, "oom_pair": False, **WRONG})
    found = ep.step("delegate", {"worker": "log_inspector"}).report
    assert found["fault"] == "oom" and found["target"]["rank"] != 5
    ep.step("restart_rank", {"rank": found["target"]["rank"]})
    assert _kind(ep, "wrong_finding") == {"told": 1, "trusted": 1, "reconciled": 0}


def test_a_call_right_by_the_truth_trusts_nothing():
    """The masked node fixed before the declaration: the declaration trusts no mask."""
    ep = _make("masked", _seed("masked"))
    ep.step("check_telemetry")
    ep.step("restart_job")  # cures the out-of-memory rank, blind
    ep.step("declare_resolved")
    assert _kind(ep, "masked") == {"told": 1, "trusted": 0, "reconciled": 0}


# -- 200 mixed test seeds -------------------------------------------------------------------


def test_the_oracle_trusts_no_lie_on_mixed_test_seeds():
    total, by_kind = _measure("oracle")
    assert total["trusted"] == 0 and total["told"] > total["reconciled"] > 0
    for kind in ("red_herring", "masked", "wrong_finding", "wrong_vote", "decoy_watermark"):
        assert by_kind[kind]["told"] > 0, kind
    # a node or spine the dashboard masks is always one it goes on to read
    assert by_kind["masked"]["reconciled"] == by_kind["masked"]["told"]
    # it never restarts a job, nor reads a kernel log without a CUDA failure in a rank's log
    assert by_kind["stale_dashboard"]["told"] == by_kind["decoy_xid"]["told"] == 0


def test_the_naive_policy_trusts_the_dashboard_on_mixed_test_seeds():
    total, by_kind = _measure("naive")
    assert total["trusted"] > 0.5 * total["told"] and total["reconciled"] == 0
    for kind in ("red_herring", "masked"):
        assert by_kind[kind]["trusted"] > 0.8 * by_kind[kind]["told"] > 0, kind
    assert by_kind["decoy_watermark"]["told"] > 0 == by_kind["decoy_watermark"]["trusted"]


def test_the_random_policy_trusts_some_lies_and_reconciles_others():
    total, by_kind = _measure("random")
    assert 0 < total["trusted"] < total["told"]
    assert 0 < total["reconciled"] < total["told"]
    for kind in ("red_herring", "masked", "wrong_finding", "wrong_vote"):
        assert by_kind[kind]["trusted"] > 0, kind


# -- hidden, recorded, replayable, picklable -----------------------------------------------


class _Deaf(LieLedger):
    """A ledger that hears nothing: the twin in which no report is marked."""

    __slots__ = ()

    def tell(self, kind, **kwargs):
        """Mark nothing."""


class _Watched:
    """An episode whose every step is watched: what the agent meets, call by call."""

    def __init__(self, ep):
        self.ep, self.encoder = ep, FleetEncoder()
        self.seen: list[Any] = [self._looks()]

    def _looks(self) -> tuple[Any, ...]:
        ep = self.ep
        prompt = render_text(ep)
        return ep.observe(), prompt, self.encoder.encode(ep).tolist()

    def step(self, tool, args=None):
        result = self.ep.step(tool, args)
        # the last step's reward too: it pays what was settled from the truth
        self.seen.append((tool, args, result, *self._looks()))
        return result


def _trace(ep, script) -> list[Any]:
    """Everything the agent meets while ``script`` runs: observations, prompts, vectors,
    reports and rewards."""
    watched = _Watched(ep)
    script(watched)
    return watched.seen


def _told(record) -> list[dict[str, Any]]:
    return [lie for e in record["events"] for lie in e["truth"].get("lies", [])]


def _visible(record) -> dict[str, Any]:
    """A record without what only the judge, the inspector and the store see: the truth, the
    verdict, and the hashes that chain them."""
    hidden = ("events", "verdict", "hash")
    out = {k: v for k, v in record.items() if k not in hidden}
    out["events"] = [
        {k: v for k, v in e.items() if k not in ("truth", "hash")} for e in record["events"]
    ]
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_marking_a_lie_changes_nothing_the_agent_sees(kind):
    """The same episode with a ledger that hears nothing: every observation, prompt, vector,
    report and reward is identical, and so is the record but for the truth's ``lies``."""
    traces, records = [], []
    for deaf in (False, True):
        ep = _make(kind, _seed(kind))
        if deaf:
            ep.world.lies = _Deaf()
        traces.append(_trace(ep, TRUST[kind]))
        records.append(json.loads(json.dumps(ep.record())))
    assert traces[0] == traces[1]
    assert _visible(records[0]) == _visible(records[1])
    told = _told(records[0])
    assert kind in {lie["kind"] for lie in told} and _told(records[1]) == []
    text = json.dumps(traces[0], default=repr) + json.dumps(_visible(records[0]))
    assert '"lies"' not in text
    assert not any(lie["detail"] in text for lie in told)
    for record in records:
        for e in record["events"]:
            e["truth"].pop("lies", None)
    assert [e["truth"] for e in records[0]["events"]] == [e["truth"] for e in records[1]["events"]]
    assert records[0]["verdict"] == records[1]["verdict"]


TWINS: dict[str, tuple[dict[str, Any], dict[str, Any], Callable[[opsgym.Episode], None]]] = {
    # kind: (facts that make a report lie, its twin's facts, calls short of any that could
    # tell them apart)
    "stale_dashboard": (
        {"desync_present": True},
        {"desync_present": False},
        lambda ep: [ep.step(call) for call in STALE],
    ),
    # a second rank out of memory, on node 2, masked; node 0's rank 5 alerted in both
    "masked": (
        {"oom_rank": 5, "oom_pair": True, "oom_pair_offset": 16},
        {"oom_rank": 5, "oom_pair": False, "oom_pair_offset": 16},
        _trust_masked,
    ),
}


@cache
def _twin_seed(kind: str) -> int:
    if kind != "masked":
        return 0
    for seed in range(200):
        ep = _make(kind, seed, **TWINS[kind][0])
        report = ep.step("check_telemetry").report
        tally = ep.world.truth()["telemetry"]
        if tally["red_herring"] == 0 and [n["status"] for n in report["nodes"]][::2] == [
            "degraded",
            "ok",
        ]:
            return seed
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", list(TWINS))
def test_a_lie_and_its_honest_twin_look_the_same(kind):
    """The lying report beside the same report made true by other facts: everything the agent
    sees is identical call for call; only the hidden truth says which report lied."""
    lying, honest, calls = TWINS[kind]
    traces, told = [], []
    for facts in (lying, honest):
        ep = _make(kind, _twin_seed(kind), **facts)
        traces.append(_trace(ep, calls))
        told.append(_told(json.loads(json.dumps(ep.record()))))
    assert traces[0] == traces[1]
    mine = [[lie for lie in t if lie["kind"] == kind] for t in told]
    assert len(mine[0]) == 1 and mine[1] == []
    assert mine[0][0]["status"] == "open" and "is" in mine[0][0]["detail"]


@pytest.mark.parametrize("kind", KINDS)
def test_episodes_with_lies_replay_exactly(kind):
    ep = _make(kind, _seed(kind, 20))
    TRUST[kind](ep)
    if not ep.done:
        play(ep, SPEC.policies["naive"](), reset=True)
    assert _kind(ep, kind)["told"] >= 1
    result = opsgym.replay(json.loads(json.dumps(ep.record())))
    assert result.match, result.first_difference


def test_an_open_lie_survives_pickling_and_settles_against_its_own_world():
    ep = _make("red_herring", _seed("red_herring"))
    rank = _herring(ep.step("check_telemetry").report)
    clone = pickle.loads(pickle.dumps(ep))
    ep.step("restart_rank", {"rank": rank})
    clone.step("read_kernel_log", {"node": rank // 8})
    assert _kind(ep, "red_herring") == {"told": 1, "trusted": 1, "reconciled": 0}
    assert _kind(clone, "red_herring") == {"told": 1, "trusted": 0, "reconciled": 1}
    clone.step("restart_rank", {"rank": rank})
    assert clone.world.lies.summary()["trusted"] == 0
    again = pickle.loads(pickle.dumps(clone))
    assert again.world.lies.summary() == clone.world.lies.summary()
