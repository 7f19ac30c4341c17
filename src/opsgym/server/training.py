"""Training over HTTP, under ``/api/training`` (operator token only): start a PPO, SFT or GRPO
job, watch its curves and log live, stop it, and take what it made.

=========================================  =====================================================
``GET /api/training``                      the kinds installed, each config's JSON Schema, caps
``POST /api/training/jobs``                start one: ``{"kind", "config", "name"?, "max_wall_s"?}``
``GET /api/training/jobs[/{name}]``        the jobs; one job
``POST /api/training/jobs/{name}/stop``    stop it (the trainer saves its model)
``DELETE /api/training/jobs/{name}``       forget a finished job (``?files=true``: and its files)
``GET .../{name}/metrics``, ``summary``    its run's curves; their last, best and worst values
``GET .../{name}/stream``                  server-sent events: ``status``, ``metrics``, ``log``,
                                           ``end``; resumable with ``Last-Event-ID``
``GET .../{name}/logs?offset=``            its log from a byte offset
``GET .../{name}/plot.png``, ``plot``      its curves drawn; a page that redraws them
``GET .../{name}/artifacts``, ``files/P``  its run folder's files; one of them
``GET .../{name}/archive.tar.gz``          the run folder, streamed
``GET /api/training/runs[/{name}]``        every stored run (the CLI's too)
=========================================  =====================================================

A job's config is the trainer's own config model (:data:`opsgym.training.job.KINDS`), the one
``opsgym train`` generates its options from: unknown keys and values out of bounds are a 422
naming the field, and the trainer's ``check()`` looks up its names; then the server's
caps apply (``max_ppo_timesteps``, ``max_llm_steps``, ``max_training_wall_s``) and, for the LLM
trainers, the rule of :mod:`opsgym.server.policies`: a model is ``tiny``, a run in the runs folder
(``runs:NAME``) or a Hub id, never a path. The supervisor (:mod:`opsgym.server.supervisor`) runs
it; files are served by :mod:`opsgym.server.artifacts`' rules.

The stream works with an ``Authorization`` header (a ``fetch``-based reader; a browser's
``EventSource`` cannot send one). Each event's id is ``LOG_OFFSET.METRICS_STAMP``: a client that
reconnects with it as ``Last-Event-ID`` gets the log from where it was and metrics only if they
changed. ``metrics`` events carry the whole curves as the run's record holds them (at most about
2,000 points a curve), replacing the last.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import io
import json
import math
import re
import time
from pathlib import Path as FsPath
from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Header, HTTPException, Path, Query, Request, status
from fastapi.responses import FileResponse, HTMLResponse, Response, StreamingResponse
from pydantic import BaseModel, Field, create_model

from opsgym.agents.base import RUN_NAME, resolve_run
from opsgym.core.errors import PolicyRefusedError, UnknownNameError
from opsgym.server import artifacts
from opsgym.server import responses as R
from opsgym.server.errors import Conflict
from opsgym.server.openenv import JSON
from opsgym.server.supervisor import ACTIVE, Supervisor
from opsgym.store.errors import NotFoundError
from opsgym.store.models import utcnow
from opsgym.training.job import KINDS, config_schema
from opsgym.training.runs import STRICT, run_name

STREAM_POLL_S = 0.5
"""How often a stream looks for news."""

HEARTBEAT_S = 15.0
"""A stream with no news sends a comment this often (proxies close silent connections)."""

LOG_LIMIT = 1 << 20
"""Most bytes of log one request (or one stream event) carries."""

CAPS = {"ppo": "max_ppo_timesteps", "sft": "max_llm_steps", "grpo": "max_llm_steps"}
"""The server setting that caps each kind's steps."""

PLOTTED = ("return", "safe", "dev_return", "dev_safe", "test_return", "test_safe", "loss",
           "eval_loss", "reward", "judged/return", "judged/safe", "learning_rate")  # fmt: skip
