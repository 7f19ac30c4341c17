"""Lies: reports that misled, and whether the agent trusted them.

A world marks, when a tool reports, the reports that contradict the truth: a timeout on a
deploy that had committed, a cached "healthy" for a pool that is failing, a red-herring alert,
a worker's false claim. Each lie names the calls that could *reconcile* it (an inspection, a
fresh probe) and the calls that would act on it (*consequential*: a retry, a traffic shift, an
approval, a completion). After it is told, the first of those the agent makes decides it:

* **reconciled**: a reconciling call came first;
* **trusted**: a consequential call came first (the agent acted on the lie unchecked);
* **open**: neither happened before the episode ended.

Two rules keep a ledger from counting one misleading fact twice, or a report that misled no one:

* **once while open**: a lie names what it is *about* (a rank, a node, an artifact, a scrape);
  while a lie about the same thing is open, the same report repeated tells nothing new;
* **already known**: a lie told while the agent holds a current report that contradicts it
  misleads no one; the next accepted call, whatever it is, reconciles it.

The lies live in the truth: the judge, the record and the store see them, the agent never does.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

Match = Callable[[str, Any], bool]
"""``(tool, args) -> bool``: does this accepted call reconcile (or act on) the lie? Must pickle
(a module-level function, a :class:`Calls`), as episodes do."""


@dataclass(frozen=True, slots=True)
class Calls:
    """A match on any call of ``tools``, whatever its arguments."""

    tools: frozenset[str]

    def __call__(self, tool: str, args: Any) -> bool:
        """Whether ``tool`` is one of ``tools``."""
        return tool in self.tools


def calls(*tools: str) -> Calls:
    """A match on any call of ``tools``, whatever its arguments."""
    return Calls(frozenset(tools))


@dataclass(slots=True)
class Lie:
    """One misleading report."""

    kind: str
    step: int
    reconciles: Match
    trusts: Match
    detail: str = ""
    status: str = "open"
    known: bool = False
    """Told while the agent held a report contradicting it: any accepted call reconciles it."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form (for the record's truth)."""
        return {"kind": self.kind, "step": self.step, "detail": self.detail, "status": self.status}


class LieLedger:
    """The lies told in one episode, and what became of each."""

    __slots__ = ("told", "_step", "_new", "_open", "_about")

    def __init__(self) -> None:
        self.told: list[Lie] = []
        self._step = 0
        self._new: list[Lie] = []
        self._open = 0
        self._about: dict[Hashable, Lie] = {}

    def tell(
        self,
        kind: str,
        *,
        reconciled_by: Match | Iterable[str],
        trusted_by: Match | Iterable[str],
        detail: str = "",
        about: Hashable | None = None,
        known: bool = False,
    ) -> bool:
        """Mark the report being made now as a lie of ``kind``; return whether it was told.

        Args:
            kind: The lie's kind (counted per kind in :meth:`summary`).
            reconciled_by: The calls that would check it (a match, or tool names).
            trusted_by: The calls that would act on it unchecked (a match, or tool names).
            detail: What was said and what is true instead (for the record's truth).
            about: What it is about; ``None``: nothing another lie could repeat. While a lie
                about the same thing is open, this one is not told (a report repeated before
                the agent settled the first).
            known: The agent holds a current report that contradicts it: it misleads no one,
                and the next accepted call reconciles it.
        """
        if about is not None:
            old = self._about.get(about)
            if old is not None and old.status == "open":
                return False
        lie = Lie(kind, self._step, _match(reconciled_by), _match(trusted_by), detail, known=known)
        self.told.append(lie)
        self._new.append(lie)
        self._open += 1
        if about is not None:
            self._about[about] = lie
        return True

    def before_call(self, step: int, tool: str, args: Any) -> None:
        """Settle open lies against an accepted call about to run (step ``step``)."""
        self._step = step
        if not self._open:  # the common case: nothing to settle
            return
        for lie in self.told:
            if lie.status == "open":
                if lie.known or lie.reconciles(tool, args):
                    lie.status = "reconciled"
                    self._open -= 1
                elif lie.trusts(tool, args):
                    lie.status = "trusted"
                    self._open -= 1

    def drain_new(self) -> list[dict[str, Any]]:
        """The lies told since the last call, as dicts (for the event's truth)."""
        if not self._new:
            return []
        new, self._new = self._new, []
        return [lie.to_dict() for lie in new]

    def summary(self) -> dict[str, Any]:
        """``{"told", "trusted", "reconciled", "by_kind": {kind: {"told", "trusted",
        "reconciled"}}}``.
        """
        by_kind: dict[str, dict[str, int]] = {}
        for lie in self.told:
            k = by_kind.setdefault(lie.kind, {"told": 0, "trusted": 0, "reconciled": 0})
            k["told"] += 1
            if lie.status in ("trusted", "reconciled"):
                k[lie.status] += 1
        return {
            "told": len(self.told),
            "trusted": sum(k["trusted"] for k in by_kind.values()),
            "reconciled": sum(k["reconciled"] for k in by_kind.values()),
            "by_kind": by_kind,
        }


def _match(spec: Match | Iterable[str]) -> Match:
    return spec if callable(spec) else calls(*spec)
