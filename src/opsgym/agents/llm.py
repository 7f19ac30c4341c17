"""An LLM agent: any OpenAI-compatible chat endpoint, through the tool-calling face.

:class:`LLMAgent` is the endpoint backend (:class:`OpenAIBackend`) in the one drive loop
(:func:`opsgym.agents.drive.drive`): each turn it asks the model once, and the reply is read
with :func:`~opsgym.adapters.toolcalls.parse_reply` and carried out with
:func:`~opsgym.adapters.toolcalls.run_turn`: 1 to 3 calls, each validated by the episode, the
batch stopped at the first unexpected result.

**The conversation** (:mod:`opsgym.adapters.chat`) is by default the ``snapshot`` format: each
turn ``[system, user]``, the world's brief and the reply rules, then the state now and what each
call of the previous turn returned (:func:`~opsgym.adapters.toolcalls.render_messages`); the
context is the same size every turn, as the observation holds everything the agent has been
told. ``format="history"`` (the policy ``llm+history:MODEL``) is the conversation ``opsgym train``
teaches, TRL's, growing turn by turn: a model trained by opsgym and served by vLLM is evaluated
in the format it learnt.

    agent = LLMAgent("release", model="qwen3-8b", base_url="http://127.0.0.1:8000/v1")
    episode = agent.drive(opsgym.make("release", "mixed", 7))
    opsgym run --env release --policy llm --model qwen3-8b --base-url http://127.0.0.1:8000/v1
    opsgym eval --env release --policy llm:qwen3-8b   # OPSGYM_LLM_BASE_URL names the endpoint
    opsgym eval --env release --policy llm+history:my-grpo-model   # the format it was trained in

**Endpoint.** ``base_url``, ``model`` and ``api_key`` come from the arguments or from
``OPSGYM_LLM_BASE_URL``, ``OPSGYM_LLM_MODEL`` and ``OPSGYM_LLM_API_KEY`` (the key may be left
out for a local server). Anything that speaks ``/v1/chat/completions`` works: vLLM, SGLang,
llama.cpp's server, Ollama (``http://127.0.0.1:11434/v1``), OpenRouter, OpenAI. Tools go as the
request's ``tools`` (``tools_in_prompt=True`` lists them in the system message instead, for a
server without native tool calling; the model then writes ``<tool_call>`` blocks, which are
parsed the same way).

**Reasoning off.** Tool-call turns need no long reasoning. ``reasoning="off"`` (the default)
sends ``extra_body={"chat_template_kwargs": {"enable_thinking": False}, "reasoning":
{"enabled": False}}``: the first turns Qwen3-style chat templates' thinking off on vLLM, SGLang
and llama.cpp's server; the second is OpenRouter's switch. Servers ignore fields they do not
know; one that refuses them (an HTTP 400 that names either) is asked again without them, and
the agent remembers. For OpenAI's reasoning models pass ``extra_body={"reasoning_effort":
"minimal"}``; for Ollama, ``{"reasoning_effort": "none"}``. ``reasoning="on"`` sends nothing.
Reasoning a reply carries anyway (``<think>`` blocks, ``reasoning_content``) is recorded, and
never parsed for calls.

**Failures.** Each request has a ``timeout``. Timeouts, connection errors, 408, 409, 429 and
5xx are retried by the ``openai`` client itself, ``max_retries`` times: it honours
``Retry-After`` (and ``retry-after-ms``) up to 120 s, else backs off exponentially from 0.5 s
(at most 8 s, with jitter). When the retries run out, or on any other HTTP error, the agent
raises :class:`EndpointError` with one line that says what failed and where; the transcript
keeps the failed turn. A reply, however malformed, is never an error: it is carried out or
rejected by the episode (see :mod:`opsgym.adapters.toolcalls`).

**Budget.** ``max_decisions`` bounds the model's turns per episode (default: the episode's step
budget, which every turn spends at least one step of, so it ends first). An episode still
running when the turns are spent is left unfinished, without a verdict, and the transcript says
why.

**Record.** Everything goes into ``Episode.transcript`` (``record()["transcript"]``, see
:mod:`opsgym.agents.drive`): a ``setup`` entry (backend, model, endpoint, settings, the format,
the system message or first message and the tool schemas) and per turn what was sent (the user
message, in the snapshot format), the raw response, the parsed calls, what became of each (ran,
rejected, skipped, extra, with its step), the tokens and their source, and the retries the
client took. The events themselves are the episode's, hash-chained.

**Tokens** are the model's output per turn (see :mod:`opsgym.adapters.toolcalls.tokens`): the
provider's ``completion_tokens`` when the response has ``usage`` (the episode's token source is
``provider``), else the face's estimate (``estimate``). The source is fixed before the first
step, from the first reply; a later reply without usage is estimated and its turn says so.

**Offline planner.** :class:`OfflinePlanner` is not a model: one of the world's scripted
policies writes its call as a ``<tool_call>`` reply, which then goes the same way as a model's
(parsed, validated, recorded). It spends no tokens (token source ``none``). It is for demos and
tests of the path, named ``planner:POLICY`` (``opsgym run --policy planner:oracle``), and labelled
so in every transcript.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from opsgym.adapters.chat import FORMATS
from opsgym.agents.base import PREFIXED
from opsgym.agents.drive import (
    DEFAULT_DECISIONS,
    Backend,
    LLMError,
    ModelAgent,
    Reply,
    Request,
)
from opsgym.core.episode import StepResult
from opsgym.core.errors import OpsgymError
from opsgym.core.registry import spec

ENV_BASE_URL = "OPSGYM_LLM_BASE_URL"
ENV_MODEL = "OPSGYM_LLM_MODEL"
ENV_API_KEY = "OPSGYM_LLM_API_KEY"
REASONING_OFF = {
    "chat_template_kwargs": {"enable_thinking": False},
    "reasoning": {"enabled": False},
}
"""What ``reasoning="off"`` adds to each request's body (see the module docstring)."""


