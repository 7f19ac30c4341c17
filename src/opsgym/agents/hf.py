"""A local Transformers model as a policy: ``hf:PATH`` writes its calls, ``hf+constrained:PATH``
picks the likeliest valid one (extra ``grpo``).

    opsgym eval --env release --policy hf:runs/release__grpo__1__1767225600
    opsgym eval --env release --policy hf+constrained:runs/release__sft__1__1767225600

``PATH`` is a run folder of ``opsgym train sft|grpo`` (its ``model/``), a model folder or a Hub
id (see :mod:`opsgym.agents.hf_models`). A model saved by a trainer names the world it learnt
(``opsgym.json``); asking it to play another one is an error.

**The conversation** is by default the one the trainers use, the ``history`` format of
:mod:`opsgym.adapters.chat`: the first prompt as one user message, the world's tools in the chat
template's tool list, then the model's turns and what each call reported, growing turn by turn
as in GRPO's rollouts. A model is evaluated in the format it was trained in; a different one
would measure the change of format as much as the model. ``hf+snapshot:PATH`` and
``hf+constrained+snapshot:PATH`` play in the ``llm:`` policies' ``snapshot`` format instead (each
turn the state now), so that a model met through an endpoint and locally is met alike. Either
way the episode is played by the one drive loop (:func:`opsgym.agents.drive.drive`), with this
module's :class:`HFBackend` as the backend.

**Free generation** (``hf:``): each turn the model writes a reply greedily (so the policy is
deterministic and ``opsgym eval`` runs it once per seed), at most ``max_new_tokens`` tokens,
which :func:`opsgym.adapters.toolcalls.parse_reply` reads and
:func:`~opsgym.adapters.toolcalls.run_turn` carries out, exactly as for the LLM agent: 1 to 3
calls, the batch stopped at the first unexpected result, a reply without a call rejected and
charged. Each turn is charged the tokens the model wrote (token source ``tokenizer``: the
model's own tokenizer counts them).

**Constrained** (``hf+constrained:``): each turn, every valid next call (the catalogue calls
whose preconditions hold, :func:`opsgym.agents.legal_calls`) is written as the assistant's tool
call, and the model's log-likelihood of that text after the conversation so far is computed
(one pass over the shared prefix, then the candidates in batches over its cache); the likeliest
call is made. This is what the source GPU-fleet system called *phase-aware* decoding: it can
only make valid calls, so it measures the model's choice among them, not its command of the
format, and is **labelled constrained** wherever it appears (the policy name
``hf+constrained:PATH`` in every table and report, ``mode`` in the transcript). The call's
tokens are charged.

**Settings** come from the environment, as the policy is named by a string:
``OPSGYM_HF_DEVICE`` (``auto``: a GPU if there is one), ``OPSGYM_HF_PRECISION`` (``auto``: bf16
on a GPU that has it, else fp32), ``OPSGYM_HF_MAX_NEW_TOKENS`` (256, or 1024 for a model trained
to think: the longest reference call of any world is about 100 characters, so three calls fit in
256 tokens with room; a model that has not learnt to stop, as the untrained ``tiny`` one, writes
every token it may, each turn) and
``OPSGYM_HF_MAX_DECISIONS`` (turns per episode; default the episode's step budget, which every
turn spends at least one step of, so it ends first). An episode whose conversation and a reply
no longer fit the model's context, or whose turns run out, is left unfinished and the transcript
says why. A loaded model is kept for the process (the harness asks for the policy once per
episode).

**Progress.** Loading the model and each turn are logged (logger ``opsgym.agents.hf``, level
``INFO``): ``opsgym eval`` shows the latest on its progress bar, as a slow model may take
minutes an episode.

**Record.** ``Episode.transcript`` holds a ``setup`` entry (policy, mode, model, settings, the
format, its first message or system message, the tool schemas) and per turn the tokens of the
prompt and of the reply, the reply, the parsed calls and what became of each; for constrained
decoding also the candidates' number and the best few with their log-likelihoods.
"""

