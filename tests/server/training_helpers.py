"""What the training-job tests share: a server-sent events reader, waiting on a job, and a sweep
that leaves no job process behind a test."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from opsgym.server.supervisor import ACTIVE, process_start


def events(response: httpx.Response) -> Iterator[dict[str, Any]]:
    """The events of a ``text/event-stream`` response, each ``{"id", "event", "data"}``."""
    event: dict[str, Any] = {}
    for line in response.iter_lines():
        if not line:
            if "data" in event:
                event["data"] = json.loads(event["data"])
                yield event
            event = {}
        elif not line.startswith(":"):
            field, _, value = line.partition(": ")
            event[field] = value


def stream(client: httpx.Client, name: str, **headers: str) -> list[dict[str, Any]]:
    """Every event of job ``name``'s stream, to its end."""
    url = f"/api/training/jobs/{name}/stream"
    with client.stream("GET", url, headers=headers, timeout=httpx.Timeout(30, read=120)) as reply:
        assert reply.status_code == 200, reply.read()
        assert reply.headers["content-type"].startswith("text/event-stream")
        return list(events(reply))


def wait_for(client: httpx.Client, name: str, done: Any, limit: float) -> dict[str, Any]:
    """Poll job ``name`` until ``done(job)``; fail after ``limit`` seconds (a hang guard)."""
    deadline = time.monotonic() + limit
    while True:
        job = client.get(f"/api/training/jobs/{name}").json()
        if done(job):
            return job
        assert time.monotonic() < deadline, f"job {name} still {job['status']}: {job}"
        time.sleep(0.2)


def over(job: dict[str, Any]) -> bool:
    return job["status"] not in ACTIVE


def kill_leftovers(folder: Path) -> None:
    """Kill every live job recorded in the stores under ``folder`` (a failed test's)."""
    from opsgym.store import open_store

    for db in folder.glob("*.sqlite"):
        with open_store(db) as store:
            for job in store.training_jobs(ACTIVE):
                if job["pid"] and process_start(job["pid"]) == job["pid_start"]:
                    os.killpg(job["pid"], signal.SIGKILL)
