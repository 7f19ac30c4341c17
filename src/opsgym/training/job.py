"""One training run as a job of its own process: ``python -m opsgym.training.job SPEC``.

The server's training jobs (:mod:`opsgym.server.supervisor`) start this module; it runs the very
``train`` function and config model that ``opsgym train`` runs (:data:`KINDS`), nothing
copied. ``SPEC`` is a JSON file ``{"kind", "name", "out", "config"}``; the config is validated
again here, as the server validated it (:func:`parse_config`: the trainer's own model, unknown
keys and values out of bounds refused). The run is recorded in the store ``OPSGYM_DB`` names.

What the job leaves beside its spec (:class:`JobFiles`, in ``OUT/.jobs``): its log (the
process's standard output and error, the trainer's progress lines among them) and, as it ends,
``NAME.result.json``: ``{"status", "exit_code", "error"}``, with ``status`` one of
``succeeded``, ``stopped`` (SIGINT, or Ctrl-C: the trainer saved its model and marked the run
``interrupted``) or ``failed``. A server that did not see the process end (it was restarted)
reads the job's end from there.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import logging
import math
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opsgym.training.grpo import GRPORunConfig
from opsgym.training.ppo import PPOConfig
from opsgym.training.runs import TrainerConfig
from opsgym.training.sft import SFTRunConfig

log = logging.getLogger("opsgym.training.job")

JOBS_DIR = ".jobs"
"""The folder inside the runs folder that holds the jobs' specs, logs and results (a name no
run can have: run names never start with a dot)."""


def _llm_steps(cfg: Any) -> int:
    """The most optimizer steps an SFT config can take (``max_steps``, else what the epochs
    give at most, every episode kept).
    """
    if cfg.max_steps > 0:
        return int(cfg.max_steps)
    batches = math.ceil(cfg.episodes / cfg.batch_size)
    return math.ceil(batches / cfg.grad_accum) * math.ceil(cfg.epochs)


@dataclass(frozen=True)
class Kind:
    """A trainer a job can run."""

    name: str
    """What a job names it by (``ppo``, ``sft``, ``grpo``)."""
    config: type[TrainerConfig]
    """Its config model (what ``opsgym train NAME`` generates its options from)."""
    train: str
    """Its ``train(cfg, out, db, *, name)`` function, as ``module:function``."""
    requires: tuple[str, ...]
    """Modules it needs (its extra), looked for without importing them."""
    extra: str
    """The extra that installs them."""
    steps: Callable[[Any], int]
    """The most steps a config trains for (what the server's caps bound)."""
    unit: str
    """What those steps count."""

    def installed(self) -> bool:
        """Whether every module it needs can be imported here."""
        return all(importlib.util.find_spec(module) is not None for module in self.requires)

    def trainer(self) -> Callable[..., Path]:
        """Its ``train`` function (importing the trainer)."""
        module, _, function = self.train.partition(":")
        return getattr(importlib.import_module(module), function)


KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind(
            "ppo",
            PPOConfig,
            "opsgym.training.ppo:train",
            ("torch", "stable_baselines3", "sb3_contrib"),
            "train",
            lambda cfg: int(cfg.total_timesteps),
            "environment steps",
        ),
        Kind(
            "sft",
            SFTRunConfig,
            "opsgym.training.sft:train",
            ("torch", "transformers", "trl", "datasets", "peft"),
            "grpo",
            _llm_steps,
            "optimizer steps",
        ),
        Kind(
            "grpo",
            GRPORunConfig,
            "opsgym.training.grpo:train",
            ("torch", "transformers", "trl", "datasets", "peft"),
            "grpo",
            lambda cfg: int(cfg.steps),
            "optimizer steps",
        ),
    )
}
"""Every trainer a job can run, by name."""


def parse_config(kind: str, data: dict[str, Any]) -> Any:
    """``data`` as the kind's config model, checked by the trainer's own ``check()``.

    Raises:
        pydantic.ValidationError: a wrong type, an unknown key or a value out of its bounds
            (named by its ``loc``).
        opsgym.core.errors.OpsgymError: a name the registry does not know (a world...).
    """
    return KINDS[kind].config.model_validate(data).check()


def config_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of the kind's config: each field's type, default, bounds and
    description (a client builds its form from it).
    """
    return KINDS[kind].config.model_json_schema()


@dataclass(frozen=True)
class JobFiles:
    """Where job ``name``'s own files are, in ``runs_dir/.jobs``."""

    runs_dir: Path
    name: str

    @property
    def folder(self) -> Path:
        """The folder of every job's files."""
        return Path(self.runs_dir) / JOBS_DIR

    @property
    def spec(self) -> Path:
        """What the job runs: ``{"kind", "name", "out", "config"}``."""
        return self.folder / f"{self.name}.json"

    @property
    def log(self) -> Path:
        """The process's standard output and error."""
        return self.folder / f"{self.name}.log"

    @property
    def result(self) -> Path:
        """How the job ended: ``{"status", "exit_code", "error"}`` (written last)."""
        return self.folder / f"{self.name}.result.json"

    def all(self) -> tuple[Path, Path, Path]:
        """The three of them."""
        return self.spec, self.log, self.result


def read_result(path: Path) -> dict[str, Any] | None:
    """A job's result file, or ``None`` when it is missing or unreadable."""
    try:
        result = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return result if isinstance(result, dict) else None


def _write_result(path: Path, status: str, exit_code: int, error: str | None) -> None:
    part = path.with_suffix(".part")
    part.write_text(json.dumps({"status": status, "exit_code": exit_code, "error": error}))
    os.replace(part, path)


def main(argv: list[str] | None = None) -> int:
    """Run the job a spec file describes; its exit code (0 succeeded, 130 stopped, 1 failed)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m opsgym.training.job SPEC.json", file=sys.stderr)
        return 2
    spec_path = Path(args[0])
    files = JobFiles(spec_path.parent.parent, spec_path.name.removesuffix(".json"))
    signal.signal(signal.SIGINT, signal.default_int_handler)  # whatever the parent ignored
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    logging.getLogger("alembic").setLevel(logging.WARNING)  # the store's migrations, if any
    status, code, error = "failed", 1, None
    try:
        spec = json.loads(spec_path.read_text())
        kind = KINDS[spec["kind"]]
        cfg = parse_config(kind.name, spec["config"])
        log.info(
            "job %s: %s on %s, at most %d %s, pid %d",
            spec["name"],
            kind.name,
            cfg.env,
            kind.steps(cfg),
            kind.unit,
            os.getpid(),
        )
        started = time.monotonic()
        folder = kind.trainer()(cfg, out=spec["out"], db=None, name=spec["name"])
        log.info(
            "job %s: done in %.0f s; the run is in %s",
            spec["name"],
            time.monotonic() - started,
            folder,
        )
        status, code = "succeeded", 0
    except KeyboardInterrupt:
        log.info("job stopped: the trainer saved its model and marked the run interrupted")
        status, code = "stopped", 130
    except Exception as exc:  # noqa: BLE001 -- a job's failure is its result, told in its log
        traceback.print_exc()
        error = f"{type(exc).__name__}: {' '.join(str(exc).split())[:500]}"
        log.error("job failed: %s", error)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the result is written whatever comes
        _write_result(files.result, status, code, error)
        sys.stderr.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
