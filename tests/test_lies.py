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
