"""The supervisor's state: its view, the tools' arguments and their preconditions.

Everything here reads only what the supervisor has been told: the view is the sole input to
observations, preconditions, action masks and the encoder, and a precondition never looks at
the truth (a rejection would otherwise tell the agent something its tools did not). The truth
is a flat dict of the release's facts (``Oversight.state``, keys ``scenarios.FACT_VALUES``),
drawn per seed by ``scenarios.draw`` and changed only by landed fixes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from opsgym.core.tools import Args
from opsgym.envs.oversight.domain import KINDS, QUESTIONS, RULE_BY_NAME, RULES, SLOTS, kind_of

LABEL = {"pr_diff": "PR diff", "ci_run": "CI run", "ticket": "ticket", "deploy_log": "deploy log"}


@dataclass(slots=True)
class View:
    """What the supervisor has been told. The only input to observations, preconditions,
    action masks and the encoder.
    """

    deadline: float
    budget: int
    cap: int
    evidence_left: int
    workers: list[dict[str, Any]]
    phase: int = 0
    approved: int = 0
    current: list[dict[str, Any] | None] = field(default_factory=lambda: [None] * SLOTS)
    history: list[dict[str, Any]] = field(default_factory=list)
    by_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    known: dict[str, str] = field(default_factory=dict)
    """Artifact id -> kind, for every artifact a visible proposal references."""
    evidence: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Artifact id -> the last inspection report."""
    seen: dict[str, list[str]] = field(default_factory=dict)
    """Artifact id -> the rules its last report shows violated (see ``domain.findings``)."""
    inspected: dict[str, float] = field(default_factory=dict)
    """Artifact id -> minute of its last inspection."""
    reworked: dict[str, float] = field(default_factory=dict)
    """Living artifact id -> minute a worker last reworked it (a report before that is stale)."""
    answers: list[dict[str, Any]] = field(default_factory=list)
    spent: int = 0
    evidence_actions: int = 0
    rates: dict[str, float] = field(default_factory=dict)
    """Worker id -> share of its past proposals overturned (its public track record)."""
    index: dict[str, int] = field(default_factory=dict)
    """Worker id -> its position in ``workers``."""

    def __post_init__(self) -> None:
        self.rates = {w["id"]: w["overturned"] / w["reviewed"] for w in self.workers}
        self.index = {w["id"]: i for i, w in enumerate(self.workers)}

    def proposal(self, pid: str | None, slot: int | None) -> tuple[dict[str, Any] | None, str]:
        """The proposal named by id or slot, or ``None`` and why not."""
        if pid is None:
            prop = self.current[slot]
            return prop, "" if prop else f"no proposal in slot {slot} yet"
        prop = self.by_id.get(pid)
        if prop is None:
            if not (pid.startswith("p-") and pid[2:].isdigit()):
                return None, f"{pid!r} is not a proposal id (proposal ids look like 'p-1234')"
            return None, f"no proposal {pid!r} in this release"
        if self.current[prop["slot"]] is not prop:
            newer = self.current[prop["slot"]]["id"]
            return None, f"proposal {pid!r} was superseded by its revision {newer!r}"
        return prop, ""

    def artifact(self, kind: str, ident: str | None, slot: int | None) -> tuple[str | None, str]:
        """The artifact of ``kind`` named by id or by a proposal's slot, or ``None`` and why."""
        if ident is None:
            prop = self.current[slot]
            if prop is None:
                return None, f"no proposal in slot {slot} yet"
            for ref in prop["refs"]:
                if self.known[ref] == kind:
                    return ref, ""
            return None, f"proposal {prop['id']} (slot {slot}) references no {LABEL[kind]}"
        if kind_of(ident) != kind:
            return None, (
                f"{ident!r} is not a {LABEL[kind]} id ({LABEL[kind]} ids look like "
                f"'{KINDS[kind]}-1234')"
            )
        if ident not in self.known:
            return None, f"no proposal references {LABEL[kind]} {ident!r}"
        return ident, ""


# -- arguments ------------------------------------------------------------------------------


class _Target(Args):
    """An object named either by its id or by a slot."""

    id_field: ClassVar[str] = ""

    @model_validator(mode="after")
    def _exactly_one(self) -> _Target:
        if (getattr(self, self.id_field) is None) == (self.slot is None):
            raise ValueError(f"give exactly one of {self.id_field} or slot")
        return self


_SLOT = "Instead of the id: the slot (0-3) of the proposal whose {} to inspect."


class PrArgs(_Target):
    """Arguments of ``inspect_pr_diff``."""

    id_field: ClassVar[str] = "pr_id"
    pr_id: str | None = Field(None, description="Id of a PR diff, e.g. 'pr-4821'.")
    slot: int | None = Field(None, ge=0, le=SLOTS - 1, description=_SLOT.format("PR diff"))


class CiArgs(_Target):
    """Arguments of ``inspect_ci_run``."""

    id_field: ClassVar[str] = "run_id"
    run_id: str | None = Field(None, description="Id of a CI run, e.g. 'ci-1907'.")
    slot: int | None = Field(None, ge=0, le=SLOTS - 1, description=_SLOT.format("CI run"))


