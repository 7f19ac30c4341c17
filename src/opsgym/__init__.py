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

from opsgym.core import VERSION, registry
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


def refresh_envs() -> list[str]:
    """Discover the worlds again, the package's and the ``opsgym.envs`` entry points', and
    bring the Gymnasium ids in line (a world gone since loses its id); return their names.

    Discovery runs once, at import: call this after installing or removing a world's package
    in a running process.
    """
    registry.refresh()
    _register_gym_ids()
    return list_envs()


_GYM_ENTRY_POINT = "opsgym.adapters.gym:OpsEnv"
# the worlds with a batched twin (opsgym.vector.env.WORLDS)
_BATCHED = {"release", "oversight", "fleet"}


def _register_gym_ids() -> None:
    found = specs()
    for gym_id, registered in list(gymnasium.registry.items()):
        if registered.entry_point == _GYM_ENTRY_POINT and registered.kwargs["env"] not in found:
            del gymnasium.registry[gym_id]
    for s in found.values():
        if s.gym_id not in gymnasium.registry:
            gymnasium.register(
                id=s.gym_id,
                entry_point=_GYM_ENTRY_POINT,
                vector_entry_point=(
                    "opsgym.vector.env:BatchedVectorEnv" if s.name in _BATCHED else None
                ),
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
    "refresh_envs",
    "replay",
    "run",
    "scenarios",
    "seeds",
    "split_of",
]