"""Curves drawn first in ``plot.png`` (then the others, by name, up to :data:`PLOTS`)."""

PLOTS = 9
"""Most curves ``plot.png`` draws."""

JobName = Annotated[
    str,
    Path(
        pattern=f"^{RUN_NAME.pattern}$", max_length=200, description="The job's (its run's) name."
    ),
]


def _start_model(kind: str) -> type[BaseModel]:
    """The body that starts a ``kind`` job: its config is the trainer's own model."""
    config = KINDS[kind].config
    return create_model(
        f"{kind.upper()}JobStart",
        __config__=STRICT,
        __doc__=f"Start a {kind} job: {config.__doc__.splitlines()[0]}",
        kind=(Literal[kind], Field(description="The trainer.")),  # type: ignore[valid-type]
        config=(
            config,
            Field(default_factory=config, description=f"The trainer's config ({config.__name__})."),
        ),
        name=(
            str | None,
            Field(
                None,
                pattern=f"^{RUN_NAME.pattern}$",
                max_length=200,
                description="The job's and its run's name (default {env}__{kind}__{seed}__{time}).",
            ),
        ),
        max_wall_s=(
            float | None,
            Field(
                None,
                gt=0,
                description="Stop the job after this many seconds (default and most: the "
                "server's max_training_wall_s).",
            ),
        ),
    )


START_MODELS = tuple(_start_model(kind) for kind in KINDS)
JobStart = Annotated[
    START_MODELS[0] | START_MODELS[1] | START_MODELS[2],  # type: ignore[valid-type]
    Field(discriminator="kind"),
]


def _when(value: Any) -> Any:
    return value.isoformat() if hasattr(value, "isoformat") else value


def public(row: dict[str, Any]) -> dict[str, Any]:
    """A job or run row as JSON (times in ISO 8601)."""
    return {k: _when(v) for k, v in row.items()}


def _curves_summary(curves: dict[str, Any] | None) -> dict[str, Any]:
    out = {}
    for key, points in sorted((curves or {}).items()):
        if not points:
            continue
        values = [p[1] for p in points]
        out[key] = {
            "points": len(points),
            "first": points[0],
            "last": points[-1],
            "min": min(values),
            "max": max(values),
        }
    return out


