"""The tool-calling face: what an LLM agent is shown and how its replies become calls.

(Skeleton: the renderer and result text that every LLM face shares. Parsing, token counting
and the session loop land with the agents issue.)
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opsgym.core.episode import Episode, StepResult


def schemas(episode: Episode) -> list[dict[str, Any]]:
    """OpenAI-style function schemas of the episode's tools (generated from their models)."""
    return episode.tools


def render_messages(episode: Episode) -> list[dict[str, str]]:
    """``[system, user]`` chat messages for the agent now: built from ``observe()`` only."""
    state = json.dumps(episode.observe(), sort_keys=True, separators=(",", ":"))
    return [
        {
            "role": "system",
            "content": f"You operate the {episode.env} environment. Reply with tool calls.",
        },
        {"role": "user", "content": state},
    ]


def render_text(episode: Episode) -> str:
    """The prompt as one string (what the audit's leak test compares)."""
    return "\n\n".join(m["content"] for m in render_messages(episode))


def result_text(result: StepResult) -> str:
    """What a tool call returns to the model: the report, or why the call was rejected.

    Never the reward: a model is told what its tools said, as an operator would be.
    """
    if result.rejected is not None:
        return json.dumps({"rejected": result.rejected}, separators=(",", ":"))
    return json.dumps(result.report, sort_keys=True, separators=(",", ":"))
