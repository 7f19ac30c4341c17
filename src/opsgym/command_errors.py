"""How every ``opsgym`` command fails: one line on stderr, and an exit status that says why.

Bad input (an unknown world, a malformed option, a missing extra) ends a command with
``error: ...`` and status 2 (options out of their config model's bounds: ``error: --OPTION VALUE:
why``, :func:`invalid`); Ctrl-C during a long run with ``interrupted: ...`` and status 130 (128 +
SIGINT, as shells report it). Never a traceback. Both go to stderr: stdout carries the command's
results (and, for ``opsgym mcp`` over stdio, the protocol itself). The main CLI, ``opsgym eval``
and ``opsgym train`` all end through here, so they read alike.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.text import Text

USAGE = 2
"""Exit status of a command refused for its input."""
INTERRUPTED = 130
"""Exit status of a command stopped by Ctrl-C."""

_stderr = Console(stderr=True, width=None if sys.stderr.isatty() else 200)


def _say(label: str, style: str, message: str) -> None:
    line = message.strip().splitlines()[0] if message.strip() else ""
    _stderr.print(Text.assemble((label, style), " ", line), soft_wrap=True, highlight=False)


def fail(message: str) -> NoReturn:
    """End the command with ``error: MESSAGE`` (its first line) and exit status 2."""
    _say("error:", "bold red", message)
    raise typer.Exit(USAGE)


def invalid(exc: ValidationError) -> NoReturn:
    """End the command because its options broke their config model's rules (a bound, a rule
    between fields), naming each option: field ``n_envs`` is ``--n-envs``, field ``r`` of a
    nested model ``lora`` is ``--lora-r`` (as :mod:`opsgym.training.cli` names them).
    """
    problems = []
    for error in exc.errors():
        why = error["msg"].removeprefix("Value error, ")
        if error["loc"]:
            option = "--" + "-".join(str(part) for part in error["loc"]).replace("_", "-")
            problems.append(f"{option} {error['input']!r}: {why}")
        else:
            problems.append(why)
    fail("; ".join(problems))


def need_extra(exc: ImportError, extra: str) -> NoReturn:
    """End the command because an optional dependency is missing, naming the extra to install."""
    fail(f"{exc}; install the extra: pip install 'opsgym[{extra}]'")


def interrupted(what_is_left: str) -> NoReturn:
    """End a long run stopped by Ctrl-C, saying what it left behind (exit status 130)."""
    _say("interrupted:", "bold yellow", what_is_left)
    raise typer.Exit(INTERRUPTED)