from __future__ import annotations

import copy
import inspect
import logging
import os
import time
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np

from opsgym.adapters.chat import FORMATS, call_message
from opsgym.adapters.toolcalls import ParsedCall, ParsedReply
from opsgym.agents import hf_models
from opsgym.agents.drive import LLMError, ModelAgent, OutOfContext, Reply, Request
from opsgym.core.episode import StepResult
from opsgym.core.errors import ModelError
from opsgym.core.registry import spec

FREE = "hf"
CONSTRAINED = "hf+constrained"
"""The two kinds of name: ``hf:PATH`` and ``hf+constrained:PATH``."""

ENV_DEVICE = "OPSGYM_HF_DEVICE"
ENV_PRECISION = "OPSGYM_HF_PRECISION"
ENV_MAX_NEW_TOKENS = "OPSGYM_HF_MAX_NEW_TOKENS"
ENV_MAX_DECISIONS = "OPSGYM_HF_MAX_DECISIONS"

MAX_NEW_TOKENS = 256
"""Most tokens of one reply by default (see the module docstring)."""
MAX_NEW_TOKENS_THINKING = 1024
"""The same, for a model whose ``opsgym.json`` says it was trained to think."""

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HFSettings:
    """How the model is run (see the module docstring for the environment variables)."""

    device: str = "auto"
    """``auto``, ``cpu``, ``cuda`` or ``cuda:N``."""
    precision: str = "auto"
    """``auto``, ``fp32``, ``bf16`` or ``fp16``."""
    max_new_tokens: int | None = None
    """Most tokens of one reply (free generation); ``None``: :data:`MAX_NEW_TOKENS`, or
    :data:`MAX_NEW_TOKENS_THINKING` for a model trained to think."""
    max_decisions: int | None = None
    """Turns per episode (``None``: the episode's step budget)."""
    score_batch: int = 16
    """Candidates scored together (constrained decoding)."""

    @classmethod
    def from_environment(cls) -> HFSettings:
        """The settings the environment variables give."""

        def number(name: str, default: int | None) -> int | None:
            raw = os.environ.get(name)
            if raw is None or raw == "":
                return default
            try:
                value = int(raw)
            except ValueError:
                value = 0
            if value < 1:
                raise ModelError(f"{name} must be an integer >= 1, got {raw!r}")
            return value

        return cls(
            device=os.environ.get(ENV_DEVICE, "auto"),
            precision=os.environ.get(ENV_PRECISION, "auto"),
            max_new_tokens=number(ENV_MAX_NEW_TOKENS, None),
            max_decisions=number(ENV_MAX_DECISIONS, None),
        )


@lru_cache(maxsize=2)
def _loaded(path: str, env: str, device: str, precision: str) -> tuple[Any, Any, dict[str, Any]]:
    """The model (on ``device``, in eval mode), its tokenizer and its ``opsgym.json``."""
    device = hf_models.resolve_device(device)
    precision = hf_models.resolve_precision(precision, device)
    model, tokenizer = hf_models.load(path, env, device=device, precision=precision)
    model.to(device).eval()
    folder = hf_models.model_folder(path)
    return model, tokenizer, hf_models.read_meta(folder)


