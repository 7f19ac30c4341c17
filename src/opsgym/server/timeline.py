"""An ended episode told again from its record: what the agent saw after each step, and what
became of each lie it was told.

Both are derived at read time by replaying the record's calls on a fresh episode, so a stored
record is never changed (its hash chain stays valid) and records stored before lie outcomes
existed have them too. The world's lie ledger (:mod:`opsgym.core.lies`) says, after the replay,
how each lie ended; watching it step by step says *when*: the step whose call reconciled it or
acted on it, and that call.

A timeline costs a replay of the whole episode (milliseconds for a budget of 60 calls), so the
server keeps the last :data:`CACHED` in an LRU keyed by a digest of the whole record: an edited
record has another key, and is never answered from the original's entry.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson

import opsgym
from opsgym.core.errors import RecordError
from opsgym.core.replay import ReplayResult, rebuild

CACHED = 64
"""Timelines the server keeps (each holds every step's observation: tens of kilobytes)."""

MALFORMED = (AttributeError, KeyError, IndexError, TypeError)
"""What reading a malformed record raises (a posted one may be anything)."""


@dataclass(frozen=True, slots=True)
class Timeline:
    """A record replayed.

    Attributes:
        replay: Whether the replay matched the record, and where it first differed.
        family: The fault family the episode drew (the scenario's own unless ``mixed``).
        steps: The record's events as the agent was told them (call, report, reward).
        observations: ``observations[i]`` is what the agent saw after ``i`` replayed calls
            (``observations[0]``: after the reset).
        lies: Every lie told, in order, with its outcome (:func:`lie_outcome`).
        lie_summary: The ledger's counts (as evaluations store them: told, trusted, reconciled,
            by kind).
    """

    replay: ReplayResult
    family: str
    steps: list[dict[str, Any]]
    observations: list[dict[str, Any]]
    lies: list[dict[str, Any]]
    lie_summary: dict[str, Any]


def lie_outcome(lie: Any, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """One lie as a timeline shows it: ``kind``, ``detail``, ``told_at`` (the step whose report
    it was; 0 for one told before the first call), ``status`` (``trusted``, ``reconciled`` or
    ``open``), ``settled_at`` and ``settled_by`` (the step and the call that settled it;
    ``None`` while open).
    """
    return {
        "kind": lie.kind,
        "detail": lie.detail,
        "told_at": lie.step,
        "told_by": steps[lie.step - 1]["tool"] if 0 < lie.step <= len(steps) else None,
        "status": "open",
        "settled_at": None,
        "settled_by": None,
    }


def build(record: dict[str, Any]) -> Timeline:
    """Replay ``record``, watching the agent's view and the lie ledger after every call.

    Raises:
        RecordError: the record cannot be replayed (a missing field, a bad header).
    """
    result = opsgym.replay(record)  # checks the record's fields and its header first
    episode = rebuild(record)
    source = record.get("token_source", "fixed")
    observations = [episode.observe()]
    outcomes: list[dict[str, Any]] = []
    ledger = episode.world.lies

    def watch() -> None:
        for i, lie in enumerate(ledger.told):
            if i == len(outcomes):
                outcomes.append(lie_outcome(lie, episode.events))
            seen = outcomes[i]
            if lie.status != "open" and seen["status"] == "open":
                event = episode.events[-1]
                seen["status"], seen["settled_at"] = lie.status, event["step"]
                seen["settled_by"] = {"tool": event["tool"], "args": event["args"]}

    watch()
    for call in record["calls"]:  # as core.replay plays them
        if episode.done:
            break
        tokens = call.get("tokens") if source != "fixed" else None
        episode.step(
            call.get("tool"), call.get("args"), tokens=tokens if isinstance(tokens, int) else None
        )
        watch()
        observations.append(episode.observe())
    return Timeline(
        replay=result,
        family=episode.family.name,
        steps=[_told(e) for e in record["events"]],
        observations=observations,
        lies=outcomes,
        lie_summary=ledger.summary(),
    )


def _told(event: dict[str, Any]) -> dict[str, Any]:
    """A recorded event without its truth: what the agent was told of that step."""
    paid = event.get("reward") or {}
    return {
        "step": event.get("step"),
        "tool": event.get("tool"),
        "args": event.get("args"),
        "rejected": event.get("rejected"),
        "report": event.get("report"),
        "reward": sum(paid.values()),
        "components": dict(paid),
        "done": event.get("done"),
    }


def digest(record: dict[str, Any]) -> str:
    """SHA-256 of the whole record's canonical JSON: the cache's key."""
    try:
        text = orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # an integer beyond 64 bits, as a posted record may hold
        text = json.dumps(record, sort_keys=True, default=repr).encode()
    return hashlib.sha256(text).hexdigest()


class Timelines:
    """The last :data:`CACHED` timelines built, by :func:`digest` of their record."""

    def __init__(self, size: int = CACHED):
        self.size = size
        self._cache: OrderedDict[str, Timeline] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def of(self, record: dict[str, Any]) -> Timeline:
        """The timeline of ``record`` (built, or from the cache).

        Raises:
            RecordError, ValueError: the record cannot be replayed (a 422).
        """
        if not isinstance(record, dict):
            raise RecordError(f"A record must be a dict, got {type(record).__name__}.")
        key = digest(record)
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
                self.hits += 1
                return found
        try:
            built = build(record)
        except MALFORMED as exc:
            raise ValueError(f"the record cannot be replayed: {type(exc).__name__}: {exc}") from exc
        with self._lock:
            self.misses += 1
            self._cache[key] = built
            while len(self._cache) > self.size:
                self._cache.popitem(last=False)
        return built


def lies_view(timeline: Timeline) -> dict[str, Any]:
    """The lie outcomes an episode view carries: each lie, and the counts."""
    return {"told": timeline.lies, "summary": timeline.lie_summary}


def window(timeline: Timeline, start: int, limit: int) -> dict[str, Any]:
    """The timeline's JSON, with the steps ``start + 1 .. start + limit`` (0-based ``start``):
    each step as told, and the observation the agent had after it.
    """
    result = timeline.replay
    steps = timeline.steps[start : start + limit]
    shown = []
    for i, told in enumerate(steps, start=start + 1):
        seen = timeline.observations[i] if i < len(timeline.observations) else None
        shown.append({**told, "observation": seen})
    before = timeline.observations[start] if start < len(timeline.observations) else None
    return {
        "match": result.match,
        "first_difference": result.first_difference,
        "recorded_hash": result.recorded_hash,
        "replayed_hash": result.replayed_hash,
        "family": timeline.family,
        "total_steps": len(timeline.steps),
        "start": start,
        "limit": limit,
        "before": before,
        "steps": shown,
        "lies": lies_view(timeline),
    }
