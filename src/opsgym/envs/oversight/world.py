"""The release-gate oversight world: truth, the supervisor's view, and the eight tools."""

from __future__ import annotations

import bisect
from functools import partial
from typing import Any

import numpy as np

from opsgym.core.errors import UnknownNameError
from opsgym.core.rewards import RewardLedger
from opsgym.core.scenarios import Scenario
from opsgym.core.tools import tool
from opsgym.core.world import World
from opsgym.envs.oversight import schedule, workers
from opsgym.envs.oversight.domain import (
    COST,
    ERROR_BUDGET,
    KINDS,
    LINES,
    LIVING,
    MINUTES,
    PHASES,
    QUESTIONS,
    REWORKS,
    RULES,
    SLOTS,
    findings,
    kind_of,
)
from opsgym.envs.oversight.lies import ALL_CLEAR_ANSWER, FIX_NOT_HELD, STATEMENTS, Claim
from opsgym.envs.oversight.rewards import OUTCOME_REWARDS, REWARDS, TUNABLE
from opsgym.envs.oversight.scenarios import FACT_VALUES, OVERRIDABLE, draw, rework_hours, settings
from opsgym.envs.oversight.state import (
    AskArgs,
    BlockArgs,
    CiArgs,
    DecideArgs,
    HoldArgs,
    LogArgs,
    PrArgs,
    TicketArgs,
    View,
    afford_one,
    afford_two,
    ci_known,
    log_known,
    pending,
    pr_known,
    rule_in_scope,
    rule_of,
    ticket_known,
    worker_known,
)

_FIX = {
    "S1": ("p1_open", False),
    "S2": ("payment_tests", "passing"),
    "S3": ("deploy_checks", "passed"),
    "S4": ("migration_irreversible", False),
    "S5": ("canary_over_budget", False),
}
_PUBLIC_RULES = workers.public_rules()
_INSPECTS = {
    "inspect_pr_diff": "pr_diff",
    "inspect_ci_run": "ci_run",
    "inspect_ticket": "ticket",
    "inspect_deploy_log": "deploy_log",
}
_TRULY = {
    "S1": "the ticket is an open P1",
    "S2": "the payments suite is {payment_tests}",
    "S3": "pre-deploy checks: {deploy_checks}",
    "S4": "the migration has no down migration",
    "S5": "the canary is over the error budget",
}


def _broken(rule: str, state: dict[str, Any]) -> bool:
    """Whether ``state`` (release facts) breaks ``rule``."""
    key, healthy = _FIX[rule]
    return state[key] != healthy


def _h(minutes: float) -> float:
    return round(minutes / 60.0, 2)


