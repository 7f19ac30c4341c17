"""Why PPO stops short of the oracle: the diagnoses of ``benchmarks/ppo.md`` (issue 19).

Three questions, each a subcommand, each on the Gym face (the observation PPO sees):

``clone``: is the oracle's next call a function of the observation vector? Plays the oracle on
``--train`` train-split episodes (``mixed``), fits a network of PPO's shape (two tanh layers of
128) from observation to the oracle's catalogue action by cross-entropy, then plays it greedily,
masked, on ``--episodes`` test-split episodes and prints their outcomes per family. A policy that
reaches the oracle this way shows the observation holds what the oracle uses.

``probs MODEL``: on the oracle's own train-split trajectories, the trained policy's (masked)
probability of the oracle's next call, per call: where it is near 0 the policy never tries what
the oracle does there.

``force MODEL CALL``: on episodes of ``--scenario``, play the oracle until its next call is
``CALL`` (as printed by ``probs``, e.g. ``'block_proposal(0,S1)'``), then either make that call
or the policy's own, and let the policy play the rest: the outcomes of both, and what the policy
chose. It says whether the policy's own continuation would have paid for the call it never makes.

    python benchmarks/ppo_diagnose.py clone --env oversight [--train 20000] [--episodes 600]
    python benchmarks/ppo_diagnose.py probs --env oversight runs/NAME/model.zip [--episodes 300]
    python benchmarks/ppo_diagnose.py force --env oversight runs/NAME/model.zip \
        'block_proposal(0,S1)' --scenario qa_undercalls_p1_checkout_bug [--episodes 200]

One torch thread; ``clone`` takes about a minute on oversight, two on fleet (``--train 8000``).
"""

from __future__ import annotations

import argparse
import collections
import json
from typing import Any

import numpy as np
import torch

from opsgym.adapters.gym import OpsEnv
from opsgym.agents import get_policy, legal_calls
from opsgym.core.registry import catalogue
from opsgym.training.ppo import as_catalogue_call


class Catalogue:
    """A world's action catalogue: the index of a call, the short name of an index."""

    def __init__(self, env: str):
        self.env = env
        self.table = catalogue(env)
        self.tools = {t.name: t for t, _ in self.table}
        self.key = {
            (t.name, json.dumps(a.model_dump(), sort_keys=True)): i
            for i, (t, a) in enumerate(self.table)
        }

    def index(self, tool: str, args: dict[str, Any]) -> int:
        tool, args = as_catalogue_call(self.env, tool, args)
        full = self.tools[tool].args.model_validate(args).model_dump()
        return self.key[(tool, json.dumps(full, sort_keys=True))]

    def name(self, i: int) -> str:
        tool, args = self.table[i]
        values = [str(v) for v in args.model_dump().values() if v is not None]
        return f"{tool.name}({','.join(values)})"


def family(env: OpsEnv) -> str:
    fam = env.unwrapped.episode.family
    return str(getattr(fam, "name", fam))


def oracle_steps(env: OpsEnv, cat: Catalogue, episodes: int, seed: int):
    """Yield ``(obs, mask, oracle action)`` along the oracle's own trajectories."""
    env.reset(seed=seed)
    for _ in range(episodes):
        obs, _ = env.reset()
        ep = env.unwrapped.episode
        oracle = get_policy(cat.env, "oracle")
        oracle.reset(None)
        while not ep.done:
            action = cat.index(*oracle.act(ep.observe(), legal_calls(ep)))
            yield obs, env.action_masks(), action
            obs, *_ = env.step(action)


