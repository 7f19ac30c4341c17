"""opsgym: environments where agents run production operations and are judged on the truth.

```python
import opsgym
ep = opsgym.make("release", scenario="deploy_timeout", seed=7)
ep.observe(); ep.tools; ep.step("stage"); ep.verdict; ep.record()
```
"""

from __future__ import annotations

from typing import Any

import gymnasium

from opsgym.core import VERSION
from opsgym.core.episode import Episode, StepResult
from opsgym.core.errors import OpsgymError
from opsgym.core.judge import Verdict
from opsgym.core.registry import hidden_facts, list_envs, make, scenarios, specs
from opsgym.core.replay import ReplayResult, replay
from opsgym.core.scenarios import seeds, split_of

__version__ = VERSION


def run(
    env: str,
    scenario: str | None = None,
    seed: int = 0,
    policy: str = "oracle",
    *,
    max_steps: int | None = None,
    overrides: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
    reward_timing: str = "end",
) -> Episode:
    """Play one episode to the end with a named policy and return it."""
    from opsgym.agents import get_policy, play

    episode = make(
        env,
        scenario,
        seed,
        max_steps=max_steps,
        overrides=overrides,
        config=config,
        reward_timing=reward_timing,
    )
    return play(episode, get_policy(env, policy))


def _register_gym_ids() -> None:
    for s in specs().values():
        if s.gym_id not in gymnasium.registry:
            gymnasium.register(
                id=s.gym_id,
                entry_point="opsgym.adapters.gym:OpsEnv",
                kwargs={"env": s.name},
                max_episode_steps=s.max_steps,
            )


_register_gym_ids()

__all__ = [
    "Episode",
    "OpsgymError",
    "ReplayResult",
    "StepResult",
    "Verdict",
    "hidden_facts",
    "list_envs",
    "make",
    "replay",
    "run",
    "scenarios",
    "seeds",
    "split_of",
]
