"""The seal of an evaluation: its set of episodes, bound by one root hash.

When an evaluation is finished (done, failed or interrupted), the store writes beside it a
*manifest*, one entry ``[policy, scenario, seed, trial, record_hash]`` per stored episode in
sorted order, and the *root*: SHA-256 of the canonical JSON of the evaluation's name, its config
and the manifest. The root is printed with the evaluation's tables and written to its
``results.json`` and ``report.md``; ``opsgym eval --verify`` recomputes it and compares the
stored episodes with the manifest, so that a missing, extra, replaced or relabelled episode
(a policy, scenario, seed or trial edited in its row) is named.

A hash is not a signature: whoever can write the database can rewrite the manifest and its root
too. What they cannot do is keep the root that was published: a verify whose root differs from
the one in a published ``results.json`` says the store is not what was published. A resume
refuses an evaluation whose episodes no longer match its manifest, so that re-running it cannot
seal an edited set of episodes afresh.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from opsgym.core.episode import canonical

Entry = tuple[str, str, int, int, str]
"""One manifest entry: ``(policy, scenario, seed, trial, record_hash)``."""

KEY_FIELDS = ("policy", "scenario", "seed", "trial")


def manifest(entries: Iterable[Sequence[Any]]) -> list[list[Any]]:
    """The manifest of stored episodes ``(policy, scenario, seed, trial, record_hash)``:
    sorted, as plain lists (as a JSON column reads back).
    """
    typed = ((str(p), str(s), int(seed), int(t), str(h)) for p, s, seed, t, h in entries)
    return [list(e) for e in sorted(typed)]


def root(name: str, config: dict[str, Any], sealed: Sequence[Sequence[Any]]) -> str:
    """The root hash of evaluation ``name`` with ``config`` and manifest ``sealed``."""
    body = {"evaluation": name, "config": config, "episodes": [list(e) for e in sealed]}
    return hashlib.sha256(canonical(body)).hexdigest()


def differences(
    sealed: Sequence[Sequence[Any]], stored: Iterable[tuple[int, Sequence[Any]]]
) -> list[dict[str, Any]]:
    """How ``stored`` episodes, ``(id, (policy, scenario, seed, trial, record_hash))`` each,
    differ from the manifest ``sealed``: one problem per episode missing, extra, replaced (its
    key sealed with another record) or relabelled (its record sealed under another key, the
    fields that differ named). Empty when they are the same set.
    """
    wanted: dict[tuple[Any, ...], str] = {tuple(e[:4]): e[4] for e in sealed}
    found: dict[tuple[Any, ...], tuple[int, str]] = {tuple(e[:4]): (i, e[4]) for i, e in stored}
    lost = {k: h for k, h in wanted.items() if found.get(k, (0, None))[1] != h}
    new = {k: v for k, v in found.items() if wanted.get(k) != v[1]}
    problems = []
    for key, (episode_id, digest) in sorted(new.items()):
        sources = [k for k, h in lost.items() if h == digest]
        if sources:
            source = min(sources, key=lambda k: sum(a != b for a, b in zip(k, key, strict=True)))
            del lost[source]
            changed = [f for f, a, b in zip(KEY_FIELDS, source, key, strict=True) if a != b]
            problems.append(
                _problem(
                    episode_id,
                    key,
                    ", ".join(changed),
                    dict(zip(KEY_FIELDS, source, strict=True)),
                    dict(zip(KEY_FIELDS, key, strict=True)),
                    f"relabelled: sealed as {_key(source)}, stored as {_key(key)}",
                )
            )
        elif key in wanted:
            problems.append(
                _problem(
                    episode_id,
                    key,
                    "record_hash",
                    wanted[key],
                    digest,
                    f"replaced: {_key(key)} holds another record than the one sealed",
                )
            )
            lost.pop(key, None)
        else:
            problems.append(
                _problem(episode_id, key, "episode", None, digest, f"extra episode {_key(key)}")
            )
    for key, digest in sorted(lost.items()):
        problems.append(
            _problem(None, key, "episode", digest, None, f"missing episode {_key(key)}")
        )
    return problems


def _key(key: Sequence[Any]) -> str:
    policy, scenario, seed, trial = key
    return f"({policy}, {scenario}, seed {seed}, trial {trial})"


def _problem(
    episode: int | None,
    key: Sequence[Any],
    field: str,
    sealed: Any,
    stored: Any,
    message: str,
) -> dict[str, Any]:
    return {
        "episode": episode,
        "policy": key[0],
        "seed": key[2],
        "kind": "seal",
        "step": 0,
        "field": field,
        "recorded": sealed,
        "replayed": stored,
        "message": message,
    }
