"""Training jobs over HTTP: one child process at a time, watched, stopped, and found again.

A job is ``python -m opsgym.training.job SPEC`` (:mod:`opsgym.training.job`: the CLI's own
trainers and configs), started in a session of its own (its process group is its pid), with
standard output and error in its log and an environment without the server's tokens. Its row in
the store's ``training_jobs`` says where it is:

``queued`` → ``running`` → (``stopping``) → ``succeeded`` | ``failed`` | ``stopped`` | ``lost``

* **One at a time.** A start while a job is queued, running or stopping is refused, naming it.
* **Stopping** sends SIGINT to the job's process group: the trainer saves its model, marks its
  run ``interrupted`` and the job ends ``stopped``. A trainer that has not ended after
  ``training_stop_grace_s`` gets SIGTERM, and after as long again SIGKILL. A job that outlives
  its wall time (``max_wall_s``, at most ``max_training_wall_s``) is stopped the same way.
* **Never left running.** A watcher thread polls the jobs every :data:`POLL_S`; a job whose
  process has ended is settled from its result file (:func:`opsgym.training.job.read_result`),
  or from its exit status when there is none (its run, if still marked ``running``, is marked
  failed or interrupted).
* **Restarts.** A job outlives the server that started it (a long run survives an upgrade).
  A server that opens a store holding live jobs re-adopts each whose pid still names the same
  process: the pid *and* the process's start time (``/proc/PID/stat``, field 22) must match, so
  a pid the system gave to another process since is never signalled. A job whose process has
  ended is settled from its result file, or marked ``lost``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from opsgym.server.errors import Conflict
from opsgym.server.settings import ServerSettings
from opsgym.store.errors import NotFoundError
from opsgym.store.models import utcnow
from opsgym.training.job import JobFiles, read_result

log = logging.getLogger("opsgym.server.training")

ACTIVE = ("queued", "running", "stopping")
"""A job in one of these states has (or is about to have) a process."""

FINAL = ("succeeded", "failed", "stopped", "lost")
"""A job in one of these states is over."""

POLL_S = 0.5
"""How often the watcher looks at the jobs."""

KILL_AFTER = (signal.SIGTERM, signal.SIGKILL)
"""What a stop escalates to, a grace period apart, when SIGINT has not ended the job."""

SERVER_VARIABLES = frozenset(f"OPSGYM_{name}".upper() for name in ServerSettings.model_fields)
"""The server's own settings (its tokens among them): never passed to a job's process."""


def process_start(pid: int) -> int | None:
    """When live process ``pid`` started (clock ticks since boot, ``/proc/PID/stat`` field 22),
    or ``None`` if there is no such process, it has exited (a zombie), or this system has no
    ``/proc``.
    """
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the name (field 2) may hold spaces
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def can_verify() -> bool:
    """Whether this system lets a process be told apart from one that reused its pid."""
    return process_start(os.getpid()) is not None


def child_environment(store_url: str) -> dict[str, str]:
    """A job's environment: the server's, without its settings (tokens included), with the
    store to record the run in.
    """
    env = {k: v for k, v in os.environ.items() if k.upper() not in SERVER_VARIABLES}
    env["OPSGYM_DB"] = store_url
    env["PYTHONUNBUFFERED"] = "1"
    return env


class Supervisor:
    """The server's training jobs (see the module docstring).

    Args:
        settings: The server's settings (``db``, ``runs_dir``, the caps and the grace period).
        poll_s: How often the watcher looks.
    """

    command: tuple[str, ...] = (sys.executable, "-m", "opsgym.training.job")
    """What runs a job, given its spec file (tests put a stand-in here)."""

    def __init__(self, settings: ServerSettings, poll_s: float = POLL_S):
        self.settings = settings
        self.runs_dir = Path(settings.runs_dir).absolute()
        self.grace_s = settings.training_stop_grace_s
        self.poll_s = poll_s
        self._store: Any = None
        self._lock = threading.RLock()
        self._children: dict[str, subprocess.Popen[bytes]] = {}
        self._stopping: dict[str, tuple[float, int]] = {}  # name -> (when signalled, escalations)
        self._halt = threading.Event()
        self._watcher: threading.Thread | None = None

    # -- life ------------------------------------------------------------------------------

    @property
    def store(self) -> Any:
        """The store (opened on first use)."""
        with self._lock:
            if self._store is None:
                from opsgym.store import open_store

                self._store = open_store(self.settings.db)
            return self._store

    def open(self) -> None:
        """Re-adopt or settle the jobs a previous server left, then start watching."""
        try:
            self.adopt()
        except Exception as exc:  # noqa: BLE001 -- a store down must not stop the server starting
            log.error("training jobs not re-adopted: %s: %s", type(exc).__name__, exc)
        self._halt.clear()
        self._watcher = threading.Thread(target=self._watch, name="opsgym-training", daemon=True)
        self._watcher.start()

    def close(self) -> None:
        """Stop watching. Running jobs keep running: the next server re-adopts them."""
        self._halt.set()
        if self._watcher is not None:
            self._watcher.join(10)
            self._watcher = None
        with self._lock:
            for name, child in self._children.items():
                if child.poll() is None:
                    log.warning(
                        "training job %s (pid %d) keeps running; a server started on this store "
                        "re-adopts it, or stop it: POST /api/training/jobs/%s/stop",
                        name,
                        child.pid,
                        name,
                    )
            self._children.clear()
            if self._store is not None:
                self._store.close()
                self._store = None

    def adopt(self) -> list[str]:
        """Take over the live jobs in the store; settle those whose process is gone. Returns the
        names of the jobs adopted.
        """
        adopted = []
        verifiable = can_verify()
        with self._lock:
            for job in self.store.training_jobs(ACTIVE):
                name = job["name"]
                if name in self._children:
                    continue
                if job["pid"] is None:
                    self._finish(job, "lost", error="the server stopped before its process started")
                elif not verifiable:
                    self._finish(
                        job,
                        "lost",
                        error="this system has no /proc to tell its process from another that "
                        "reused its pid; it was not signalled",
                        touch_run=False,
                    )
                elif process_start(job["pid"]) == job["pid_start"]:
                    adopted.append(name)
                    if job["status"] == "stopping":
                        self._stopping[name] = (time.monotonic(), 0)
                    log.info("training job %s (pid %d) re-adopted", name, job["pid"])
                else:
                    self._settle(job, None)
        return adopted

    # -- jobs ------------------------------------------------------------------------------

    def start(self, kind: str, cfg: Any, name: str, max_wall_s: float | None) -> dict[str, Any]:
        """Start job ``name``: ``kind``'s trainer on ``cfg`` (checked), in a child process.

        Raises:
            Conflict: a job is live already, or the name is taken (a job, a run, a folder).
        """
        with self._lock:
            live = self.store.training_jobs(ACTIVE)
            if live:
                other = live[0]
                raise Conflict(
                    f"training job {other['name']!r} is {other['status']}: one job runs at a "
                    f"time; stop it first (POST /api/training/jobs/{other['name']}/stop)"
                )
            self._refuse_taken(name)
            files = JobFiles(self.runs_dir, name)
            if files.folder.is_symlink():
                raise Conflict(f"{files.folder} is a symbolic link; jobs keep their files in it")
            files.folder.mkdir(parents=True, exist_ok=True)
            for path in files.all():
                path.unlink(missing_ok=True)  # a deleted job's, whose files were kept
            config = cfg.model_dump()
            spec = {"kind": kind, "name": name, "out": str(self.runs_dir), "config": config}
            files.spec.write_text(_json(spec))
            self.store.add_training_job(
                name,
                kind=kind,
                env=cfg.env,
                config=config,
                folder=self.runs_dir / name,
                max_wall_s=max_wall_s,
            )
            try:
                with files.log.open("ab") as out:
                    child = subprocess.Popen(
                        [*self.command, str(files.spec)],
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        env=child_environment(self.store.url),
                        start_new_session=True,
                        close_fds=True,
                    )
            except OSError as exc:
                return self.store.update_training_job(
                    name, status="failed", error=f"cannot start: {exc}", finished_at=utcnow()
                )
            self._children[name] = child
            return self.store.update_training_job(
                name,
                status="running",
                pid=child.pid,
                pid_start=process_start(child.pid),
                started_at=utcnow(),
            )

    def _refuse_taken(self, name: str) -> None:
        try:
            self.store.training_job(name)
        except NotFoundError:
            pass
        else:
            raise Conflict(f"a training job named {name!r} exists; delete it or choose another")
        try:
            self.store.training_run(name)
        except NotFoundError:
            pass
        else:
            raise Conflict(f"a training run named {name!r} is in the store; choose another name")
        if os.path.lexists(self.runs_dir / name):
            raise Conflict(f"{self.runs_dir / name} exists; choose another name")

    def job(self, name: str) -> dict[str, Any]:
        """Job ``name``'s row. Raises :class:`~opsgym.store.errors.NotFoundError`."""
        return self.store.training_job(name)

    def jobs(self) -> list[dict[str, Any]]:
        """Every job, oldest first."""
        return self.store.training_jobs()

    def stop(self, name: str, why: str | None = None) -> dict[str, Any]:
        """Ask job ``name`` to stop (SIGINT to its process group); it ends ``stopped``.

        Raises:
            Conflict: the job is over already.
        """
        with self._lock:
            job = self.store.training_job(name)
            if job["status"] not in ACTIVE:
                raise Conflict(f"training job {name!r} is {job['status']} already")
            if job["status"] == "stopping":
                return job
            if not self._signal(job, signal.SIGINT):
                self._settle(job, self._returncode(name))
                return self.store.training_job(name)
            self._stopping[name] = (time.monotonic(), 0)
            return self.store.update_training_job(name, status="stopping", error=why)

    def delete(self, name: str, files: bool = False) -> dict[str, Any]:
        """Forget finished job ``name``; with ``files``, delete its run's folder and its log too.

        Raises:
            Conflict: the job is still live.
        """
        with self._lock:
            job = self.store.training_job(name)
            if job["status"] in ACTIVE:
                raise Conflict(f"training job {name!r} is {job['status']}: stop it first")
            removed = []
            if files:
                folder = self.runs_dir / name
                if folder.is_symlink():
                    folder.unlink()
                    removed.append(str(folder))
                elif folder.is_dir():
                    shutil.rmtree(folder)
                    removed.append(str(folder))
                for path in JobFiles(self.runs_dir, name).all():
                    if path.exists():
                        path.unlink()
                        removed.append(str(path))
            self.store.delete_training_job(name)
            self._children.pop(name, None)
            return {"name": name, "deleted": True, "removed": removed}

    def files(self, name: str) -> JobFiles:
        """Where job ``name``'s spec, log and result are."""
        return JobFiles(self.runs_dir, name)

    # -- watching --------------------------------------------------------------------------

    def _watch(self) -> None:
        while not self._halt.wait(self.poll_s):
            try:
                self.check()
            except Exception as exc:  # noqa: BLE001 -- the watcher must outlive a store hiccup
                log.error("watching training jobs: %s: %s", type(exc).__name__, exc)

    def check(self) -> None:
        """One look at the live jobs: settle the ended, stop the overdue, escalate stops."""
        with self._lock:
            for job in self.store.training_jobs(ACTIVE):
                name = job["name"]
                if not self._alive(job):
                    self._settle(job, self._returncode(name))
                    continue
                if job["status"] == "running" and _overdue(job):
                    log.info("training job %s ran past its wall time; stopping it", name)
                    self.stop(name, f"stopped after its wall time of {job['max_wall_s']:g} s")
                    continue
                if name in self._stopping:
                    self._escalate(job)

    def _escalate(self, job: dict[str, Any]) -> None:
        since, done = self._stopping[job["name"]]
        if done < len(KILL_AFTER) and time.monotonic() - since > self.grace_s * (done + 1):
            sig = KILL_AFTER[done]
            log.warning("training job %s ignored its stop; sending %s", job["name"], sig.name)
            self._signal(job, sig)
            self._stopping[job["name"]] = (since, done + 1)

    def _alive(self, job: dict[str, Any]) -> bool:
        child = self._children.get(job["name"])
        if child is not None:
            return child.poll() is None
        return job["pid"] is not None and process_start(job["pid"]) == job["pid_start"]

    def _returncode(self, name: str) -> int | None:
        child = self._children.get(name)
        return None if child is None else child.poll()

    def _signal(self, job: dict[str, Any], sig: signal.Signals) -> bool:
        """Send ``sig`` to the job's process group if its process is still the job's own."""
        if not self._alive(job):
            return False
        try:
            os.killpg(job["pid"], sig)
        except ProcessLookupError:
            return False
        return True

    def _settle(self, job: dict[str, Any], returncode: int | None) -> None:
        """Record how job ``job``, whose process has ended, ended."""
        name = job["name"]
        result = read_result(self.files(name).result)
        stopping = job["status"] == "stopping"
        if result is not None:
            status, code, error = result["status"], result["exit_code"], result.get("error")
            if status not in FINAL:
                status = "failed"
        elif returncode is not None:
            code = returncode
            how = f"signal {-returncode}" if returncode < 0 else f"exit code {returncode}"
            status = "stopped" if stopping else "failed"
            error = f"its process ended ({how}) without writing its result" + (
                ": the model may not have been saved" if stopping else ""
            )
        else:
            status, code = "lost", None
            error = "its process ended while no server watched it, leaving no result"
        if stopping and job["error"]:  # why it was stopped (its wall time) comes first
            error = job["error"] + (f"; {error}" if error else "")
        self._finish(job, status, error=error, exit_code=code)

    def _finish(
        self,
        job: dict[str, Any],
        status: str,
        *,
        error: str | None = None,
        exit_code: int | None = None,
        touch_run: bool = True,
    ) -> None:
        name = job["name"]
        self.store.update_training_job(
            name, status=status, error=error, exit_code=exit_code, finished_at=utcnow()
        )
        self._children.pop(name, None)
        self._stopping.pop(name, None)
        if touch_run:
            self._close_run(name, "interrupted" if status == "stopped" else "failed")
        log.info("training job %s %s%s", name, status, f": {error}" if error else "")

    def _close_run(self, name: str, status: str) -> None:
        """Mark the job's run ``status`` if its process died leaving it ``running``."""
        try:
            run = self.store.training_run(name)
        except NotFoundError:
            return
        if run["status"] == "running":
            self.store.finish_training_run(name, status)


def _overdue(job: dict[str, Any]) -> bool:
    limit, started = job["max_wall_s"], job["started_at"]
    if limit is None or started is None:
        return False
    return (utcnow() - started).total_seconds() > limit


def _json(value: Any) -> str:
    return json.dumps(value, indent=1, sort_keys=True, allow_nan=False)
