"""What the tool-calling face costs per turn, as a multiple of one ``Episode.step``.

Per world, over uniformly drawn legal calls on ``mixed`` episodes (choice and resets untimed):

* ``step``: ``Episode.step`` (validation, the world, the record): the unit;
* ``render``: ``render_messages(episode, tools_in_prompt=False)``, the prompt of the next turn
  (the system message is cached; the state is rendered anew);
* ``parse native``: ``parse_reply`` of an OpenAI message dict with that call in ``tool_calls``;
* ``parse text``: ``parse_reply`` of a reply with three ``<tool_call>`` blocks and some prose;
* ``turn``: ``run_turn`` of a parsed one-call reply (the step plus the face's bookkeeping).

``benchmarks/run.py`` adds these rows (``steps_per_s`` is operations per second; ``vs_step`` the
time of one as a multiple of one step). Alone:

    python benchmarks/bench_toolcalls.py [--steps 4000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics

import numpy as np

import opsgym
from _loop import clock
from opsgym.adapters import toolcalls as tc
from opsgym.core.registry import catalogue, legal_actions, specs

OPS = ("step", "render", "parse native", "parse text", "turn")


def _messages(name: str, args: dict) -> tuple[dict, str]:
    native = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        ],
    }
    block = "<tool_call>" + json.dumps({"name": name, "arguments": args}) + "</tool_call>"
    return native, "I will check before acting.\n" + "\n".join([block] * 3)


def measure(env: str, steps: int, seed: int) -> dict[str, float]:
    """Mean seconds per operation over ``steps`` random legal calls."""
    calls = [(tool.name, args.model_dump(mode="json")) for tool, args in catalogue(env)]
    rng = np.random.default_rng(seed)
    spent = dict.fromkeys(OPS, 0.0)
    episode = twin = None
    for i in range(steps):
        if episode is None or episode.done or twin.done:
            episode = opsgym.make(env, "mixed", seed * 100_000 + i)
            twin = opsgym.make(env, "mixed", seed * 100_000 + i)
        name, args = calls[int(rng.choice(legal_actions(episode) or [len(calls) - 1]))]
        native, text = _messages(name, args)
        t0 = clock()
        episode.step(name, args)
        t1 = clock()
        tc.render_messages(episode, tools_in_prompt=False)
        t2 = clock()
        reply = tc.parse_reply(native)
        t3 = clock()
        tc.parse_reply(text)
        t4 = clock()
        tc.run_turn(twin, reply, 10)
        t5 = clock()
        for op, (a, b) in zip(OPS, [(t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5)], strict=True):
            spent[op] += b - a
    return {op: s / steps for op, s in spent.items()}


def rows(repeats: int, steps: int = 4000) -> list[dict]:
    """Rows for ``benchmarks/run.py``: each operation's rate and its cost in steps."""
    out = []
    for env in specs():
        runs = [measure(env, steps, i) for i in range(repeats)]
        per = {op: statistics.median(r[op] for r in runs) for op in OPS}
        for op in OPS[1:]:
            out.append(
                {
                    "env": env,
                    "face": f"toolcalls {op}",
                    "steps_per_s": 1.0 / per[op],
                    "us": per[op] * 1e6,
                    "vs_step": per[op] / per["step"],
                    "step_us": per["step"] * 1e6,
                }
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"medians of {args.repeats} runs of {args.steps} random legal calls on mixed episodes")
    print("| env | one step (µs) | operation | µs | × one step |")
    print("|---|---:|---|---:|---:|")
    for r in rows(args.repeats, args.steps):
        print(
            f"| {r['env']} | {r['step_us']:.1f} | {r['face'].removeprefix('toolcalls ')} | "
            f"{r['us']:.1f} | {r['vs_step']:.2f} |"
        )


if __name__ == "__main__":
    main()
