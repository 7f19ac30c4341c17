"""The LLMs of the trainers: naming, LoRA, saving (extra ``grpo``: Transformers, PEFT).

A model is named as on the command line: ``tiny``, a tiny random Qwen3-style model and a
tokenizer trained here on the world's text (:mod:`opsgym.training.tiny`; offline, for tests and
demos), or any name the ``hf:`` policies load (a run folder, a model folder, a Hub id: see
:mod:`opsgym.agents.hf_models`, which loads both, and where device and precision are resolved).

A saved model folder holds the weights (LoRA merged in: the folder loads like any model, in
Transformers or vLLM), the tokenizer with its chat template, and ``opsgym.json``: the world it
was trained on, the run, the base model and the chat settings (:data:`META`), which the ``hf:``
policy reads back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from opsgym.agents import hf_models
from opsgym.agents.hf_models import META, torch_dtype
from opsgym.core.errors import TrainingError
from opsgym.training.runs import TrainerConfig

TINY = "tiny"
"""The model name that builds :mod:`opsgym.training.tiny`'s model instead of loading one."""


def trainer_arguments(device: str, precision: str) -> dict[str, Any]:
    """The ``TrainingArguments`` fields for a resolved device and precision."""
    return {
        "use_cpu": device == "cpu",
        "bf16": precision == "bf16",
        "fp16": precision == "fp16",
    }


# -- LoRA -----------------------------------------------------------------------------------


class LoRA(TrainerConfig, frozen=True):
    """LoRA's settings (PEFT); ``r=0`` trains every weight instead."""

    r: int = Field(16, ge=0)
    """Rank of the adapters (0: no LoRA, full fine-tuning)."""
    alpha: int = Field(32, gt=0)
    """Scale of the adapters' output (``alpha / r``)."""
    dropout: float = Field(0.05, ge=0, lt=1)
    """Dropout on the adapters' input."""
    targets: str = "all-linear"
    """Modules adapted: ``all-linear`` or names separated by commas (``q_proj,v_proj``)."""

    @field_validator("targets")
    @classmethod
    def _named(cls, targets: str) -> str:
        if not targets.strip():
            raise ValueError("empty: pass all-linear or module names separated by commas")
        return targets

    def peft_config(self) -> Any:
        """PEFT's ``LoraConfig`` for a causal LM, or ``None`` when ``r`` is 0."""
        if self.r == 0:
            return None
        try:
            from peft import LoraConfig
        except ModuleNotFoundError as exc:
            raise TrainingError(f"{exc}; LoRA needs PEFT: pip install 'opsgym[grpo]'") from None
        targets: str | list[str] = self.targets.strip()
        if targets != "all-linear":
            targets = [t.strip() for t in targets.split(",") if t.strip()]
        return LoraConfig(
            r=self.r,
            lora_alpha=self.alpha,
            lora_dropout=self.dropout,
            target_modules=targets,
            task_type="CAUSAL_LM",
        )


# -- loading --------------------------------------------------------------------------------


def load(
    name: str,
    env: str,
    *,
    device: str = "cpu",
    precision: str = "fp32",
    seed: int = 0,
) -> tuple[Any, Any]:
    """``(model, tokenizer)`` for model ``name`` (see the module docstring), for ``env``.

    ``device`` and ``precision`` are resolved ones. The model is left on the CPU (trainers move
    it); ``precision`` sets the dtype its weights are loaded in; ``seed`` draws ``tiny``'s.

    Raises:
        ModelError: it cannot be loaded, or it was trained on another world.
    """
    if name == TINY:
        from opsgym.training.tiny import tiny_model_and_tokenizer

        model, tokenizer = tiny_model_and_tokenizer(env, seed=seed)
        return model.to(torch_dtype(precision)), tokenizer
    return hf_models.load(name, env, device=device, precision=precision)


# -- saving ---------------------------------------------------------------------------------


def save(model: Any, tokenizer: Any, folder: str | Path, meta: dict[str, Any]) -> Path:
    """Write ``model`` (LoRA merged in), ``tokenizer`` and ``meta`` (``opsgym.json``) to
    ``folder``; return it. The model given may be a PEFT model: it is merged in place, so save
    it last.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (folder / META).write_text(json.dumps(meta, indent=1, sort_keys=True))
    return folder
