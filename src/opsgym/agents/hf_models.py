"""Local LLMs for the ``hf:`` policies and the trainers: naming, device, precision, loading
(extra ``grpo``: Transformers, torch).

A model is named as on the command line:

* a run folder written by ``opsgym train sft|grpo`` (its ``model/`` is loaded);
* a model folder, or a Hub id such as ``Qwen/Qwen3-0.6B`` (``from_pretrained``; set
  ``HF_HUB_OFFLINE=1`` to use only what is cached).

The trainers also take ``tiny``, a model built on the spot (:func:`opsgym.training.hf.load`).
A model that cannot be loaded is a :class:`~opsgym.core.errors.ModelError` of one line. The
tokenizer must carry a chat template (it renders the tools and the calls); one without a pad
token pads with its end of sequence token. A saved model folder's ``opsgym.json`` (:data:`META`)
names the world it was trained on, which :func:`load` checks.

The trainers (:mod:`opsgym.training`) load their models through this module; nothing here
imports them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from opsgym.core.errors import ModelError

META = "opsgym.json"
"""The sidecar of a saved model folder: ``{"env", "kind", "run", "base", "thinking"}``."""

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
"""``auto``: bf16 on a GPU that has it, else fp32."""


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
) -> tuple[Any, Any]:
    """``(model, tokenizer)`` for model ``name`` (see the module docstring), for ``env``.

    ``device`` and ``precision`` are resolved ones. The model is left on the CPU (trainers move
    it); ``precision`` sets the dtype its weights are loaded in.

    Raises:
        ModelError: it cannot be loaded, or it was trained on another world.
    """
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
