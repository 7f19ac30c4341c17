"""Every request body the server takes: pydantic models with ``extra="forbid"``.

An unknown field, a wrong type or a value out of range is a 422 that names the field, and it
costs the episode nothing: the body is checked before any session is touched. So is a body
nested deeper than :data:`~opsgym.core.episode.MAX_MESSAGE_DEPTH` levels (:class:`TooDeepError`,
found before pydantic or anything else recurses into it; no honest body comes near). The
OpenEnv messages follow OpenEnv's own models (``openenv.core.env_server.types``) field for field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from opsgym.core.episode import MAX_MESSAGE_DEPTH, nests_deeper
from opsgym.core.errors import OpsgymError

SEED = Field(None, ge=0, le=2**63 - 1, description="Seeds the episode (drawn if omitted).")
SPLIT = Field(
    None, description="Split of the seed: checked if a seed is given, drawn from if not (train)."
)


class TooDeepError(OpsgymError):
    """A message nested deeper than :data:`~opsgym.core.episode.MAX_MESSAGE_DEPTH` levels.

    Not a ``ValueError`` on purpose: pydantic would wrap one in a validation error that echoes
    the whole input back (a thousand nested brackets, written out again); this one passes
    through validation to the app's handler, a 422 naming the field.
    """

    def __init__(self, field: str):
        super().__init__(
            f"{field}: nested deeper than {MAX_MESSAGE_DEPTH} levels (every message is refused "
            "past that depth; a tool's arguments are flat)"
        )


def too_deep(data: Any, where: str = "body") -> TooDeepError | None:
    """The error for ``data`` if it nests deeper than :data:`MAX_MESSAGE_DEPTH` levels, naming
    the first field of it that does (``body.args``), else ``None``.
    """
    if not nests_deeper(data, MAX_MESSAGE_DEPTH):
        return None
    if isinstance(data, dict):
        for key, value in data.items():
            if nests_deeper(value, MAX_MESSAGE_DEPTH - 1):
                return TooDeepError(f"{where}.{key}")
    return TooDeepError(where)


class Framed(BaseModel):
    """Base of a model read only from what was checked for depth already (a WebSocket message,
    checked as it is read; an action inside a checked body): unknown fields are refused.
    """

    model_config = ConfigDict(extra="forbid")


class Strict(Framed):
    """Base of every request body: unknown fields are refused, and so is a body nested deeper
    than :data:`MAX_MESSAGE_DEPTH` levels (:class:`TooDeepError`).
    """

    @model_validator(mode="before")
    @classmethod
    def _not_too_deep(cls, data: Any) -> Any:
        found = too_deep(data) if isinstance(data, dict | list) else None
        if found is not None:
            raise found
        return data


# -- OpenEnv -----------------------------------------------------------------------------------


class OpsAction(Framed):
    """An OpenEnv action: one tool call. Only the world's tools can be called."""

    tool: str = Field(min_length=1, max_length=128, description="Name of the tool to call.")
    args: dict[str, Any] = Field(default_factory=dict, description="The tool's arguments.")
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="OpenEnv's free metadata (ignored)."
    )


class OpsObservation(BaseModel):
    """What an OpenEnv step returns: the agent's view (``Episode.observe()``)."""

    step: int = Field(description="Calls made so far.")
    steps_left: int | None = Field(description="Calls left in the budget.")
    last: dict[str, Any] | None = Field(description="The last call, and what its tool reported.")
    done: bool = Field(description="Whether the episode has ended.")
    verdict: dict[str, Any] | None = Field(
        None, description="The judge's verdict: only on the step that ends the episode."
    )

    model_config = ConfigDict(extra="allow")


class OpsState(BaseModel):
    """OpenEnv's ``State``: nothing hidden."""

    episode_id: str | None = None
    step_count: int = 0
    env: str | None = None
    scenario: str | None = None
    done: bool = False
    steps_left: int | None = None


class ResetData(Strict):
    """Parameters of an OpenEnv ``reset`` (POST /reset body, or a WS ``reset``'s ``data``)."""

    seed: int | None = SEED
    episode_id: str | None = Field(None, max_length=255, description="Your label of the episode.")
    env: str | None = Field(None, max_length=64, description="World (the server's default).")
    scenario: str | None = Field(None, max_length=128, description="Fault family.")
    config: dict[str, Any] = Field(default_factory=dict, description="Public settings.")
    split: Literal["train", "dev", "test"] | None = SPLIT


class ForcedResetData(ResetData):
    """:class:`ResetData` on a server that allows overrides (leak tests only)."""

    overrides: dict[str, Any] = Field(default_factory=dict)


