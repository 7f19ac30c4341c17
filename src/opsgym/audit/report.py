"""What an audit found, as plain data: per world, per section, one row per check."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SECTIONS = ("leak", "exploits", "rewards", "seeds", "verify")


@dataclass(frozen=True)
class Check:
    """One line of the audit.

    Attributes:
        name: What was checked (a scenario, an exploit, a reward statement).
        measured: What was measured, in words.
        bound: What must hold, in words.
        passed: Whether it held.
        values: The measured numbers by name, for machines (``--json``).
    """

    name: str
    measured: str
    bound: str
    passed: bool
    values: dict[str, Any] = field(default_factory=dict)


@dataclass
class AuditReport:
    """An audit's findings.

    Attributes:
        episodes: Episodes per policy (and seeds per hidden fact in the leak test).
        split: The seed split every episode was drawn from.
        worlds: ``{world: {section: [Check, ...]}}``, sections in :data:`SECTIONS` order.
        seconds: Wall time of the audit.
    """

    episodes: int
    split: str
    worlds: dict[str, dict[str, list[Check]]] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        """Whether every check held."""
        return all(c.passed for _, _, c in self.rows())

    def rows(self) -> list[tuple[str, str, Check]]:
        """``(world, section, check)`` for every check, in order."""
        return [
            (world, section, check)
            for world, sections in self.worlds.items()
            for section, checks in sections.items()
            for check in checks
        ]

    def failures(self) -> list[tuple[str, str, Check]]:
        """The rows whose check did not hold."""
        return [row for row in self.rows() if not row[2].passed]

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "episodes": self.episodes,
            "split": self.split,
            "passed": self.passed,
            "seconds": round(self.seconds, 2),
            "worlds": {
                world: {
                    section: [asdict(c) for c in checks] for section, checks in sections.items()
                }
                for world, sections in self.worlds.items()
            },
        }
