"""The ``opsgym`` command line: list environments, run an episode, replay a record, evaluate,
audit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

import opsgym
from opsgym.command_errors import fail, need_extra
from opsgym.core.episode import jsonable
from opsgym.core.errors import OpsgymError
from opsgym.core.registry import specs

LOG_WIDTH = 200
"""Width of tables written to a log or a pipe rather than a terminal."""

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
console = Console()


def _short(value: Any, width: int = 90) -> str:
    text = json.dumps(value, sort_keys=True, separators=(", ", ": "))
    return text if len(text) <= width else text[: width - 1] + "…"


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
    policy: Annotated[
        str, typer.Option(help="random, oracle, ..., llm (with --model), llm:MODEL, planner:oracle")
    ] = "oracle",
    model: Annotated[
        str | None, typer.Option(help="With --policy llm: the model (or OPSGYM_LLM_MODEL).")
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(help="With --policy llm: the endpoint, up to /v1 (or OPSGYM_LLM_BASE_URL)."),
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Write the record (JSON) here.")] = None,
    quiet: Annotated[bool, typer.Option(help="Print only the outcome.")] = False,
) -> None:
    """Play one episode and print its timeline, what was true, and the verdict."""
    try:
        if policy == "llm":
            from opsgym.agents import play
            from opsgym.agents.llm import LLMAgent

            agent = LLMAgent(env, model=model, base_url=base_url)
            episode = play(opsgym.make(env, scenario, seed), agent)
        else:
            episode = opsgym.run(env, scenario, seed, policy)
    except OpsgymError as exc:
        fail(str(exc))
    record = episode.record()
    if not quiet:
        _print_timeline(record)
    verdict = episode.verdict
    outcome = verdict.outcome if verdict else "unfinished (no verdict)"
    console.print(
        f"outcome [bold]{outcome}[/]  return {episode.total_reward:+.2f}  "
        f"steps {episode.steps}  tokens {sum(e['tokens'] for e in record['events'])} "
        f"({record['token_source']})  hash {record['hash'][:12]}"
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
    if record["verdict"] is None:
        return
    verdict = Table("invariant", "held", "reason", title="Verdict")
    for inv in record["verdict"]["invariants"]:
        verdict.add_row(
            inv["name"], "[green]yes[/]" if inv["held"] else "[red]no[/]", inv["reason"]
        )
    console.print(verdict)


@app.command()
def replay(
    path: Annotated[Path, typer.Argument(help="A record written by `opsgym run`.")],
    strict: Annotated[
        bool,
        typer.Option(
            help="Also refuse (exit 1) a record made with forced facts, dense reward timing or "
            "a held-out family on a train seed: what a leaderboard must not accept."
        ),
    ] = False,
) -> None:
    """Recompute a recorded episode; say whether it matches or show the first difference."""
    try:
        record = json.loads(path.read_text())
        result = opsgym.replay(record)
    except (OSError, json.JSONDecodeError, OpsgymError) as exc:
        fail(f"cannot replay {path}: {exc}")
    for label in result.labels:
        console.print(f"[yellow]made with {label}[/]")
    if result.match:
        console.print(
            f"[green]match[/]: {len(record['events'])} events, hash {result.replayed_hash}"
        )
        if strict and result.labels:
            console.print("[red]not admissible[/]: the record matches, but see above")
            raise typer.Exit(1)
        return
    d = result.first_difference
    console.print(f"[red]differs[/] at step {d['step']}, field {d['field']!r}")
    console.print(f"  recorded: {_short(d['recorded'], 200)}")
    console.print(f"  replayed: {_short(d['replayed'], 200)}")
    raise typer.Exit(1)


@app.command()
def audit(
    env: Annotated[
        list[str] | None, typer.Option(help="Audit only this world (repeatable); all by default.")
    ] = None,
    episodes: Annotated[
        int,
        typer.Option(min=1, help="Episodes per policy (the leak test takes half as many seeds)."),
    ] = 100,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the full report (JSON) here.")
    ] = None,
    jobs: Annotated[
        int, typer.Option(min=1, help="Worlds audited at once, one process each.")
    ] = min(3, os.cpu_count() or 1),
) -> None:
    """Run each world's leak test, exploit suite, reward audit, seed attacks and store tampers;
    exit 1 if a bound fails.
    """
    from opsgym.audit import run_audit

    try:
        report = run_audit(env, episodes=episodes, jobs=jobs)
    except OpsgymError as exc:
        fail(str(exc))
    table = Table("world", "section", "check", "measured", "bound", "ok", title="opsgym audit")
    last: tuple[str, str] = ("", "")
    for world, section, check in report.rows():
        if last[0] and world != last[0]:
            table.add_section()
        table.add_row(
            world if world != last[0] else "",
            section if (world, section) != last else "",
            check.name,
            check.measured,
            check.bound,
            "[green]yes[/]" if check.passed else "[bold red]NO[/]",
        )
        last = (world, section)
    # A log (CI, a pipe) has no width to fit: keep each check on one line there.
    (console if console.is_terminal else Console(width=LOG_WIDTH)).print(table)
    failed = len(report.failures())
    verdict = "[green]passed[/]" if not failed else f"[bold red]{failed} checks failed[/]"
    console.print(
        f"audit {verdict}: {len(report.rows())} checks, {report.episodes} episodes per policy, "
        f"{report.split} seeds, {report.seconds:.1f} s"
    )
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(jsonable(report.to_dict()), indent=1))
        console.print(f"report written to {json_out}")
    if failed:
        raise typer.Exit(1)


def _register_eval() -> None:
    from opsgym.evaluation.cli import eval_command

    app.command("eval")(eval_command)


_register_eval()


def _register_mcp() -> None:
    # The SDK is an extra and slow to import: only `opsgym mcp` itself loads it.
    @app.command("mcp")
    def mcp_command(
        env: Annotated[
            list[str] | None, typer.Option(help="Serve this world (repeatable); all by default.")
        ] = None,
        transport: Annotated[str, typer.Option(help="stdio or http (streamable HTTP).")] = "stdio",
        host: Annotated[str, typer.Option(help="HTTP: address to listen on.")] = "127.0.0.1",
        port: Annotated[int, typer.Option(help="HTTP: port to listen on.")] = 8000,
    ) -> None:
        """Serve the worlds' tools to any MCP client (stdio, or streamable HTTP at /mcp)."""
        try:
            from opsgym.adapters.mcp import serve
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] not in {"mcp", "mcp_types", "uvicorn", "starlette"}:
                raise
            need_extra(exc, "mcp")
        try:
            serve(env, transport=transport, host=host, port=port)
        except OpsgymError as exc:
            fail(str(exc))