class EndpointError(OpsgymError, RuntimeError):
    """The model's endpoint failed: unreachable, timed out, refused, or out of retries."""


# -- settings -------------------------------------------------------------------------------


@dataclass(frozen=True)
class LLMSettings:
    """How the agent talks to its endpoint.

    Attributes:
        model: The model's name at the endpoint (``OPSGYM_LLM_MODEL``).
        base_url: The endpoint, up to ``/v1`` (``OPSGYM_LLM_BASE_URL``).
        api_key: The key, if the endpoint wants one (``OPSGYM_LLM_API_KEY``).
        max_decisions: Model turns per episode; ``None``: the episode's step budget.
        timeout: Seconds one request may take.
        max_retries: Retries of a request that timed out, could not connect, or got 408, 409,
            429 or 5xx (the ``openai`` client's, honouring ``Retry-After``).
        reasoning: ``off`` asks the endpoint not to reason (see the module docstring); ``on``
            leaves it to the model.
        temperature: Sampling temperature (``None``: the endpoint's default).
        max_tokens: Most output tokens per turn (``None``: the endpoint's default).
        tools_in_prompt: List the tools in the system message instead of the request's
            ``tools``, for servers without native tool calling (the snapshot format only).
        format: The conversation format (:mod:`opsgym.adapters.chat`): ``snapshot`` (each turn
            the state now) or ``history`` (TRL's growing conversation, the format ``opsgym
            train`` teaches).
        extra_body: More fields for each request's body (``reasoning_effort``, ``top_k``...).
    """

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    max_decisions: int | None = None
    timeout: float = 60.0
    max_retries: int = 3
    reasoning: str = "off"
    temperature: float | None = 0.0
    max_tokens: int | None = 1024
    tools_in_prompt: bool = False
    format: str = "snapshot"
    extra_body: dict[str, Any] | None = None

    def resolved(self) -> LLMSettings:
        """These settings with the environment's defaults filled in, checked."""
        model = self.model or os.environ.get(ENV_MODEL)
        base_url = self.base_url or os.environ.get(ENV_BASE_URL)
        key = self.api_key or os.environ.get(ENV_API_KEY)
        if not model:
            raise LLMError(f"No model for the LLM agent: pass --model M or set {ENV_MODEL}.")
        if not base_url:
            raise LLMError(
                f"No endpoint for the LLM agent: pass --base-url URL (e.g. "
                f"http://127.0.0.1:8000/v1) or set {ENV_BASE_URL}."
            )
        if self.reasoning not in ("off", "on"):
            raise LLMError(f"reasoning must be 'off' or 'on', got {self.reasoning!r}.")
        self.check()
        if self.max_decisions is not None and self.max_decisions < 1:
            raise LLMError(f"max_decisions must be >= 1, got {self.max_decisions!r}.")
        if self.timeout <= 0 or self.max_retries < 0:
            raise LLMError(
                f"timeout must be > 0 and max_retries >= 0, got {self.timeout!r} and "
                f"{self.max_retries!r}."
            )
        return LLMSettings(**{**asdict(self), "model": model, "base_url": base_url, "api_key": key})

    def check(self) -> None:
        """Refuse a format that is not one, or an option it does not take."""
        if self.format not in FORMATS:
            raise LLMError(f"format must be one of {', '.join(FORMATS)}, got {self.format!r}.")
        if self.format != "snapshot" and self.tools_in_prompt:
            raise LLMError(
                "tools_in_prompt lists the tools in the snapshot format's system message; the "
                f"{self.format} format sends them as the request's tools."
            )

    def public(self) -> dict[str, Any]:
        """The settings as the transcript records them (never the key)."""
        data = asdict(self)
        data.pop("api_key")
        return data


