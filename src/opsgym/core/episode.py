"""Episode: the step pipeline every call goes through.

``validate -> apply -> reward -> record -> judge``. A call that fails validation (unknown
tool, bad arguments, unmet precondition) is recorded with its reason, costs the ``invalid``
component, and changes nothing in the world. A ``complete`` (a world's terminal tool) ends
the episode whether the judge accepts it or not: a refusal is the episode's verdict, so that
``complete`` cannot serve the agent as a probe of the truth. The trajectory is a list of
events; each record chains them with SHA-256, from a root that is the hash of the record's
header (env, scenario, seed, budget, overrides, config, reward timing, token source), so that
any later edit of an event or of the header is detectable.

Everything handed to the caller (a report, the components, an observation) is the caller's own
copy: changing it changes neither the world nor the recorded trajectory.

A face that talks to a model keeps its conversation in ``Episode.transcript`` (prompts, raw
replies, parsed calls, rejections, token counts; see :mod:`opsgym.agents.llm`). ``record()``
carries it under ``transcript`` when there is one. It is an account of how the calls came about,
not part of the episode: the events (what each call did) are what the hash chain covers and
replay recomputes, and replay ignores the transcript.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
from typing import Any, NamedTuple, TypedDict

import numpy as np
import orjson

from opsgym.core.errors import EpisodeDoneError, UnknownNameError
from opsgym.core.judge import Verdict
from opsgym.core.rewards import RewardLedger, check_reward_timing
from opsgym.core.scenarios import Scenario, check_seed, draw_family
from opsgym.core.spec import EnvSpec
from opsgym.core.tools import Args, Tool

RECORD_FORMAT = "opsgym.record/2"
HEADER_FIELDS = (
    "format",
    "env",
    "scenario",
    "seed",
    "max_steps",
    "overrides",
    "config",
    "reward_timing",
    "token_source",
)
"""The record's header: hashed into the root of the event chain."""

TOKEN_SOURCES = ("fixed", "caller", "gym", "provider", "tokenizer", "estimate", "none")
"""Where an episode's token counts came from: ``fixed`` (the world's ``tokens_per_call``,
charged by the harness), ``caller`` (``Episode.step(tokens=...)`` taken on the caller's word),
``gym`` (the Gym face's fixed cost), ``provider`` (an LLM endpoint's usage figures),
``tokenizer`` (counted by a model's own tokenizer), ``estimate`` (counted by the vocabulary-free
estimator :func:`opsgym.adapters.toolcalls.count_tokens`, as the server and the LLM face do when
no provider reports usage), ``none`` (not counted)."""


def fresh(value: Any) -> Any:
    """A copy of a JSON-like value (dicts, lists, atoms) that shares nothing mutable with it.

    Cheaper than ``copy.deepcopy`` for the small reports a tool returns; tuples and other
    immutable values are shared, as they cannot be changed.
    """
    kind = type(value)
    if kind is dict:
        out = value.copy()  # then only the containers are replaced (same keys, same order)
        for k, v in out.items():
            kind = type(v)
            if kind is dict or kind is list:
                out[k] = fresh(v)
        return out
    if kind is list:
        out = value.copy()
        for i, v in enumerate(out):
            kind = type(v)
            if kind is dict or kind is list:
                out[i] = fresh(v)
        return out
    return value


class Event(TypedDict):
    """One step of a trajectory, as recorded (a plain dict at run time).

    ``truth`` is the hidden state after the call: it reaches the judge and the record, never
    the agent during the episode. ``tokens`` is what the agent spent on the call, charged even
    when the call is rejected. Records add ``hash``: SHA-256 over the previous hash and this
    event's canonical JSON.
    """

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


class StepResult(NamedTuple):
    """What one call returned (immutable; a named tuple, cheap to make on every step).

    Attributes:
        report: What the tool said (may mislead), or ``{"error": reason}`` when rejected.
        reward: Sum of this step's weighted reward components.
        done: Whether the episode has ended.
        rejected: Why the call was rejected, or ``None`` if it ran.
        terminated: Ended by the world or the judge (complete accepted or refused, deadline,
            disaster).
        truncated: Ended because the step budget ran out.
        components: This step's reward by component.
    """

    report: dict[str, Any]
    reward: float
    done: bool
    rejected: str | None
    terminated: bool
    truncated: bool
    components: dict[str, float]


