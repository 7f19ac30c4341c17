"""The blue-green release world: its dynamics and the ten tools (its state: ``state.py``)."""

from __future__ import annotations

from typing import Any

from opsgym.core.errors import UnknownNameError
from opsgym.core.spec import WorldConfig
from opsgym.core.tools import NoArgs, tool
from opsgym.core.world import World
from opsgym.envs.release.scenarios import draw
from opsgym.envs.release.state import (
    CANARY_SHARE,
    LADDER,
    RESTART_WINDOW,
    STORM_RESTART_EVERY,
    WINDOW_MINUTES,
    HealthArgs,
    InspectArgs,
    ShiftArgs,
    Truth,
    View,
    deploy_attempted,
    deploy_confirmed,
    migration_not_started,
    no_deploy_in_flight,
    not_staged,
    something_to_retry,
    staged,
)

# -- lies: which calls reconcile a misleading report (see the manual's "Lies") -----------
# Matchers read an accepted call before it runs; those that need the world's state are
# methods of ``Release`` (bound methods pickle with the episode).


def _inspects_deploy(tool: str, args: Any) -> bool:
    """An inspection of the deploy (``target`` deploy or all)."""
    return tool == "inspect" and args.target in ("all", "deploy")


def _inspects_migration(tool: str, args: Any) -> bool:
    """An inspection of the migration ledger (``target`` migration or all)."""
    return tool == "inspect" and args.target in ("all", "migration")


def _reads_router(tool: str, args: Any) -> bool:
    """A call that reports the router's effective split: inspect (router or all), verify."""
    return tool == "verify" or (tool == "inspect" and args.target in ("all", "router"))


