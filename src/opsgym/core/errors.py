"""The exception hierarchy of opsgym.

Domain failures (a rejected call, a deploy that timed out) are values, never exceptions.
These are for programming errors: a wrong id, a bad seed, a step after the end. Each message
says what was wrong, the actual value, and what to do instead.
"""

from __future__ import annotations

import difflib
import reprlib
from collections.abc import Iterable


class OpsgymError(Exception):
    """Base class of every error opsgym raises on purpose."""


class UnknownNameError(OpsgymError, KeyError):
    """A name (environment, scenario, policy, split) that is not registered."""

    def __init__(self, kind: str, name: object, known: Iterable[str]):
        known = sorted(known)
        close = difflib.get_close_matches(str(name), known, n=3)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        self.kind, self.name, self.known = kind, name, known
        super().__init__(f"Unknown {kind} {name!r}.{hint} Known: {', '.join(known)}.")

    def __str__(self) -> str:  # KeyError would otherwise quote the whole message
        return str(self.args[0])


class InvalidSeedError(OpsgymError, ValueError):
    """A seed that is not a non-negative integer."""

    def __init__(self, seed: object):
        # reprlib: bounded in depth and length (a seed nested 5,000 deep must not recurse)
        super().__init__(f"Seed must be an int >= 0, got {reprlib.repr(seed)}.")


class EpisodeDoneError(OpsgymError, RuntimeError):
    """A step on an episode that has already ended."""


class RecordError(OpsgymError, ValueError):
    """An episode record that cannot be read (missing field, wrong format)."""


class PolicyRefusedError(OpsgymError, PermissionError):
    """A policy that may not be loaded where it was asked for: a model file named over HTTP, a
    run folder holding a symbolic link, an LLM named without the operator's token. The message
    names the rule.
    """


class HeldOutFamilyError(OpsgymError, ValueError):
    """A held-out family was asked for on the ``train`` split (see :mod:`opsgym.core.request`)."""


class MissingExtraError(OpsgymError, ImportError):
    """A part of opsgym that needs an extra that is not installed.

    The message names what is missing and the install command, e.g.
    ``No module named 'trl'; install the extra: pip install 'opsgym[grpo]'``.
    """

    def __init__(self, missing: BaseException | str, extra: str):
        self.missing, self.extra = str(missing), extra
        super().__init__(f"{missing}; install the extra: pip install 'opsgym[{extra}]'")

    def __reduce__(self) -> tuple[type, tuple[str, str]]:  # raised in a worker, read in its parent
        return type(self), (self.missing, self.extra)


class TrainingError(OpsgymError, ValueError):
    """Training cannot start as asked (a bad argument, an output folder that exists)."""


class ModelError(TrainingError):
    """A model or tokenizer that cannot be loaded, or a device or precision it cannot run at."""


class SpecError(OpsgymError, ValueError):
    """An :class:`~opsgym.core.spec.EnvSpec` that cannot be registered as written: two terminal
    tools, a malformed route, a name another world holds. The message names the world and the
    part that is wrong.
    """


class ConfigError(OpsgymError, ValueError):
    """A config value out of range or of the wrong type (the message names the key)."""
