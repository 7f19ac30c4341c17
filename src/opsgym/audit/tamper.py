"""The store tampers (issue 20): a hostile editor of a finished evaluation's SQLite file, and
``opsgym eval --verify``, which must name every edit.

Each :class:`Tamper` is SQL an editor could run on the file: a figure stored beside a record
edited, policy labels swapped, an episode deleted or added, calls appended after the end, the
stored aggregates or the seal rewritten. :func:`tamper_checks` plays a small evaluation of a
world into a temporary store, applies each tamper to a copy, and checks that verify exits
non-zero with a difference naming what changed. The test suite applies the same list
(``tests/test_verify_tamper.py``).
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from opsgym.audit.report import Check
from opsgym.core.spec import EnvSpec

FIRST = "(SELECT MIN(id) FROM episodes)"
"""The first stored episode."""

OTHER = "(SELECT MIN(id) FROM episodes WHERE policy = 'random')"
"""The first episode of the second policy (``random``) of the audit's evaluation."""

_COLUMNS = (
    "evaluation_id, env, scenario, family, seed, split, policy, outcome, accepted, "
    'verdict, "return", rewards, steps, tokens, token_source, downtime_cost, lies, '
    "reward_timing, header, root, record_hash, created_at, transcript"
)


@dataclass(frozen=True)
class Tamper:
    """An edit of the store, and what verify's differences must say about it.

    Attributes:
        name: Short id.
        statements: SQL run in order on the evaluation's SQLite file (each must change a row).
        kind: The kind of difference verify must report (``verdict``, ``seal`` ...).
        names: Text one of those differences must hold (the field, or the episode's fate).
    """

    name: str
    statements: tuple[str, ...]
    kind: str
    names: str


def _figure(column: str, expression: str) -> Tamper:
    sql = f"UPDATE episodes SET {column} = {expression} WHERE id = {FIRST}"
    return Tamper(column, (sql,), "verdict", column)


TAMPERS: tuple[Tamper, ...] = (
    _figure("lies", "json_set(lies, '$.told', 7)"),
    _figure("downtime_cost", "1234.5"),
    _figure("tokens", "tokens + 500"),
    _figure("steps", "steps - 1"),
    _figure("family", "'forged'"),
    _figure("split", "'dev'"),
    Tamper(
        "policy_swap",
        (
            "UPDATE episodes SET policy = 'swap' WHERE policy = 'oracle'",
            "UPDATE episodes SET policy = 'oracle' WHERE policy = 'random'",
            "UPDATE episodes SET policy = 'random' WHERE policy = 'swap'",
        ),
        "seal",
        "relabelled",
    ),
    Tamper("trial", (f"UPDATE episodes SET trial = 1 WHERE id = {FIRST}",), "seal", "relabelled"),
    Tamper(
        "deleted_episode",
        (
            f"DELETE FROM events WHERE episode_id = {OTHER}",
            f"DELETE FROM episodes WHERE id = {OTHER}",
        ),
        "seal",
        "missing episode",
    ),
    Tamper(
        "extra_episode",
        (
            f"INSERT INTO episodes (id, trial, {_COLUMNS}) SELECT 1000, 1, {_COLUMNS} "
            f"FROM episodes WHERE id = {OTHER}",
            "INSERT INTO events (episode_id, steps, truth_hidden) SELECT 1000, steps, "
            f"truth_hidden FROM events WHERE episode_id = {OTHER}",
        ),
        "seal",
        "extra episode",
    ),
    Tamper(
        "aggregates",
        (
            "UPDATE evaluations SET aggregates = json_set(aggregates, "
            "'$.summary[0].pass_hat_k.1', 0.999)",
        ),
        "aggregates",
        "pass_hat_k",
    ),
    Tamper(
        "call_after_end",
        (
            "UPDATE events SET steps = json_insert(steps, '$[#]', json_set(json_extract(steps, "
            "'$[#-1]'), '$.step', json_extract(steps, '$[#-1].step') + 1)), truth_hidden = "
            "json_insert(truth_hidden, '$[#]', json_extract(truth_hidden, '$[#-1]')) "
            f"WHERE episode_id = {FIRST}",
        ),
        "event",
        "events",
    ),
    Tamper(
        "call_tokens",
        (
            "UPDATE events SET steps = json_set(steps, '$[0].tokens', 900) "
            f"WHERE episode_id = {FIRST}",
        ),
        "event",
        "tokens",
    ),
    Tamper(
        "root",
        (  # another first digit (a constant one would leave 1 root in 16 unchanged)
            "UPDATE evaluations SET root = CASE WHEN substr(root, 1, 1) = 'f' THEN '0' "
            "ELSE 'f' END || substr(root, 2)",
        ),
        "seal",
        "does not hash to the stored root",
    ),
    Tamper(
        "sealed_seeds",
        ("UPDATE evaluations SET config = json_set(config, '$.drawn[0]', 9)",),
        "seal",
        "does not hash to the stored root",
    ),
)
"""Every tamper the audit and the tests apply."""


def apply(db: Path, tamper: Tamper) -> None:
    """Run ``tamper``'s statements on SQLite file ``db``.

    Raises:
        ValueError: a statement changed no row (the tamper did not apply to this store).
    """
    with sqlite3.connect(db) as conn:
        for sql in tamper.statements:
            if conn.execute(sql).rowcount < 1:
                raise ValueError(f"tamper {tamper.name!r} changed no row: {sql}")


def named(problems: list[dict[str, object]], tamper: Tamper) -> bool:
    """Whether one of verify's ``problems`` is of the tamper's kind and names what it edited."""
    return any(
        p["kind"] == tamper.kind
        and any(tamper.names in str(p.get(k, "")) for k in ("field", "message"))
        for p in problems
    )


def tamper_checks(spec: EnvSpec, episodes: int = 3) -> list[Check]:
    """One row per tamper: a small evaluation of ``spec`` (its oracle and the random policy on
    ``episodes`` sealed seeds) edited and verified. A row says only what cannot depend on the
    seeds drawn (the exit code), so the audit's report is the same from run to run.
    """
    from opsgym.evaluation import evaluate
    from opsgym.evaluation.verify import verify

    rows = []
    with tempfile.TemporaryDirectory(prefix="opsgym-audit-") as folder:
        honest = Path(folder) / "honest.sqlite"
        evaluate(spec.name, ["oracle", "random"], episodes=episodes, db=honest, name="audit")
        clean = verify("audit", honest)
        rows.append(
            Check(
                "untampered",
                f"{clean.matched}/{clean.total} match, exit {clean.exit_code}",
                "exit 0",
                clean.exit_code == 0,
                {"exit": clean.exit_code},
            )
        )
        for tamper in TAMPERS:
            copy = Path(folder) / f"{tamper.name}.sqlite"
            for part in Path(folder).glob("honest.sqlite*"):  # the file and any WAL beside it
                shutil.copy(part, copy.with_name(part.name.replace("honest", tamper.name)))
            apply(copy, tamper)
            found = verify("audit", copy)
            caught = found.exit_code != 0 and named(found.problems, tamper)
            rows.append(
                Check(
                    tamper.name,
                    f"exit {found.exit_code}"
                    + ("" if caught else f"; no {tamper.kind} difference naming it"),
                    f"exit != 0, a {tamper.kind} difference naming {tamper.names!r}",
                    caught,
                    {"exit": found.exit_code},
                )
            )
    return rows