# -- backends -------------------------------------------------------------------------------


class OpenAIBackend:
    """An OpenAI-compatible chat endpoint through the ``openai`` client."""

    token_source = None
    needs_legal = False

    def __init__(self, settings: LLMSettings):
        self.settings = settings
        self.label = f"openai-compatible endpoint {settings.base_url} (model {settings.model})"
        self._client: Any = None
        self._reasoning_off = settings.reasoning == "off"

    def reset(self, rng: np.random.Generator | None) -> None:
        """Nothing to reset: the endpoint keeps no state between requests."""

    def feedback(self, result: StepResult) -> None:
        """Unused: the model reads results in its next prompt."""

    def _openai(self) -> Any:
        try:
            import openai
        except ImportError as exc:
            raise LLMError(
                "The LLM agent needs the openai client: pip install 'opsgym[llm]'."
            ) from exc
        return openai

    @property
    def client(self) -> Any:
        """The ``openai.OpenAI`` client, made on first use."""
        if self._client is None:
            s = self.settings
            self._client = self._openai().OpenAI(
                base_url=s.base_url,
                api_key=s.api_key or "unused",  # local servers take any key; the client wants one
                timeout=s.timeout,
                max_retries=s.max_retries,
            )
        return self._client

    def _body(self) -> dict[str, Any] | None:
        body = dict(REASONING_OFF) if self._reasoning_off else {}
        body.update(self.settings.extra_body or {})
        return body or None

    def complete(self, request: Request) -> Reply:
        """Ask the endpoint once (the client retries what is transient)."""
        openai, s = self._openai(), self.settings
        kwargs: dict[str, Any] = {"model": s.model, "messages": request.messages}
        if request.tools:
            kwargs["tools"] = request.tools
        if s.temperature is not None:
            kwargs["temperature"] = s.temperature
        if s.max_tokens is not None:
            kwargs["max_tokens"] = s.max_tokens
        while True:
            body = self._body()
            try:
                raw = self.client.chat.completions.with_raw_response.create(
                    **kwargs, extra_body=body
                )
                completion = raw.parse()
                break
            except openai.BadRequestError as exc:
                if self._reasoning_off and _names_reasoning_fields(exc):
                    self._reasoning_off = False  # this endpoint refuses the switch: ask without
                    continue
                raise EndpointError(self._status_line(exc)) from exc
            except openai.APITimeoutError as exc:
                raise EndpointError(
                    f"The LLM endpoint {s.base_url} did not answer within {s.timeout:g} s "
                    f"({s.max_retries + 1} tries)."
                ) from exc
            except openai.APIConnectionError as exc:
                cause = exc.__cause__ or exc
                raise EndpointError(
                    f"Cannot reach the LLM endpoint {s.base_url}: {_one_line(cause)} "
                    f"({s.max_retries + 1} tries). Is the server running?"
                ) from exc
            except openai.APIStatusError as exc:
                raise EndpointError(self._status_line(exc)) from exc
        return _reply(completion, raw.retries_taken)

    def _status_line(self, exc: Any) -> str:
        s, code = self.settings, exc.status_code
        retried = code in (408, 409, 429) or code >= 500
        tries = f" after {s.max_retries + 1} tries" if retried else ""
        return (
            f"The LLM endpoint {s.base_url} answered HTTP {code}{tries}: "
            f"{_one_line(_error_message(exc))}"
        )


def _one_line(value: Any, width: int = 300) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _error_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(getattr(exc, "message", exc))


def _names_reasoning_fields(exc: Any) -> bool:
    text = _error_message(exc) + " " + str(getattr(exc, "body", ""))
    return any(name in text for name in REASONING_OFF)


def _reply(completion: Any, retries: int) -> Reply:
    """A :class:`Reply` from an ``openai`` ChatCompletion (or anything shaped like one)."""
    raw = completion.model_dump(mode="json", exclude_none=True)
    choices = raw.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        raise EndpointError(f"The LLM endpoint answered without a choice: {_one_line(raw)}")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise EndpointError(f"The LLM endpoint answered without a message: {_one_line(raw)}")
    usage = raw.get("usage") if isinstance(raw.get("usage"), dict) else None
    return Reply(message=message, usage=usage, raw=raw, retries=int(retries or 0))


