"""A local Transformers model as a policy: ``hf:PATH`` writes its calls, ``hf+constrained:PATH``
picks the likeliest valid one (extra ``grpo``).

    opsgym eval --env release --policy hf:runs/release__grpo__1__1767225600
    opsgym eval --env release --policy hf+constrained:runs/release__sft__1__1767225600

``PATH`` is a run folder of ``opsgym train sft|grpo`` (its ``model/``), a model folder or a Hub
id (see :mod:`opsgym.agents.hf_models`). A model saved by a trainer names the world it learnt
(``opsgym.json``); asking it to play another one is an error.

**The conversation** is the one the trainers use (:mod:`opsgym.adapters.chat`): the first
prompt as one user message, the world's tools in the chat template's tool list, then the
model's turns and what each call reported, growing turn by turn as in GRPO's rollouts. A model
is evaluated in the format it was trained in; a different one would measure the change of
format as much as the model.

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
turn spends at least one step of, so it ends first). An episode whose conversation no longer
fits the model's context, or whose turns run out, is left unfinished and the transcript says
why. A loaded model is kept for the process (the harness asks for the policy once per episode).

**Progress.** Loading the model and each turn are logged (logger ``opsgym.agents.hf``, level
``INFO``): ``opsgym eval`` shows the latest on its progress bar, as a slow model may take
minutes an episode.

**Record.** ``Episode.transcript`` holds a ``setup`` entry (policy, mode, model, settings, the
tool schemas) and per turn the prompt's length in tokens and, for free generation, the reply,
the parsed calls and what became of each; for constrained decoding, the candidates' number and
the best few with their log-likelihoods.
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

from opsgym.adapters import toolcalls
from opsgym.adapters.chat import call_message, tool_message, tool_schemas, user_message
from opsgym.adapters.trl import prompt
from opsgym.agents import hf_models
from opsgym.agents.base import Call, legal_calls
from opsgym.core.episode import Episode
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


class HFPolicy:
    """A local model playing episodes of ``env`` (see the module docstring).

    Args:
        env: The environment.
        path: The model: a run folder, a model folder or a Hub id.
        constrained: Pick the likeliest valid call instead of generating freely.
        settings: How to run it (default: :meth:`HFSettings.from_environment`).
    """

    deterministic = True

    def __init__(
        self,
        env: str,
        path: str,
        *,
        constrained: bool = False,
        settings: HFSettings | None = None,
    ):
        self.env = spec(env).name
        self.path = path
        self.constrained = constrained
        s = settings or HFSettings.from_environment()
        self.name = f"{CONSTRAINED if constrained else FREE}:{path}"
        loading = time.monotonic()
        log.info("%s: loading the model (%s, %s)", self.name, s.device, s.precision)
        self.model, self.tokenizer, self.meta = _loaded(path, self.env, s.device, s.precision)
        log.info("%s: loaded in %.1f s", self.name, time.monotonic() - loading)
        thinking = bool(self.meta.get("thinking", False))
        default = MAX_NEW_TOKENS_THINKING if thinking else MAX_NEW_TOKENS
        self.max_new_tokens: int = s.max_new_tokens or default
        self.settings = replace(s, max_new_tokens=self.max_new_tokens)
        self.schemas = tool_schemas(self.env)
        self.template_kwargs = {"enable_thinking": thinking}
        self.eos = set(_eos_ids(self.model, self.tokenizer))

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: decoding is greedy."""

    def act(self, obs: dict[str, Any], legal: list[Call]) -> Call:
        """Not supported: the policy keeps a conversation and counts its tokens, so it steps
        the episode itself (:meth:`drive`, which :func:`opsgym.agents.play` calls).
        """
        from opsgym.agents.llm import LLMError

        raise LLMError(f"{self.name} steps episodes itself: use opsgym.agents.play(episode, p)")

    # -- the conversation -------------------------------------------------------------------

    def _render(self, messages: list[dict[str, Any]], *, generation: bool) -> str:
        return self.tokenizer.apply_chat_template(
            messages,
            tools=self.schemas,
            add_generation_prompt=generation,
            tokenize=False,
            **self.template_kwargs,
        )

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def drive(self, episode: Episode) -> Episode:
        """Play ``episode`` until it ends, its turns run out or the context is full."""
        from opsgym.agents.llm import LLMError

        if episode.env != self.env:
            raise LLMError(f"{self.name} plays {self.env!r}, not {episode.env!r}.")
        s = self.settings
        turns = s.max_decisions or episode.max_steps
        context = getattr(self.model.config, "max_position_embeddings", None)
        messages = [user_message(prompt(episode))]
        episode.transcript.append(
            {
                "kind": "setup",
                "agent": self.name,
                "mode": "constrained: the likeliest valid call" if self.constrained else "free",
                "backend": f"local transformers model {self.path}",
                "settings": asdict(s),
                "chat_template_kwargs": self.template_kwargs,
                "first_message": messages[0]["content"],
                "schemas": self.schemas,
            }
        )
        turn = 0
        while not episode.done:
            if turn >= turns:
                episode.transcript.append(
                    {"kind": "stop", "reason": f"the decision budget ({turns} turns) is spent"}
                )
                break
            text = self._render(messages, generation=True)
            ids = self._ids(text)
            if context is not None and len(ids) + self.max_new_tokens > context:
                episode.transcript.append(
                    {
                        "kind": "stop",
                        "reason": f"the conversation ({len(ids)} tokens) fills "
                        f"the model's context ({context})",
                    }
                )
                break
            turn += 1
            entry: dict[str, Any] = {
                "kind": "turn",
                "turn": turn,
                "step": episode.steps,
                "prompt_tokens": len(ids),
            }
            episode.transcript.append(entry)
            if episode.steps == 0:
                episode.token_source = "tokenizer"
            started = time.monotonic()
            if self.constrained:
                self._constrained_turn(episode, messages, text, ids, entry)
            else:
                self._free_turn(episode, messages, ids, entry)
            log.info(
                "%s: %s seed %d, turn %d of at most %d, step %d: %d tokens in %.1f s",
                self.name,
                episode.env,
                episode.seed,
                turn,
                turns,
                episode.steps,
                entry["tokens"]["charged"],
                time.monotonic() - started,
            )
        return episode

    def _free_turn(
        self, episode: Episode, messages: list[dict[str, Any]], ids: list[int], entry: dict
    ) -> None:
        import torch

        device = self.model.device
        inputs = torch.tensor([ids], device=device)
        with torch.no_grad():
            out = self.model.generate(
                inputs,
                attention_mask=torch.ones_like(inputs),
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                pad_token_id=self.tokenizer.pad_token_id,
            )
        new = out[0, len(ids) :].tolist()
        written = _until_eos(new, self.eos)
        text = self.tokenizer.decode(
            [t for t in written if t not in self.eos], skip_special_tokens=False
        )
        parsed = toolcalls.parse_reply(text)
        outcome = toolcalls.run_turn(episode, parsed, len(written))
        entry.update(
            response=text,
            parsed=[c.to_dict() for c in parsed.calls],
            tokens={"charged": len(written), "source": "tokenizer"},
            calls=outcome.calls,
            stopped=outcome.stopped,
            steps=outcome.steps,
        )
        messages.append({"role": "assistant", "content": text})
        for call, said in outcome.results:
            # "(no call)" and "(extra calls)" are rejections of the reply, not of a tool
            messages.append(tool_message("" if call.startswith("(") else call.split(" ")[0], said))

    def _constrained_turn(
        self,
        episode: Episode,
        messages: list[dict[str, Any]],
        prefix: str,
        prefix_ids: list[int],
        entry: dict,
    ) -> None:
        from opsgym.agents.llm import LLMError

        candidates = legal_calls(episode)
        if not candidates:
            raise LLMError(
                f"{self.name}: no valid call at step {episode.steps} of {episode.env!r} to "
                "choose from"
            )
        suffixes = []
        for tool, args in candidates:
            full = self._render([*messages, call_message(tool, args)], generation=False)
            start = len(_common_prefix(prefix, full))
            suffixes.append(_until_eos(self._ids(full[start:]), self.eos))
        scores = self.score(prefix_ids, suffixes)
        best = max(range(len(candidates)), key=lambda i: (scores[i], -i))
        tool, args = candidates[best]
        result = episode.step(tool, args, tokens=len(suffixes[best]))
        ranked = sorted(range(len(candidates)), key=lambda i: -scores[i])[:3]
        entry.update(
            candidates=len(candidates),
            best=[
                {"name": candidates[i][0], "arguments": candidates[i][1], "logprob": scores[i]}
                for i in ranked
            ],
            chosen={"name": tool, "arguments": args},
            tokens={"charged": len(suffixes[best]), "source": "tokenizer"},
            steps=[episode.steps],
        )
        messages += [call_message(tool, args), tool_message(tool, toolcalls.result_text(result))]

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


def free(env: str, path: str) -> HFPolicy:
    """``hf:PATH``."""
    return HFPolicy(env, path)


def constrained(env: str, path: str) -> HFPolicy:
    """``hf+constrained:PATH``."""
    return HFPolicy(env, path, constrained=True)
