"""Evaluations started over HTTP (``POST /api/evaluations``) and their verifications, run one at
a time in a background thread of the server; what :mod:`opsgym.server.routes.evaluations` reads
their progress from.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from opsgym.server.errors import Conflict
from opsgym.server.models import EvaluationStart


class Jobs:
    """Evaluations started over HTTP, run one at a time in a background thread."""

    def __init__(self, db: str | None, runs_dir: str | None = None):
        self.db = db
        self.runs_dir = runs_dir
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="opsgym-eval")
        self.jobs: dict[str, dict[str, Any]] = {}
        self.verifications: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def start(self, body: EvaluationStart) -> dict[str, Any]:
        """Check ``body`` and queue its evaluation; the job's first state."""
        from opsgym.evaluation.harness import default_name
        from opsgym.evaluation.runner import EvalConfig, check

        cfg = check(
            EvalConfig(
                body.env,
                tuple(body.policies),
                tuple(body.scenarios),
                body.split,
                body.episodes,
                body.trials,
                dict(body.config),
                None,
                self.runs_dir,
                body.seeds,
            )
        )
        name = body.name or default_name(cfg)
        with self._lock:
            job = self.jobs.get(name)
            if job is not None and job["status"] in ("queued", "running"):
                raise Conflict(f"evaluation {name!r} is already {job['status']}")
            job = {"name": name, "status": "queued", "done": 0, "total": None, "error": None}
            job["started_at"] = time.time()
            self.jobs[name] = job
        self.pool.submit(self._run, job, cfg, body.seeds_from)
        return dict(job)

    def _run(self, job: dict[str, Any], cfg: Any, seeds_from: str | None = None) -> None:
        from opsgym.evaluation.harness import evaluate

        def progress(stream: Any, total: int) -> Any:
            job["total"], job["status"] = total, "running"
            for item in stream:
                job["done"] += 1
                yield item

        try:
            evaluate(
                cfg.env,
                cfg.policies,
                cfg.scenarios,
                split=cfg.split,
                episodes=cfg.episodes,
                trials=cfg.trials,
                config=cfg.config,
                db=self.db,
                name=job["name"],
                progress=progress,
                runs_dir=cfg.runs_dir,
                seeds=cfg.seeds,
                seeds_from=seeds_from,
            )
            job["status"] = "done"
        except Exception as exc:  # noqa: BLE001 -- a job's failure is its status, not the server's
            job["status"], job["error"] = "failed", f"{type(exc).__name__}: {exc}"
        job["finished_at"] = time.time()

    def verify(self, name: str, status: str) -> dict[str, Any]:
        """Queue a replay of every stored episode of evaluation ``name`` (stored ``status``)
        (what ``opsgym eval --verify`` does); the verification's first state.
        """
        with self._lock:
            job = self.jobs.get(name)
            if status == "running" or (job is not None and job["status"] in ("queued", "running")):
                raise Conflict(f"evaluation {name!r} is running: its episodes still change")
            check = self.verifications.get(name)
            if check is not None and check["status"] in ("queued", "running"):
                raise Conflict(f"evaluation {name!r} is already being verified ({check['status']})")
            check = {"name": name, "status": "queued", "error": None, "result": None}
            check["started_at"] = time.time()
            self.verifications[name] = check
        self.pool.submit(self._verify, check)
        return dict(check)

    def _verify(self, check: dict[str, Any]) -> None:
        from opsgym.evaluation.verify import verify

        check["status"] = "running"
        try:
            found = verify(check["name"], self.db)
            check["result"] = {
                "total": found.total,
                "matched": found.matched,
                "exit_code": found.exit_code,
                "problems": found.problems,
                "root": found.root,
                "sealed_root": found.sealed_root,
            }
            check["status"] = "done"
        except Exception as exc:  # noqa: BLE001 -- a job's failure is its status, not the server's
            check["status"], check["error"] = "failed", f"{type(exc).__name__}: {exc}"
        check["finished_at"] = time.time()

    def close(self) -> None:
        """Drop queued jobs (a running one ends with the process)."""
        self.pool.shutdown(wait=False, cancel_futures=True)
