"""How an episode record maps onto rows, and back, exactly.

A record (``Episode.record()``) becomes one ``episodes`` row and one ``events`` row per step.
Rebuilt, it is equal to the original value for value (key order aside), so that
``opsgym.replay`` of the rebuilt record matches and every hash is the same.

Exactness decides the checks below: a record is refused before anything is written if a value
would not come back as it went in (``clock`` must be a float, because a float column would turn
``3`` into ``3.0`` and change the event's hash), or if its ``calls`` disagree with its events
(they are rebuilt from the events, not stored twice).

The rebuilt header, outcome and acceptance are read from the columns that queries and
statistics use, so a value edited in the database after the fact is caught by a replay
(``opsgym eval --verify``), not silently reported.
"""

from __future__ import annotations

from typing import Any

from opsgym.core.episode import HEADER_FIELDS
from opsgym.core.errors import RecordError
from opsgym.store.models import EpisodeModel, EventModel

RECORD_KEYS = (*HEADER_FIELDS, "root", "calls", "events", "verdict", "return", "rewards", "hash")
OPTIONAL_KEYS = ("transcript",)
"""Keys a record may carry: ``transcript``, a model-facing agent's (see ``Episode.transcript``)."""
EVENT_KEYS = (
    "step",
    "tool",
    "args",
    "tokens",
    "rejected",
    "report",
    "reward",
    "clock",
    "done",
    "truth",
    "hash",
)
EXTRAS = ("downtime_cost", "lies", "family")
"""Per-episode figures the harness computes and the store keeps beside the record."""

LIES_COUNTS = ("told", "trusted", "reconciled")

# Header fields that have their own column; the column is what a rebuilt record carries.
_HEADER_COLUMNS = ("env", "scenario", "seed", "reward_timing", "token_source")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_record(record: object) -> dict[str, Any]:
    """Return ``record`` if the store can keep it exactly; else raise :class:`RecordError`."""
    if not isinstance(record, dict):
        raise RecordError(f"A record must be a dict, got {type(record).__name__}.")
    missing = [k for k in RECORD_KEYS if k not in record]
    unknown = [k for k in record if k not in RECORD_KEYS and k not in OPTIONAL_KEYS]
    if missing or unknown:
        raise RecordError(
            f"Record has missing keys {missing} and unknown keys {unknown}; "
            "store what Episode.record() returned."
        )
    events, calls = record["events"], record["calls"]
    if not isinstance(events, list) or not isinstance(calls, list):
        raise RecordError("Record 'events' and 'calls' must be lists.")
    if not _is_int(record["seed"]) or record["seed"] < 0:
        raise RecordError(f"Record seed must be an int >= 0, got {record['seed']!r}.")
    if not isinstance(record["return"], int | float) or isinstance(record["return"], bool):
        raise RecordError(f"Record return must be a number, got {record['return']!r}.")
    if not isinstance(record["rewards"], dict):
        raise RecordError(f"Record rewards must be a dict, got {record['rewards']!r}.")
    verdict = record["verdict"]
    if verdict is not None and not isinstance(verdict, dict):
        raise RecordError(f"Record verdict must be a dict or None, got {verdict!r}.")
    if not isinstance(record.get("transcript", []), list):
        raise RecordError(f"Record transcript must be a list, got {record['transcript']!r}.")
    if len(calls) != len(events):
        raise RecordError(f"Record has {len(calls)} calls but {len(events)} events.")
    previous = 0
    for i, (event, call) in enumerate(zip(events, calls, strict=True)):
        _check_event(i, event, previous)
        previous = event["step"]
        if call != {"tool": event["tool"], "args": event["args"], "tokens": event["tokens"]}:
            raise RecordError(f"Record call {i} does not match its event at step {previous}.")
    return record


def _check_event(i: int, event: object, previous: int) -> None:
    if not isinstance(event, dict) or sorted(event) != sorted(EVENT_KEYS):
        keys = sorted(event) if isinstance(event, dict) else type(event).__name__
        raise RecordError(f"Record event {i} must have keys {list(EVENT_KEYS)}, got {keys}.")
    where = f"Record event {i} (step {event['step']!r})"
    if not _is_int(event["step"]) or event["step"] <= previous:
        raise RecordError(f"{where}: steps must be ints in increasing order.")
    checks = {
        "tokens": _is_int(event["tokens"]),
        "clock": type(event["clock"]) is float,
        "done": isinstance(event["done"], bool),
        "rejected": event["rejected"] is None or isinstance(event["rejected"], str),
        "hash": isinstance(event["hash"], str),
        "truth": isinstance(event["truth"], dict),
        "reward": isinstance(event["reward"], dict),
    }
    for field, ok in checks.items():
        if not ok:
            raise RecordError(f"{where}: {field} has the wrong type ({event[field]!r}).")