class HFBackend:
    """A local model answering requests: free generation, or the likeliest valid call.

    Args:
        path: The model: a run folder, a model folder or a Hub id.
        env: The world it plays (a model trained on another is refused).
        settings: How to run it.
        constrained: Pick the likeliest valid call instead of generating freely.
    """

    token_source = "tokenizer"

    def __init__(self, path: str, env: str, settings: HFSettings, *, constrained: bool = False):
        self.path = path
        self.constrained = constrained
        self.needs_legal = constrained
        self.label = f"local transformers model {path}"
        self.model, self.tokenizer, self.meta = _loaded(
            path, env, settings.device, settings.precision
        )
        thinking = bool(self.meta.get("thinking", False))
        default = MAX_NEW_TOKENS_THINKING if thinking else MAX_NEW_TOKENS
        self.max_new_tokens: int = settings.max_new_tokens or default
        self.settings = replace(settings, max_new_tokens=self.max_new_tokens)
        self.template_kwargs = {"enable_thinking": thinking}
        self.eos = set(_eos_ids(self.model, self.tokenizer))
        self.context = getattr(self.model.config, "max_position_embeddings", None)

    def reset(self, rng: np.random.Generator | None) -> None:
        """Nothing to reset: decoding is greedy."""

    def feedback(self, result: StepResult) -> None:
        """Unused: the model reads results in the conversation."""

    def _render(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        generation: bool,
    ) -> str:
        return self.tokenizer.apply_chat_template(
            messages,
            tools=tools,
            add_generation_prompt=generation,
            tokenize=False,
            **self.template_kwargs,
        )

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def complete(self, request: Request) -> Reply:
        """The model's reply to the conversation so far.

        Raises:
            OutOfContext: the conversation and a reply would not fit the model's context.
        """
        text = self._render(request.messages, request.tools, generation=True)
        ids = self._ids(text)
        if self.context is not None and len(ids) + self.max_new_tokens > self.context:
            raise OutOfContext(
                f"the conversation ({len(ids)} tokens) fills the model's context ({self.context})"
            )
        if self.constrained:
            return self._choose(request, text, ids)
        return self._generate(ids)

    def _generate(self, ids: list[int]) -> Reply:
        import torch

        inputs = torch.tensor([ids], device=self.model.device)
        with torch.no_grad():
            out = self.model.generate(
                inputs,
                attention_mask=torch.ones_like(inputs),
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                pad_token_id=self.tokenizer.pad_token_id,
            )
        written = _until_eos(out[0, len(ids) :].tolist(), self.eos)
        text = self.tokenizer.decode(
            [t for t in written if t not in self.eos], skip_special_tokens=False
        )
        return Reply(
            message={"role": "assistant", "content": text},
            usage={"prompt_tokens": len(ids), "completion_tokens": len(written)},
            raw=text,
        )

    def _choose(self, request: Request, prefix: str, prefix_ids: list[int]) -> Reply:
        candidates = request.legal
        if not candidates:
            raise LLMError(f"{self.label}: no valid call to choose from")
        suffixes = []
        for tool, args in candidates:
            full = self._render(
                [*request.messages, call_message(tool, args)], request.tools, generation=False
            )
            start = len(_common_prefix(prefix, full))
            suffixes.append(_until_eos(self._ids(full[start:]), self.eos))
        scores = self.score(prefix_ids, suffixes)
        best = max(range(len(candidates)), key=lambda i: (scores[i], -i))
        tool, args = candidates[best]
        ranked = sorted(range(len(candidates)), key=lambda i: -scores[i])[:3]
        message = call_message(tool, args)
        return Reply(
            message=message,
            usage={"prompt_tokens": len(prefix_ids), "completion_tokens": len(suffixes[best])},
            raw=message,
            # The call as the catalogue made it, not as read back from its JSON text.
            parsed=ParsedReply((ParsedCall(tool, args, "tool_calls"),), ""),
            details={
                "candidates": len(candidates),
                "best": [
                    {"name": candidates[i][0], "arguments": candidates[i][1], "logprob": scores[i]}
                    for i in ranked
                ],
                "chosen": {"name": tool, "arguments": args},
            },
        )

    def score(self, prefix_ids: list[int], suffixes: list[list[int]]) -> list[float]:
        """The model's log-likelihood of each suffix after ``prefix_ids``: one pass over the
        prefix, then the suffixes in batches over copies of its cache.
        """
        import torch

        device = self.model.device
        pad = self.tokenizer.pad_token_id or 0
        scores: list[float] = []
        with torch.no_grad():
            out = self.model(torch.tensor([prefix_ids], device=device), use_cache=True)
            prefix_cache = _cache_of(out)
            first = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
            n = len(prefix_ids)
            for start in range(0, len(suffixes), self.settings.score_batch):
                chunk = suffixes[start : start + self.settings.score_batch]
                width = max(len(s) for s in chunk)
                ids = torch.tensor([s + [pad] * (width - len(s)) for s in chunk], device=device)
                mask = torch.tensor(
                    [[1] * len(s) + [0] * (width - len(s)) for s in chunk], device=device
                )
                cache = copy.deepcopy(prefix_cache)
                cache.batch_repeat_interleave(len(chunk))
                attention = torch.cat(
                    [torch.ones(len(chunk), n, dtype=mask.dtype, device=device), mask], dim=1
                )
                logits = self.model(
                    ids,
                    attention_mask=attention,
                    use_cache=True,
                    **{_cache_argument(self.model): cache},
                ).logits
                logp = torch.log_softmax(logits.float(), dim=-1)
                # Token j is predicted at position j-1; the first one after the prefix.
                later = logp[:, :-1].gather(-1, ids[:, 1:, None])[..., 0] * mask[:, 1:]
                total = first[ids[:, 0]] + later.sum(dim=1)
                scores.extend(total.tolist())
        return scores


