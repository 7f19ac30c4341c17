"""Replay: recompute an episode from its record and prove it matches.

An episode is a function of its header (env, scenario, seed, budget, overrides, config, reward
timing, token source) and its calls. Replay runs the calls again on a fresh episode and compares
every event, field by field, and the hash chain, whose root is the header's hash. The first
difference names the step, the field and both values (step 0 and field ``header`` for an edited
header), so a tampered record or a behaviour change in an environment is found where it starts.
The record's ``calls`` must be exactly its events' calls: a call after the end, or a call whose
token count differs from its event's, is a difference (field ``calls``), not a call replay skips.

A replay rebuilds the episode as it was made, even one the episode request
(:mod:`opsgym.core.request`) would refuse today, and says so: :attr:`ReplayResult.labels` names
what makes a record unfit for a leaderboard (forced facts, dense reward timing, a held-out family
on a train seed), and ``opsgym replay --strict`` and ``POST /api/grade`` refuse such a record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opsgym.core.episode import RECORD_FORMAT, Episode, chain, header_hash
from opsgym.core.errors import OpsgymError, RecordError
from opsgym.core.registry import spec as lookup
from opsgym.core.scenarios import split_of

_FIELDS = ("env", "scenario", "seed", "calls", "events")


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """The outcome of a replay.

    Attributes:
        match: Whether the replayed episode equals the record exactly.
        first_difference: ``None``, or ``{"step", "field", "recorded", "replayed"}``
            (``step`` 0 means a field of the record itself).
        recorded_hash: The record's final hash.
        replayed_hash: The final hash of the recomputed episode.
        labels: What makes the record unfit to stand for an honest episode, one phrase each
            (forced facts, dense reward timing, a held-out family on a train seed); empty for
            an episode any face would start today.
        episode: The recomputed episode, for figures derived from it (its family, lies,
            downtime) that a caller compares with what was stored beside the record.
    """

    match: bool
    first_difference: dict[str, Any] | None
    recorded_hash: str
    replayed_hash: str
    labels: tuple[str, ...] = ()
    episode: Episode | None = field(default=None, compare=False, repr=False)

    @property
    def admissible(self) -> bool:
        """Whether the record matches and carries no label: what a leaderboard may accept."""
        return self.match and not self.labels


def labels_of(episode: Episode) -> tuple[str, ...]:
    """What makes ``episode`` unfit to stand for an honest one (see :class:`ReplayResult`)."""
    out = []
    if episode.overrides:
        out.append(f"forced facts: {', '.join(sorted(episode.overrides))}")
    if episode.reward_timing != "end":
        out.append(f"reward timing {episode.reward_timing!r} (pays hidden facts at once)")
    if split_of(episode.seed) == "train":
        families = [episode.scenario] + ([episode.family] if episode.scenario.mixture else [])
        for family in families:
            if family.held_out:
                out.append(f"held-out family {family.name!r} on train seed {episode.seed}")
    return tuple(out)


def _first_field(recorded: dict[str, Any], replayed: dict[str, Any]) -> str | None:
    for key in sorted(set(recorded) | set(replayed)):
        if recorded.get(key) != replayed.get(key):
            return key
    return None


def rebuild(record: dict[str, Any]) -> Episode:
    """A fresh episode from ``record``'s header, before any call: built as it was made, not
    through today's episode request (:func:`labels_of` says what that would refuse).

    Raises:
        RecordError: the header names no world, scenario or seed that can be built.
    """
    source = record.get("token_source", "fixed")
    try:
        world = lookup(record["env"])
        return Episode(
            world,
            world.scenario(record["scenario"]),
            record["seed"],
            max_steps=record.get("max_steps"),
            overrides=record.get("overrides") or None,
            config=record.get("config") or None,
            reward_timing=record.get("reward_timing", "end"),
            token_source="caller" if source == "fixed" else source,
        )
    except (OpsgymError, ValueError, TypeError, KeyError) as exc:
        raise RecordError(f"Record header cannot be replayed: {exc}") from exc


def replay(record: dict[str, Any]) -> ReplayResult:
    """Recompute ``record`` and compare. Raises :class:`RecordError` if it cannot be read."""
    if not isinstance(record, dict):
        raise RecordError(f"A record must be a dict, got {type(record).__name__}.")
    missing = [f for f in _FIELDS if f not in record]
    if missing:
        raise RecordError(f"Record is missing {', '.join(missing)}; was it made by record()?")
    if record.get("format", RECORD_FORMAT) != RECORD_FORMAT:
        raise RecordError(f"Record format {record['format']!r} is not {RECORD_FORMAT!r}.")
    calls = record["calls"]
    source = record.get("token_source", "fixed")
    episode = rebuild(record)
    for call in calls:
        if episode.done:
            break
        tokens = call.get("tokens") if source != "fixed" else None
        episode.step(
            call.get("tool"), call.get("args"), tokens=tokens if isinstance(tokens, int) else None
        )
    fresh = episode.record()
    recorded_events = record["events"]
    root = header_hash(record)
    diff = None
    if record.get("root") != root:
        diff = {
            "step": 0,
            "field": "header",
            "recorded": record.get("root"),
            "replayed": root,
        }
    for i, (old, new) in enumerate(zip(recorded_events, fresh["events"], strict=False)):
        if diff is not None:
            break
        body_old = {k: v for k, v in old.items() if k != "hash"}
        body_new = {k: v for k, v in new.items() if k != "hash"}
        name = _first_field(body_old, body_new)
        if name is None and old.get("hash") != new["hash"]:
            name = "hash"
        if name is not None:
            step = old.get("step", i + 1)
            diff = {
                "step": step,
                "field": name,
                "recorded": old.get(name),
                "replayed": new.get(name),
            }
            break
    if diff is None and len(recorded_events) != len(fresh["events"]):
        diff = {
            "step": min(len(recorded_events), len(fresh["events"])) + 1,
            "field": "events",
            "recorded": len(recorded_events),
            "replayed": len(fresh["events"]),
        }
    if diff is None:
        diff = _calls_difference(calls, fresh["calls"])
    if diff is None:
        chained = chain(recorded_events, root)
        last = chained[-1] if chained else root
        if record.get("hash") != last:
            diff = {
                "step": 0,
                "field": "hash",
                "recorded": record.get("hash"),
                "replayed": fresh["hash"],
            }
        else:
            for name in ("verdict", "return", "rewards"):
                if record.get(name) != fresh[name]:
                    diff = {
                        "step": 0,
                        "field": name,
                        "recorded": record.get(name),
                        "replayed": fresh[name],
                    }
                    break
    return ReplayResult(
        diff is None,
        diff,
        str(record.get("hash", "")),
        fresh["hash"],
        labels_of(episode),
        episode,
    )


def _calls_difference(recorded: list[Any], replayed: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first call of ``recorded`` that is not the replayed episode's (a call after the end,
    an edited token count), as a difference at its step; ``None`` when they are the same.
    """
    for i, (old, new) in enumerate(zip(recorded, replayed, strict=False)):
        if old != new:
            return {"step": i + 1, "field": "calls", "recorded": old, "replayed": new}
    if len(recorded) != len(replayed):
        i = min(len(recorded), len(replayed))
        return {
            "step": i + 1,
            "field": "calls",
            "recorded": recorded[i] if i < len(recorded) else None,
            "replayed": replayed[i] if i < len(replayed) else None,
        }
    return None
