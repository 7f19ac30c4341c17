"""What the trainers share: the config models' base, the run's folder, its entry in the store,
the learning curves, and what Ctrl-C leaves behind.

A trainer's config is a pydantic model (:class:`TrainerConfig`): each field's type, default,
bounds (``ge``, ``le``, ``gt``) and description (its docstring) are written once, there. ``opsgym
train`` generates its options from it (:mod:`opsgym.training.cli`), the server's training jobs
validate their config with it and show its JSON Schema (:mod:`opsgym.server.training`), and a job
reads its spec with it (:mod:`opsgym.training.job`). What a config is checked against besides
(the registered worlds, scenarios and policies) is its ``check()``.

A run is named ``{env}__{kind}__{seed}__{unix time}`` (CleanRL's form) unless given a name; its
folder ``OUT/NAME`` must not exist. It holds ``config.json``, the trainer's ``checkpoints/``
and, at the end, ``model/`` (:func:`opsgym.training.hf.save`). The store records the run
(``kind``, ``env``, config), its curves (every number the trainer logs, by step) as they come,
and at the end its status and checkpoint (``model/``). Ctrl-C stops training; the model as it is
then is saved to ``model/`` and the run is marked ``interrupted``.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from opsgym.core.errors import TrainingError

log = logging.getLogger("opsgym.training")

STRICT = ConfigDict(extra="forbid", use_attribute_docstrings=True, allow_inf_nan=False)
"""How a trainer's config is read: unknown keys refused, each field described by its docstring,
no infinities (they cannot be stored as JSON)."""


class TrainerConfig(BaseModel):
    """The base of the trainers' configs: :data:`STRICT`, a docstring per field."""

    model_config = STRICT


def run_name(env: str, kind: str, seed: int) -> str:
    """``{env}__{kind}__{seed}__{unix time}``."""
    return f"{env}__{kind}__{seed}__{int(time.time())}"


def new_folder(out: str | Path, name: str) -> Path:
    """``out/name``, which must not exist yet (it is not created here)."""
    if not name or "/" in name or name in (".", ".."):
        raise TrainingError(f"a run name is one folder name, got {name!r}")
    folder = Path(out) / name
    if folder.exists():
        raise TrainingError(f"{folder} exists; pass another --name or --out")
    return folder


def _callback_base() -> type:
    from transformers import TrainerCallback

    return TrainerCallback


class Record:
    """The run's entry in the store (nothing is written when ``db`` is ``False``)."""

    def __init__(self, db: str | None | bool, name: str, *, kind: str, env: str, config: Any):
        self.name = name
        self.store = None
        if db is not False:
            from opsgym.store import open_store

            self.store = open_store(db)
            self.store.start_training_run(name, kind=kind, env=env, config=config)

    def update(self, curves: dict[str, list[list[float]]]) -> None:
        """Replace the run's curves (and log their latest values, at INFO)."""
        if log.isEnabledFor(logging.INFO):
            log.info("run %s: %s", self.name, latest(curves))
        if self.store is not None:
            self.store.update_training_run(self.name, curves=curves)

    def finish(
        self, status: str, curves: dict[str, list[list[float]]], checkpoint: Path | None
    ) -> None:
        """Mark the run ``done``, ``failed`` or ``interrupted``, and close the store."""
        if self.store is not None:
            self.store.finish_training_run(self.name, status, curves=curves, checkpoint=checkpoint)
            self.store.close()


def latest(curves: dict[str, list[list[float]]], most: int = 12) -> str:
    """The last point of each curve, on one line: ``step 2048: return=-3.1 safe=0.42 ...``."""
    last = {key: points[-1] for key, points in sorted(curves.items()) if points}
    if not last:
        return "no curve yet"
    step = max(int(point[0]) for point in last.values())
    shown = " ".join(f"{key}={point[1]:.4g}" for key, point in list(last.items())[:most])
    return f"step {step}: {shown}"


def curves_callback(every: int = 1) -> Any:
    """A ``TrainerCallback`` that keeps every finite number the trainer logs as a curve
    (``{key: [[step, value], ...]}``, in ``.curves``) and, once its ``record`` is set, writes
    the curves to the run's record every ``every`` logs.
    """

    class Curves(_callback_base()):
        def __init__(self) -> None:
            self.curves: dict[str, list[list[float]]] = {}
            self.logs = 0
            self.record: Record | None = None

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any):
            for key, value in (logs or {}).items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    if math.isfinite(value):
                        self.curves.setdefault(key, []).append([state.global_step, float(value)])
            self.logs += 1
            if self.record is not None and self.logs % every == 0:
                self.record.update(self.curves)

    return Curves()


def train_and_save(
    trainer: Any,
    curves: Any,
    save: Callable[[], Path],
    after: Callable[[], None] | None = None,
) -> Path:
    """Train; then save the model (``save()``) and finish the run's record (``curves.record``),
    whatever happened.

    Ctrl-C (``KeyboardInterrupt``) saves the model as it is, marks the run ``interrupted`` and
    is raised again; any other exception marks it ``failed`` (nothing is saved) and is raised
    again. ``after`` runs once training finished normally, before the record is closed
    (a final evaluation).
    """
    status, checkpoint = "failed", None
    try:
        trainer.train()
        if after is not None:
            after()
        status = "done"
    except KeyboardInterrupt:
        status = "interrupted"
    finally:
        if status != "failed":
            checkpoint = save()
        curves.record.finish(status, curves.curves, checkpoint)
    if status == "interrupted":
        raise KeyboardInterrupt
    return checkpoint


def write_config(folder: Path, config: dict[str, Any]) -> None:
    """Write ``config.json`` in the run's folder (the trainer may have made the folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=1, sort_keys=True))