def router(supervisor: Supervisor, settings: Any) -> APIRouter:  # noqa: C901 -- one per route
    """Every ``/api/training`` route."""
    api = APIRouter(prefix="/api/training", tags=["training"])
    store = lambda: supervisor.store  # noqa: E731 -- opened on first use

    def job_of(name: str) -> dict[str, Any]:
        return supervisor.job(name)

    def run_of(name: str) -> dict[str, Any] | None:
        try:
            return store().training_run(name)
        except NotFoundError:
            return None

    def folder_of(job: dict[str, Any]) -> FsPath:
        return supervisor.runs_dir / job["name"]

    # -- kinds and jobs -------------------------------------------------------------------

    @api.get("", response_model=R.TrainingKinds)
    def kinds() -> JSON:
        """The trainers this server has (installed or not), each config's JSON Schema, caps."""
        return JSON(
            {
                "enabled": settings.training,
                "kinds": [
                    {
                        "kind": kind.name,
                        "installed": kind.installed(),
                        "extra": kind.extra,
                        "steps": kind.unit,
                        "max_steps": getattr(settings, CAPS[kind.name]),
                        "config_schema": config_schema(kind.name),
                    }
                    for kind in KINDS.values()
                ],
                "max_wall_s": settings.max_training_wall_s,
                "stop_grace_s": settings.training_stop_grace_s,
            }
        )

    @api.post("/jobs", status_code=status.HTTP_202_ACCEPTED, response_model=R.TrainingJob)
    def start(body: JobStart) -> JSON:
        """Start a training job (one at a time: 409 names the live one); follow it with
        ``GET /api/training/jobs/{name}/stream``.
        """
        kind = KINDS[body.kind]
        try:
            cfg = body.config.check()
        except UnknownNameError as exc:  # a world or scenario in the body: the body is wrong
            raise ValueError(str(exc)) from None
        steps, cap = kind.steps(cfg), getattr(settings, CAPS[kind.name])
        if steps > cap:
            raise ValueError(
                f"a {kind.name} job over HTTP trains at most {cap:,} {kind.unit} "
                f"({CAPS[kind.name]}); this config asks for {steps:,}"
            )
        if body.max_wall_s is not None and body.max_wall_s > settings.max_training_wall_s:
            raise ValueError(
                f"max_wall_s must be at most {settings.max_training_wall_s:g} "
                f"(max_training_wall_s), got {body.max_wall_s:g}"
            )
        if hasattr(cfg, "model"):
            cfg.model = _served_model(cfg.model, supervisor.runs_dir)
        if not settings.training:
            raise HTTPException(403, "training jobs are off on this server (training=false)")
        if not kind.installed():
            raise Conflict(
                f"the {kind.name} trainer is not installed here: pip install 'opsgym[{kind.extra}]'"
            )
        name = body.name or _free_name(supervisor, run_name(cfg.env, kind.name, cfg.seed))
        wall = body.max_wall_s or settings.max_training_wall_s
        job = supervisor.start(kind.name, cfg, name, wall)
        return JSON(public(job), status_code=status.HTTP_202_ACCEPTED)

    @api.get("/jobs", response_model=list[R.TrainingJob])
    def list_jobs() -> JSON:
        """Every training job, newest first."""
        return JSON([public(job) for job in reversed(supervisor.jobs())])

    @api.get("/jobs/{name}", response_model=R.TrainingJobView)
    def get_job(name: JobName) -> JSON:
        """One job, with its run's status."""
        job = job_of(name)
        run = run_of(name)
        return JSON({**public(job), "run_status": run["status"] if run else None})

    @api.post(
        "/jobs/{name}/stop", status_code=status.HTTP_202_ACCEPTED, response_model=R.TrainingJob
    )
    def stop(name: JobName) -> JSON:
        """Stop a job: SIGINT to its processes, so the trainer saves its model and marks its run
        interrupted; SIGTERM, then SIGKILL, if it has not ended after the grace period.
        """
        return JSON(public(supervisor.stop(name)), status_code=status.HTTP_202_ACCEPTED)

    @api.delete("/jobs/{name}", response_model=R.Deleted)
    def delete(
        name: JobName,
        files: bool = Query(False, description="Delete its run's folder and its log too."),
    ) -> JSON:
        """Forget a finished job (its run stays in the store)."""
        return JSON(supervisor.delete(name, files))

    # -- what it learnt ---------------------------------------------------------------------

    @api.get("/jobs/{name}/metrics", response_model=R.Metrics)
    def metrics(name: JobName) -> JSON:
        """The run's learning curves: ``{key: [[step, value], ...]}``."""
        job = job_of(name)
        run = run_of(name)
        return JSON(
            {
                "name": name,
                "status": job["status"],
                "curves": (run or {}).get("curves") or {},
                "updated_at": _when(run["updated_at"]) if run else None,
            }
        )

    @api.get("/jobs/{name}/summary", response_model=R.TrainingSummary)
    def summary(name: JobName) -> JSON:
        """The job, its run, each curve's first, last, lowest and highest value, its files."""
        job = job_of(name)
        run = run_of(name)
        folder = folder_of(job)
        evaluation = None
        with contextlib.suppress(OSError, ValueError):  # none before the end, or none asked
            evaluation = json.loads(artifacts.inside(folder, "evaluation.json").read_text())
        started, finished = job["started_at"], job["finished_at"]
        seconds = None
        if started is not None:
            end = finished or utcnow()
            seconds = round((end - started).total_seconds(), 3)
        files = artifacts.listing(folder)
        return JSON(
            {
                "job": public(job),
                "run": None
                if run is None
                else public({k: v for k, v in run.items() if k != "curves"}),
                "duration_s": seconds,
                "curves": _curves_summary((run or {}).get("curves")),
                "evaluation": evaluation,
                "model": next((f["path"] for f in files if f["path"] in MODELS), None),
                "files": len(files),
                "bytes": sum(f["size"] for f in files),
            }
        )

    @api.get("/jobs/{name}/logs", response_model=R.Log)
    def logs(
        name: JobName,
        offset: int = Query(0, ge=0, le=2**62, description="Byte offset to read from."),
        limit: int = Query(LOG_LIMIT, ge=1, le=LOG_LIMIT, description="Most bytes to read."),
    ) -> JSON:
        """The job's log (its standard output and error) in whole lines from ``offset``; read
        on from ``next_offset``.
        """
        job = job_of(name)
        final = job["status"] not in ACTIVE
        lines, next_offset, size = artifacts.read_log(
            supervisor.files(name).log, offset, limit, final
        )
        return JSON(
            {
                "name": name,
                "status": job["status"],
                "offset": offset,
                "next_offset": next_offset,
                "size": size,
                "lines": lines,
                "complete": final and next_offset >= size,
            }
        )

    @api.get("/jobs/{name}/stream", response_class=StreamingResponse, responses=R.EVENT_STREAM)
    async def stream(
        name: JobName,
        request: Request,
        last_event_id: str | None = Header(
            None, max_length=100, description="Resume after this event (what the stream sent)."
        ),
    ) -> StreamingResponse:
        """Server-sent events until the job is over: ``status`` (the job, on every change),
        ``metrics`` (the curves, when they change), ``log`` (new lines), then ``end``.
        """
        await anyio.to_thread.run_sync(job_of, name)  # 404 before the stream opens
        offset, stamp = _cursor(last_event_id)
        events = _events(name, request, offset, stamp)
        headers = {"cache-control": "no-store", "x-accel-buffering": "no"}
        return StreamingResponse(events, media_type="text/event-stream", headers=headers)

    async def _events(name: str, request: Request, offset: int, stamp: int) -> Any:
        shown: tuple[Any, ...] | None = None
        beat = time.monotonic()
        log_path = supervisor.files(name).log
        while True:
            try:
                job = await anyio.to_thread.run_sync(job_of, name)
            except NotFoundError:
                yield _event("end", {"name": name, "status": "deleted"}, offset, stamp)
                return
            run = await anyio.to_thread.run_sync(run_of, name)
            final = job["status"] not in ACTIVE
            out = []
            if shown != (job["status"], job["pid"], job["exit_code"], job["error"]):
                shown = (job["status"], job["pid"], job["exit_code"], job["error"])
                out.append(("status", public(job)))
            if run is not None and run["curves"] and _stamp(run) != stamp:
                stamp = _stamp(run)
                out.append(("metrics", {"run_status": run["status"], "curves": run["curves"]}))
            lines, after, size = await anyio.to_thread.run_sync(
                artifacts.read_log, log_path, offset, LOG_LIMIT, final
            )
            if lines or after != offset:
                out.append(("log", {"offset": offset, "lines": lines}))
                offset = after
            for kind, data in out:
                yield _event(kind, data, offset, stamp)
            if out:
                beat = time.monotonic()
            elif time.monotonic() - beat > HEARTBEAT_S:
                yield b": keep-alive\n\n"
                beat = time.monotonic()
            if final and offset >= size:
                yield _event("end", {"name": name, "status": job["status"]}, offset, stamp)
                return
            if await request.is_disconnected():
                return
            await asyncio.sleep(STREAM_POLL_S)

    # -- pictures -------------------------------------------------------------------------

    @api.get(
        "/jobs/{name}/plot.png",
        response_class=Response,
        responses=R.binary("image/png", "The curves drawn."),
    )
    def plot_png(name: JobName) -> Response:
        """The run's curves drawn (PNG; needs matplotlib, the ``plots`` extra)."""
        job = job_of(name)
        run = run_of(name)
        png = plot((run or {}).get("curves") or {}, f"{name} ({job['status']})")
        return Response(png, media_type="image/png", headers={"cache-control": "no-store"})

    @api.get("/jobs/{name}/plot", response_class=HTMLResponse)
    def plot_page(name: JobName) -> HTMLResponse:
        """A page showing ``plot.png``, reloading itself every 5 s while the job is live."""
        job = job_of(name)
        live = job["status"] in ACTIVE
        refresh = '<meta http-equiv="refresh" content="5">' if live else ""
        title = html.escape(f"{name}: {job['kind']} on {job['env']}, {job['status']}")
        page = (
            f'<!doctype html><html><head><meta charset="utf-8">{refresh}<title>{title}</title>'
            "<style>body{font-family:sans-serif;margin:1em}img{max-width:100%}</style></head>"
            f'<body><h1>{title}</h1><img src="plot.png?t={time.time():.0f}" alt="curves">'
            "</body></html>"
        )
        csp = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'"
        return HTMLResponse(page, headers={"content-security-policy": csp})

    # -- files ----------------------------------------------------------------------------

    @api.get("/jobs/{name}/artifacts", response_model=R.Artifacts)
    def list_artifacts(name: JobName) -> JSON:
        """The files in the job's run folder (symbolic links left out), each with its SHA-256."""
        job = job_of(name)
        return JSON({"name": name, "files": artifacts.listing(folder_of(job), hashes=True)})

    @api.get(
        "/jobs/{name}/files/{path:path}",
        response_class=FileResponse,
        responses=R.binary("application/octet-stream", "The file."),
    )
    def get_file(name: JobName, path: str) -> FileResponse:
        """One file of the job's run folder; the path stays inside it (no ``..``, no absolute
        path, no symbolic link).
        """
        job = job_of(name)
        try:
            found = artifacts.inside(folder_of(job), path)
        except artifacts.OutsideError as exc:
            raise HTTPException(403, str(exc)) from None
        except FileNotFoundError as exc:
            raise HTTPException(404, str(exc)) from None
        return FileResponse(found, media_type="application/octet-stream", filename=found.name)

    @api.get(
        "/jobs/{name}/archive.tar.gz",
        response_class=StreamingResponse,
        responses=R.binary("application/gzip", "The run folder as a tar.gz."),
    )
    def get_archive(name: JobName) -> StreamingResponse:
        """The job's run folder as a ``tar.gz``, streamed (once the job is over)."""
        job = job_of(name)
        if job["status"] in ACTIVE:
            raise Conflict(f"training job {name!r} is {job['status']}: its files still change")
        headers = {"content-disposition": f'attachment; filename="{name}.tar.gz"'}
        return StreamingResponse(
            artifacts.archive(folder_of(job), name), media_type="application/gzip", headers=headers
        )

    # -- every stored run -----------------------------------------------------------------

    @api.get("/runs", response_model=list[R.TrainingRunRow])
    def list_runs() -> JSON:
        """Every training run in the store (the CLI's too), newest first, without curves."""
        jobs = {job["name"]: job["status"] for job in supervisor.jobs()}
        return JSON(
            [
                {
                    **public({k: v for k, v in run.items() if k != "curves"}),
                    "curves": sorted(run["curves"] or {}),
                    "job": jobs.get(run["name"]),
                }
                for run in reversed(store().training_runs())
            ]
        )

    @api.get("/runs/{name}", response_model=R.TrainingRun)
    def get_run(name: Annotated[str, Path(max_length=200)]) -> JSON:
        """One stored training run with its curves."""
        return JSON(public(store().training_run(name)))

    return api