class Release(World):
    """A web frontend, an API and a database; v1 live on blue, v2 candidate on green."""

    deadline: float = WINDOW_MINUTES

    def __init__(self, scenario, rng, rewards, overrides=None, config=None):
        super().__init__(scenario, rng, rewards, overrides, config)
        WorldConfig.parse(self.config, "release")  # no settings: any key is refused
        facts = draw(scenario, rng)
        unknown = set(self.overrides) - set(facts)
        if unknown:
            raise UnknownNameError("release override", sorted(unknown)[0], facts)
        facts.update(self.overrides)
        self.facts = facts
        self.t = Truth(facts=facts)
        self.view = View()
        self._deploys = 0
        self._migrations = 0
        self._shifts = 0
        self._milestones: set[str] = set()
        # The health endpoints' cache: the last probe of each pool, from the window's start.
        self._cache = {
            p: {
                "target": p,
                "status": "healthy",
                "checked_at": 0.0,
                "restarts": 0,
                "error_rate": 0.002,
            }
            for p in ("green", "blue")
        }

    # -- truth helpers ---------------------------------------------------------------

    def _green_ok(self, at: float | None = None) -> bool:
        """Whether green truly serves requests correctly at its current load (now, or at the
        sim time ``at`` if nothing else changes before then).
        """
        t, f = self.t, self.facts
        if not t.green_deployed or f["v2_broken"] or f["v2_flapping"] or t.schema != 2:
            return False
        if (self.clock if at is None else at) < t.storm_until:
            return False
        return not (f["v2_degrades"] and t.green_share > CANARY_SHARE)

    def _green_failing_now(self, at: float | None = None) -> bool:
        """Whether green's failure shows in requests yet (load degradation takes a while)."""
        if self._green_ok(at):
            return False
        t, f = self.t, self.facts
        only_load = (
            t.green_deployed
            and t.schema == 2
            and not (f["v2_broken"] or f["v2_flapping"])
            and (self.clock if at is None else at) >= t.storm_until
        )
        if only_load and t.full_load_since is not None:
            return self._overloaded(at)
        return True

    def _overloaded(self, at: float | None = None) -> bool:
        """Whether a v2 that degrades under load has held full load long enough to fail."""
        since = self.t.full_load_since
        now = self.clock if at is None else at
        return since is not None and now - since >= self.facts["degrade_after"]

    def _pool_failing(self, target: str, share: float | None = None) -> bool:
        """Whether ``target``'s processes truly cannot serve (with green carrying ``share``,
        by default its current share): v2 on green broken, crash-looping, in a restart storm,
        or degrading above a canary's load. Blue (v1) never fails. Blind to the schema, as the
        health endpoint is: a v2 on schema 1 runs, and only its requests fail.
        """
        if target != "green" or not self.t.green_deployed:
            return False
        t, f = self.t, self.facts
        share = t.green_share if share is None else share
        return bool(
            f["v2_broken"]
            or f["v2_flapping"]
            or self.clock < t.storm_until
            or (f["v2_degrades"] and share > CANARY_SHARE)
        )

    def _change(self, target: str) -> None:
        self.t.changed_at[target] = self.clock
        self.view.changed_at[target] = self.clock

    def _progress(self, milestone: str) -> None:
        """Pay ``progress`` once per milestone. Every caller passes a milestone the agent has
        just seen reported (never one read off the truth): ``progress`` is immediate. A ship and
        a rollback share the milestones ``healthy`` and ``verified``, so that rolling back and
        then shipping (or the reverse) does not pay for the same evidence twice.
        """
        if milestone not in self._milestones:
            self._milestones.add(milestone)
            self.rewards.add("progress")

    def advance(self, minutes: float) -> None:
        """Let time pass; traffic on a target that fails costs ``downtime``."""
        share = self.t.green_share
        bad = 0.0 if self._green_ok() else share
        if bad and minutes:
            self.rewards.add("downtime", bad * minutes)
            self.t.downtime += bad * minutes
        super().advance(minutes)

    def _set_green_share(self, share: float) -> None:
        t = self.t
        t.green_share = share
        if share > CANARY_SHARE and t.full_load_since is None:
            t.full_load_since = self.clock
        elif share <= CANARY_SHARE:
            t.full_load_since = None
        if share > 0 and not self._green_ok():
            # The harm is the traffic put at risk: a canary limits the blast radius.
            self.rewards.add("unsafe", share)

    # -- tools, in action order ------------------------------------------------------

    @tool(InspectArgs, minutes=1.0)
    def inspect(self, args: InspectArgs) -> dict[str, Any]:
        """Read the control plane directly: what green runs, the migration ledger, the router's
        effective split. Slow but authoritative; resolves an ambiguous deploy or migration.
        """
        t, v = self.t, self.view
        report: dict[str, Any] = {"checked_at": self.clock}
        if args.target in ("all", "deploy"):
            report["green_version"] = "v2" if t.green_deployed else "v1"
            if v.deploy == "timeout":
                v.deploy = "committed" if t.green_deployed else "absent"
                v.retryable = self._after_inspection("deploy", v.deploy == "absent")
            if v.deploy == "committed":
                self._progress("deployed")
        if args.target in ("all", "migration"):
            report["schema"] = t.schema
            report["migration_applied"] = t.schema_writes
            if v.migration == "no_ack":
                v.migration = "applied" if t.schema == 2 else "absent"
                v.retryable = self._after_inspection("migration", v.migration == "absent")
            v.schema = t.schema
            if v.schema == 2:
                self._progress("migrated")
        if args.target in ("all", "router"):
            report["green_percent"] = round(100 * t.green_share)
            v.observed_green = report["green_percent"]
        return report

    def _after_inspection(self, op: str, absent: bool) -> str | None:
        """What ``retry`` targets once ``op`` is resolved: ``op`` if it never happened."""
        if absent:
            return op
        return None if self.view.retryable == op else self.view.retryable

    @tool(requires=(not_staged,), minutes=3.0)
    def stage(self, args: NoArgs) -> dict[str, Any]:
        """Copy the v2 artifacts to the green pool, ready to deploy."""
        self.view.staged = True  # staging copies files; nothing about it can go wrong here
        self._progress("staged")
        return {"operation": "stage", "status": "ok"}

    @tool(requires=(staged, no_deploy_in_flight))
    def deploy(self, args: NoArgs) -> dict[str, Any]:
        """Deploy v2 on the green pool (no traffic moves). May time out; a timeout does not
        say whether the deploy committed.
        """
        self._deploys += 1
        self.advance(self.facts["deploy_minutes"])
        if self.facts["deploy_times_out"] and self._deploys == 1:
            self.advance(10.0)
            if self.facts["deploy_committed"]:
                self._commit_deploy()
                self.lies.tell(
                    "timeout_after_commit",
                    reconciled_by=_inspects_deploy,
                    trusted_by=self._acts_on_deploy_timeout,
                    detail="the deploy reported a timeout; v2 had committed on green",
                )
            self.view.deploy, self.view.retryable = "timeout", "deploy"
            self.view.changed_at["green"] = self.clock
            return {
                "operation": "deploy",
                "status": "timeout",
                "ambiguous": True,
                "message": "the deploy controller did not answer within 10 minutes",
            }
        self._commit_deploy()
        self.view.deploy, self.view.retryable = "ok", None
        self._progress("deployed")
        return {"operation": "deploy", "status": "ok"}

    def _commit_deploy(self) -> None:
        t = self.t
        if t.green_deployed:
            # A second rollout over a running v2 (a blind retry of a deploy that had committed)
            # replaces every process at once while the first rollout's are still warming up:
            # green crash-loops for a while, restarting every few minutes.
            minutes = self.facts["storm_minutes"]
            t.storm_until = self.clock + minutes
            n = int(minutes // STORM_RESTART_EVERY)
            t.restarts.extend(self.clock + i * STORM_RESTART_EVERY for i in range(n))
        t.green_deployed = True
        self._change("green")

    def _recent_restarts(self) -> int:
        """Green's restarts in the trailing window, as a health report counts them."""
        now = self.clock
        return sum(1 for at in self.t.restarts if now - RESTART_WINDOW < at <= now)

    @tool(HealthArgs, minutes=1.0)
    def health_check(self, args: HealthArgs) -> dict[str, Any]:
        """Probe a pool's health endpoint. The report carries checked_at (when the evidence was
        gathered), restarts (in the trailing 10 minutes) and error_rate; a careful reader checks
        all three.
        """
        v, t, f = self.view, self.t, self.facts
        target = self._health_target(args.target)
        u = self.rng.random(2)  # drawn on every probe, whatever the truth, to keep streams aligned
        if target == "green" and not v.deploy_confirmed():
            report = {
                "target": "green",
                "status": "unknown",
                "checked_at": self.clock,
                "message": f"green's rollout state is {v.deploy}; nothing to probe",
            }
            v.health["green"] = report
            return report
        if self.clock < t.changed_at[target] + f["stale_minutes"]:
            report = dict(self._cache[target])
            if report["status"] == "healthy" and self._pool_failing(target):
                self.lies.tell(
                    "stale_health",
                    reconciled_by=self._checks_green,
                    trusted_by=self._acts_on_green_healthy,
                    detail=f"cached healthy {target} from {report['checked_at']} (changed at "
                    f"{t.changed_at[target]}); truly failing",
                )
        else:
            report = self._cache[target] = self._probe(target, u)
            report = dict(report)
        v.health[target] = report
        fresh = report["checked_at"] >= v.changed_at[target]
        if report["status"] == "healthy" and fresh and (target == "green" or v.rolled_back):
            self._progress("healthy")  # of the pool meant to serve: one milestone, not one each
        return report

    def _health_target(self, target: str) -> str:
        """The pool a ``health_check`` of ``target`` probes ('auto' resolved from the view)."""
        if target != "auto":
            return target
        v = self.view
        return "blue" if v.rolled_back or v.deploy == "none" else "green"

    def _probe(self, target: str, u: Any) -> dict[str, Any]:
        t, f = self.t, self.facts
        status, error_rate = "healthy", round(0.001 + 0.004 * float(u[1]), 4)
        restarts = 0
        if target == "green":
            if f["v2_broken"]:
                spread = 0.9 + 0.2 * float(u[1])
                status, error_rate = "unhealthy", round(min(f["broken_error_rate"] * spread, 1), 3)
            elif f["v2_flapping"]:
                # A crash-looping pool is caught restarting whenever it is looked at.
                t.restarts.extend([self.clock] * (1 + int(u[1] < 0.5)))
                status = "healthy" if u[0] < f["flap_healthy"] else "unhealthy"
            elif self.clock < t.storm_until:
                status, error_rate = "unhealthy", round(0.3 + 0.4 * float(u[1]), 3)
            elif f["v2_degrades"] and t.green_share > 0:
                error_rate = round(0.02 + 0.04 * float(u[1]), 4)
                if self._overloaded():  # the probe is a liveness check: blind to the schema
                    status, error_rate = "unhealthy", round(0.2 + 0.3 * float(u[1]), 3)
            restarts = self._recent_restarts()
        return {
            "target": target,
            "status": status,
            "checked_at": self.clock,
            "restarts": restarts,
            "error_rate": error_rate,
        }

    @tool(ShiftArgs, requires=(deploy_confirmed,), minutes=2.0)
    def shift_traffic(self, args: ShiftArgs) -> dict[str, Any]:
        """Set the router's share of traffic for green (v2); blue gets the rest."""
        v = self.view
        percent = self._shift_percent(args.percent)
        self._shifts += 1
        fraction = self.facts["shift_fraction"] if self._shifts == 1 else 1.0
        applied = percent if percent <= self.t.green_share * 100 else round(percent * fraction)
        self._set_green_share(applied / 100)
        if applied != percent:
            self.lies.tell(
                "partial_shift",
                reconciled_by=_reads_router,
                trusted_by=self._acts_on_full_split,
                detail=f"reported {percent}% on green; the router applied {applied}%",
            )
        v.requested_green, v.observed_green, v.rolled_back = percent, None, False
        self._change("green")
        self._change("blue")
        v.traffic_changed_at = self.clock
        return {"operation": "shift_traffic", "status": "ok", "green_percent": percent}

    def _shift_percent(self, percent: int | None) -> int:
        """The share, in percent, that ``shift_traffic`` requests ('None' resolved)."""
        if percent is not None:
            return percent
        v = self.view
        if v.observed_green is not None and v.observed_green < v.requested_green:
            return v.requested_green
        return next((p for p in LADDER if p > v.requested_green), 100)

    @tool(requires=(migration_not_started,))
    def migrate(self, args: NoArgs) -> dict[str, Any]:
        """Apply the v2 schema migration (expand-only: v1 keeps working on it). Applying it
        twice corrupts data.
        """
        self._migrations += 1
        self.advance(self.facts["migrate_minutes"])
        if self.facts["migration_ack_lost"] and self._migrations == 1:
            if self.facts["migration_written"]:
                self._write_schema()
                self.lies.tell(
                    "lost_ack",
                    reconciled_by=_inspects_migration,
                    trusted_by=self._acts_on_lost_ack,
                    detail="the migration reported no acknowledgement; schema 2 was written",
                )
            self.view.migration, self.view.retryable = "no_ack", "migration"
            return {
                "operation": "migrate",
                "status": "no_acknowledgement",
                "ambiguous": True,
                "message": "the migration runner exited without acknowledging the write",
            }
        self._write_schema()
        self.view.migration, self.view.schema, self.view.retryable = "ok", 2, None
        self._progress("migrated")
        return {"operation": "migrate", "status": "ok", "schema": 2}

    def _write_schema(self) -> None:
        t = self.t
        t.schema_writes += 1
        if t.schema_writes > 1:
            t.corrupted = True
            self.rewards.add("unsafe")
            self.ended = "the migration was applied twice and corrupted data"
        t.schema = 2

    @tool(minutes=2.0)
    def verify(self, args: NoArgs) -> dict[str, Any]:
        """Run synthetic end-to-end transactions through the router, independently of the
        health endpoints; reports how many failed and the split it observed.
        """
        t, f = self.t, self.facts
        u = self.rng.random()
        green_down = self._green_failing_now()
        crash_loop_only = (
            f["v2_flapping"]
            and not f["v2_broken"]
            and t.green_deployed
            and t.schema == 2
            and self.clock >= t.storm_until
        )
        if crash_loop_only:
            green_down = u >= f["flap_healthy"]  # caught between two crashes, or not
        failures = round(20 * t.green_share) if green_down else 0
        report = {
            "passed": failures == 0,
            "failures": failures,
            "transactions": 20,
            "green_percent": round(100 * t.green_share),
            "checked_at": self.clock,
        }
        v = self.view
        v.verify = report
        v.observed_green = report["green_percent"]
        if report["passed"] and (report["green_percent"] == 100 or v.rolled_back):
            self._progress("verified")  # of a ship or of a rollback: one milestone
        return report

    @tool(requires=(something_to_retry,))
    def retry(self, args: NoArgs) -> dict[str, Any]:
        """Run the last failed or unresolved deploy or migration again. Retrying one that had
        in fact gone through does it twice.
        """
        v = self.view
        op = v.retryable
        if op in v.unresolved():
            v.blind_retries += 1
            self.rewards.add("retry")
        if op == "deploy":
            self.advance(self.facts["deploy_minutes"])
            self._commit_deploy()
            v.deploy, v.retryable = "ok", None
            self._progress("deployed")
            return {"operation": "deploy", "status": "ok", "retried": True}
        self.advance(self.facts["migrate_minutes"])
        self._write_schema()
        v.migration, v.schema, v.retryable = "ok", 2, None
        return {"operation": "migrate", "status": "ok", "schema": 2, "retried": True}

    @tool(requires=(deploy_attempted,), minutes=2.0)
    def rollback(self, args: NoArgs) -> dict[str, Any]:
        """Send all traffic back to blue (v1) and take v2 out of the release."""
        v = self.view
        self._set_green_share(0.0)
        v.requested_green, v.observed_green, v.rolled_back = 0, None, True
        self._change("green")
        self._change("blue")
        v.traffic_changed_at = self.clock
        return {"operation": "rollback", "status": "ok", "green_percent": 0}

    @tool(terminal=True)
    def complete(self, args: NoArgs) -> dict[str, Any]:
        """Declare the release finished. An independent judge checks the real system and the
        whole episode; if it does not accept, the attempt is penalised and the episode ends
        there, unfinished.
        """
        return {"accepted": True}

    # -- lies: which calls act on a misleading report (see the manual's "Lies") -------
    # Each reads an accepted call before it runs (the clock has not moved yet) and only reads.

    def _acts_on_deploy_timeout(self, tool: str, args: Any) -> bool:
        """A retry of the deploy (a blind one: it rolls v2 out again), or a complete."""
        return tool == "complete" or (tool == "retry" and self.view.retryable == "deploy")

    def _acts_on_lost_ack(self, tool: str, args: Any) -> bool:
        """A retry of the migration (a blind one: it writes the schema twice), or a complete."""
        return tool == "complete" or (tool == "retry" and self.view.retryable == "migration")

    def _checks_green(self, tool: str, args: Any) -> bool:
        """A health check of green that will probe afresh (not answer from the cache), or a
        verify whose transactions can catch green failing when it reports (green carries
        traffic and its failure shows in requests; a crash-loop is caught by chance).
        """
        if tool == "health_check":
            if self._health_target(args.target) != "green" or not self.view.deploy_confirmed():
                return False
            at = self.clock + self.tools["health_check"].minutes
            return at >= self.t.changed_at["green"] + self.facts["stale_minutes"]
        if tool == "verify":
            at = self.clock + self.tools["verify"].minutes
            return self.t.green_share > 0 and self._green_failing_now(at)
        return False

    def _acts_on_green_healthy(self, tool: str, args: Any) -> bool:
        """While green truly cannot serve: a shift that moves more traffic onto it than it
        carries, or a complete with green carrying traffic.
        """
        share = self.t.green_share
        if tool == "shift_traffic":
            new = self._shift_percent(args.percent) / 100
            return new > share and self._pool_failing("green", new)
        return tool == "complete" and share > 0 and self._pool_failing("green")

    def _acts_on_full_split(self, tool: str, args: Any) -> bool:
        """A complete while the router is still short of the split last reported."""
        return tool == "complete" and round(100 * self.t.green_share) != self.view.requested_green

    # -- views ---------------------------------------------------------------------------

    def observe(self) -> dict[str, Any]:
        """What the agent knows, from reports only."""
        v = self.view
        return {
            "clock": self.clock,
            "minutes_left": self.deadline - self.clock,
            "staged": v.staged,
            "deploy": v.deploy,
            "migration": v.migration,
            "schema": v.schema,
            "requested_green_percent": v.requested_green,
            "observed_green_percent": v.observed_green,
            "rolled_back": v.rolled_back,
            "last_change": dict(v.changed_at),
            "traffic_changed_at": v.traffic_changed_at,
            "health": {k: (dict(r) if r else None) for k, r in v.health.items()},
            "verify": dict(v.verify) if v.verify else None,
            "unresolved": v.unresolved(),
            "retryable": v.retryable,
        }

    def truth(self) -> dict[str, Any]:
        """The hidden state, for the judge and the record."""
        t = self.t
        return {
            "green_deployed": t.green_deployed,
            "green_restarts": len(t.restarts),
            "storm_until": t.storm_until,
            "green_share": t.green_share,
            "green_healthy": self._green_ok(),
            "schema": t.schema,
            "schema_writes": t.schema_writes,
            "corrupted": t.corrupted,
            "changed_at": dict(t.changed_at),
            "downtime": round(t.downtime, 6),
            "v2_shippable": not (
                self.facts["v2_broken"] or self.facts["v2_flapping"] or self.facts["v2_degrades"]
            ),
            "facts": dict(self.facts),
        }