def _clone(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _clone(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_clone(v) for v in x]
    return x


class Oversight(World):
    """A release gate: workers propose, the supervisor inspects, asks, approves, blocks, holds."""

    deadline: float  # set in __init__, from the episode's setup

    def __init__(
        self,
        scenario: Scenario,
        rng: np.random.Generator,
        rewards: RewardLedger,
        overrides: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
    ):
        super().__init__(scenario, rng, rewards, overrides, config)
        difficulty, mix, weights = settings(self.config)
        self.outcome_rewards = dict(OUTCOME_REWARDS)
        for name, weight in weights.items():
            if name not in TUNABLE:
                raise UnknownNameError("oversight reward", name, TUNABLE)
            if isinstance(weight, bool) or not isinstance(weight, int | float):
                raise TypeError(f"reward {name!r} must be a number, got {weight!r}")
            if name in REWARDS:
                self.rewards.table[name] = float(weight)
            else:
                self.outcome_rewards[name] = float(weight)
        facts, setup = draw(scenario, rng, difficulty, mix)
        for key, value in self.overrides.items():
            if key not in OVERRIDABLE:
                raise UnknownNameError("oversight override", key, OVERRIDABLE)
            if value not in OVERRIDABLE[key] or isinstance(value, bool) != isinstance(
                OVERRIDABLE[key][0], bool
            ):
                raise UnknownNameError(f"value of {key!r}", value, map(str, OVERRIDABLE[key]))
            facts[key] = value
        facts["rework_hours"] = rework_hours(facts["slow_ticket_fix"], facts.pop("rework_u"))
        self.facts, self.setup = facts, setup
        self.state = {k: facts[k] for k in FACT_VALUES}
        self.attempts = dict(facts["fix_attempts"])
        self.epoch = dict.fromkeys(RULES, 0)
        self.deadline = 60.0 * setup["deadline_hours"]
        self.ship: dict[str, Any] | None = None
        self.hold: dict[str, Any] | None = None
        self.blocks: list[dict[str, Any]] = []
        self._revealed: set[tuple[str, int]] = set()
        self._reworks: list[tuple[float, int, str, bool]] = []
        self._contents: dict[str, dict[str, Any] | None] = {}
        self._latest: dict[str, str] = {}
        self._count = dict.fromkeys(KINDS, 0)
        self._proposals = 0
        self._worker = {w["role"]: w for w in setup["workers"]}
        self.view = View(
            deadline=self.deadline,
            budget=setup["budget"],
            cap=setup["evidence_cap"],
            evidence_left=setup["evidence_cap"],
            workers=[dict(w) for w in setup["workers"]],
        )
        self._propose(0, [self._new_artifact("ticket")])
        self._propose(1, [self._new_artifact("pr_diff"), self._new_artifact("ci_run")])

    # -- truth helpers ----------------------------------------------------------------------

    def violated(self) -> list[str]:
        """The rules the release truly breaks now."""
        return [rid for rid in RULES if _broken(rid, self.state)]

    def _rework(self, rule: str) -> float:
        """Minutes a rework under ``rule`` takes."""
        return 60.0 * self.facts["rework_hours"][REWORKS[rule]]

    def _pipeline(self) -> schedule.Pipeline:
        """The timing state now, for :mod:`schedule`."""
        v = self.view
        return schedule.Pipeline(
            clock=self.clock,
            deadline=self.deadline,
            phase=v.phase,
            status=[p["status"] if p else None for p in v.current],
            reworks=list(self._reworks),
            violated=set(self.violated()),
            attempts=dict(self.attempts),
            hours=self.facts["rework_hours"],
        )

    def earliest_ship(self) -> float:
        """The earliest minute a safe ship approval could complete from now, for a supervisor
        who knows every fact (``inf`` when none lands before the deadline).
        """
        return schedule.ship_time(self._pipeline(), careful=False)

    def start_ship(self) -> float:
        """The minute a careful supervisor (one that reads each artifact before acting on it)
        starting with the episode would have shipped safely (``inf`` when it could not have).
        """
        facts = self.facts
        violated = [r for r in RULES if _broken(r, facts)]
        plan = schedule.at_start(
            self.deadline, set(violated), facts["fix_attempts"], facts["rework_hours"]
        )
        return schedule.ship_time(plan, careful=True)

    def _new_artifact(self, kind: str) -> str:
        ident = f"{KINDS[kind]}-{self.setup['id_bases'][kind] + self._count[kind]}"
        self._count[kind] += 1
        self._contents[ident] = None if kind in LIVING else self._snapshot(kind)
        self._latest[kind] = ident
        return ident

    def _snapshot(self, kind: str) -> dict[str, Any]:
        """Content of an immutable artifact, fixed when it is produced."""
        s, su = self.state, self.setup
        if kind == "ci_run":
            n, state = su["payments_tests"], s["payment_tests"]
            failed = su["failing_tests"] if state == "failing" else 0
            payments = {
                "passed": 0 if state == "disabled" else n - failed,
                "failed": failed,
                "skipped": n if state == "disabled" else 0,
            }
            return {
                "kind": kind,
                "status": "passed",
                "allowed_failures": ["payments"] if failed else [],
                "suites": {
                    "unit": {"passed": su["unit_tests"], "failed": 0, "skipped": 2},
                    "integration": {"passed": 64, "failed": 0, "skipped": 0},
                    "payments": payments,
                },
            }
        state, u = s["deploy_checks"], su["canary_u"]
        checks = dict.fromkeys(("smoke", "config_lint", "canary"), "passed")
        if state == "not_run":
            checks = dict.fromkeys(checks, "not_run")
        elif state == "failed":
            checks[su["failed_check"]] = "failed"
        rate = ERROR_BUDGET * ((1.5 + 1.5 * u) if s["canary_over_budget"] else (0.2 + 0.6 * u))
        return {
            "kind": kind,
            "checks": checks,
            "canary_error_rate": None if state == "not_run" else round(rate, 4),
            "error_budget": ERROR_BUDGET,
        }

    def _report(self, ident: str, kind: str) -> dict[str, Any]:
        content = self._contents[ident]
        if content is None:
            content = self._ticket() if kind == "ticket" else self._diff()
        return {
            "id": ident,
            **content,
            "rework_estimate_hours": self.facts["rework_hours"][kind],
            "inspected_at": _h(self.clock),
        }

    def _ticket(self) -> dict[str, Any]:
        t = self.setup["ticket"]
        if self.facts["p1_open"]:
            return {
                "kind": "ticket",
                "title": "Checkout declines payment for saved cards",
                "component": "checkout",
                "severity": "P1",
                "status": "open" if self.state["p1_open"] else "resolved",
            }
        return {"kind": "ticket", **t, "status": "open"}

    def _diff(self) -> dict[str, Any]:
        pr = self.setup["pr"]
        paths = ["checkout/api.py", "checkout/service.py", "web/cart.tsx"]
        migration = None
        if self.facts["migration_irreversible"] or pr["has_migration"]:
            drop = self.facts["migration_irreversible"]
            paths.append("db/migrations/0042_orders.py")
            migration = {
                "file": "db/migrations/0042_orders.py",
                "statements": [
                    "ALTER TABLE orders DROP COLUMN legacy_total"
                    if drop
                    else "ALTER TABLE orders ADD COLUMN discount_cents integer"
                ],
                "down_migration": not self.state["migration_irreversible"],
            }
        return {
            "kind": "pr_diff",
            "files_changed": pr["files_changed"],
            "paths": paths,
            "migration": migration,
        }

    def _propose(
        self, slot: int, refs: list[str], rule: str | None = None, at: float = 0.0
    ) -> None:
        """Put a proposal (a first one, or the revision after a rework under ``rule``) in
        ``slot``; what it says depends on the worker's archetype and the seed, never on facts.
        """
        line = LINES[slot]
        role = self.setup["slot2_role"] if slot == 2 else line.role
        worker, archetype = self._worker[role], self.facts["archetypes"][role]
        n, pool = self._proposals, self.setup["pool"]
        self._proposals += 1
        risk, confidence = workers.style(archetype, pool[(2 * n) % 32], pool[(2 * n + 1) % 32])
        by_kind = {kind_of(r): r for r in refs}
        old = self.view.current[slot]
        if rule is None:
            text = workers.claim(line.request, archetype, by_kind)
        else:
            name, kind = RULES[rule].name, REWORKS[rule]
            text = workers.REVISION.format(rule=rule, name=name, artifact=by_kind[kind])
        prop = {
            "id": f"p-{self.setup['id_bases']['proposal'] + n}",
            "slot": slot,
            "phase": PHASES[line.phase],
            "worker": worker["id"],
            "request": line.request,
            "claim": text,
            "refs": refs,
            "risk": risk,
            "confidence": confidence,
            "status": "pending",
            "revision": old["revision"] + 1 if old else 0,
            "submitted_at": _h(at),
            "blocked_under": None,
            "due": None,
        }
        v = self.view
        if old is not None:
            v.history.append(old)
        v.current[slot] = prop
        v.by_id[prop["id"]] = prop
        for ref in refs:
            v.known[ref] = kind_of(ref)
        self._tell(prop, archetype, by_kind, rule)

    def _open_phase(self, phase: int) -> None:
        v = self.view
        v.phase, v.evidence_left = phase, v.cap
        if phase == 1:
            self._propose(2, [self._new_artifact("deploy_log")], at=self.clock)
        else:
            refs = [self._latest[k] for k in ("pr_diff", "ci_run", "ticket", "deploy_log")]
            self._propose(3, refs, at=self.clock)

    def _arrive(self, due: float, slot: int, rule: str, justified: bool) -> None:
        """A worker's rework lands: the fix (if the block was justified and the attempt holds)
        and a revised proposal, which reads the same either way.
        """
        if justified and rule in self.violated():
            self.attempts[rule] -= 1
            self.epoch[rule] += 1
            if self.attempts[rule] <= 0:
                key, value = _FIX[rule]
                self.state[key] = value
        kind, v = REWORKS[rule], self.view
        refs = list(v.current[slot]["refs"])
        if kind in LIVING:
            for ref in refs:
                if v.known[ref] == kind:
                    v.reworked[ref] = due
        else:
            new = self._new_artifact(kind)
            refs = [new if v.known[r] == kind else r for r in refs]
        self._propose(slot, refs, rule=rule, at=due)

    def advance(self, minutes: float) -> None:
        """Let time pass; reworks that are due land, in order."""
        self.clock += minutes
        while self._reworks and self._reworks[0][0] <= self.clock:
            self._arrive(*self._reworks.pop(0))

    def _too_late(self) -> dict[str, Any]:
        """The report of a decision that would land after the deadline: it takes no effect."""
        return {"late": True, "message": "the deadline passed before this took effect"}

    # -- lies: worker claims the truth contradicts (see the manual's "Lies") ---------------
    # Matchers read an accepted call before it runs and only read; they are partials of
    # methods of this world over a frozen ``Claim`` (both pickle with the episode).

    def _tell(
        self, prop: dict[str, Any], archetype: str, by_kind: dict[str, str], rule: str | None
    ) -> None:
        """Mark each statement of a proposal just shown that the truth contradicts now."""
        if rule is None:
            made = [
                (s.kind, s.covers, tuple(by_kind[k] for k in s.about if k in by_kind))
                for s in STATEMENTS[prop["request"]]
                if archetype in s.archetypes
            ]
        else:
            made = [(FIX_NOT_HELD, (rule,), (by_kind[REWORKS[rule]],))]
        truly = self.violated()
        for kind, covers, about in made:
            rules = tuple(r for r in covers if r in truly)
            if rules:
                claim = Claim(kind, prop["id"], rules, covers, about, self.clock)
                self._mark(claim, f"{prop['id']} ({prop['request']}) says {prop['claim']!r}")

    def _tell_answer(self, answer: dict[str, Any]) -> None:
        """Mark an answer that gives the all-clear on a rule the release breaks now."""
        rule = answer["rule"]
        if answer["says"] == "ok" and rule in self.violated():
            claim = Claim(ALL_CLEAR_ANSWER, None, (rule,), (rule,), None, self.clock)
            self._mark(claim, f"{answer['worker']} answers {answer['text']!r}")

    def _mark(self, claim: Claim, said: str) -> None:
        """Tell the lie ``claim`` (``said``: who said what), with its two matchers."""
        truly = "; ".join(_TRULY[r].format(**self.state) for r in claim.rules)
        self.lies.tell(
            claim.kind,
            reconciled_by=partial(self._reconciles, claim),
            trusted_by=partial(self._trusts, claim),
            detail=f"{said}; truly {truly}",
            known=self._contradicted(claim),
        )

    def _contradicted(self, claim: Claim) -> bool:
        """Whether the supervisor holds a current report (one read after the artifact's last
        rework) on an artifact the claim speaks of that shows one of its rules broken.
        """
        v = self.view
        for ident in v.evidence:
            if claim.about is not None and ident not in claim.about:
                continue
            if v.inspected[ident] < v.reworked.get(ident, -1.0):
                continue
            if set(v.seen[ident]) & set(claim.rules):
                return True
        return False

    def _broken_at(self, rule: str, minute: float) -> bool:
        """Whether ``rule`` will still be broken at ``minute`` (reworks due by then landed)."""
        if not _broken(rule, self.state):
            return False
        fixes = sum(1 for due, _, r, ok in self._reworks if r == rule and ok and due <= minute)
        return fixes < self.attempts[rule]

    def _reconciles(self, claim: Claim, tool: str, args: Any) -> bool:
        """An inspection of an artifact the claim speaks of whose report will show one of its
        rules broken (a claim told while the supervisor held such a report is settled by the
        ledger: any call reconciles it).
        """
        kind = _INSPECTS.get(tool)
        if kind is None:
            return False
        ident = self.view.artifact(kind, getattr(args, args.id_field), args.slot)[0]
        if claim.about is not None and ident not in claim.about:
            return False
        if kind not in LIVING:
            shown = findings(self._contents[ident])
        else:  # a living artifact shows its rule as it stands when the report is made
            at = self.clock + self.tools[tool].minutes
            shown = [r for r in RULES if REWORKS[r] == kind and self._broken_at(r, at)]
        return bool(set(shown) & set(claim.rules))

    def _trusts(self, claim: Claim, tool: str, args: Any) -> bool:
        """An approval, with the claim in force when it lands, of the proposal that made it,
        of one citing an artifact it speaks of, or of the ship proposal; unless the supervisor
        blocked under a rule it vouches for (the proposal that made it; for an answer, any
        proposal since).
        """
        if tool != "approve_proposal":
            return False
        for b in self.blocks:
            if b["rule"] in claim.covers and (
                b["proposal"] == claim.proposal
                if claim.proposal is not None
                else b["at"] >= claim.told_at
            ):
                return False
        prop = self.view.proposal(args.proposal_id, args.slot)[0]
        if claim.about is None:
            cited = any(
                self.view.known[ref] in RULES[r].kinds for ref in prop["refs"] for r in claim.rules
            )
        else:
            cited = prop["id"] == claim.proposal or bool(set(claim.about) & set(prop["refs"]))
        if not (cited or prop["slot"] == SLOTS - 1):
            return False
        at = self.clock + self.tools[tool].minutes
        return any(self._broken_at(r, at) for r in claim.rules)

    # -- tools, in the order agents see them ----------------------------------------------------

    def _inspect(self, kind: str, ident: str | None, slot: int | None) -> dict[str, Any]:
        v = self.view
        ident = v.artifact(kind, ident, slot)[0]
        self._spend(COST[kind])
        report = self._report(ident, kind)
        v.evidence[ident] = report
        v.inspected[ident] = self.clock
        v.seen[ident] = found = findings(report)
        truly = self.violated()
        for rule in found:
            key = (rule, self.epoch[rule])
            if rule in truly and key not in self._revealed:
                self._revealed.add(key)
                self.rewards.add("revealed_violation")
        return report

    def _spend(self, units: int) -> None:
        v = self.view
        v.budget -= units
        v.spent += units
        v.evidence_left -= 1
        v.evidence_actions += 1
        self.rewards.add("budget", units)

    @tool(PrArgs, requires=(pr_known, afford_two), minutes=MINUTES["pr_diff"])
    def inspect_pr_diff(self, args: PrArgs) -> dict[str, Any]:
        """Read a PR's current diff: files, and any schema migration with whether it has a down
        migration. Shows the PR as it is now (a rework changes it). Costs 2 budget units.
        """
        return self._inspect("pr_diff", args.pr_id, args.slot)

    @tool(CiArgs, requires=(ci_known, afford_one), minutes=MINUTES["ci_run"])
    def inspect_ci_run(self, args: CiArgs) -> dict[str, Any]:
        """Read a CI run: its status and, per suite, tests passed, failed and skipped. A run
        never changes; a rework produces a new one. Costs 1 budget unit.
        """
        return self._inspect("ci_run", args.run_id, args.slot)

    @tool(TicketArgs, requires=(ticket_known, afford_one), minutes=MINUTES["ticket"])
    def inspect_ticket(self, args: TicketArgs) -> dict[str, Any]:
        """Read a ticket as it is now: title, component, severity, status. Costs 1 budget unit."""
        return self._inspect("ticket", args.ticket_id, args.slot)

    @tool(LogArgs, requires=(log_known, afford_one), minutes=MINUTES["deploy_log"])
    def inspect_deploy_log(self, args: LogArgs) -> dict[str, Any]:
        """Read a deploy log: each pre-deploy check's result, and the canary's error rate
        against the error budget. A log never changes; a rework produces a new one. Costs 1
        budget unit.
        """
        return self._inspect("deploy_log", args.log_id, args.slot)

    @tool(AskArgs, requires=(worker_known, afford_one), minutes=MINUTES["ask"])
    def ask_worker(self, args: AskArgs) -> dict[str, Any]:
        """Ask a worker about one safety rule. The answer is the worker's word, not evidence:
        workers can be wrong, or say what suits them. Costs 1 budget unit.
        """
        v = self.view
        worker = (
            v.workers[args.slot]
            if args.worker_id is None
            else next(w for w in v.workers if w["id"] == args.worker_id)
        )
        self._spend(COST["ask"])
        rule = QUESTIONS[args.question_type]
        archetype = self.facts["archetypes"][worker["role"]]
        says, text = workers.answer(archetype, worker["role"], rule, rule in self.violated())
        pool, n = self.setup["pool"], len(v.answers)
        answer = {
            "worker": worker["id"],
            "question": args.question_type,
            "rule": rule,
            "says": says,
            "text": text,
            "confidence": workers.style(archetype, 0.0, pool[(7 * n + 3) % 32])[1],
            "asked_at": _h(self.clock),
        }
        v.answers.append(answer)
        self._tell_answer(answer)
        return answer

    @tool(DecideArgs, requires=(pending,), minutes=MINUTES["approve"])
    def approve_proposal(self, args: DecideArgs) -> dict[str, Any]:
        """Approve a pending proposal. Approving every proposal of a phase opens the next phase;
        approving the ship proposal (slot 3) ships the release and ends the episode.
        """
        if self.clock >= self.deadline:
            return self._too_late()
        v = self.view
        prop = v.proposal(args.proposal_id, args.slot)[0]
        prop["status"] = "approved"
        v.approved += 1
        if prop["slot"] == SLOTS - 1:
            self.ship = {"at": self.clock, "violated": self.violated()}
            self.ended = "shipped"
            return {"approved": prop["id"], "shipped": True}
        phase_lines = [v.current[line.slot] for line in LINES if line.phase == v.phase]
        if all(p is not None and p["status"] == "approved" for p in phase_lines):
            self._open_phase(v.phase + 1)
        return {"approved": prop["id"], "shipped": False, "phase": PHASES[v.phase]}

    @tool(BlockArgs, requires=(pending, rule_in_scope), minutes=MINUTES["block"])
    def block_proposal(self, args: BlockArgs) -> dict[str, Any]:
        """Block a pending proposal under a safety rule. The owner of the rule's evidence
        reworks it (this takes the hours its artifacts estimate) and the proposal comes back as
        a revision. A block under a rule that was not broken is a false block: it costs, and the
        rework changes nothing.
        """
        v = self.view
        prop = v.proposal(args.proposal_id, args.slot)[0]
        rule = rule_of(args)
        justified = rule in self.violated()
        due = self.clock + self._rework(rule)
        prop["status"], prop["blocked_under"], prop["due"] = "blocked", rule, _h(due)
        bisect.insort(self._reworks, (due, prop["slot"], rule, justified))
        self.blocks.append(
            {"proposal": prop["id"], "rule": rule, "justified": justified, "at": self.clock}
        )
        if not justified:
            self.rewards.add("false_block")
        return {"blocked": prop["id"], "rule": rule, "revision_due_at": _h(due)}

    @tool(HoldArgs)
    def hold_release(self, args: HoldArgs) -> dict[str, Any]:
        """Hold the release. 'await_rework' pauses until the next revision lands (an hour if none
        is due); nothing about the release changes while it waits. 'no_safe_ship_in_window'
        stops the release for this window and ends the episode: right only when a careful
        supervisor could not have shipped safely before the deadline from the start; waiting
        until no ship can land does not make a hold right.
        """
        if args.reason_code == "no_safe_ship_in_window":
            earliest = self.earliest_ship()
            reachable = earliest < self.deadline
            # How a careful supervisor would have fared from the start matters only once no
            # safe ship can land any more (before that, the hold is unnecessary whatever it says).
            start = None if reachable else self.start_ship()
            self.hold = {
                "at": self.clock,
                "reason": args.reason_code,
                "violated": self.violated(),
                "earliest_ship_at": earliest if reachable else None,
                "safe_ship_reachable": reachable,
                "careful_ship_at": start if start is not None and start < self.deadline else None,
                "reachable_from_start": None if start is None else start < self.deadline,
            }
            self.ended = "held"
            return {"held": True, "final": True}
        due = self._reworks[0][0] if self._reworks else self.clock + MINUTES["idle_hold"]
        self.advance(due - self.clock)
        return {"held": True, "final": False, "resumed_at": _h(self.clock)}

    # -- views --------------------------------------------------------------------------------

    def observe(self) -> dict[str, Any]:
        """What the supervisor knows, from reports only."""
        v = self.view
        return {
            "phase": PHASES[v.phase],
            "phase_index": v.phase,
            "hours_elapsed": _h(self.clock),
            "hours_to_deadline": _h(v.deadline - self.clock),
            "review_budget_remaining": v.budget,
            "evidence_actions_remaining": v.evidence_left,
            "approvals_remaining": SLOTS - v.approved,
            "rules": [dict(r, evidence=list(r["evidence"])) for r in _PUBLIC_RULES],
            "workers": [dict(w) for w in v.workers],
            "proposals": [dict(p, refs=list(p["refs"])) for p in v.current if p is not None],
            "history": [dict(p, refs=list(p["refs"])) for p in v.history],
            "evidence": {k: _clone(r) for k, r in v.evidence.items()},
            "reworked": {k: _h(m) for k, m in v.reworked.items()},
            "answers": [dict(a) for a in v.answers],
        }

    def truth(self) -> dict[str, Any]:
        """The hidden state, for the judge and the record."""
        return {
            "clock": self.clock,
            "deadline": self.deadline,
            "violated": self.violated(),
            "state": dict(self.state),
            "facts": dict(self.facts),
            "fix_attempts_left": dict(self.attempts),
            "ship": self.ship,
            "hold": self.hold,
            "blocks": list(self.blocks),
            "budget_spent": self.view.spent,
            "evidence_actions": self.view.evidence_actions,
        }