class HFPolicy(ModelAgent):
    """A local model playing episodes of ``env`` (see the module docstring).

    Args:
        env: The environment.
        path: The model: a run folder, a model folder or a Hub id.
        constrained: Pick the likeliest valid call instead of generating freely.
        format: The conversation format (:mod:`opsgym.adapters.chat`): ``history`` (the one
            the trainers use) or ``snapshot`` (the ``llm:`` policies').
        settings: How to run it (default: :meth:`HFSettings.from_environment`).
    """

    deterministic = True
    log = logging.getLogger(__name__)

    def __init__(
        self,
        env: str,
        path: str,
        *,
        constrained: bool = False,
        format: str = "history",
        settings: HFSettings | None = None,
    ):
        if format not in FORMATS:
            raise ModelError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
        self.env = spec(env).name
        self.path = path
        self.constrained = constrained
        self.format = format
        s = settings or HFSettings.from_environment()
        kind = CONSTRAINED if constrained else FREE
        self.name = f"{kind}:{path}" if format == "history" else f"{kind}+{format}:{path}"
        loading = time.monotonic()
        log.info("%s: loading the model (%s, %s)", self.name, s.device, s.precision)
        self.backend: HFBackend = HFBackend(path, self.env, s, constrained=constrained)
        log.info("%s: loaded in %.1f s", self.name, time.monotonic() - loading)
        self.settings = self.backend.settings
        self.turns = s.max_decisions

    def setup(self) -> dict[str, Any]:
        """The mode, the settings and the chat template's options."""
        return {
            "mode": "constrained: the likeliest valid call" if self.constrained else "free",
            "settings": asdict(self.settings),
            "chat_template_kwargs": self.backend.template_kwargs,
        }


def _cache_argument(model: Any) -> str:
    """The name ``forward`` takes the KV cache under: ``cache`` (Transformers 5.2x) or
    ``past_key_values`` (before).
    """
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _cache_of(output: Any) -> Any:
    """The KV cache a forward pass returned, under either name."""
    cache = output.get("cache") if hasattr(output, "get") else None
    return cache if cache is not None else output.past_key_values


def _eos_ids(model: Any, tokenizer: Any) -> list[int]:
    """Every token that ends a turn: the generation config's and the tokenizer's."""
    ids = getattr(model.generation_config, "eos_token_id", None)
    ids = [ids] if isinstance(ids, int) else list(ids or [])
    if tokenizer.eos_token_id is not None:
        ids.append(tokenizer.eos_token_id)
    return ids


def _until_eos(ids: list[int], eos: set[int]) -> list[int]:
    """``ids`` up to and including the first end-of-turn token."""
    for i, token in enumerate(ids):
        if token in eos:
            return ids[: i + 1]
    return ids


def _common_prefix(a: str, b: str) -> str:
    if b.startswith(a):  # the usual case: the generation prompt opens the assistant's turn
        return a
    return os.path.commonprefix([a, b])