class OfflinePlanner:
    """Not an LLM: a world's scripted policy writing its calls as ``<tool_call>`` replies.

    It reads what that policy reads (the observation and the legal catalogue calls), never the
    prompt, and spends no tokens. ``style="tool_calls"`` writes native calls instead of text.
    """

    token_source = "none"
    needs_legal = True

    def __init__(self, env: str, policy: str = "oracle", style: str = "text"):
        from opsgym.agents.base import get_policy

        if style not in ("text", "tool_calls"):
            raise LLMError(f"style must be 'text' or 'tool_calls', got {style!r}.")
        self.policy = get_policy(env, policy)
        self.style = style
        self.label = (
            f"offline planner: the scripted {policy!r} policy writing tool calls; not an LLM, "
            "no tokens"
        )
        self._calls = 0

    def reset(self, rng: np.random.Generator | None) -> None:
        """Reset the scripted policy with the planner's generator."""
        self.policy.reset(rng)
        self._calls = 0

    def feedback(self, result: StepResult) -> None:
        """Hand the scripted policy its result, as :func:`opsgym.agents.play` would."""
        hook = getattr(self.policy, "feedback", None)
        if hook is not None:
            hook(result)

    def complete(self, request: Request) -> Reply:
        """The scripted policy's next call, written as a reply."""
        name, args = self.policy.act(request.obs, request.legal)
        self._calls += 1
        if self.style == "tool_calls":
            call = {
                "id": f"call_{self._calls}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        else:
            body = json.dumps({"name": name, "arguments": args})
            message = {"role": "assistant", "content": f"<tool_call>{body}</tool_call>"}
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        return Reply(message=message, usage=usage, raw={"planner": True, "message": message})


# -- the agent ------------------------------------------------------------------------------


class LLMAgent(ModelAgent):
    """Plays episodes of ``env`` through an endpoint (see the module docstring).

    Args:
        env: The environment.
        model: The model (else ``OPSGYM_LLM_MODEL``).
        base_url: The endpoint (else ``OPSGYM_LLM_BASE_URL``).
        api_key: Its key (else ``OPSGYM_LLM_API_KEY``).
        backend: Use this instead of an endpoint (an :class:`OfflinePlanner`, a test double).
        **settings: The other fields of :class:`LLMSettings` (``format``, ``max_decisions``...).
    """

    log = logging.getLogger(__name__)

    def __init__(
        self,
        env: str,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        backend: Backend | None = None,
        **settings: Any,
    ):
        self.env = spec(env).name
        if backend is None:
            self.settings = LLMSettings(
                model=model, base_url=base_url, api_key=api_key, **settings
            ).resolved()
            self.backend: Backend = OpenAIBackend(self.settings)
            kind = "llm" if self.settings.format == "snapshot" else f"llm+{self.settings.format}"
            self.name = f"{kind}:{self.settings.model}"
        else:
            self.settings = LLMSettings(model=model, base_url=base_url, **settings)
            self.settings.check()
            self.backend = backend
            self.name = getattr(backend, "name", "llm:" + type(backend).__name__)
        self.format = self.settings.format
        self.tools_in_prompt = self.settings.tools_in_prompt
        self.turns = self.settings.max_decisions

    def setup(self) -> dict[str, Any]:
        """The settings, as the transcript records them (never the key)."""
        return {"settings": self.settings.public()}


# -- registration ---------------------------------------------------------------------------


def _llm(format: str) -> Any:
    def factory(env: str, model: str) -> LLMAgent:
        return LLMAgent(env, model=model, format=format)

    return factory


def _planner(env: str, policy: str) -> LLMAgent:
    from opsgym.agents.base import is_deterministic

    agent = LLMAgent(env, backend=OfflinePlanner(env, policy))
    agent.name = f"planner:{policy}"
    agent.deterministic = is_deterministic(env, policy)
    return agent


PREFIXED.setdefault("llm", _llm("snapshot"))
PREFIXED.setdefault("llm+history", _llm("history"))
PREFIXED.setdefault("planner", _planner)

__all__ = [
    "DEFAULT_DECISIONS",
    "EndpointError",
    "LLMAgent",
    "LLMError",
    "LLMSettings",
    "OfflinePlanner",
    "OpenAIBackend",
    "Reply",
    "Request",
]
