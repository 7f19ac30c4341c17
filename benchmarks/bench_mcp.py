"""MCP round trip: one world tool call over streamable HTTP on loopback.

The server is ``opsgym mcp --transport http --env release`` in a process of its own, as any MCP
client meets it; the client is the SDK's own ``Client`` on ``http://127.0.0.1:PORT/mcp``. Each
timed call is release's ``inspect`` on a running episode, from ``call_tool`` to the parsed
result; starting a new episode when one ends is outside the timer. Figures are the median and
the 99th percentile of the per-call times, for the 2026-07-28 protocol (the client's default)
and for the legacy initialize handshake that older hosts speak; beside them, the same call
through the face in process (``OpsgymMCP.call``, no transport) and ``Episode.step`` alone.

    python benchmarks/bench_mcp.py [--calls 2000] [--repeats 3]

``benchmarks/run.py`` adds these rows to its table (``rows(repeats)``; ``steps_per_s`` is one
over the median).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

import opsgym
from opsgym.core.registry import specs

clock = time.perf_counter
ENV, TOOL, ARGS = "release", "inspect", {"target": "all"}
MCP_TOOL = f"{ENV}_{TOOL}"
"""The tool's MCP name (always ``<env>_<tool>``: see ``opsgym.adapters.mcp``)."""
# Episodes start on train seeds, where a held-out family is refused (as on every face).
SCENARIOS = [s.name for s in specs()[ENV].scenarios if not s.held_out]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def http_server(env: str = ENV, timeout: float = 30.0):
    """``opsgym mcp --transport http`` in a subprocess; yields its URL, stops it on exit."""
    port = free_port()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "opsgym.cli", "mcp", "--transport", "http"]
            + ["--env", env, "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        try:
            deadline = time.monotonic() + timeout
            while True:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                    break
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise RuntimeError(f"the MCP server did not start: {log.read().decode()}")
                time.sleep(0.05)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def _client_times(url: str, calls: int, mode: str) -> list[float]:
    from mcp import Client

    times: list[float] = []
    async with Client(url, mode=mode) as client:
        await client.list_tools()
        episode_id, started = None, 0
        while len(times) < calls:
            if episode_id is None:
                scenario = SCENARIOS[started % len(SCENARIOS)]
                reply = await client.call_tool(
                    "start_episode", {"env": ENV, "scenario": scenario, "seed": started}
                )
                episode_id = json.loads(reply.content[0].text)["episode_id"]
                started += 1
            t0 = clock()
            reply = await client.call_tool(MCP_TOOL, {"episode_id": episode_id, **ARGS})
            times.append(clock() - t0)
            if reply.is_error or len(reply.content) > 1:  # rejected, or the episode ended
                episode_id = None
    return times


def round_trips(url: str, calls: int, mode: str = "auto") -> list[float]:
    """Seconds of each of ``calls`` tool calls over the SDK client (``mode``: auto, legacy)."""
    return anyio.run(_client_times, url, calls, mode)


def in_process(calls: int) -> tuple[list[float], list[float]]:
    """Seconds per call through ``OpsgymMCP.call`` (no transport), and per ``Episode.step``."""
    from opsgym.adapters.mcp import OpsgymMCP

    face = OpsgymMCP([ENV])
    faced: list[float] = []
    stepped: list[float] = []
    episode, started = None, 0
    for _ in range(calls):
        if episode is None or episode.done:  # the face's twin ends on the same call
            scenario, seed = SCENARIOS[started % len(SCENARIOS)], started
            started += 1
            reply = face.call("start_episode", {"env": ENV, "scenario": scenario, "seed": seed})
            episode_id = json.loads(reply.content[0].text)["episode_id"]
            episode = opsgym.make(ENV, scenario, seed)
        t0 = clock()
        face.call(MCP_TOOL, {"episode_id": episode_id, **ARGS})
        faced.append(clock() - t0)
        t0 = clock()
        episode.step(TOOL, dict(ARGS))
        stepped.append(clock() - t0)
    return faced, stepped


def summary(times: list[float]) -> dict:
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return {"median_us": statistics.median(ordered) * 1e6, "p99_us": p99 * 1e6}


def measure(calls: int, repeats: int) -> list[dict]:
    """One row per path: medians over ``repeats`` of each repeat's median and p99."""
    results: dict[str, list[dict]] = {}
    with http_server() as url:
        round_trips(url, min(calls, 200))  # warm both sides up
        for _ in range(repeats):
            for face, mode in (("mcp http", "auto"), ("mcp http legacy", "legacy")):
                results.setdefault(face, []).append(summary(round_trips(url, calls, mode)))
    for _ in range(repeats):
        faced, stepped = in_process(calls)
        results.setdefault("mcp in process", []).append(summary(faced))
        results.setdefault("core step", []).append(summary(stepped))
    rows = []
    for face, runs in results.items():
        median = statistics.median(r["median_us"] for r in runs)
        p99 = statistics.median(r["p99_us"] for r in runs)
        rows.append(
            {
                "env": ENV,
                "face": face,
                "tool": TOOL,
                "median_us": median,
                "p99_us": p99,
                "steps_per_s": 1e6 / median,
            }
        )
    return rows


def rows(repeats: int, calls: int = 1000) -> list[dict]:
    """Rows for ``benchmarks/run.py`` (none when the ``mcp`` extra is not installed)."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        print("bench_mcp: the mcp extra is not installed; skipped", file=sys.stderr)
        return []
    return [r for r in measure(calls, repeats) if r["face"] != "core step"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="timed calls per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args()
    table = measure(args.calls, args.repeats)
    print(f"{args.calls} calls of {ENV}.{TOOL}, medians of {args.repeats} repeats")
    print("| path | median (µs) | p99 (µs) |")
    print("|---|---:|---:|")
    for r in table:
        print(f"| {r['face']} | {r['median_us']:,.0f} | {r['p99_us']:,.0f} |")
    if args.json:
        args.json.write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
