"""The ``opsgym eval`` command (registered on the main Typer app in ``opsgym.cli``)."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from opsgym.command_errors import fail
from opsgym.core.errors import OpsgymError

# Outside a terminal (CI, a pipe) Rich would wrap tables at 80 columns.
console = Console(width=None if sys.stdout.isatty() else 160)


errors = Console(stderr=True, width=None if sys.stderr.isatty() else 160)
"""Progress lines outside a terminal go to stderr, beside the results on stdout."""

QUIET_S = 10.0
"""Outside a terminal, a progress line (on stderr) at most this often."""


class _Heartbeat(logging.Handler):
    """What ``opsgym eval`` shows while it plays: episodes done, and the latest turn.

    Slow policies (a local model: minutes an episode) log each turn under ``opsgym.agents``
    at ``INFO``; the latest message is shown beside the bar. Outside a terminal Rich draws no
    bar, so a plain line goes to stderr instead, at most every :data:`QUIET_S` seconds: a fast
    evaluation prints none, a slow one shows it is alive.
    """

    def __init__(self, bar: Progress, env: str):
        super().__init__(logging.INFO)
        self.bar, self.env = bar, env
        self.job: TaskID | None = None
        self.done = self.total = 0
        self.last = time.monotonic()
        self.live = console.is_terminal
        self.logger = logging.getLogger("opsgym.agents")
        self.level = self.logger.level

    def __enter__(self) -> _Heartbeat:
        self.logger.addHandler(self)
        if not self.logger.isEnabledFor(logging.INFO):
            self.logger.setLevel(logging.INFO)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.logger.removeHandler(self)
        self.logger.setLevel(self.level)

    def progress(self, stream: Iterable[Any], total: int) -> Iterator[Any]:
        """Wrap the harness's stream of finished episodes."""
        self.total = total
        self.job = self.bar.add_task(self.env, total=total, status="")
        for item in stream:
            self.done += 1
            self.bar.advance(self.job)
            self._say("")
            yield item

    def emit(self, record: logging.LogRecord) -> None:
        """Show a policy's message (the latest turn)."""
        self._say(record.getMessage())

    def _say(self, status: str) -> None:
        if self.live:
            if self.job is not None and status:
                self.bar.update(self.job, status=status)
            return
        now = time.monotonic()
        if now - self.last >= QUIET_S:
            self.last = now
            line = f"{self.env}: {self.done}/{self.total} episodes"
            text = line + (f"; {status}" if status else "")
            errors.print(text, highlight=False, soft_wrap=True, markup=False, emoji=False)


