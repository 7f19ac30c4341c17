"""``opsgym eval --verify NAME``: recompute every stored episode of an evaluation.

Each episode is rebuilt from the store (its summary columns included: outcome, return,
reward totals) and replayed. The result names the first difference of each
episode that does not match, and its kind: an edited event, an edited header, an edited
verdict or summary column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opsgym.core.errors import OpsgymError
from opsgym.core.replay import replay

EXIT_MATCH, EXIT_EVENT, EXIT_HEADER, EXIT_VERDICT = 0, 3, 4, 5
"""Exit codes of ``--verify``: all match; an event differs; a header; a verdict or summary."""


@dataclass
class Verification:
    """How many stored episodes replay to an exact match, and the first difference of each
    one that does not.
    """

    name: str
    total: int = 0
    matched: int = 0
    problems: list[dict[str, Any]] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """The most serious kind found: verdict > header > event; 0 when all match."""
        kinds = {p["kind"] for p in self.problems}
        for kind, code in (("verdict", EXIT_VERDICT), ("header", EXIT_HEADER)):
            if kind in kinds:
                return code
        return EXIT_EVENT if kinds else EXIT_MATCH


def _kind(field_name: str, step: int) -> str:
    if field_name in ("verdict", "return", "outcome", "rewards"):
        return "verdict"
    if field_name == "header" or step == 0:
        return "header"
    return "event"


def verify(name: str, db: Any = None) -> Verification:
    """Replay every stored episode of evaluation ``name``."""
    from opsgym.store import open_store

    result = Verification(name)
    with open_store(db) as store:
        store.evaluation(name)  # raises NotFoundError naming the stored evaluations
        for row in store.episodes(evaluation=name, limit=None):
            result.total += 1
            record = store.episode_record(row["id"])
            where = {"episode": row["id"], "policy": row["policy"], "seed": row["seed"]}
            try:
                replayed = replay(record)
            except OpsgymError as exc:
                result.problems.append(
                    {
                        **where,
                        "kind": "header",
                        "step": 0,
                        "field": "header",
                        "recorded": str(exc),
                        "replayed": None,
                    }
                )
                continue
            if replayed.match:
                result.matched += 1
            else:
                d = replayed.first_difference
                result.problems.append({**where, "kind": _kind(d["field"], d["step"]), **d})
    return result