class StepRequest(Strict):
    """OpenEnv's POST /step body. Stateless, as in OpenEnv: a fresh episode takes the action."""

    action: dict[str, Any] = Field(description="An action (see /schema).")
    timeout_s: float | None = Field(None, gt=0)
    request_id: str | None = Field(None, max_length=255)
    env: str | None = Field(None, max_length=64)
    scenario: str | None = Field(None, max_length=128)
    seed: int | None = SEED


class WSReset(Framed):
    """OpenEnv WebSocket ``reset``."""

    type: Literal["reset"]
    data: dict[str, Any] = Field(default_factory=dict)


class WSStep(Framed):
    """OpenEnv WebSocket ``step``."""

    type: Literal["step"]
    data: dict[str, Any]


class WSState(Framed):
    """OpenEnv WebSocket ``state``."""

    type: Literal["state"]


class WSClose(Framed):
    """OpenEnv WebSocket ``close``."""

    type: Literal["close"]


WSMessage = Annotated[WSReset | WSStep | WSState | WSClose, Field(discriminator="type")]


# -- REST sessions ------------------------------------------------------------------------------


class SessionCreate(Strict):
    """POST /api/sessions."""

    env: str = Field(max_length=64, description="World to run (GET /api/envs lists them).")
    scenario: str | None = Field(None, max_length=128, description="Fault family ('mixed'...).")
    seed: int | None = SEED
    config: dict[str, Any] = Field(default_factory=dict, description="Public settings.")
    split: Literal["train", "dev", "test"] | None = SPLIT
    curriculum: bool = Field(
        False, description="Take the config from the server's curriculum (levelled worlds)."
    )


class ForcedSessionCreate(SessionCreate):
    """:class:`SessionCreate` on a server that allows overrides (leak tests only)."""

    overrides: dict[str, Any] = Field(default_factory=dict)


class SessionStep(Strict):
    """POST /api/sessions/{id}/step: a call of your own, or a named policy's."""

    tool: str | None = Field(None, min_length=1, max_length=128, description="Tool to call.")
    args: dict[str, Any] = Field(default_factory=dict, description="Its arguments.")
    policy: str | None = Field(
        None, max_length=128, description="A named policy (GET /api/envs) makes the call instead."
    )
    to_end: bool = Field(False, description="With policy: play on until the episode ends.")
    strict: bool = Field(
        False,
        description="With tool: a tool the world lacks, or arguments its schema refuses, are a "
        "422 naming the field (body.tool, body.args.NAME) and the episode takes no step. "
        "Without it they make a rejected call that costs the invalid component, as any "
        "agent's would. Preconditions are the world's to judge either way.",
    )

    @model_validator(mode="after")
    def _one_actor(self) -> SessionStep:
        if (self.tool is None) == (self.policy is None):
            raise ValueError("give either tool (with args) or policy, not both and not neither")
        if self.policy is not None and self.args:
            raise ValueError("args go with tool, not with policy")
        if self.to_end and self.policy is None:
            raise ValueError("to_end goes with policy")
        if self.strict and self.tool is None:
            raise ValueError("strict goes with tool")
        return self


# -- the store and jobs ---------------------------------------------------------------------------


class EvaluationStart(Strict):
    """POST /api/evaluations: a small evaluation, run in the background."""

    env: str = Field(max_length=64)
    policies: list[str] = Field(min_length=1, max_length=8)
    scenarios: list[str] = Field(default_factory=lambda: ["mixed"], min_length=1, max_length=16)
    split: Literal["train", "dev", "test"] = "test"
    episodes: int = Field(20, ge=1, le=10_000)
    trials: int = Field(1, ge=1, le=16)
    seeds: Literal["sealed", "public"] = Field(
        "sealed",
        description="sealed: drawn when the evaluation is created, too many to tabulate, "
        "stored; public: the split's first seeds (the same for everyone).",
    )
    seeds_from: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="Play the sealed seeds of this stored evaluation (to compare policies).",
    )
    config: dict[str, Any] = Field(default_factory=dict)
    name: str | None = Field(None, min_length=1, max_length=200, pattern=r"^[\w.+:@-]+$")


class GradeRequest(Strict):
    """POST /api/grade: a finished episode's record, judged again from its calls."""

    record: dict[str, Any] = Field(description="What `opsgym run --out` or GET .../record wrote.")


class TimelineRequest(Strict):
    """POST /api/timeline: a record's timeline by replay, a window of its steps."""

    record: dict[str, Any] = Field(description="What `opsgym run --out` or GET .../record wrote.")
    start: int = Field(0, ge=0, le=2**31, description="Steps to skip (0: from the first).")
    limit: int = Field(50, ge=1, le=1000, description="Most steps to show.")
