"""The MCP face: the worlds' tools served to any MCP client, over stdio or streamable HTTP.

``opsgym mcp [--env E ...] [--transport stdio|http] [--host H] [--port N]`` (extra ``mcp``,
the official SDK's v2 line). The server's ``POST /mcp`` (OpenEnv's plain JSON-RPC route) answers
``tools/list`` and ``tools/call`` from this same face: one catalogue, one validation, one result
shape. A client sees:

``start_episode(env, scenario, seed, split, config)``
    Starts an episode; returns its id and the first observation (the prompt
    :func:`~opsgym.adapters.toolcalls.render_text` renders). Without a seed, one is drawn within
    the split (``train`` by default) and shown only by ``read_verdict``, after the end: a seed is
    the episode's hidden facts.
every world tool, ``<env>_<tool>(episode_id, ...)``, e.g. ``release_deploy``
    Its own arguments (the JSON schema generated from its pydantic model) plus an explicit
    ``episode_id``. The text is :func:`~opsgym.adapters.toolcalls.result_text`: what the tool
    reported, or why the call was rejected; never the truth. The structured content is
    ``{"report", "rejected", "reward", "done", "step"}``: the same report, the reward the step
    paid (under the default ``reward_timing="end"`` nothing computed from hidden facts is paid
    before the last step) and whether the episode is over. A rejected call is recorded and costs
    ``invalid``, as through every other face, and comes back as an MCP tool error
    (``isError``). A second text block says when the call ended the episode.
``observe_episode(episode_id)``
    The episode's observation now, as JSON (``{"episode_id", "done", "observation"}``, in the
    text and as structured content); read-only, a step is not taken.
``read_verdict(episode_id)``
    The judge's verdict as JSON, only once the episode is over; refused, with the reason, while
    it runs.

Tool names are always ``<env>_<tool>``, whichever worlds a server serves (``--env release`` too),
so a client written against one server works against any other. Neither alternative holds:
bare names collide as soon as two worlds share one (any plug-in world may bring a ``wait`` or a
``complete``), and one tool per name with an ``env`` argument would need a union of the worlds'
argument schemas, which no host can validate. The episode id already fixes the world; the
prefix only keeps the names apart. Underscores rather than dots: MCP allows ``release.deploy``,
but the OpenAI and Anthropic function-name rules that MCP hosts map tools onto do not. An
unprefixed name is refused with the prefixed one suggested.

Sessions: each episode lives in this server under a random id (``release-3f9c0a1be2d4``),
which is the only handle to it, so clients sharing a server cannot reach each other's
episodes; the newest ``max_episodes`` are kept. Bad input (an unknown id, bad arguments, a step
after the end, arguments nested deeper than :data:`~opsgym.core.episode.MAX_MESSAGE_DEPTH`
levels) is a tool error the model can read; an unknown tool name is a protocol error
(``INVALID_PARAMS``), as the MCP specification asks. The server never stops on either. A world
tool's arguments nested past :data:`~opsgym.core.episode.MAX_DEPTH` but within that are the
episode's to reject: a recorded, rejected call.

What the face does not do: it cannot see the model's tokens, so each call is charged the
world's fixed cost (the record says ``token_source: fixed``); and whoever starts an episode
picks its seed and config, so an evaluation should start the episodes itself rather than leave
that to the model under test.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import secrets
import sys
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, Field
from starlette.applications import Starlette

from opsgym.adapters.toolcalls import render_text, result_text
from opsgym.core import VERSION
from opsgym.core.episode import MAX_MESSAGE_DEPTH, Episode, jsonable, nests_deeper
from opsgym.core.errors import EpisodeDoneError, OpsgymError, UnknownNameError
from opsgym.core.registry import spec, specs
from opsgym.core.request import EpisodeRequest
from opsgym.core.tools import Args, Tool

MAX_EPISODES = 1024
"""Episodes kept per server by default; starting one more forgets the least recently used."""

EPISODE_ID = {
    "type": "string",
    "description": "The id start_episode returned for the episode this call acts on.",
}

ENDED = "The episode is over: read_verdict tells how it was judged."
"""Second text block of the call that ended an episode."""

INSTRUCTIONS = (
    "opsgym: production-operations worlds judged on what was true, not on what the tools "
    "reported. Call start_episode, then the world's tools with the episode_id it returned "
    "(observe_episode shows the state at any time). When a call ends the episode, read_verdict "
    "gives the outcome."
)


class StartArgs(Args):
    """Arguments of ``start_episode``."""

    env: str = Field(description="World to run.")
    scenario: str | None = Field(
        None,
        description="Fault family ('mixed' hides which was drawn); the world's first if omitted.",
    )
    seed: int | None = Field(
        None,
        ge=0,
        le=2**63 - 1,
        description="Seeds everything random in the episode; omitted: drawn within the split "
        "and shown only once the episode is over (read_verdict).",
    )
    split: Literal["train", "dev", "test"] | None = Field(
        None,
        description="Split of the seed: checked if a seed is given, drawn from if not (train).",
    )
    config: dict[str, Any] = Field(
        default_factory=dict, description="Public settings of the episode (see each world)."
    )


class ForcedStartArgs(StartArgs):
    """``start_episode`` on a server built with ``allow_overrides``: leak tests only."""

    overrides: dict[str, Any] = Field(
        default_factory=dict, description="Hidden facts to force (leak tests and debugging)."
    )


class EpisodeRef(Args):
    """Arguments of the tools that only name an episode."""

    episode_id: str = Field(description=EPISODE_ID["description"])


def _text(
    *blocks: str, error: bool = False, structured: dict[str, Any] | None = None
) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=b) for b in blocks],
        structured_content=structured,
        is_error=error,
    )


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


_A = TypeVar("_A", bound=Args)


class _Refusal(Exception):
    """A call this face answers with a tool error (nothing ran, nothing was recorded)."""


class OpsgymMCP:
    """The tools of some worlds, and the episodes started through them.

    Args:
        envs: Worlds to serve (all registered ones when ``None`` or empty).
        max_episodes: Episodes kept at once; starting one more forgets the least recently used.
        allow_overrides: Let ``start_episode`` force hidden facts (``overrides``). For leak
            tests only: an agent that may force the truth knows it. The command line never
            sets it.
        on_end: Called with each episode a call ends (the server saves it to its store).
    """

    def __init__(
        self,
        envs: list[str] | None = None,
        *,
        max_episodes: int = MAX_EPISODES,
        allow_overrides: bool = False,
        on_end: Callable[[Episode], None] | None = None,
    ):
        names = list(dict.fromkeys(envs or specs()))
        for name in names:
            spec(name)  # unknown names raise with close matches
        if max_episodes < 1:
            raise ValueError(f"max_episodes must be >= 1, got {max_episodes}")
        self.envs = names
        self.max_episodes = max_episodes
        self.episodes: OrderedDict[str, Episode] = OrderedDict()
        self.on_end = on_end
        start_args = ForcedStartArgs if allow_overrides else StartArgs
        self._start = Tool("start_episode", self._describe_start(), start_args)
        self._observe = Tool(
            "observe_episode",
            "The episode's observation now, as JSON: what the agent is shown (takes no step).",
            EpisodeRef,
        )
        self._verdict = Tool(
            "read_verdict",
            "The judge's verdict on an episode that is over (refused while it runs).",
            EpisodeRef,
        )
        self.tools: list[types.Tool] = []
        self._routes: dict[str, Callable[[dict[str, Any]], types.CallToolResult]] = {}
        self._add(self._start.name, self._start.description, self._start_schema(), self.start)
        for tool, handler in ((self._observe, self.observe), (self._verdict, self.verdict)):
            self._add(tool.name, tool.description, tool.parameters, handler, read_only=True)
        for env in names:
            for tool in spec(env).world.tools.values():
                self._add(
                    tool_name(env, tool.name),
                    tool.description,
                    _with_episode_id(tool),
                    self._stepper(env, tool),
                )

    # -- the tool list -------------------------------------------------------------------

    def _describe_start(self) -> str:
        worlds = "; ".join(
            f"{env}: scenarios {', '.join(s.name for s in spec(env).scenarios)}"
            for env in self.envs
        )
        return (
            "Start an episode. Returns its episode_id (pass it to every other call) and the "
            f"first observation. {worlds}."
        )

    def _start_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = json.loads(json.dumps(self._start.parameters))
        schema["properties"]["env"]["enum"] = list(self.envs)
        if len(self.envs) == 1:
            schema["properties"]["env"]["default"] = self.envs[0]
            schema["required"] = [r for r in schema.get("required", []) if r != "env"]
        return schema

    def _add(
        self,
        name: str,
        description: str,
        schema: dict[str, Any],
        handler: Callable[[dict[str, Any]], types.CallToolResult],
        *,
        read_only: bool = False,
    ) -> None:
        if name in self._routes:
            raise ValueError(f"two MCP tools would be named {name!r}; serve the worlds apart")
        annotations = types.ToolAnnotations(read_only_hint=True) if read_only else None
        self.tools.append(
            types.Tool(
                name=name, description=description, input_schema=schema, annotations=annotations
            )
        )
        self._routes[name] = handler

    # -- calls ---------------------------------------------------------------------------

    def call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        """Answer one ``tools/call``; an unknown tool name raises :class:`MCPError`."""
        handler = self._routes.get(name)
        if handler is None:
            raise MCPError(types.INVALID_PARAMS, self._unknown(name))
        if nests_deeper(arguments, MAX_MESSAGE_DEPTH):  # before a check recurses into them
            return _text(
                f"arguments nested deeper than {MAX_MESSAGE_DEPTH} levels: refused, nothing ran "
                "(a tool's arguments are flat)",
                error=True,
            )
        try:
            return handler(dict(arguments or {}))
        except _Refusal as refusal:
            return _text(str(refusal), error=True)

    def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """One JSON-RPC request answered without an MCP session, as the wire's ``result``.

        For a route that speaks plain JSON-RPC with no handshake (the server's ``POST /mcp``, as
        OpenEnv defines it): ``tools/list``, ``tools/call`` and ``ping``. Raises
        :class:`MCPError` (``METHOD_NOT_FOUND``, ``INVALID_PARAMS``) as the SDK would.
        """
        if method == "tools/list":
            return {"tools": [_wire(tool) for tool in self.tools]}
        if method == "tools/call":
            name, arguments = params.get("name"), params.get("arguments")
            if not isinstance(name, str) or not isinstance(arguments, dict | None):
                raise MCPError(
                    types.INVALID_PARAMS,
                    "tools/call needs params.name (a string) and params.arguments (an object)",
                )
            return _wire(self.call(name, arguments))
        if method == "ping":
            return {}
        raise MCPError(
            types.METHOD_NOT_FOUND, f"Method not found: {method!r} (tools/list, tools/call, ping)"
        )

    def _unknown(self, name: Any) -> str:
        prefixed = [tool_name(env, str(name)) for env in self.envs]
        close = [n for n in prefixed if n in self._routes] or difflib.get_close_matches(
            str(name), list(self._routes), n=1
        )
        hint = f" Did you mean {close[0]!r}?" if close else ""
        return f"Unknown tool {name!r}; tools/list names them (<env>_<tool>).{hint}"

    def start(self, arguments: dict[str, Any]) -> types.CallToolResult:
        """``start_episode``: make the episode, keep it under a fresh id, show it."""
        if len(self.envs) == 1:
            arguments.setdefault("env", self.envs[0])
        parsed = _parse(self._start, arguments, StartArgs)
        if parsed.env not in self.envs:
            raise _Refusal(str(UnknownNameError("environment", parsed.env, self.envs)))
        try:
            episode = EpisodeRequest(
                parsed.env,
                parsed.scenario,
                parsed.seed,
                split=parsed.split,
                config=parsed.config,
                overrides=getattr(parsed, "overrides", None) or {},
            ).start()
        except (OpsgymError, ValueError, TypeError) as exc:
            raise _Refusal(f"cannot start the episode: {exc}") from None
        episode_id = f"{parsed.env}-{secrets.token_hex(6)}"
        self.episodes[episode_id] = episode
        while len(self.episodes) > self.max_episodes:
            self.episodes.popitem(last=False)
        header: dict[str, Any] = {
            "episode_id": episode_id,
            "env": parsed.env,
            "scenario": episode.scenario.name,
        }
        if parsed.seed is not None:  # a drawn seed is shown only after the end (read_verdict)
            header["seed"] = parsed.seed
        return _text(_dumps(header), render_text(episode), structured=header)

    def observe(self, arguments: dict[str, Any]) -> types.CallToolResult:
        """``observe_episode``: the observation now, as JSON."""
        episode_id = self._episode_id(self._observe, arguments)
        episode = self._episode(episode_id)
        seen = {
            "episode_id": episode_id,
            "done": episode.done,
            "observation": jsonable(episode.observe()),
        }
        return _text(_dumps(seen), structured=seen)

    def verdict(self, arguments: dict[str, Any]) -> types.CallToolResult:
        """``read_verdict``: the judge's verdict, once the episode is over."""
        episode_id = self._episode_id(self._verdict, arguments)
        episode = self._episode(episode_id)
        if not episode.done or episode.verdict is None:
            budget = f" of {episode.max_steps}" if episode.max_steps else ""
            raise _Refusal(
                f"episode {episode_id} is still running (step {episode.steps}{budget}): the "
                "verdict is read after the end (a terminal tool, the deadline or the step budget)."
            )
        verdict = episode.verdict.to_dict()
        verdict.update(
            episode_id=episode_id,
            failed=episode.verdict.failed,
            steps=episode.steps,
            seed=episode.seed,
        )
        verdict = jsonable(verdict)
        return _text(_dumps(verdict), structured=verdict)

    def _stepper(self, env: str, tool: Tool) -> Callable[[dict[str, Any]], types.CallToolResult]:
        def step(arguments: dict[str, Any]) -> types.CallToolResult:
            episode_id = arguments.pop("episode_id", None)
            episode = self._episode(episode_id, env)
            try:
                result = episode.step(tool.name, arguments)
            except EpisodeDoneError:
                raise _Refusal(
                    f"episode {episode_id} is over: read_verdict tells how it was judged."
                ) from None
            if result.done and self.on_end is not None:
                self.on_end(episode)
            blocks = (result_text(result), ENDED) if result.done else (result_text(result),)
            paid = {
                "report": jsonable(result.report),
                "rejected": result.rejected,
                "reward": result.reward,
                "done": result.done,
                "step": episode.steps,
            }
            return _text(*blocks, error=result.rejected is not None, structured=paid)

        return step

    @staticmethod
    def _episode_id(tool: Tool, arguments: dict[str, Any]) -> str:
        return _parse(tool, arguments, EpisodeRef).episode_id

    def _episode(self, episode_id: Any, env: str | None = None) -> Episode:
        if not isinstance(episode_id, str):
            raise _Refusal(
                f"episode_id must be the string start_episode returned, got {episode_id!r}"
            )
        episode = self.episodes.get(episode_id)
        if episode is None:
            raise _Refusal(
                f"unknown episode_id {episode_id!r}: start one with start_episode (this server "
                f"keeps the {self.max_episodes} most recently used)."
            )
        if env is not None and episode.env != env:
            raise _Refusal(
                f"episode {episode_id} runs the {episode.env} world; call its {episode.env}_* "
                "tools."
            )
        self.episodes.move_to_end(episode_id)
        return episode

    # -- serving -------------------------------------------------------------------------

    def server(self) -> Server[Any]:
        """The SDK's low-level server over these tools (schemas are built here, not inferred)."""
        listing = types.ListToolsResult(tools=self.tools)

        async def list_tools(
            ctx: Any, params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            return listing

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            return self.call(params.name, params.arguments)

        return Server(
            "opsgym",
            version=VERSION,
            instructions=INSTRUCTIONS,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
        )


def _parse(tool: Tool, arguments: dict[str, Any], model: type[_A]) -> _A:
    """``tool``'s arguments parsed as ``model`` (its ``args`` or a base of it); refused if bad."""
    parsed = tool.parse(arguments)
    if isinstance(parsed, str):
        raise _Refusal(parsed)
    if not isinstance(parsed, model):
        raise TypeError(f"tool {tool.name!r} parses {type(parsed).__name__}, not {model.__name__}")
    return parsed


def _wire(model: BaseModel) -> dict[str, Any]:
    """An SDK model as MCP's JSON (camelCase, nothing unset)."""
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def tool_name(env: str, tool: str) -> str:
    """The MCP name of a world's tool: ``release_deploy`` (see the module docstring)."""
    return f"{env}_{tool}"


def _with_episode_id(tool: Tool) -> dict[str, Any]:
    """The tool's own JSON schema with a required ``episode_id`` merged in."""
    schema: dict[str, Any] = json.loads(json.dumps(tool.parameters))
    properties = schema.get("properties", {})
    if "episode_id" in properties:
        raise ValueError(f"tool {tool.name!r} has its own 'episode_id' argument")
    schema["properties"] = {"episode_id": dict(EPISODE_ID), **properties}
    schema["required"] = ["episode_id", *schema.get("required", [])]
    return schema


def http_app(face: OpsgymMCP, host: str = "127.0.0.1") -> Starlette:
    """The streamable-HTTP ASGI app (``/mcp``); DNS-rebinding protection on loopback hosts.

    Replies are plain JSON rather than an SSE stream: no tool here reports progress.
    """
    return face.server().streamable_http_app(host=host, json_response=True)


async def serve_stdio(face: OpsgymMCP) -> None:
    """Serve over this process's stdin and stdout until the client closes them."""
    server = face.server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def serve(
    envs: list[str] | None = None,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
) -> None:
    """Serve ``envs`` (all worlds by default) until interrupted; what ``opsgym mcp`` runs."""
    face = OpsgymMCP(envs)
    if transport == "stdio":
        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(serve_stdio, face)
        return
    if transport != "http":
        raise UnknownNameError("transport", transport, ("stdio", "http"))
    import uvicorn

    print(
        f"opsgym MCP: {len(face.tools)} tools for {', '.join(face.envs)} at "
        f"http://{host}:{port}/mcp",
        file=sys.stderr,
    )
    uvicorn.run(http_app(face, host), host=host, port=port, log_level="warning")