HUB_ID = re.compile(r"(?:[A-Za-z0-9][\w.-]{0,95}/)?[A-Za-z0-9][\w.-]{0,95}")
"""A Hugging Face Hub id: ``name`` or ``owner/name``."""

MODELS = ("model.zip", "model/config.json")
"""Where a run's final model is (PPO's zip; the LLM trainers' folder)."""


def _served_model(model: str, runs_dir: FsPath) -> str:
    """An LLM trainer's ``model`` as the server allows it: ``tiny``, ``runs:NAME`` (a run in the
    runs folder, given to the trainer as its path) or a Hub id, never a path.
    """
    if model == "tiny":
        return model
    if model.startswith("runs:"):
        return str(resolve_run(runs_dir, model.removeprefix("runs:")))
    if not HUB_ID.fullmatch(model) or ".." in model or FsPath(model).exists():
        raise PolicyRefusedError(
            f"model {model!r}: over HTTP a model is 'tiny', a run in the server's runs folder "
            "(runs:NAME) or a Hub id (owner/name), never a path: model files hold pickled code"
        )
    return model


def _free_name(supervisor: Supervisor, name: str) -> str:
    """``name``, or ``name-2``, ``name-3``... if a job, run or folder has it."""
    candidate, n = name, 1
    while True:
        try:
            supervisor._refuse_taken(candidate)
            return candidate
        except Conflict:
            n += 1
            candidate = f"{name}-{n}"