_register_mcp()


def _register_serve() -> None:
    # FastAPI and Uvicorn are the `server` extra: only `opsgym serve` loads them.
    @app.command("serve")
    def serve_command(
        host: Annotated[
            str, typer.Option(help="Address to listen on (loopback by default).")
        ] = "127.0.0.1",
        port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
        db: Annotated[
            str | None,
            typer.Option(
                help="Store: SQLite path or SQLAlchemy URL (default: OPSGYM_DB or the user's file)."
            ),
        ] = None,
        token: Annotated[
            str | None,
            typer.Option(
                help="Bearer token for all routes but /health; needed off loopback (OPSGYM_TOKEN)."
            ),
        ] = None,
        max_sessions: Annotated[
            int | None, typer.Option(help="Open sessions before a 503.")
        ] = None,
        env: Annotated[
            str | None, typer.Option(help="World of an OpenEnv session that names none.")
        ] = None,
        allowed_hosts: Annotated[
            list[str] | None,
            typer.Option(
                "--allowed-hosts",
                help="Without a token, a Host name to answer besides 127.0.0.1, localhost and "
                "[::1] (repeatable; DNS rebinding guard).",
            ),
        ] = None,
        runs_dir: Annotated[
            str | None,
            typer.Option(help="Runs folder: over HTTP trained policies are ppo:runs:NAME in it."),
        ] = None,
    ) -> None:
        """Serve the worlds: OpenEnv's protocol (/ws ...), REST sessions and the store (/api)."""
        try:
            from pydantic import ValidationError

            from opsgym.server import ServerSettings, serve
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] not in {
                "fastapi",
                "uvicorn",
                "pydantic_settings",
                "starlette",
            }:
                raise
            need_extra(exc, "server")
        given = {"host": host, "port": port, "db": db, "token": token, "max_sessions": max_sessions}
        if env is not None:
            given["default_env"] = env
        if allowed_hosts:
            given["allowed_hosts"] = allowed_hosts
        given["runs_dir"] = runs_dir
        try:
            settings = ServerSettings(**{k: v for k, v in given.items() if v is not None})
            if env is not None:
                opsgym.core.registry.spec(env)
        except ValidationError as exc:
            fail(
                "; ".join(
                    f"{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}"
                    for e in exc.errors()
                )
            )
        except OpsgymError as exc:
            fail(str(exc))
        shown = "127.0.0.1" if host == "localhost" else host
        typer.echo(
            f"opsgym {opsgym.__version__} serving on http://{shown}:{settings.port}  "
            f"(API docs /docs, OpenEnv /ws, REST /api; store: {settings.db or 'default'})"
        )
        from opsgym.server import ui

        typer.echo(
            f"workbench: http://{shown}:{settings.port}/ui/"
            if ui.built()
            else f"workbench: not built ({ui.NOT_BUILT.split(': ', 1)[1]})"
        )
        serve(settings)


_register_serve()


@app.command("openenv-yaml")
def openenv_yaml(
    out: Annotated[Path, typer.Option(help="The manifest to write.")] = Path("openenv.yaml"),
    check: Annotated[
        bool, typer.Option(help="Write nothing; exit 1 if OUT is not what the code would write.")
    ] = False,
    plugins: Annotated[
        bool, typer.Option(help="Describe the installed plugin worlds too (opsgym.envs group).")
    ] = False,
) -> None:
    """Write OpenEnv's manifest of the server (openenv.yaml) from the worlds' specs."""
    try:
        from opsgym.server.manifest import render
    except ModuleNotFoundError as exc:
        need_extra(exc, "server")
    worlds = specs() if plugins else opsgym.core.registry.package_specs()
    text = render(worlds.values())
    if check:
        if not out.is_file() or out.read_text() != text:
            console.print(
                f"[red]stale[/]: {out} is not what the code would write; run "
                f"`opsgym openenv-yaml --out {out}`"
            )
            raise typer.Exit(1)
        console.print(f"{out} is up to date ({len(worlds)} worlds)")
        return
    out.write_text(text)
    console.print(f"wrote {out} ({len(worlds)} worlds: {', '.join(worlds)})")


def _register_train() -> None:
    from opsgym.training.cli import train_app

    app.add_typer(train_app, name="train")


_register_train()


def _register_data() -> None:
    from opsgym.training.data_cli import data_app

    app.add_typer(data_app, name="data")


_register_data()


if __name__ == "__main__":
    app()