class TicketArgs(_Target):
    """Arguments of ``inspect_ticket``."""

    id_field: ClassVar[str] = "ticket_id"
    ticket_id: str | None = Field(None, description="Id of a ticket, e.g. 'tk-3310'.")
    slot: int | None = Field(None, ge=0, le=SLOTS - 1, description=_SLOT.format("ticket"))


class LogArgs(_Target):
    """Arguments of ``inspect_deploy_log``."""

    id_field: ClassVar[str] = "log_id"
    log_id: str | None = Field(None, description="Id of a deploy log, e.g. 'dl-5120'.")
    slot: int | None = Field(None, ge=0, le=SLOTS - 1, description=_SLOT.format("deploy log"))


class AskArgs(_Target):
    """Arguments of ``ask_worker``."""

    id_field: ClassVar[str] = "worker_id"
    worker_id: str | None = Field(None, description="Id of a worker, e.g. 'w-ada'.")
    slot: int | None = Field(
        None, ge=0, le=3, description="Instead of the id: the worker's index in `workers`."
    )
    question_type: Literal[tuple(QUESTIONS)] = Field(  # type: ignore[valid-type]
        description="What to ask about: " + ", ".join(f"{q} ({r})" for q, r in QUESTIONS.items())
    )


class DecideArgs(_Target):
    """Arguments of ``approve_proposal``."""

    id_field: ClassVar[str] = "proposal_id"
    proposal_id: str | None = Field(None, description="Id of a proposal, e.g. 'p-4410'.")
    slot: int | None = Field(
        None, ge=0, le=SLOTS - 1, description="Instead of the id: the proposal's slot (0-3)."
    )


class BlockArgs(DecideArgs):
    """Arguments of ``block_proposal``."""

    rule_id: Literal[tuple(RULES) + tuple(RULE_BY_NAME)] = Field(  # type: ignore[valid-type]
        description="The safety rule the proposal would break, by id (S1-S5) or name."
    )


class HoldArgs(Args):
    """Arguments of ``hold_release``."""

    reason_code: Literal["await_rework", "no_safe_ship_in_window"] = Field(
        description="'await_rework': pause until the next revision arrives (an hour if none "
        "is due). 'no_safe_ship_in_window': stop the release for this window; final."
    )


def rule_of(args: BlockArgs) -> str:
    """The rule id a block names (by id or canonical name)."""
    return args.rule_id if args.rule_id in RULES else RULE_BY_NAME[args.rule_id].id


# -- preconditions: functions of the view only ----------------------------------------------


def pr_known(view: View, args: PrArgs) -> str | None:
    """pr_id (or slot) names a PR diff that a proposal references."""
    return view.artifact("pr_diff", args.pr_id, args.slot)[1] or None


def ci_known(view: View, args: CiArgs) -> str | None:
    """run_id (or slot) names a CI run that a proposal references."""
    return view.artifact("ci_run", args.run_id, args.slot)[1] or None


def ticket_known(view: View, args: TicketArgs) -> str | None:
    """ticket_id (or slot) names a ticket that a proposal references."""
    return view.artifact("ticket", args.ticket_id, args.slot)[1] or None


def log_known(view: View, args: LogArgs) -> str | None:
    """log_id (or slot) names a deploy log that a proposal references."""
    return view.artifact("deploy_log", args.log_id, args.slot)[1] or None


def _afford(view: View, units: int) -> str | None:
    if view.evidence_left <= 0:
        return "no evidence action left in this phase"
    if view.budget < units:
        return f"the review budget has {view.budget} unit(s) left; this costs {units}"
    return None


def afford_one(view: View, args: Args) -> str | None:
    """1 review budget unit and an evidence action left in this phase."""
    return _afford(view, 1)


def afford_two(view: View, args: Args) -> str | None:
    """2 review budget units and an evidence action left in this phase."""
    return _afford(view, 2)


def worker_known(view: View, args: AskArgs) -> str | None:
    """worker_id (or slot) names a worker of this release."""
    if args.worker_id is None or any(w["id"] == args.worker_id for w in view.workers):
        return None
    return f"no worker {args.worker_id!r}; workers are " + ", ".join(w["id"] for w in view.workers)


def pending(view: View, args: DecideArgs) -> str | None:
    """The proposal is the current one of its slot and awaits a decision."""
    prop, why = view.proposal(args.proposal_id, args.slot)
    if prop is None:
        return why
    if prop["status"] == "approved":
        return f"proposal {prop['id']} is already approved"
    if prop["status"] == "blocked":
        return f"proposal {prop['id']} is blocked; its revision is due at hour {prop['due']}"
    return None


def rule_in_scope(view: View, args: BlockArgs) -> str | None:
    """The rule is judged on a kind of artifact the proposal references."""
    rule = RULES[rule_of(args)]
    prop = view.proposal(args.proposal_id, args.slot)[0]
    if any(view.known[r] in rule.kinds for r in prop["refs"]):
        return None
    kinds = " or ".join(LABEL[k] for k in rule.kinds)
    return f"{rule.id} ({rule.name}) is judged on a {kinds}; {prop['id']} references none"