def clone(args: argparse.Namespace) -> None:
    cat = Catalogue(args.env)
    env = OpsEnv(args.env, "mixed", split="train")
    data = list(oracle_steps(env, cat, args.train, seed=123))
    x = torch.tensor(np.array([d[0] for d in data]))
    y = torch.tensor([d[2] for d in data])
    net = torch.nn.Sequential(
        torch.nn.Linear(x.shape[1], 128),
        torch.nn.Tanh(),
        torch.nn.Linear(128, 128),
        torch.nn.Tanh(),
        torch.nn.Linear(128, len(cat.table)),
    )
    opt = torch.optim.Adam(net.parameters(), 1e-3)
    for _ in range(args.epochs):
        for b in torch.randperm(len(y)).split(1024):
            loss = torch.nn.functional.cross_entropy(net(x[b]), y[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        acc = (net(x).argmax(1) == y).float().mean().item()
    print(f"{len(y)} oracle steps from {args.train} train episodes; fit accuracy {acc:.4f}")
    test = OpsEnv(args.env, "mixed", split="test")
    test.reset(seed=7)
    outcomes: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for _ in range(args.episodes):
        obs, _ = test.reset()
        done = False
        while not done:
            with torch.no_grad():
                logits = net(torch.tensor(obs)[None])[0].numpy()
            logits[~test.action_masks()] = -np.inf
            obs, _, term, trunc, info = test.step(int(logits.argmax()))
            done = term or trunc
        outcomes[family(test)][info["outcome"]] += 1
        outcomes["all"][info["outcome"]] += 1
    for fam, counts in sorted(outcomes.items(), key=lambda kv: kv[0] == "all"):
        print(f"{fam:40s} {dict(counts.most_common())}")


def _model(path: str) -> Any:
    from sb3_contrib import MaskablePPO

    return MaskablePPO.load(path, device="cpu")


def probs(args: argparse.Namespace) -> None:
    cat, model = Catalogue(args.env), _model(args.model)
    env = OpsEnv(args.env, "mixed", split="train")
    seen: dict[str, list[float]] = collections.defaultdict(list)
    entropy = []
    for obs, mask, action in oracle_steps(env, cat, args.episodes, seed=3):
        with torch.no_grad():
            dist = model.policy.get_distribution(
                model.policy.obs_to_tensor(obs)[0], action_masks=mask[None]
            )
            p = dist.distribution.probs[0].numpy()
        name = cat.name(action) if args.env == "oversight" else cat.table[action][0].name
        seen[name].append(float(p[action]))
        entropy.append(float(-(p[p > 0] * np.log(p[p > 0])).sum()))
    print(f"policy entropy on the oracle's states: {np.mean(entropy):.2f} nats")
    print("P(oracle's call)  min    n  call")
    for name, ps in sorted(seen.items(), key=lambda kv: np.mean(kv[1])):
        print(f"{np.mean(ps):16.3f} {np.min(ps):5.3f} {len(ps):4d}  {name}")


def force(args: argparse.Namespace) -> None:
    cat, model = Catalogue(args.env), _model(args.model)
    results: dict[str, collections.Counter[str]] = {}
    chosen: collections.Counter[str] = collections.Counter()
    for mode in ("forced", "own"):
        results[mode] = collections.Counter()
        env = OpsEnv(args.env, args.scenario, split=args.split)
        env.reset(seed=9)
        for _ in range(args.episodes):
            obs, _ = env.reset()
            ep = env.unwrapped.episode
            oracle = get_policy(args.env, "oracle")
            oracle.reset(None)
            reached = done = False
            while not done:
                own, _ = model.predict(obs, deterministic=True, action_masks=env.action_masks())
                action = int(own)
                if not reached:
                    ours = cat.index(*oracle.act(ep.observe(), legal_calls(ep)))
                    if cat.name(ours) == args.call:
                        reached = True
                        if mode == "own":
                            chosen[cat.name(action)] += 1
                    if mode == "forced" or not reached:
                        action = ours
                obs, _, term, trunc, info = env.step(action)
                done = term or trunc
            if reached:
                results[mode][info["outcome"]] += 1
    print(f"the policy's own choice where the oracle calls {args.call}: {dict(chosen)}")
    for mode, counts in results.items():
        print(f"{mode:6s} then the policy: {dict(counts.most_common())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("clone")
    c.add_argument("--env", default="oversight")
    c.add_argument("--train", type=int, default=20000)
    c.add_argument("--epochs", type=int, default=10)
    c.add_argument("--episodes", type=int, default=600)
    p = sub.add_parser("probs")
    p.add_argument("--env", default="oversight")
    p.add_argument("model")
    p.add_argument("--episodes", type=int, default=300)
    f = sub.add_parser("force")
    f.add_argument("--env", default="oversight")
    f.add_argument("model")
    f.add_argument("call")
    f.add_argument("--scenario", default="mixed")
    f.add_argument("--split", default="train")
    f.add_argument("--episodes", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    {"clone": clone, "probs": probs, "force": force}[args.cmd](args)


if __name__ == "__main__":
    main()
