"""What every ``/api`` route answers, as pydantic models: the OpenAPI schema's response types.

The routes build their answers as plain dicts and send them through orjson
(:class:`~opsgym.server.openenv.JSON`); a route that returns a ``Response`` skips FastAPI's
response validation, so these models document the answers (for typed clients generated from
``/openapi.json``) and cost the routes nothing. ``tests/server/test_responses.py`` holds the
live answers to them, with unknown fields refused, so the documentation cannot drift.

Open shapes stay open: a world's observation, a record's truth, a trainer's config and a
curriculum's state are ``dict`` (each world defines its own).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Reply(BaseModel):
    """Base of every response model: the fields are the whole answer."""

    model_config = ConfigDict(extra="forbid")


# -- the server -------------------------------------------------------------------------------


class ServerInfo(Reply):
    """What the server is and how it is guarded (the workbench's home page shows it)."""

    api_version: str
    package_version: str
    auth: Literal["token", "loopback"] = Field(
        description="``token``: every route but /health wants a bearer token; ``loopback``: no "
        "token, and only this machine's clients are answered."
    )
    agent_token: bool = Field(description="A second, narrower token for agents is configured.")
    training: bool = Field(description="Training jobs may be started over HTTP.")
    allow_overrides: bool = Field(description="Sessions may force hidden facts (leak tests).")
    workbench: bool = Field(description="The workbench is built into this package (/ui/).")
    max_sessions: int
    max_eval_episodes: int


# -- worlds -----------------------------------------------------------------------------------


class ScenarioInfo(Reply):
    """A scenario (fault family, or ``mixed``) of a world."""

    name: str
    description: str
    held_out: bool = Field(description="Held out of training: drawn only in dev and test.")
    mixture: bool = Field(description="Draws a family per seed (``mixed``).")
    splits: list[Literal["train", "dev", "test"]]


class EnvInfo(Reply):
    """A world as a client needs it."""

    name: str
    gym_id: str
    summary: str = Field(description="The first line of the world's manual.")
    max_steps: int
    scenarios: list[ScenarioInfo]
    policies: list[str] = Field(description="Named policies a session may be played by.")
    tools: list[dict[str, Any]] = Field(description="OpenAI-style function schemas.")
    outcomes: list[str]
    safe_outcomes: list[str]
    harmful_outcomes: list[str] = Field(
        description="Outcomes in which the agent did harm; the rest of the unsafe ones are "
        "unfinished. Every chart draws safe calm, harmful red, unfinished grey."
    )
    outcome_kinds: dict[str, Literal["safe", "harmful", "unfinished"]] = Field(
        description="What each outcome means, for its colour, icon and label."
    )
    curriculum: bool = Field(description="Whether the world has levels (a curriculum).")


class Curriculum(Reply):
    """The server's curriculum of a levelled world."""

    state: dict[str, Any]
    events: list[dict[str, Any]]


class Challenge(Reply):
    """A fleet challenge generated from faults."""

    name: str
    description: str
    faults: list[str]
    params: dict[str, Any]
    hidden_facts: list[str]


# -- verdicts, records, replays -----------------------------------------------------------------


class InvariantResult(Reply):
    """One invariant of the judge, held or not."""

    name: str
    held: bool
    reason: str


class Verdict(Reply):
    """The judge's verdict, as a record holds it; a world's judge may add its own fields
    (the fleet's grade, sub-goals and downtime).
    """

    model_config = ConfigDict(extra="allow")

    accepted: bool
    outcome: str
    invariants: list[InvariantResult]


class ShownVerdict(Verdict):
    """The verdict with the invariants that failed named."""

    failed: list[str]


class Difference(Reply):
    """Where a replay first differs from its record (step 0: a field of the record itself)."""

    step: int
    field: str
    recorded: Any
    replayed: Any


class ReplayCheck(Reply):
    """A record replayed from its calls."""

    match: bool
    first_difference: Difference | None
    recorded_hash: str
    replayed_hash: str
    verdict: Verdict | None = Field(description="The record's verdict, if the replay matched.")
    labels: list[str] = Field(
        default_factory=list,
        description="What makes the record unfit for a leaderboard: forced facts, dense reward "
        "timing, a held-out family on a train seed (empty for an honest episode).",
    )
    admissible: bool | None = Field(
        None, description="The replay matched and the record carries no label."
    )


class RecordedEvent(Reply):
    """One step of a record, with the truth after it."""

    step: int
    tool: Any
    args: Any
    tokens: int
    rejected: str | None
    report: dict[str, Any]
    reward: dict[str, float]
    clock: float
    done: bool
    truth: dict[str, Any]
    hash: str


class RecordedCall(Reply):
    """One call of a record, as replay makes it again."""

    tool: Any
    args: Any
    tokens: int


class Record(Reply):
    """An episode's hash-chained record (``Episode.record()``); ``opsgym.replay`` rebuilds it."""

    format: str
    env: str
    scenario: str
    seed: int
    max_steps: int | None
    overrides: dict[str, Any]
    config: dict[str, Any]
    reward_timing: str
    token_source: str
    root: str = Field(description="The header's hash, the root of the events' chain.")
    calls: list[RecordedCall]
    events: list[RecordedEvent]
    verdict: Verdict | None
    return_: float = Field(alias="return")
    rewards: dict[str, float]
    hash: str = Field(description="The last event's hash.")
    transcript: list[dict[str, Any]] | None = Field(None, description="An LLM agent's turns.")


class Lie(Reply):
    """A lie told to the agent, and what became of it (derived by replay)."""

    kind: str
    detail: str
    told_at: int = Field(description="The step whose report lied (0: before the first call).")
    told_by: str | None = Field(description="The tool that told it (None before the first call).")
    status: Literal["trusted", "reconciled", "open"]
    settled_at: int | None = Field(description="The step whose call trusted or reconciled it.")
    settled_by: dict[str, Any] | None = Field(description="That call: ``{tool, args}``.")


class LieCounts(Reply):
    """Lies of one kind."""

    told: int
    trusted: int
    reconciled: int


class LieSummary(Reply):
    """The lie ledger's counts, as evaluations store them."""

    told: int
    trusted: int
    reconciled: int
    by_kind: dict[str, LieCounts]


class Lies(Reply):
    """Every lie told in an episode, with its outcome, and the counts."""

    told: list[Lie]
    summary: LieSummary


# -- sessions -----------------------------------------------------------------------------------


class ToldStep(Reply):
    """What the agent was told of one step: the call, the report, the reward paid."""

    step: int
    tool: Any
    args: Any
    rejected: str | None
    report: dict[str, Any]
    reward: float
    components: dict[str, float] = Field(description="The reward paid, by component.")


class StepEntry(ToldStep):
    """A step as a step request answers it."""

    done: bool


class SessionView(Reply):
    """A session as its client may see it: nothing hidden while it runs."""

    id: str
    kind: Literal["rest", "ws"]
    env: str
    scenario: str
    seed: int | None = Field(description="Shown once the episode ends, unless the client chose it.")
    split: str
    config: dict[str, Any]
    episode_id: str | None
    steps: int
    max_steps: int | None
    done: bool
    return_: float = Field(alias="return")
    observation: dict[str, Any] = Field(description="What the agent sees now.")
    verdict: ShownVerdict | None
    history: list[ToldStep] | None = Field(None, description="Every step so far.")
    family: str | None = Field(None, description="The drawn family, once the episode ends.")


class NewSession(SessionView):
    """A session just opened, with the world's tools."""

    tools: list[dict[str, Any]]


class SessionBrief(Reply):
    """An open session, briefly."""

    id: str
    kind: Literal["rest", "ws"]
    env: str
    scenario: str
    steps: int
    done: bool
    created_at: float = Field(description="Unix time.")


class Stepped(Reply):
    """The steps one request made, and the session after them."""

    steps: list[StepEntry]
    session: SessionView


class SessionRecord(Reply):
    """An ended session's record, truth included, and what became of its lies."""

    truth_included: Literal[True]
    verdict: ShownVerdict
    record: Record
    lies: Lies


class Closed(Reply):
    """A session closed."""

    id: str
    closed: bool
    saved: bool = Field(description="Whether its (ended) episode went to the store.")


# -- the store ----------------------------------------------------------------------------------


class EpisodeRow(Reply):
    """A stored episode without its events."""

    id: int
    evaluation: str | None
    env: str
    scenario: str
    family: str
    seed: int
    split: str
    policy: str
    trial: int
    outcome: str | None
    accepted: bool | None
    verdict: Verdict | None
    return_: float = Field(alias="return")
    rewards: dict[str, float]
    steps: int
    tokens: int
    token_source: str
    downtime_cost: float | None
    lies: LieSummary | None
    reward_timing: str
    record_hash: str
    created_at: str = Field(description="ISO 8601.")


class StoredEpisode(Reply):
    """A stored episode's record (truth included) and what became of its lies."""

    truth_included: Literal[True]
    record: Record
    lies: Lies


class TimelineStep(StepEntry):
    """One step of a timeline: what the agent was told, and what it saw after."""

    observation: dict[str, Any] | None = Field(
        description="The agent's view after this call (the replay's)."
    )


class Timeline(Reply):
    """An episode replayed: the match, the drawn family, its lies, and a window of steps."""

    match: bool
    first_difference: Difference | None
    recorded_hash: str
    replayed_hash: str
    family: str
    total_steps: int
    start: int
    limit: int
    before: dict[str, Any] | None = Field(
        description="The agent's view before the window's first call (after the reset for 0)."
    )
    steps: list[TimelineStep]
    lies: Lies


class EvaluationJob(Reply):
    """An evaluation started over HTTP, as its background job stands."""

    name: str
    status: Literal["queued", "running", "done", "failed"]
    done: int = Field(description="Episodes played.")
    total: int | None
    error: str | None
    started_at: float
    finished_at: float | None = None


class Verification(Reply):
    """What a replay of every stored episode of an evaluation found."""

    total: int
    matched: int
    exit_code: int = Field(description="As `opsgym eval --verify`: 0 when every episode matches.")
    problems: list[dict[str, Any]] = Field(description="The first difference of each mismatch.")
    root: str | None = Field(
        None, description="The root hash of the episodes as stored now (SHA-256, hex)."
    )
    sealed_root: str | None = Field(
        None, description="The root sealed when the evaluation finished (none if never sealed)."
    )


class VerifyJob(Reply):
    """A verification of an evaluation, run in the background."""

    name: str
    status: Literal["queued", "running", "done", "failed"]
    error: str | None
    started_at: float
    finished_at: float | None = None
    result: Verification | None


class EvaluationBrief(Reply):
    """A stored evaluation (without its aggregates)."""

    id: int
    name: str
    config: dict[str, Any]
    status: str
    episodes: int
    created_at: str
    updated_at: str
    resumed: bool
    job: EvaluationJob | None
    verify: VerifyJob | None


class EvaluationView(Reply):
    """An evaluation with its aggregates (only ``name``, ``status``, ``job`` and ``verify``
    while a job started here has stored nothing yet).
    """

    id: int | None = None
    name: str
    config: dict[str, Any] | None = None
    status: str
    aggregates: dict[str, Any] | None
    episodes: int | None = None
    created_at: str | None = None
    updated_at: str | None = None
    resumed: bool | None = None
    job: EvaluationJob | None
    verify: VerifyJob | None


class PairSide(Reply):
    """One side's episode of a pair."""

    id: int
    outcome: str | None
    accepted: bool | None
    met: bool = Field(description="Whether it met the criterion.")


class PairRow(Reply):
    """Two episodes on the same scenario, seed and trial."""

    scenario: str
    seed: int
    trial: int
    cell: Literal["both", "only_a", "only_b", "neither"]
    a: PairSide
    b: PairSide


class PairCounts(Reply):
    """The paired table."""

    both: int
    only_a: int
    only_b: int
    neither: int


class Unpaired(Reply):
    """Episodes of one side with no partner on the other."""

    a: int
    b: int


class Comparison(Reply):
    """Two policies on the same seeds: the paired table and an exact McNemar p-value."""

    a: dict[str, Any] = Field(description="Side A: its evaluation and policy.")
    b: dict[str, Any] = Field(description="Side B: its evaluation and policy.")
    criterion: str = Field(description="accepted, safe, or an outcome's name.")
    counts: PairCounts
    pairs: int
    unpaired: Unpaired
    p_value: float = Field(description="Exact two-sided McNemar (binomial test of only_a).")
    rows: list[PairRow]


# -- training -----------------------------------------------------------------------------------


class TrainerKind(Reply):
    """A trainer the server knows."""

    kind: str
    installed: bool
    extra: str = Field(description="The pip extra that installs it.")
    steps: str = Field(description="What its step cap counts.")
    max_steps: int
    config_schema: dict[str, Any] = Field(description="Its config's JSON Schema.")


class TrainingKinds(Reply):
    """The trainers, their configs' schemas, and the server's caps."""

    enabled: bool
    kinds: list[TrainerKind]
    max_wall_s: float
    stop_grace_s: float


class TrainingJob(Reply):
    """A training job."""

    id: int
    name: str
    kind: str
    env: str
    config: dict[str, Any]
    status: Literal["queued", "running", "stopping", "succeeded", "failed", "stopped", "lost"]
    folder: str
    max_wall_s: float | None
    pid: int | None
    pid_start: int | None
    exit_code: int | None
    error: str | None
    created_at: str
    started_at: str | None
    finished_at: str | None
    updated_at: str


class TrainingJobView(TrainingJob):
    """A training job, with its run's status."""

    run_status: str | None


class Deleted(Reply):
    """A training job forgotten."""

    name: str
    deleted: bool
    removed: list[str] = Field(description="The files and folders deleted.")


class Metrics(Reply):
    """A job's learning curves."""

    name: str
    status: str
    curves: dict[str, list[list[float]]] = Field(description="``{key: [[step, value], ...]}``.")
    updated_at: str | None


class CurveSummary(Reply):
    """A curve's first, last, lowest and highest points."""

    points: int
    first: list[float]
    last: list[float]
    min: float
    max: float


class TrainingRunBrief(Reply):
    """A stored training run, without its curves."""

    id: int
    name: str
    kind: str
    env: str
    config: dict[str, Any]
    status: str
    checkpoint: str | None
    created_at: str
    updated_at: str
    resumed: bool


class TrainingRunRow(TrainingRunBrief):
    """A stored training run in the list: its curves' names and its job's status."""

    curves: list[str]
    job: str | None


class TrainingRun(TrainingRunBrief):
    """A stored training run with its curves."""

    curves: dict[str, list[list[float]]] | None


class TrainingSummary(Reply):
    """A job, its run, its curves summed up, and its files."""

    job: TrainingJob
    run: TrainingRunBrief | None
    duration_s: float | None
    curves: dict[str, CurveSummary]
    evaluation: dict[str, Any] | None = Field(description="What the trainer's evaluation wrote.")
    model: str | None = Field(description="The final model's path in the run folder.")
    files: int
    bytes: int


class Log(Reply):
    """Whole lines of a job's log from a byte offset."""

    name: str
    status: str
    offset: int
    next_offset: int
    size: int
    lines: list[str]
    complete: bool = Field(description="The job is over and the log read to its end.")


class Artifact(Reply):
    """A file of a job's run folder."""

    path: str
    size: int
    modified: str
    sha256: str = Field(description="SHA-256 of its bytes (hex), to check a download against.")


class Artifacts(Reply):
    """The files of a job's run folder."""

    name: str
    files: list[Artifact]


def binary(media_type: str, what: str) -> dict[int | str, dict[str, Any]]:
    """``responses=`` of a route that answers bytes of ``media_type``."""
    schema = {"type": "string", "format": "binary"}
    return {200: {"description": what, "content": {media_type: {"schema": schema}}}}


EVENT_STREAM = {
    200: {
        "description": "Server-sent events: `status`, `metrics`, `log`, then `end`; each "
        "`data` is JSON, each `id` a `Last-Event-ID` to resume from.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
}
"""``responses=`` of the training stream."""
