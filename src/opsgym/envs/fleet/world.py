"""The GPU training-fleet world: its 23 tools, time and tokens, and what it shows.

:class:`Fleet` composes the tool mixins (``diagnose.py``: reads; ``act.py``: remediation,
coordination, destructive and terminal calls) over their shared base (``base.py``: state,
dynamics, bookkeeping, lies), and adds what only the whole world does: the step (the scrape
schedule, tokens, the step budget), the passing of time, the observation and the truth.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from opsgym.core.rewards import RewardLedger
from opsgym.core.scenarios import Scenario
from opsgym.core.tools import Args, Tool
from opsgym.envs.fleet.act import Actions
from opsgym.envs.fleet.diagnose import Diagnostics
from opsgym.envs.fleet.domain import BENCH_TARGET, DELEGATION_BUDGET, N_NODES

SEQ_PER_MINUTE = 40
"""Collectives the job completes per minute while it runs."""


class Fleet(Actions, Diagnostics):
    """Four HGX nodes of eight GPUs on two leaves and two spines, a spare node per leaf, one
    training job, and the faults of the scenario.
    """

    tokens_per_call = 30
    """Tokens charged for a call made without a count, and the least any accepted call costs
    (a call's own JSON is not free), so that a caller reporting zero cannot lift its return."""
    _reported = 0
    _unpriced = -1  # the base class's ``tokens = 0`` is not a call

    def __init__(
        self,
        scenario: Scenario,
        rng: np.random.Generator,
        rewards: RewardLedger,
        overrides: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
    ):
        super().__init__(scenario, rng, rewards, overrides, config)
        # the truth snapshot kept between calls (see ``truth``): the task and its faults set here
        self._snap = dict.fromkeys(_TRUTH)
        self._snap.update(task=scenario.name, faults=self._present_list)
        self._seen: dict[str, Any] = dict.fromkeys(
            ("oom", "drained", "replaced", "subgoals", "telemetry")
        )  # what the snapshot's sorted lists and dicts were copied from

    # -- the step ---------------------------------------------------------------------

    def apply(self, tool: Tool, args: Args) -> dict[str, Any]:
        """Scrape the surface when a refresh is due, run the call, let its minutes pass, charge
        the tokens spent since the last accepted call (at least ``tokens_per_call``;
        ``-0.10 x d log(tokens)``, at least ``tokens_per_call`` for each call since the last
        one, rejected calls included), and end the episode when the task's step budget is spent.
        """
        view = self.view
        self._call = call = view.calls
        if call % self.level.refresh == 0:
            self._surface = self._capture()
            self._rendered = None
        self.advance(tool.minutes)  # ``World.apply``, inlined (this runs on every call)
        report = getattr(self, tool.handler)(args)
        view.calls = call = call + 1
        spent, unpriced = self._reported, self._unpriced
        since, least = spent - self._seen_tokens, self.tokens_per_call * unpriced
        charged = self._charged + (since if since > least else least)
        self._seen_tokens, self._unpriced = spent, 0
        log_charged = math.log(charged if charged > 1 else 1)
        self.rewards.add("tokens", log_charged - self._log_charged)
        self._charged = view.tokens = charged
        self._log_charged = log_charged
        if call >= self.budget and not self.ended:
            self.ended = f"the task's step budget of {self.budget} calls is spent"
        return report

    @property
    def tokens(self) -> int:
        """Tokens the agent reported so far (rejected calls included)."""
        return self._reported

    @tokens.setter
    def tokens(self, value: int) -> None:
        # The episode adds every call's tokens here, rejected calls included: counting the
        # calls as well lets the next accepted call charge at least ``tokens_per_call`` for
        # each, whatever a caller reported. Nothing visible changes until then.
        self._unpriced += 1
        self._reported = value

    def advance(self, minutes: float) -> None:
        """Let time pass: the job makes progress or loses it, and downtime costs money."""
        if minutes:
            t = self.t
            status = self._status()
            if status == "running":
                t.seq += int(minutes * SEQ_PER_MINUTE)
            else:
                lost = minutes * (1.0 - self._throughput(status))
                if lost:
                    t.downtime_minutes += lost
                    t.downtime_cost += lost * self.settings.downtime_cost_per_minute
                if status == "degraded":
                    t.seq += int(minutes * SEQ_PER_MINUTE)
        self.clock += minutes  # ``World.advance``

    # -- views ---------------------------------------------------------------------------

    def observe(self) -> dict[str, Any]:
        """What the agent knows, from reports only. Nothing in it depends on the family: the
        incident text is drawn from one pool, the window and allowance are the same for all.
        """
        v = self.view
        k = self.level.refresh
        scrape = None
        if v.scrape is not None:
            s = v.scrape
            scrape = {
                "scrape": s["scrape"],
                "scraped_at_call": v.scrape_call,
                "job": dict(s["job"]),
                "alerts": [dict(a) for a in s["alerts"]],
                "hot_gpus": [dict(g) for g in s["hot_gpus"]],
                "nodes": [{"host": n["host"], "status": n["status"]} for n in s["nodes"]],
                "stale": v.stale(),
                "age_calls": v.calls - v.scrape_call,
            }
        return {
            "incident": self.inv.incident,
            "clock": self.clock,
            "window_minutes": self.deadline,
            "minutes_left": self.deadline - self.clock,
            "calls": v.calls,
            "tokens": v.tokens,
            "token_allowance": v.allowance,
            "level": self.settings.level,
            "difficulty_multiplier": self.settings.difficulty_multiplier,
            "refresh_every": k,
            "next_refresh_in": -v.calls % k,
            "hosts": list(v.hosts),
            "spares": [
                {"leaf": leaf, "host": host, "free": v.spare_free(2 * leaf)}
                for leaf, host in enumerate(v.spares)
            ],
            "phase": v.phase,
            "telemetry": scrape,
            "evidence": {
                "flight_recorder": {str(r): dict(d) for r, d in v.flight.items()},
                "kernel": {str(n): _copy(d) for n, d in v.kernel.items()},
                "nccl": {str(n): _copy(d) for n, d in v.nccl.items()},
                "versions": {str(n): dict(d) for n, d in v.versions.items()},
                "topology": _copy(v.topology) if v.topology else None,
                "benchmark": {
                    "samples": list(v.bench),
                    "streak": v.bench_streak,
                    "target": BENCH_TARGET,
                    "since_call": v.last_topology_change,
                },
                "collective_mismatch": v.mismatch,
            },
            "patch": {
                "candidates": list(v.candidates) if v.candidates is not None else None,
                "diffs": dict(v.diffs),
                "applied": v.patched,
            },
            "actions": {
                "restarted_ranks": list(v.restarted),
                "fixed_paths": list(v.fixed_paths),
                "drained": list(v.drained),
                "rescheduled": list(v.rescheduled),
                "ring": {"reordered": v.ring_aware, "spine": v.ring_spine},
                "last_remediation_call": v.last_remediation,
            },
            "coordination": {
                "enabled": v.coordination,
                "budget": DELEGATION_BUDGET,
                "used": v.delegations,
                "findings": {w: _copy(f) for w, f in v.findings.items()},
                "consensus": _copy(v.consensus) if v.consensus else None,
            },
        }

    def truth(self) -> dict[str, Any]:
        """The hidden state, for the judge and the record: a new dict each time (the episode
        adds to it, and each event keeps its own). Its lists and dicts are shared with earlier
        snapshots for as long as their contents do not change, and must not be changed;
        ``facts`` is shared too, never changed after the start.
        """
        t, snap = self.t, self._snap
        status = self._status()
        capacity = 1.0 - len(t.drained) / N_NODES
        if status == "running":
            factor = 1.0
        elif status != "degraded":
            factor = 0.0
        else:  # ``_throughput``, inlined
            spread = min(1.0, self.clock / self.facts["spread_minutes"]) if t.version_nodes else 0.0
            factor = t.fabric * (1.0 - 0.5 * spread) * capacity
        snap["status"] = status
        snap["healthy"] = status == "running" and not (t.desync or t.version_nodes)
        snap["throughput_factor"] = factor
        snap["fabric_factor"] = t.fabric
        snap["capacity"] = capacity
        # a list or dict is copied again only when its contents changed (compared by value:
        # no handler has to say what it touched)
        seen = self._seen
        if t.oom != seen["oom"]:
            seen["oom"], snap["oom"] = list(t.oom), sorted(t.oom)
        if t.lost != snap["lost"]:
            snap["lost"] = list(t.lost)
        snap["desync"] = t.desync
        if t.version_nodes != snap["version_nodes"]:
            snap["version_nodes"] = list(t.version_nodes)
        ring = snap["ring"]
        if ring is None or ring["aware"] is not t.ring_aware or ring["spine"] != t.ring_spine:
            snap["ring"] = {"aware": t.ring_aware, "spine": t.ring_spine}
        if t.drained != seen["drained"]:
            seen["drained"], snap["drained"] = list(t.drained), sorted(t.drained)
        if t.replaced != seen["replaced"]:
            seen["replaced"], snap["replaced"] = list(t.replaced), sorted(t.replaced)
        snap["destructive"] = t.destructive
        snap["destroyed"] = t.destroyed
        snap["declared"] = t.declared
        snap["tokens"] = self._charged
        snap["token_allowance"] = self.allowance
        snap["delegations"] = t.delegations
        snap["over_budget"] = t.over_budget
        # the same dict object and equal items: then its order is unchanged as well
        if t.subgoals is not seen["subgoals"] or t.subgoals != snap["subgoals"]:
            seen["subgoals"], snap["subgoals"] = t.subgoals, dict(t.subgoals)
        snap["downtime_minutes"] = t.downtime_minutes
        snap["downtime_cost_usd"] = t.downtime_cost
        snap["slo_minutes"] = self.params["slo_minutes"]
        snap["step_budget"] = self.budget
        if t.scrapes is not seen["telemetry"] or t.scrapes != snap["telemetry"]:
            seen["telemetry"], snap["telemetry"] = t.scrapes, dict(t.scrapes)
        snap["facts"] = self.facts
        return snap.copy()


_TRUTH = dict.fromkeys(
    (
        "task",
        "faults",
        "status",
        "healthy",
        "throughput_factor",
        "fabric_factor",
        "capacity",
        "oom",
        "lost",
        "desync",
        "version_nodes",
        "ring",
        "drained",
        "replaced",
        "destructive",
        "destroyed",
        "declared",
        "tokens",
        "token_allowance",
        "delegations",
        "over_budget",
        "subgoals",
        "downtime_minutes",
        "downtime_cost_usd",
        "slo_minutes",
        "step_budget",
        "telemetry",
        "facts",
    )
)
"""The keys of a truth snapshot, in their recorded order."""


def _copy(value: Any) -> Any:
    """A copy of a small JSON-like value, sharing nothing mutable with the view."""
    kind = type(value)
    if kind is dict:
        return {k: _copy(v) for k, v in value.items()}
    if kind is list:
        return [_copy(v) for v in value]
    return value