def drawn_family(record: dict[str, Any]) -> str:
    """The family an episode faced: in its truth (``mixed`` draws it), else its scenario."""
    events = record["events"]
    family = events[-1]["truth"].get("family") if events else None
    return family if isinstance(family, str) else record["scenario"]


def check_extras(extras: dict[str, Any] | None, record: dict[str, Any]) -> dict[str, Any]:
    """Validate the harness's per-episode figures (see :data:`EXTRAS`) for ``record``."""
    extras = dict(extras or {})
    family = extras.setdefault("family", drawn_family(record))
    if family != drawn_family(record):
        raise ValueError(
            f"extras family {family!r} is not the family in the record's truth "
            f"({drawn_family(record)!r})."
        )
    unknown = sorted(set(extras) - set(EXTRAS))
    if unknown:
        raise ValueError(f"Unknown extras {unknown}; the store keeps {list(EXTRAS)}.")
    cost = extras.get("downtime_cost")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, int | float)):
        raise ValueError(f"downtime_cost must be a number or None, got {cost!r}.")
    lies = extras.get("lies")
    if lies is not None:
        if not isinstance(lies, dict) or any(not _is_int(lies.get(k)) for k in LIES_COUNTS):
            raise ValueError(
                f"lies must be a dict with int {', '.join(LIES_COUNTS)} and a by_kind dict, "
                f"got {lies!r}."
            )
        if not isinstance(lies.get("by_kind", {}), dict):
            raise ValueError(f"lies['by_kind'] must be a dict, got {lies['by_kind']!r}.")
    return extras


def episode_values(
    record: dict[str, Any],
    *,
    policy: str,
    split: str,
    trial: int,
    evaluation_id: int | None,
    extras: dict[str, Any],
) -> dict[str, Any]:
    """The ``episodes`` row of a checked record, by column name, for an insert."""
    events = record["events"]
    verdict = record["verdict"]
    return {
        "evaluation_id": evaluation_id,
        "env": record["env"],
        "scenario": record["scenario"],
        "family": extras["family"],
        "seed": record["seed"],
        "split": split,
        "policy": policy,
        "trial": trial,
        "outcome": verdict.get("outcome") if verdict else None,
        "accepted": verdict.get("accepted") if verdict else None,
        "verdict": verdict,
        "return": record["return"],
        "rewards": record["rewards"],
        "steps": len(events),
        "tokens": sum(e["tokens"] for e in events),
        "token_source": record["token_source"],
        "downtime_cost": extras.get("downtime_cost"),
        "lies": extras.get("lies"),
        "reward_timing": record["reward_timing"],
        "header": {k: record[k] for k in HEADER_FIELDS},
        "root": record["root"],
        "record_hash": record["hash"],
        "transcript": record.get("transcript"),
    }


def event_rows(episode_id: int, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``events`` rows of a checked record's events, as dicts for a bulk insert."""
    return [
        {
            "episode_id": episode_id,
            "step": e["step"],
            "tool": e["tool"],
            "args": e["args"],
            "tokens": e["tokens"],
            "rejected": e["rejected"],
            "report": e["report"],
            "reward": e["reward"],
            "clock": e["clock"],
            "done": e["done"],
            "hash": e["hash"],
            "truth_hidden": e["truth"],
        }
        for e in events
    ]


def rebuild(episode: EpisodeModel, events: list[EventModel]) -> dict[str, Any]:
    """The record an episode row and its event rows (in step order) were made from."""
    header = dict(episode.header)
    for key in _HEADER_COLUMNS:
        header[key] = getattr(episode, key)
    verdict = episode.verdict
    if verdict is not None:
        columns = {"outcome": episode.outcome, "accepted": episode.accepted}
        verdict = {k: columns.get(k, v) for k, v in verdict.items()}
    rebuilt = [
        {
            "step": e.step,
            "tool": e.tool,
            "args": e.args,
            "tokens": e.tokens,
            "rejected": e.rejected,
            "report": e.report,
            "reward": e.reward,
            "clock": e.clock,
            "done": e.done,
            "truth": e.truth_hidden,
            "hash": e.hash,
        }
        for e in events
    ]
    record = {
        **{k: header.get(k) for k in HEADER_FIELDS},
        "root": episode.root,
        "calls": [{"tool": e["tool"], "args": e["args"], "tokens": e["tokens"]} for e in rebuilt],
        "events": rebuilt,
        "verdict": verdict,
        "return": episode.return_,
        "rewards": episode.rewards,
        "hash": episode.record_hash,
    }
    if episode.transcript is not None:
        record["transcript"] = episode.transcript
    return record
