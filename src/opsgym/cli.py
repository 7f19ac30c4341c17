"""The ``opsgym`` command line: list environments, run an episode, replay a record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

import opsgym
from opsgym.core.errors import OpsgymError
from opsgym.registry import specs

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
console = Console()


def _short(value: Any, width: int = 90) -> str:
    text = json.dumps(value, sort_keys=True, separators=(", ", ": "))
    return text if len(text) <= width else text[: width - 1] + "…"


def _fail(message: str) -> None:
    console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(2)


@app.command("list")
def list_() -> None:
    """List environments, their scenario families and which are held out of training."""
    table = Table("env", "gym id", "scenario", "held out", "description", show_lines=False)
    for name, spec in specs().items():
        for i, s in enumerate(spec.scenarios):
            table.add_row(
                name if i == 0 else "",
                spec.gym_id if i == 0 else "",
                s.name,
                "yes" if s.held_out else "",
                s.description,
            )
    console.print(table)


@app.command()
def run(
    env: Annotated[str, typer.Option(help="Environment name.")] = "release",
    scenario: Annotated[str | None, typer.Option(help="Scenario family.")] = None,
    seed: Annotated[int, typer.Option(help="Episode seed.")] = 0,
    policy: Annotated[str, typer.Option(help="random, naive, oracle, ...")] = "oracle",
    out: Annotated[Path | None, typer.Option(help="Write the record (JSON) here.")] = None,
    quiet: Annotated[bool, typer.Option(help="Print only the outcome.")] = False,
) -> None:
    """Play one episode and print its timeline, what was true, and the verdict."""
    try:
        episode = opsgym.run(env, scenario, seed, policy)
    except OpsgymError as exc:
        _fail(str(exc))
    record = episode.record()
    if not quiet:
        _print_timeline(record)
    verdict = episode.verdict
    console.print(
        f"outcome [bold]{verdict.outcome}[/]  return {episode.total_reward:+.2f}  "
        f"steps {episode.steps}  hash {record['hash'][:12]}"
    )
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(record, indent=1))
        console.print(f"record written to {out}")


def _print_timeline(record: dict[str, Any]) -> None:
    console.print(f"[bold]{record['env']}[/] / {record['scenario']} / seed {record['seed']}")
    table = Table("step", "t", "call", "what the tool reported", "reward")
    for e in record["events"]:
        args = "" if not e["args"] else _short(e["args"], 30)
        said = f"[red]rejected:[/] {e['rejected']}" if e["rejected"] else _short(e["report"])
        table.add_row(
            str(e["step"]),
            f"{e['clock']:.0f}",
            f"{e['tool']}{args}",
            said,
            f"{sum(e['reward'].values()):+.2f}",
        )
    console.print(table)
    truth = Table("step", "what was true (changes)", title="After the end: the truth")
    before: dict[str, Any] = {}
    for e in record["events"]:
        now = {k: v for k, v in e["truth"].items() if k != "judge"}
        changed = {k: v for k, v in now.items() if before.get(k) != v}
        if changed:
            truth.add_row(str(e["step"]), _short(changed, 120))
        before = now
    console.print(truth)
    verdict = Table("invariant", "held", "reason", title="Verdict")
    for inv in record["verdict"]["invariants"]:
        verdict.add_row(
            inv["name"], "[green]yes[/]" if inv["held"] else "[red]no[/]", inv["reason"]
        )
    console.print(verdict)


@app.command()
def replay(path: Annotated[Path, typer.Argument(help="A record written by `opsgym run`.")]) -> None:
    """Recompute a recorded episode; say whether it matches or show the first difference."""
    try:
        record = json.loads(path.read_text())
        result = opsgym.replay(record)
    except (OSError, json.JSONDecodeError, OpsgymError) as exc:
        _fail(f"cannot replay {path}: {exc}")
    if result.match:
        console.print(
            f"[green]match[/]: {len(record['events'])} events, hash {result.replayed_hash}"
        )
        return
    d = result.first_difference
    console.print(f"[red]differs[/] at step {d['step']}, field {d['field']!r}")
    console.print(f"  recorded: {_short(d['recorded'], 200)}")
    console.print(f"  replayed: {_short(d['replayed'], 200)}")
    raise typer.Exit(1)


if __name__ == "__main__":
    app()