REFUSED = {
    "accepted": False,
    "message": "the judge did not accept completion; the episode is over",
}
"""The report of a ``complete`` the judge refused: the episode ends with the refusal."""

MAX_DEPTH = 32
"""How deep a value the agent sends may nest (a tool's arguments are flat): deeper containers
are cut where this depth is reached, and a call whose arguments were cut is rejected."""

MAX_MESSAGE_DEPTH = 2 * MAX_DEPTH
"""How deep a whole message may nest where one comes in as JSON (a request body, a WebSocket or
JSON-RPC message, a model's reply): room for a call's arguments at :data:`MAX_DEPTH` inside its
envelope, and far below what any JSON parser or serialiser the faces use can take (Python's
``json`` about 1,000 levels, orjson 255 when writing, 1,024 when reading). A deeper message is
refused where it is read, naming this limit, before anything recursive touches it."""

TOO_DEEP = f"<nested deeper than {MAX_DEPTH} levels>"
"""What stands in a recorded value where a deeper container was cut."""

_CONTAINERS = (dict, list, tuple)


def nests_deeper(value: Any, limit: int) -> bool:
    """Whether ``value`` holds more than ``limit`` levels of containers (dicts, lists, tuples;
    ``{}`` is one level, ``{"a": []}`` two), found by a walk that never recurses: so a value
    nested 100,000 deep is told apart from an honest one before any recursive code reads it.
    """
    level = [value] if isinstance(value, _CONTAINERS) else []
    for _ in range(limit):  # one pass per level: a message's few containers, read once each
        below = []
        for item in level:
            for child in item.values() if isinstance(item, dict) else item:
                if isinstance(child, _CONTAINERS):
                    below.append(child)
        if not below:
            return False
        level = below
    return bool(level)


def _text(value: Any, show: Any = repr) -> str:
    """``show(value)`` (``repr`` or ``str``), or a placeholder where that raises (a key nested
    thousands deep, a broken ``__repr__``): :func:`jsonable` never raises.
    """
    try:
        return str(show(value))
    except RecursionError:
        return TOO_DEEP
    except Exception:  # noqa: BLE001 (whatever a foreign object's __repr__ raises)
        return f"<unprintable {type(value).__name__}>"


