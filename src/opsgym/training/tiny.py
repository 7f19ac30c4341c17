"""A tiny randomly initialised Qwen3-style model, and a tokenizer trained here: nothing downloaded.

``opsgym train sft --model tiny`` and ``opsgym train grpo --model tiny`` use them, so that the
whole path (data, trainers, checkpoints, the store, ``opsgym eval --policy hf:...``) runs offline
in CI. The model learns nothing useful in a few steps; it exists to exercise the machinery.

The tokenizer is a byte-level BPE (any text encodes) trained on the world's own conversations
(:func:`corpus`: reference conversations rendered through the template), with the special
tokens of Qwen's chat format and Qwen3's chat template as TRL ships it, so TRL knows how to parse
its tool calls. The model is ``Qwen3ForCausalLM`` from a config (:class:`TinyConfig`), its
weights drawn from a seeded generator that leaves torch's global one as it was.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    "<tool_response>",
    "</tool_response>",
)
"""Qwen's control tokens, each one token (the first is padding, ``<|im_end|>`` ends a turn)."""


@dataclass(frozen=True)
class TinyConfig:
    """The tiny model's shape (small enough for a CPU test; big enough to learn a little)."""

    hidden_size: int = 16
    """Width of the residual stream."""
    intermediate_size: int = 32
    """Width of the MLP."""
    num_hidden_layers: int = 1
    """Decoder layers."""
    num_attention_heads: int = 2
    """Query heads."""
    num_key_value_heads: int = 1
    """Key/value heads (grouped-query attention, as Qwen3 has)."""
    head_dim: int = 8
    """Width of one head."""
    max_position_embeddings: int = 32768
    """Longest sequence (rotary positions: no weights depend on it)."""


def corpus(env: str, episodes: int = 8) -> list[str]:
    """Text to train the tokenizer on: reference conversations of ``env`` (train seeds) as
    Qwen3's chat template renders them, tool schemas included.
    """
    from transformers.utils.chat_template_utils import render_jinja_template
    from trl.chat_template_utils import qwen3_chat_template

    from opsgym.adapters.chat import tool_schemas
    from opsgym.training.data import reference_rows

    conversations = [r["messages"] for r in reference_rows(env, "train", episodes)]
    rendered, _ = render_jinja_template(
        conversations, tools=tool_schemas(env), chat_template=qwen3_chat_template
    )
    return rendered


def tiny_tokenizer(texts: Iterable[str], vocab_size: int = 1200) -> Any:
    """A byte-level BPE trained on ``texts``, with Qwen3's chat template as TRL ships it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen3_chat_template

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        list(texts),
        trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=list(SPECIAL_TOKENS),
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
    )
    tokenizer.chat_template = qwen3_chat_template
    return tokenizer


def tiny_config(tokenizer: Any, shape: TinyConfig | None = None) -> Any:
    """The ``Qwen3Config`` of a tiny model for ``tokenizer``'s vocabulary and special tokens."""
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=len(tokenizer),
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **asdict(shape or TinyConfig()),
    )


def tiny_model(tokenizer: Any, *, seed: int = 0, shape: TinyConfig | None = None) -> Any:
    """A randomly initialised ``Qwen3ForCausalLM`` for ``tokenizer``'s vocabulary."""
    import torch
    from transformers import GenerationConfig, Qwen3ForCausalLM

    config = tiny_config(tokenizer, shape)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id
    )
    return model


def tiny_model_and_tokenizer(env: str, *, seed: int = 0) -> tuple[Any, Any]:
    """The tiny model and its tokenizer, trained on ``env``'s conversations (see the module
    docstring). The same ``env`` and ``seed`` give the same weights and vocabulary.
    """
    tokenizer = tiny_tokenizer(corpus(env))
    return tiny_model(tokenizer, seed=seed), tokenizer