def eval_command(
    env: Annotated[str | None, typer.Option(help="Environment name.")] = None,
    policy: Annotated[
        list[str] | None, typer.Option("--policy", help="Policy to evaluate (repeatable).")
    ] = None,
    scenario: Annotated[
        list[str] | None,
        typer.Option("--scenario", help="Scenario (repeatable); mixed hides the family."),
    ] = None,
    split: Annotated[str, typer.Option(help="Seed split: train, dev or test.")] = "test",
    episodes: Annotated[int, typer.Option(help="Seeds per policy and scenario.")] = 200,
    seeds: Annotated[
        str,
        typer.Option(
            help="sealed: seeds drawn at the start from a space too large to tabulate, "
            "stored (the default); public: the split's first seeds, the same for everyone "
            "(tables say so).",
        ),
    ] = "sealed",
    seeds_from: Annotated[
        str | None,
        typer.Option(
            "--seeds-from",
            help="Play the sealed seeds of this stored evaluation, to compare policies "
            "evaluated apart on the same episodes.",
        ),
    ] = None,
    trials: Annotated[int, typer.Option(help="Runs per seed, for pass^k.")] = 1,
    workers: Annotated[int, typer.Option(help="Local worker processes (this one among them).")] = 1,
    ray: Annotated[
        str | None, typer.Option(help="Run on Ray: 'local', 'auto' or a cluster address.")
    ] = None,
    db: Annotated[
        str | None, typer.Option(help="Store: a SQLite path or a SQLAlchemy URL (or OPSGYM_DB).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Write results.json, episodes.csv, report.md, charts.")
    ] = None,
    name: Annotated[
        str | None, typer.Option(help="Evaluation name; a stored name resumes.")
    ] = None,
    verify: Annotated[
        str | None,
        typer.Option(
            "--verify",
            help="Replay every stored episode of NAME, recompute its figures, aggregates and "
            "root hash, and name what differs.",
        ),
    ] = None,
    root: Annotated[
        str | None,
        typer.Option(
            "--root",
            help="With --verify: the root hash published with the evaluation (its "
            "results.json); a store that no longer gives it fails.",
        ),
    ] = None,
    list_: Annotated[bool, typer.Option("--list", help="List stored evaluations.")] = False,
) -> None:
    """Evaluate policies on a world: every outcome with its interval, stored and replayable."""
    from opsgym.evaluation.harness import evaluate
    from opsgym.evaluation.report import costs_table, lies_table, table
    from opsgym.evaluation.runner import EvalConfig, check
    from opsgym.evaluation.verify import verify as run_verify
    from opsgym.store import open_store

    try:
        if list_:
            _list(db)
            return
        if verify is not None:
            result = run_verify(verify, db, expected_root=root)
            _print_verification(result)
            raise typer.Exit(result.exit_code)
        if env is None:
            fail("--env is required (see `opsgym list`).")
        # Bad input fails here, in one line, before a progress bar or a store is opened.
        check(
            EvalConfig(
                env,
                tuple(policy or ()),
                tuple(scenario or ["mixed"]),
                split,
                episodes,
                trials,
                seeds=seeds,
            )
        )
        open_store(db).close()
        with (
            Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                TextColumn("{task.fields[status]}", style="dim", markup=False),
                console=console,
                transient=True,
            ) as bar,
            _Heartbeat(bar, env) as beat,
        ):
            result = evaluate(
                env,
                policy or [],
                scenario or ["mixed"],
                split=split,
                episodes=episodes,
                trials=trials,
                workers=workers,
                ray=ray,
                db=db,
                name=name,
                out=out,
                progress=beat.progress,
                seeds=seeds,
                seeds_from=seeds_from,
            )
    except OpsgymError as exc:
        fail(str(exc))
    console.print(table(result))
    console.print(costs_table(result))
    lies = lies_table(result)
    if lies is not None:
        console.print(lies)
    console.print(
        f"{result.played} episodes played, {result.stored} stored as [bold]{result.name}[/]"
        + (f"; outputs in {out}" if out else "")
    )
    console.print(f"sealed: root {result.root}", highlight=False)


def _list(db: str | None) -> None:
    from opsgym.store import open_store

    with open_store(db) as store:
        t = Table("name", "env", "policies", "scenarios", "split", "episodes", "status", "updated")
        for e in store.evaluations():
            c = e["config"]
            t.add_row(
                e["name"],
                c.get("env", ""),
                ", ".join(c.get("policies", [])),
                ", ".join(c.get("scenarios", [])),
                c.get("split", ""),
                str(e.get("episodes", "")),
                e["status"],
                str(e.get("updated_at", "")),
            )
        console.print(t)


def _print_verification(result) -> None:
    colour = "red" if result.problems else "green"
    console.print(f"[{colour}]{result.matched}/{result.total} match[/] ({result.name})")
    console.print(f"root {result.root}", highlight=False)
    if result.sealed_root not in (None, result.root):
        console.print(f"[red]sealed root {result.sealed_root}[/]", highlight=False)
    for p in result.problems[:20]:
        if "message" in p:
            where = "" if p["episode"] is None else f"episode {p['episode']}: "
            console.print(
                f"  {where}{p['kind']} differs, field {p['field']!r}: {p['message']}",
                highlight=False,
                markup=False,
            )
            continue
        console.print(
            f"  episode {p['episode']} ({p['policy']}, seed {p['seed']}): {p['kind']} differs "
            f"at step {p['step']}, field {p['field']!r}: recorded "
            f"{json.dumps(p['recorded'], default=str)[:120]}, replayed "
            f"{json.dumps(p['replayed'], default=str)[:120]}",
            highlight=False,
            markup=False,
        )
    if len(result.problems) > 20:
        console.print(f"  ... and {len(result.problems) - 20} more differences")
