"""The LLMs of the trainers and of the ``hf:`` policies: naming, loading, LoRA, saving (extra
``grpo``: Transformers, PEFT).

A model is named as on the command line:

* ``tiny``: a tiny random Qwen3-style model and a tokenizer trained here on the world's text
  (:mod:`opsgym.training.tiny`; offline, for tests and demos);
* a run folder written by ``opsgym train sft|grpo`` (its ``model/`` is loaded);
* a model folder, or a Hub id such as ``Qwen/Qwen3-0.6B`` (``from_pretrained``; set
  ``HF_HUB_OFFLINE=1`` to use only what is cached).

A model that cannot be loaded is a :class:`ModelError` of one line. The tokenizer must carry a
chat template (it renders the tools and the calls); one without a pad token pads with its end
of sequence token.

A saved model folder holds the weights (LoRA merged in: the folder loads like any model, in
Transformers or vLLM), the tokenizer with its chat template, and ``opsgym.json``: the world it
was trained on, the run, the base model and the chat settings (:data:`META`), which the ``hf:``
policy reads back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opsgym.training.ppo import TrainingError

TINY = "tiny"
"""The model name that builds :mod:`opsgym.training.tiny`'s model instead of loading one."""

META = "opsgym.json"
"""The sidecar of a saved model folder: ``{"env", "kind", "run", "base", "thinking"}``."""

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
"""``auto``: bf16 on a GPU that has it, else fp32."""


class ModelError(TrainingError):
    """A model or tokenizer that cannot be loaded, or a device or precision it cannot run at."""


def one_line(exc: BaseException, width: int = 300) -> str:
    """An exception's message on one line, cut to ``width`` characters."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= width else text[: width - 1] + "…"


# -- device and precision --------------------------------------------------------------------


def resolve_device(device: str) -> str:
    """``auto``, ``cpu``, ``cuda`` or ``cuda:N`` as the device to use (``auto``: a GPU if there
    is one).
    """
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        return device
    if device == "cuda" or device.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise ModelError(f"device {device!r} asked for, but torch sees no CUDA GPU")
        return device
    raise ModelError(f"device must be auto, cpu, cuda or cuda:N, got {device!r}")


def resolve_precision(precision: str, device: str) -> str:
    """``precision`` for ``device`` (a resolved device): ``fp32``, ``bf16`` or ``fp16``."""
    import torch

    if precision not in PRECISIONS:
        raise ModelError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    on_gpu = device.startswith("cuda")
    if precision == "auto":
        return "bf16" if on_gpu and torch.cuda.is_bf16_supported() else "fp32"
    if precision == "fp16" and not on_gpu:
        raise ModelError("precision fp16 needs a GPU; on the CPU use fp32 or bf16")
    return precision


def torch_dtype(precision: str) -> Any:
    """The torch dtype of a resolved precision."""
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def trainer_arguments(device: str, precision: str) -> dict[str, Any]:
    """The ``TrainingArguments`` fields for a resolved device and precision."""
    return {
        "use_cpu": device == "cpu",
        "bf16": precision == "bf16",
        "fp16": precision == "fp16",
    }


# -- LoRA -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoRA:
    """LoRA's settings (PEFT); ``r=0`` trains every weight instead."""

    r: int = 16
    """Rank of the adapters (0: no LoRA, full fine-tuning)."""
    alpha: int = 32
    """Scale of the adapters' output (``alpha / r``)."""
    dropout: float = 0.05
    """Dropout on the adapters' input."""
    targets: str = "all-linear"
    """Modules adapted: ``all-linear`` or names separated by commas (``q_proj,v_proj``)."""

    def check(self) -> LoRA:
        """Raise :class:`TrainingError` naming the first bad field."""
        if self.r < 0 or self.alpha <= 0 or not 0 <= self.dropout < 1:
            raise TrainingError(
                f"LoRA needs r >= 0, alpha > 0 and dropout in [0, 1), got r={self.r}, "
                f"alpha={self.alpha}, dropout={self.dropout}"
            )
        if not self.targets.strip():
            raise TrainingError("lora_targets is empty: pass all-linear or module names")
        return self

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


def model_folder(name: str | Path) -> str:
    """Where ``name``'s weights are: a run folder's ``model/``, else ``name`` itself."""
    path = Path(name).expanduser()
    inner = path / "model"
    if (inner / "config.json").is_file():
        return str(inner)
    return str(path) if path.is_dir() else str(name)


def read_meta(folder: str | Path) -> dict[str, Any]:
    """The ``opsgym.json`` of a saved model folder (``{}`` when it has none)."""
    path = Path(folder) / META
    return json.loads(path.read_text()) if path.is_file() else {}


def _looks_local(name: str) -> bool:
    """Whether ``name`` can only be a path (a Hub id is ``owner/name``, never ``./x`` or ``/x``)."""
    return name.startswith(("/", "./", "../", "~")) or name.count("/") > 1 or "\\" in name


def load_tokenizer(name: str) -> Any:
    """The tokenizer of model ``name`` (a folder or a Hub id), ready for the trainers."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(name)
    except Exception as exc:  # noqa: BLE001 -- whatever went wrong, say it in one line
        raise ModelError(f"cannot load the tokenizer of {name!r}: {one_line(exc)}") from None
    if not getattr(tokenizer, "chat_template", None):
        raise ModelError(
            f"the tokenizer of {name!r} has no chat template; the trainers need one that renders "
            "tools and tool calls (an instruct or chat model)"
        )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


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
    it); ``precision`` sets the dtype its weights are loaded in.

    Raises:
        ModelError: it cannot be loaded, or it was trained on another world.
    """
    if name == TINY:
        from opsgym.training.tiny import tiny_model_and_tokenizer

        model, tokenizer = tiny_model_and_tokenizer(env, seed=seed)
        return model.to(torch_dtype(precision)), tokenizer
    from transformers import AutoModelForCausalLM

    folder = model_folder(name)
    if _looks_local(name) and not Path(folder).is_dir():
        raise ModelError(f"cannot load model {name!r}: there is no such folder")
    if Path(folder).is_dir() and not (Path(folder) / "config.json").is_file():
        raise ModelError(
            f"cannot load model {name!r}: the folder has no config.json (a model folder has, "
            "and a run folder has one in model/)"
        )
    trained_on = read_meta(folder).get("env") if Path(folder).is_dir() else None
    if trained_on is not None and trained_on != env:
        raise ModelError(f"{folder} was trained on {trained_on!r}, not {env!r}")
    tokenizer = load_tokenizer(folder)
    try:
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch_dtype(precision))
    except Exception as exc:  # noqa: BLE001 -- whatever went wrong, say it in one line
        raise ModelError(f"cannot load model {name!r}: {one_line(exc)}") from None
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


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
