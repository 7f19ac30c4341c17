"""How an episode record maps onto rows, and back, exactly.

A record (``Episode.record()``) becomes one ``episodes`` row and one ``events`` row: its events
as two JSON arrays in step order, ``steps`` (each event but its truth) and ``truth_hidden``.
Rebuilt, it is equal to the original value for value (key order aside), so that
``opsgym.replay`` of the rebuilt record matches and every hash is the same.

A record is checked before anything is written: it must have the shape ``Episode.record()``
gives (a float ``clock``, an int ``step`` rising by event, and so on), and its ``calls`` must
agree with its events (they are rebuilt from the events, not stored twice).

Writing is split in two so that the expensive half runs where the episode was played:
:func:`prepare` (or :func:`prepare_episode`, straight from a finished :class:`Episode`) turns an
episode into a :class:`Prepared` one, its JSON already text, and the store only executes the
inserts.

The rebuilt header, outcome and acceptance are read from the columns that queries and
statistics use, so a value edited in the database after the fact is caught by a replay
(``opsgym eval --verify``), not silently reported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from opsgym.core.episode import HEADER_FIELDS, chain, header_hash, json_copy, link, seal
from opsgym.core.errors import RecordError
from opsgym.store.engine import dumps
from opsgym.store.models import EpisodeModel, utcnow

if TYPE_CHECKING:
    from opsgym.core.episode import Episode

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


def drawn_family(events: list[dict[str, Any]], scenario: str) -> str:
    """The family an episode faced: in its last truth (``mixed`` draws it), else its scenario."""
    family = events[-1]["truth"].get("family") if events else None
    return family if isinstance(family, str) else scenario


def check_extras(
    extras: dict[str, Any] | None, events: list[dict[str, Any]], scenario: str
) -> dict[str, Any]:
    """Validate the harness's per-episode figures (see :data:`EXTRAS`) for an episode of
    ``scenario`` with ``events``.
    """
    extras = dict(extras or {})
    drawn = drawn_family(events, scenario)
    family = extras.setdefault("family", drawn)
    if family != drawn:
        raise ValueError(
            f"extras family {family!r} is not the family in the record's truth ({drawn!r})."
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


def check_trial(trial: object) -> int:
    """Return ``trial`` if it is an int >= 0; else raise ``ValueError``."""
    if not _is_int(trial) or trial < 0:  # type: ignore[operator]
        raise ValueError(f"trial must be an int >= 0, got {trial!r}.")
    return trial  # type: ignore[return-value]


# -- writing ----------------------------------------------------------------------------------

PREPARED_COLUMNS = (
    "env",
    "scenario",
    "family",
    "seed",
    "split",
    "policy",
    "trial",
    "outcome",
    "accepted",
    "verdict",
    "return",
    "rewards",
    "steps",
    "tokens",
    "token_source",
    "downtime_cost",
    "lies",
    "reward_timing",
    "header",
    "root",
    "record_hash",
    "created_at",
    "transcript",
)
"""The ``episodes`` columns a :class:`Prepared` episode holds, in the order of its ``values``
(``id`` and ``evaluation_id`` are the store's to fill in)."""


class UnstorableError(TypeError):
    """A value of the record is not JSON the store can keep (a set, an object, NaN)."""


class Prepared(NamedTuple):
    """One episode ready to be written: its rows, JSON columns already serialised.

    Plain data (it pickles), so a worker process can prepare episodes and a store in any
    process write them with :meth:`opsgym.store.Store.add_prepared`.

    Attributes:
        evaluation: The name of the evaluation it belongs to, or ``None``.
        key: Its ``(policy, scenario, seed, trial)``, unique within an evaluation.
        values: Its ``episodes`` row, in :data:`PREPARED_COLUMNS` order.
        steps: Its events without their truth, as JSON text.
        truth: The truth after each event, as JSON text.
    """

    evaluation: str | None
    key: tuple[str, str, int, int]
    values: tuple[Any, ...]
    steps: str
    truth: str


def prepare(
    record: dict[str, Any],
    *,
    policy: str,
    split: str,
    trial: int = 0,
    evaluation: str | None = None,
    extras: dict[str, Any] | None = None,
) -> Prepared:
    """Check a record (see :meth:`opsgym.store.Store.add_episode` for the arguments) and
    prepare it to be written.

    Raises:
        RecordError: ``record`` is not a record the store can keep exactly.
        ValueError: ``trial`` or ``extras`` is malformed.
        UnstorableError: a value is not JSON.
    """
    check_record(record)
    events = record["events"]
    hashes = [e["hash"] for e in events]
    return _prepared(
        {k: record[k] for k in HEADER_FIELDS},
        record["root"],
        events,
        hashes,
        _event_texts(events, hashes),
        record["verdict"],
        record["return"],
        record["rewards"],
        record["hash"],
        record.get("transcript"),
        policy=policy,
        split=split,
        trial=check_trial(trial),
        evaluation=evaluation,
        extras=check_extras(extras, events, record["scenario"]),
    )


def prepare_episode(
    episode: Episode,
    *,
    policy: str,
    split: str,
    trial: int = 0,
    evaluation: str | None = None,
    extras: dict[str, Any] | None = None,
) -> Prepared:
    """:func:`prepare` of ``episode.record()``, equal to it, for a fraction of its cost.

    ``record()`` gives the caller a deep copy of every event; written at once, the events
    need no copy: :func:`prepare_draft` of the episode's draft takes them as they are (an
    episode with a transcript, a model's, rare and slow anyway, is sealed from a copy).
    """
    return prepare_draft(
        episode.draft(),
        policy=policy,
        split=split,
        trial=trial,
        evaluation=evaluation,
        extras=extras,
    )


def prepare_draft(
    draft: dict[str, Any],
    *,
    policy: str,
    split: str,
    trial: int = 0,
    evaluation: str | None = None,
    extras: dict[str, Any] | None = None,
) -> Prepared:
    """:func:`prepare` of ``seal(draft)`` (see :meth:`Episode.draft`), equal to it, without
    building the record: the hash chain and the events' JSON are written in one pass over the
    draft's events, which are read, never changed. A draft with a transcript is sealed (a copy
    of it) and prepared the general way.

    The draft is taken as an episode made it (a server's writer reads it back from the JSON the
    server sent): its shape is not checked as a record's is.
    """
    if draft.get("transcript"):
        return prepare(
            seal(json_copy(draft)),
            policy=policy,
            split=split,
            trial=trial,
            evaluation=evaluation,
            extras=extras,
        )
    header = {k: draft[k] for k in HEADER_FIELDS}
    root = header_hash(header)
    events = draft["events"]
    chained = _chained_texts(events, root)
    if chained is None:
        hashes, texts = chain(events, root), None
    else:
        hashes, texts = chained[0], chained[1:]
    return _prepared(
        header,
        root,
        events,
        hashes,
        texts,
        draft["verdict"],
        draft["return"],
        draft["rewards"],
        hashes[-1] if hashes else root,
        None,
        policy=policy,
        split=split,
        trial=check_trial(trial),
        evaluation=evaluation,
        extras=check_extras(extras, events, header["scenario"]),
    )


_STEP_KEYS = tuple(k for k in EVENT_KEYS if k not in ("truth", "hash"))
_SORTED = orjson.OPT_SORT_KEYS
_TRUTH = b',"truth":'
_HASH = b',"hash":"'


def _chained_texts(events: list[dict[str, Any]], root: str) -> tuple[list[str], str, str] | None:
    """The hash chain of live ``events`` from ``root`` and their two JSON texts (steps with
    their hashes, truths), in one pass that writes each value once: the same hashes as
    :func:`~opsgym.core.episode.chain`, whose canonical bytes of an event are its step's
    canonical bytes with ``"truth"`` (the last key in sorted order) spliced in before the
    closing brace. ``None`` where orjson refuses a value (an integer beyond 64 bits), or an
    event has other keys: the caller takes the general path.
    """
    if any(len(event) != len(_STEP_KEYS) + 1 for event in events):
        return None
    parts = _parts(events)
    if parts is None:
        return None
    heads, truths = parts
    hashes, prev = [], root
    for head, truth in zip(heads, truths, strict=True):
        prev = link(prev, head + _TRUTH + truth + b"}")
        hashes.append(prev)
    return hashes, *_texts(heads, truths, hashes)


def _event_texts(events: list[dict[str, Any]], hashes: list[str]) -> tuple[str, str] | None:
    """The two JSON texts of a record's ``events`` with their ``hashes``, written as
    :func:`_chained_texts` writes them (keys sorted), or ``None`` where orjson refuses a value.
    """
    parts = _parts(events)
    return None if parts is None else _texts(*parts, hashes)


def _parts(events: list[dict[str, Any]]) -> tuple[list[bytes], list[bytes]] | None:
    """Each event's step (its canonical JSON, without the closing brace) and truth (canonical
    JSON), or ``None`` where orjson refuses a value.
    """
    try:
        heads = [orjson.dumps({k: e[k] for k in _STEP_KEYS}, option=_SORTED)[:-1] for e in events]
        truths = [orjson.dumps(e["truth"], option=_SORTED) for e in events]
    except (TypeError, KeyError):
        return None
    return heads, truths


def _texts(heads: list[bytes], truths: list[bytes], hashes: list[str]) -> tuple[str, str]:
    """The steps' JSON array (each step with its ``hash``) and the truths' JSON array."""
    steps = b",".join(
        head + _HASH + digest.encode() + b'"}' for head, digest in zip(heads, hashes, strict=True)
    )
    return f"[{steps.decode()}]", f"[{b','.join(truths).decode()}]"


def _general_texts(events: list[dict[str, Any]], hashes: list[str]) -> tuple[str, str]:
    """The events' two JSON texts through :func:`~opsgym.store.engine.dumps` (its ``json``
    fallback writes what orjson refuses); keys in the events' own order.
    """
    steps = [{**{k: e[k] for k in _STEP_KEYS}, "hash": digest}
             for e, digest in zip(events, hashes, strict=True)]  # fmt: skip
    return dumps(steps), dumps([e["truth"] for e in events])


def _prepared(
    header: dict[str, Any],
    root: str,
    events: list[dict[str, Any]],
    hashes: list[str],
    texts: tuple[str, str] | None,
    verdict: dict[str, Any] | None,
    total: float,
    rewards: dict[str, float],
    record_hash: str,
    transcript: list[Any] | None,
    *,
    policy: str,
    split: str,
    trial: int,
    evaluation: str | None,
    extras: dict[str, Any],
) -> Prepared:
    """The :class:`Prepared` episode; ``texts``: its events' two JSON texts, when already
    written (else they are written here).
    """
    lies = extras.get("lies")
    try:
        values = (
            header["env"],
            header["scenario"],
            extras["family"],
            header["seed"],
            split,
            policy,
            trial,
            verdict.get("outcome") if verdict else None,
            verdict.get("accepted") if verdict else None,
            None if verdict is None else dumps(verdict),
            total,
            dumps(rewards),
            len(events),
            sum(e["tokens"] for e in events),
            header["token_source"],
            extras.get("downtime_cost"),
            None if lies is None else dumps(lies),
            header["reward_timing"],
            dumps({k: header[k] for k in HEADER_FIELDS}),
            root,
            record_hash,
            utcnow(),
            None if transcript is None else dumps(transcript),
        )
        steps_text, truth_text = texts or _general_texts(events, hashes)
    except (TypeError, ValueError) as exc:
        raise UnstorableError(f"{type(exc).__name__}: {str(exc).splitlines()[0]}") from exc
    return Prepared(
        evaluation,
        (policy, header["scenario"], header["seed"], trial),
        values,
        steps_text,
        truth_text,
    )


# -- reading ----------------------------------------------------------------------------------


def rebuild(episode: EpisodeModel, steps: list[Any], truth: list[Any]) -> dict[str, Any]:
    """The record an episode row and its events row were made from."""
    header = dict(episode.header)
    for key in _HEADER_COLUMNS:
        header[key] = getattr(episode, key)
    verdict = episode.verdict
    if verdict is not None:
        columns = {"outcome": episode.outcome, "accepted": episode.accepted}
        verdict = {k: columns.get(k, v) for k, v in verdict.items()}
    rebuilt = [
        {
            "step": s["step"],
            "tool": s["tool"],
            "args": s["args"],
            "tokens": s["tokens"],
            "rejected": s["rejected"],
            "report": s["report"],
            "reward": s["reward"],
            "clock": s["clock"],
            "done": s["done"],
            "truth": t,
            "hash": s["hash"],
        }
        for s, t in zip(steps, truth, strict=True)
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
