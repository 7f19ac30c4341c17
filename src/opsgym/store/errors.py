"""The store's errors: one line each, naming the database (password masked) and the cause."""

from __future__ import annotations

from opsgym.core.errors import OpsgymError


class StoreError(OpsgymError, RuntimeError):
    """The store cannot be opened, read or written (bad URL, unreachable server, failed write).

    A failed write has been rolled back: nothing of it is stored.
    """


class DuplicateEpisodeError(StoreError):
    """An evaluation already holds an episode with this (policy, scenario, seed, trial)."""


class NotFoundError(StoreError, LookupError):
    """No episode, evaluation or training run by that id or name."""


def one_line(exc: BaseException) -> str:
    """The first meaningful line of an exception's message, with its type if it has none.

    Driver errors span several lines (a hint, the failing SQL); a one-line error keeps the
    cause and drops the rest.
    """
    orig = getattr(exc, "orig", None) or exc  # SQLAlchemy wraps the driver's error
    lines = [line.strip() for line in str(orig).splitlines() if line.strip()]
    text = lines[0] if lines else ""
    return f"{type(orig).__name__}: {text}" if text else type(orig).__name__
