"""The lie ledger: a misleading report is reconciled or trusted by the call that decides it."""

from __future__ import annotations

import pickle

from opsgym.core.lies import LieLedger, calls


def _ledger() -> LieLedger:
    ledger = LieLedger()
    ledger.before_call(1, "deploy", None)
    ledger.tell("timeout_after_commit", reconciled_by=["inspect"], trusted_by=["retry"])
    return ledger


def test_a_reconciling_call_before_acting_reconciles_the_lie():
    ledger = _ledger()
    ledger.before_call(2, "health_check", None)
    ledger.before_call(3, "inspect", None)
    ledger.before_call(4, "retry", None)
    assert ledger.summary() == {
        "told": 1,
        "trusted": 0,
        "reconciled": 1,
        "by_kind": {"timeout_after_commit": {"told": 1, "trusted": 0, "reconciled": 1}},
    }


def test_acting_on_a_lie_before_reconciling_it_trusts_it():
    ledger = _ledger()
    ledger.before_call(2, "retry", None)
    ledger.before_call(3, "inspect", None)
    assert ledger.summary()["trusted"] == 1 and ledger.summary()["reconciled"] == 0


def test_a_lie_nobody_acted_on_stays_open_and_the_record_sees_it_once():
    ledger = _ledger()
    assert ledger.drain_new() == [
        {"kind": "timeout_after_commit", "step": 1, "detail": "", "status": "open"}
    ]
    assert ledger.drain_new() == []
    assert ledger.summary()["told"] == 1 and ledger.summary()["trusted"] == 0


def test_matches_may_read_arguments_and_the_ledger_pickles():
    ledger = LieLedger()
    ledger.tell("partial_shift", reconciled_by=_router_inspection, trusted_by=calls("complete"))
    ledger.before_call(2, "inspect", {"target": "migration"})
    assert ledger.summary()["reconciled"] == 0
    clone = pickle.loads(pickle.dumps(ledger))
    clone.before_call(3, "inspect", {"target": "router"})
    assert clone.summary()["reconciled"] == 1


def _router_inspection(tool, args):
    return tool == "inspect" and args["target"] in ("router", "all")


def test_a_lie_about_the_same_thing_is_not_told_again_while_one_is_open():
    ledger = LieLedger()
    for _ in range(2):
        told = ledger.tell(
            "masked", reconciled_by=["read"], trusted_by=["drain"], about=("node", 2)
        )
    assert told is False and ledger.summary()["told"] == 1
    assert ledger.tell("masked", reconciled_by=["read"], trusted_by=["drain"], about=("node", 3))
    ledger.before_call(2, "drain", None)  # settles both: the next report is news again
    assert ledger.tell("masked", reconciled_by=["read"], trusted_by=["drain"], about=("node", 2))
    assert ledger.summary()["told"] == 3 and ledger.summary()["trusted"] == 2


def test_lies_about_nothing_in_particular_are_each_told():
    ledger = LieLedger()
    for _ in range(2):
        assert ledger.tell("red_herring", reconciled_by=["read"], trusted_by=["drain"])
    assert ledger.summary()["told"] == 2


def test_a_lie_the_agent_already_knew_is_reconciled_by_whatever_call_comes_next():
    ledger = LieLedger()
    ledger.tell("green_ci", reconciled_by=["inspect_ci"], trusted_by=["approve"], known=True)
    ledger.tell("green_ci", reconciled_by=["inspect_ci"], trusted_by=["approve"])
    ledger.before_call(2, "approve", None)
    assert [lie.status for lie in ledger.told] == ["reconciled", "trusted"]
    assert ledger.drain_new()[0] == {
        "kind": "green_ci",
        "step": 0,
        "detail": "",
        "status": "reconciled",
    }