def jsonable(value: Any, _depth: int = 0) -> Any:
    """A JSON-safe copy of ``value``; anything else becomes its ``repr`` (never raises), and a
    container below :data:`MAX_DEPTH` levels becomes :data:`TOO_DEEP` (so that 3,000 nested
    brackets cost a bounded walk, not the interpreter's recursion limit).
    """
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else repr(value)
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, dict | list | tuple) and _depth >= MAX_DEPTH:
        return TOO_DEEP
    if isinstance(value, dict):
        return {
            (k if type(k) is str else _text(k, str)): jsonable(v, _depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [jsonable(v, _depth + 1) for v in value]
    return _text(value)


def was_cut(value: Any) -> bool:
    """Whether :func:`jsonable` cut ``value`` (it holds :data:`TOO_DEEP` somewhere)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if item == TOO_DEEP:
            return True
        if type(item) is dict:
            stack.extend(v for v in item.values() if type(v) in (dict, list, str))
        elif type(item) is list:
            stack.extend(v for v in item if type(v) in (dict, list, str))
    return False


def canonical(obj: Any) -> bytes:
    """The canonical bytes of a JSON value, as hashed in records: compact, keys sorted.

    Written by orjson (ten times faster than ``json`` here; floats shortest and exact); a value
    orjson refuses (an integer beyond 64 bits) falls back to ``json``. Both are deterministic,
    so a replay hashes the same bytes.
    """
    try:
        return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def header_hash(header: dict[str, Any]) -> str:
    """The root of a record's hash chain: SHA-256 of its header's canonical JSON."""
    body = {k: header.get(k) for k in HEADER_FIELDS}
    return hashlib.sha256(canonical(jsonable(body))).hexdigest()


def chain(events: list[dict[str, Any]], seed_hash: str = "") -> list[str]:
    """The hash chain over ``events`` (each event without its own ``hash`` key), from the root
    ``seed_hash`` (a record's :func:`header_hash`).
    """
    hashes, prev = [], seed_hash
    for event in events:
        prev = link(prev, canonical({k: v for k, v in event.items() if k != "hash"}))
        hashes.append(prev)
    return hashes


def link(previous: str, body: bytes) -> str:
    """One link of a record's hash chain: SHA-256 of the previous hash and the canonical bytes
    of the event's body (the event without its ``hash``).
    """
    return hashlib.sha256(previous.encode() + body).hexdigest()


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON value by a JSON round trip (the cheapest deep copy; key order
    kept). Tuples become lists; what orjson refuses (an integer beyond 64 bits, a numpy value)
    goes through :func:`jsonable` and ``json`` instead.
    """
    try:
        return orjson.loads(orjson.dumps(value))
    except (TypeError, orjson.JSONDecodeError):
        return json.loads(json.dumps(jsonable(value)))


def seal(draft: dict[str, Any]) -> dict[str, Any]:
    """The hash-chained record of a draft (:meth:`Episode.draft`) that shares nothing with a
    live episode: a copy of one, or one read back from its JSON. Its events gain their
    ``hash``; the record's ``hash`` is the last of them (the root for an empty episode).
    """
    root = header_hash(draft)
    events = draft["events"]
    for event, digest in zip(events, chain(events, root), strict=True):
        event["hash"] = digest
    record = {k: draft[k] for k in HEADER_FIELDS}
    record["root"] = root
    record["calls"] = [
        {"tool": e["tool"], "args": e["args"], "tokens": e["tokens"]} for e in events
    ]
    record["events"] = events
    record["verdict"] = draft["verdict"]
    record["return"] = draft["return"]
    record["rewards"] = draft["rewards"]
    record["hash"] = events[-1]["hash"] if events else root
    if draft.get("transcript"):
        record["transcript"] = draft["transcript"]
    return record


class Episode:
    """One run of one scenario of one environment from one seed.

    Prefer :func:`opsgym.make`. ``observe()``, ``tools``, ``step()``, ``verdict`` and
    ``record()`` are the whole interface an agent needs.

    Args:
        spec: The environment.
        scenario: The fault family.
        seed: Seeds the episode's only random generator.
        max_steps: Step budget (``None`` for the environment's default, ``0`` for none).
        overrides: Hidden facts forced to given values (see :class:`opsgym.core.world.World`).
            In a ``mixed`` episode, ``family`` forces the drawn family.
        config: Public settings of the episode (see :class:`opsgym.core.world.World`).
        reward_timing: ``"end"`` pays reward components computed from hidden facts on the last
            step; ``"dense"`` pays them at once and so leaks the truth (see
            :mod:`opsgym.core.rewards`).
        token_source: Where the token counts of calls made with ``tokens=`` come from (one of
            :data:`TOKEN_SOURCES`); a face that counts tokens itself names its method here.
    """

    def __init__(
        self,
        spec: EnvSpec,
        scenario: Scenario,
        seed: int,
        *,
        max_steps: int | None = None,
        overrides: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
        reward_timing: str = "end",
        token_source: str = "caller",
    ):
        self.spec = spec
        self.scenario = scenario
        self.seed = check_seed(seed)
        self.max_steps = spec.max_steps if max_steps is None else int(max_steps)
        self.overrides = jsonable(dict(overrides or {}))
        self.config = jsonable(dict(config or {}))
        self.reward_timing = check_reward_timing(reward_timing)
        if token_source not in TOKEN_SOURCES:
            raise UnknownNameError("token source", token_source, TOKEN_SOURCES)
        self.token_source = token_source
        self._tokens_given = False
        self.rewards = RewardLedger(spec.rewards, spec.settled, self.reward_timing)
        rng = np.random.default_rng(seed)
        world_overrides = self.overrides
        if scenario.mixture:
            self.family = self._draw_family(rng)
            world_overrides = {k: v for k, v in self.overrides.items() if k != "family"}
        else:
            self.family = scenario
        self.world = spec.world(self.family, rng, self.rewards, world_overrides, self.config)
        self.events: list[Event] = []
        self.transcript: list[dict[str, Any]] = []
        self.steps = 0
        self.verdict: Verdict | None = None
        self.done = False
        self.truncated = False
        self._last: tuple[Any, str | None, dict[str, Any]] | None = None  # tool, rejected, report

    def _draw_family(self, rng: np.random.Generator) -> Scenario:
        forced = self.overrides.get("family")
        if forced is None:
            return draw_family(self.spec.scenarios, self.seed, rng)
        rng.random()  # the draw it replaces, so the rest of the stream is the seed's own
        family = self.spec.scenario(forced)
        if family.mixture:
            raise UnknownNameError("family", forced, [s.name for s in self.spec.families()])
        return family

    # -- what the agent sees -------------------------------------------------------------

    @property
    def env(self) -> str:
        """Name of the environment."""
        return self.spec.name

    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI-style function schemas of every tool."""
        return [t.schema for t in self.world.tools.values()]

    def observe(self) -> dict[str, Any]:
        """The agent's view: the world's reports plus the episode's own counters."""
        obs = self.world.observe()
        obs["step"] = self.steps
        obs["steps_left"] = self.max_steps - self.steps if self.max_steps else None
        last = self._last  # kept as a tuple: the dict is built only when someone looks
        shown = None if last is None else {"tool": last[0], "rejected": last[1], "report": last[2]}
        obs["last"] = fresh(shown)
        obs["done"] = self.done
        return obs

    # -- acting -------------------------------------------------------------------------

    def step(
        self, tool: str, args: dict[str, Any] | None = None, *, tokens: int | None = None
    ) -> StepResult:
        """Validate and carry out one call.

        ``tokens`` is what the agent spent to produce the call; ``None`` charges the world's
        fixed ``tokens_per_call``. **It is taken on trust**: an agent that reports its own
        tokens can report zero. Faces count tokens themselves (the Gym face charges the fixed
        cost; the tool-calling face counts the model's output) and pass their count here; the
        record's ``token_source`` says where the counts came from (``caller`` unless the face
        that built the episode named its method).

        Never raises for bad input from the agent: an unknown tool, malformed arguments or an
        unmet precondition make a rejected step. ``tool=None`` is how a face records a reply
        that called no tool: the step is rejected with ``args["error"]`` as its reason (``"no
        tool call"`` if absent). Raises :class:`EpisodeDoneError` only when the episode is over.
        """
        if self.done:
            raise EpisodeDoneError(
                f"Episode {self.env}/{self.scenario.name}/seed={self.seed} is over "
                f"(outcome {self.verdict.outcome if self.verdict else None!r}); make a new one."
            )
        name, raw = jsonable(tool), jsonable(args)
        if tokens is not None and (
            isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0
        ):
            raise ValueError(f"tokens must be an int >= 0 or None, got {tokens!r}")
        if type(raw) is dict and any(type(v) in (dict, list) for v in raw.values()):
            if was_cut(raw):  # the cut form is what is recorded, so a replay cuts the same way
                reason = f"arguments nested deeper than {MAX_DEPTH} levels"
                return self._run(name, raw, None, None, reason, tokens)
        elif type(raw) is list and was_cut(raw):
            reason = f"arguments nested deeper than {MAX_DEPTH} levels"
            return self._run(name, raw, None, None, reason, tokens)
        spec = self.world.tools.get(name) if isinstance(name, str) else None
        if spec is None and name is None:  # a face's step for a reply that called no tool
            why = raw.get("error") if isinstance(raw, dict) else None
            reason = why if isinstance(why, str) and why else "no tool call"
            return self._run(name, raw, None, None, reason, tokens)
        if spec is None:
            close = difflib.get_close_matches(str(name), list(self.world.tools), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            return self._run(name, raw, None, None, f"unknown tool {name!r}{hint}", tokens)
        parsed = spec.parse(raw)
        if isinstance(parsed, str):
            return self._run(name, raw, spec, None, parsed, tokens)
        return self._run(name, raw, spec, parsed, spec.check(self.world.view, parsed), tokens)

    def step_call(self, tool: Tool, args: Args, raw: dict[str, Any] | None = None) -> StepResult:
        """Fast path for adapters holding a ready ``Tool`` and validated ``Args``.

        Preconditions are still checked; only parsing is skipped. ``raw`` is the arguments'
        JSON form, if the caller has it at hand.
        """
        if self.done:
            raise EpisodeDoneError(f"Episode {self.env}/{self.scenario.name} is over.")
        raw = args.model_dump(mode="json") if raw is None else raw
        return self._run(tool.name, raw, tool, args, tool.check(self.world.view, args))

    def _run(
        self,
        name: Any,
        raw: Any,
        tool: Tool | None,
        args: Args | None,
        rejected: str | None,
        tokens: int | None = None,
    ) -> StepResult:
        world, rewards = self.world, self.rewards
        self.steps += 1
        if tokens is None:
            tokens = world.tokens_per_call
        else:
            self._tokens_given = True
        world.tokens += tokens
        rewards.add("step")
        judged: Verdict | None = None
        if rejected is not None:
            rewards.add("invalid")
            report: dict[str, Any] = {"error": rejected}
        else:
            assert tool is not None and args is not None  # a call that runs was parsed
            world.lies.before_call(self.steps, tool.name, args)
            report = world.apply(tool, args)
            if tool.terminal:
                # A refused completion ends the episode too, with the refusal as its verdict
                # (the judgement of the same truth and trajectory with ``completing=False``:
                # ``completing`` decides only acceptance). Were the episode to go on, the
                # refusal would tell the agent what the truth is, and ``complete`` would be a
                # free probe of it: ship, ask, and roll back if refused.
                judged = self.spec.judge.evaluate(world.truth(), self.events, completing=True)
                if not judged.accepted:
                    rewards.add("premature")
                    report = dict(REFUSED)
                self._finish(judged)
        terminated = self.done
        if not self.done:
            if world.ended or (world.deadline is not None and world.clock >= world.deadline):
                terminated = True
            elif self.max_steps and self.steps >= self.max_steps:
                self.truncated = True
            if terminated or self.truncated:
                self._finish(self.spec.judge.evaluate(world.truth(), self.events, completing=False))
        components = rewards.close_step(final=self.done)
        truth = world.truth()
        truth["family"] = self.family.name
        if rewards.accrued:
            truth["accrued"] = rewards.accrued
        told = world.lies.drain_new()
        if told:
            truth["lies"] = told
        if judged is not None:
            truth["judge"] = judged.to_dict()
        event: Event = {  # a literal: the same plain dict as ``Event(...)``, built faster
            "step": self.steps,
            "tool": name,
            "args": raw,
            "tokens": tokens,
            "rejected": rejected,
            "report": report,
            "reward": components,
            "clock": world.clock,
            "done": self.done,
            "truth": truth,
        }
        self.events.append(event)
        self._last = (name, rejected, report)
        return StepResult(  # positional: report, reward, done, rejected, terminated, ...
            fresh(report),
            sum(components.values()),
            self.done,
            rejected,
            terminated,
            self.truncated,
            components.copy(),
        )

    def _finish(self, verdict: Verdict) -> None:
        self.verdict = verdict
        self.done = True
        table = self.world.outcome_rewards or self.spec.outcome_rewards
        self.rewards.add("terminal", table.get(verdict.outcome, 0.0))

    # -- after the fact -----------------------------------------------------------------

    @property
    def total_reward(self) -> float:
        """Sum of all rewards so far."""
        return self.rewards.total

    @property
    def recorded_token_source(self) -> str:
        """Where this episode's token counts came from so far (see :data:`TOKEN_SOURCES`)."""
        return self.token_source if self._tokens_given else "fixed"

    def header(self) -> dict[str, Any]:
        """The record's header, the root of its hash chain."""
        return {
            "format": RECORD_FORMAT,
            "env": self.env,
            "scenario": self.scenario.name,
            "seed": self.seed,
            "max_steps": self.max_steps,
            "overrides": self.overrides,
            "config": self.config,
            "reward_timing": self.reward_timing,
            "token_source": self.recorded_token_source,
        }

    def draft(self) -> dict[str, Any]:
        """The record before it is sealed: its header, the events without their hashes, the
        verdict and the returns (and the transcript, if any).

        It shares the episode's own events, so it is for serialising at once (a store writer
        sends it to another process this way) and must not be changed; :func:`seal` makes the
        record of a copy.
        """
        draft = self.header()
        draft["events"] = self.events
        draft["verdict"] = self.verdict.to_dict() if self.verdict else None
        draft["return"] = self.rewards.total
        draft["rewards"] = dict(self.rewards.totals)
        if self.transcript:
            draft["transcript"] = self.transcript
        return draft

    def record(self) -> dict[str, Any]:
        """The episode as a JSON-serialisable, hash-chained record.

        Each event carries the call, what the tool reported, the reward components paid and,
        under ``truth``, what was actually true after the call (the drawn ``family``, and the
        settled reward ``accrued`` out of sight). ``opsgym.replay`` recomputes it from the
        header and the calls. The header is the root of the hash chain.
        """
        return seal(json_copy(self.draft()))