def _cursor(last_event_id: str | None) -> tuple[int, int]:
    """``(log offset, metrics stamp)`` from a ``Last-Event-ID`` (``0, -1`` if none or bad)."""
    try:
        offset, stamp = (last_event_id or "").split(".")
        return max(int(offset), 0), int(stamp)
    except ValueError:
        return 0, -1


def _stamp(run: dict[str, Any]) -> int:
    """When the run's record was last written, in microseconds: its curves' version."""
    return int(run["updated_at"].timestamp() * 1_000_000)


def _event(kind: str, data: Any, offset: int, stamp: int) -> bytes:
    payload = json.dumps(data, separators=(",", ":"), allow_nan=False)
    return f"id: {offset}.{stamp}\nevent: {kind}\ndata: {payload}\n\n".encode()


def plot(curves: dict[str, list[list[float]]], title: str) -> bytes:
    """``curves`` drawn as PNG: up to :data:`PLOTS` of them, one panel each (noisy ones with a
    moving average). Drawn on a ``Figure`` of its own (no pyplot state), so requests may draw
    at once.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise Conflict("plot.png needs matplotlib: pip install 'opsgym[plots]'") from None
    keys = [k for k in PLOTTED if curves.get(k)]
    keys += sorted(k for k in curves if curves[k] and k not in keys)
    keys = keys[:PLOTS]
    columns = min(3, max(1, len(keys)))
    rows = max(1, math.ceil(len(keys) / columns))
    figure = Figure(figsize=(4 * columns, 2.8 * rows + 0.4), dpi=90)
    FigureCanvasAgg(figure)
    figure.suptitle(title, fontsize=10)
    if not keys:
        ax = figure.add_subplot(1, 1, 1)
        ax.text(0.5, 0.5, "no curves yet", ha="center", va="center")
        ax.set_axis_off()
    for i, key in enumerate(keys):
        ax = figure.add_subplot(rows, columns, i + 1)
        steps = [p[0] for p in curves[key]]
        values = [p[1] for p in curves[key]]
        noisy = len(values) > 50
        ax.plot(steps, values, lw=0.6 if noisy else 1.2, alpha=0.4 if noisy else 1.0)
        if noisy:
            ax.plot(steps, _moving_average(values, max(len(values) // 25, 5)), lw=1.4)
        ax.set_title(key, fontsize=9)
        ax.tick_params(labelsize=7)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _moving_average(values: list[float], width: int) -> list[float]:
    """The mean of each value and the ``width - 1`` before it (fewer at the start)."""
    sums = [0.0]
    for value in values:
        sums.append(sums[-1] + value)
    return [
        (sums[j + 1] - sums[max(0, j + 1 - width)]) / min(j + 1, width) for j in range(len(values))
    ]
