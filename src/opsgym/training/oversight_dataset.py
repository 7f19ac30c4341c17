"""LLM training and evaluation data for the oversight world, as JSONL.

Each row is one episode start: the chat prompt rendered from the first observation (``prompt``)
and the reset arguments that recreate it (``family``, ``seed``, ``difficulty``,
``archetype_mix``), plus ``env`` and ``split``. Three files:

* ``train.jsonl``: training families (never a held-out one) on ``train`` seeds;
* ``eval_seen.jsonl``: the same families on ``test`` seeds;
* ``eval_unseen.jsonl``: the held-out families on other ``test`` seeds.

``family`` labels the row for analysis only: the prompt never names it, and since nothing an
agent sees before its first inspection depends on the family, two rows with one seed and one
config would carry the same prompt. So no seed repeats within a file (nor between the two eval
files). Difficulty and archetype mix cycle over every combination of the given lists, within
each family.

    python -m opsgym.training.oversight_dataset --out data/oversight --train 4000 --eval 400

The prompt is the generic renderer's (:func:`opsgym.adapters.toolcalls.render_observation`)
with the world's brief (:func:`render`). It lives above the worlds, as every face does: a world
imports nothing but core.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from opsgym.adapters.toolcalls import render_observation
from opsgym.core.registry import make
from opsgym.core.scenarios import seeds
from opsgym.envs.oversight.prompt import BRIEF
from opsgym.envs.oversight.scenarios import ARCHETYPE_MIXES, DIFFICULTIES, SCENARIOS

FILES = {"train": "train.jsonl", "eval_seen": "eval_seen.jsonl", "eval_unseen": "eval_unseen.jsonl"}
UNSEEN_START = 1_000_000
"""The first seed ``eval_unseen`` rows may use (``eval_seen`` rows start at 0)."""


def render(obs: dict[str, Any], tools: list[dict[str, Any]] | None = None) -> list[dict[str, str]]:
    """Chat messages (system, user) for the supervisor's next call.

    Args:
        obs: ``Episode.observe()``.
        tools: ``Episode.tools`` (OpenAI-style schemas) to list in the system message; leave
            out when the serving stack passes tools natively.
    """
    return render_observation("oversight", BRIEF, obs, tools)


def reset_args(row: dict[str, Any]) -> dict[str, Any]:
    """The ``opsgym.make`` keyword arguments that recreate a row's episode."""
    return {
        "scenario": row["family"],
        "seed": row["seed"],
        "config": {"difficulty": row["difficulty"], "archetype_mix": row["archetype_mix"]},
    }


def rows(
    split: str,
    n: int,
    *,
    difficulties: Sequence[str] = tuple(DIFFICULTIES),
    mixes: Sequence[str] = tuple(ARCHETYPE_MIXES),
    tools: bool = True,
) -> Iterator[dict[str, Any]]:
    """``n`` rows of ``split`` (``train``, ``eval_seen`` or ``eval_unseen``).

    Families take turns; row ``i`` takes the ``i``-th seed of the split's seed set (the
    unseen rows start at seed ``UNSEEN_START``), so no seed repeats within a file or between
    the eval files, and train and eval seeds never overlap.
    """
    if split not in FILES:
        raise ValueError(f"split must be one of {sorted(FILES)}, got {split!r}")
    families = [
        s.name for s in SCENARIOS if not s.mixture and s.held_out == (split == "eval_unseen")
    ]
    seed_split = "train" if split == "train" else "test"
    pool = seeds(seed_split, n, start=UNSEEN_START if split == "eval_unseen" else 0)
    settings = list(itertools.product(difficulties, mixes))
    for i in range(n):
        family = families[i % len(families)]
        difficulty, mix = settings[(i // len(families)) % len(settings)]
        row = {
            "env": "oversight",
            "split": split,
            "family": family,
            "seed": pool[i],
            "difficulty": difficulty,
            "archetype_mix": mix,
        }
        episode = make("oversight", **reset_args(row))
        row["prompt"] = render(episode.observe(), episode.tools if tools else None)
        yield row


def generate(
    out: str | Path,
    *,
    n_train: int = 2000,
    n_eval: int = 200,
    difficulties: Sequence[str] = tuple(DIFFICULTIES),
    mixes: Sequence[str] = tuple(ARCHETYPE_MIXES),
    tools: bool = True,
) -> dict[str, Path]:
    """Write the three JSONL files under ``out``; return their paths by split."""
    for d in difficulties:
        if d not in DIFFICULTIES:
            raise ValueError(f"unknown difficulty {d!r}; known: {sorted(DIFFICULTIES)}")
    for m in mixes:
        if m not in ARCHETYPE_MIXES:
            raise ValueError(f"unknown archetype mix {m!r}; known: {sorted(ARCHETYPE_MIXES)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for split, name in FILES.items():
        n = n_train if split == "train" else n_eval
        path = paths[split] = out / name
        with path.open("w") as f:
            for row in rows(split, n, difficulties=difficulties, mixes=mixes, tools=tools):
                f.write(json.dumps(row, separators=(",", ":")) + "\n")
    return paths


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description="Write oversight JSONL datasets.")
    parser.add_argument("--out", type=Path, required=True, help="directory for the files")
    parser.add_argument("--train", type=int, default=2000, help="rows in train.jsonl")
    parser.add_argument("--eval", type=int, default=200, help="rows in each eval file")
    parser.add_argument("--difficulty", nargs="+", default=list(DIFFICULTIES))
    parser.add_argument("--mix", nargs="+", default=list(ARCHETYPE_MIXES))
    parser.add_argument("--no-tools", action="store_true", help="leave tool schemas out")
    args = parser.parse_args(argv)
    paths = generate(
        args.out,
        n_train=args.train,
        n_eval=args.eval,
        difficulties=args.difficulty,
        mixes=args.mix,
        tools=not args.no_tools,
    )
    for split, path in paths.items():
        print(f"{split}: {path}")


if __name__ == "__main__":
    main()
