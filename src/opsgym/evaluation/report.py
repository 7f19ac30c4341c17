"""What an evaluation writes and shows: the terminal table, ``results.json``,
``episodes.csv``, ``report.md`` and PNG charts (outcome rates with their Wilson intervals per
policy; mean reward by component).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from opsgym.evaluation.metrics import rate

if TYPE_CHECKING:
    from opsgym.evaluation.harness import EvaluationResult

PASS_K_NOTE = (
    "pass^k (τ-bench): per seed, C(c,k)/C(n,k) for c safe outcomes in n trials, averaged over "
    "seeds; pass@k: 1 - C(n-c,k)/C(n,k). A deterministic policy runs once: pass^k = pass^1."
)


SEED_LABELS = {
    "sealed": "sealed seeds (drawn at the start, stored)",
    "public": "PUBLIC seeds (the split's first: a policy can tabulate them)",
}


def seeds_label(config: Any) -> str:
    """What every table says about where the evaluation's seeds came from."""
    return SEED_LABELS[config.seeds]


def _pct(est: Mapping[str, Any]) -> str:
    if est["value"] is None:
        return "–"
    return f"{100 * est['value']:.1f}% [{100 * est['low']:.0f}–{100 * est['high']:.0f}]"


def _num(value: float | None, fmt: str = "{:.2f}") -> str:
    return (
        "–"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else fmt.format(value)
    )


PALETTE = {
    "safe": ("#2b6cb0", "#2c7a7b", "#2f855a", "#4c51bf"),
    "harmful": ("#c53030", "#9b2c2c", "#e53e3e"),
    "unfinished": ("#718096", "#a0aec0", "#4a5568", "#cbd5e0"),
}
"""One outcome palette everywhere, meaning before decoration: safe outcomes in calm blues and
greens, harmful ones in red, unfinished ones in grey (issue 21)."""

HATCH = {"safe": "", "harmful": "xx", "unfinished": ".."}
"""Each kind's pattern, so that colour is never the only sign of what an outcome means."""

MARK = {"safe": "safe", "harmful": "harm", "unfinished": "unfinished"}
"""Each kind's word in a legend."""


def outcome_styles(env: str, outcomes: Sequence[str]) -> dict[str, tuple[str, str, str]]:
    """``{outcome: (colour, hatch, legend label)}`` for ``env``'s outcomes, by what each means
    (:meth:`~opsgym.core.spec.EnvSpec.outcome_kind`).
    """
    from opsgym.core.registry import spec

    world, used = spec(env), {kind: 0 for kind in PALETTE}
    styles = {}
    for outcome in outcomes:
        kind = world.outcome_kind(outcome)
        colours = PALETTE[kind]
        styles[outcome] = (
            colours[used[kind] % len(colours)],
            HATCH[kind],
            f"{outcome} ({MARK[kind]})",
        )
        used[kind] += 1
    return styles


def outcome_names(summary: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every outcome named in ``summary``, in first-seen order."""
    names: list[str] = []
    for entry in summary:
        names.extend(o for o in entry["outcomes"] if o not in names)
    return names


def lies_table(result: EvaluationResult) -> Table | None:
    """Lies per policy and kind: told, trusted, reconciled (``None`` when none was told)."""
    rows = [
        (e["policy"], e["scenario"], kind, c)
        for e in result.summary
        for kind, c in ((e["lies"] or {}).get("by_kind") or {}).items()
    ]
    if not rows:
        return None
    t = Table("policy", "scenario", "lie", "told", "trusted", "reconciled", title="Lies")
    for policy, scenario, kind, c in rows:
        t.add_row(policy, scenario, kind, str(c["told"]), str(c["trusted"]), str(c["reconciled"]))
    return t


def table(result: EvaluationResult) -> Table:
    """Outcomes: one row per policy x scenario, one column per outcome (rate, 95% Wilson)."""
    names = outcome_names(result.summary)
    k = str(result.config.trials)
    t = Table(title=f"{result.name}: outcomes (95% Wilson intervals), {seeds_label(result.config)}")
    for col in ["policy", "scenario", "n", *names, f"pass^{k}"]:
        t.add_column(col, justify="left" if col in ("policy", "scenario") else "right")
    for e in result.summary:
        t.add_row(
            e["policy"],
            e["scenario"],
            str(e["n"]),
            *(_pct(e["outcomes"][o]) if o in e["outcomes"] else "–" for o in names),
            _num(e["pass_hat_k"][k], "{:.3f}"),
        )
    return t


def costs_table(result: EvaluationResult) -> Table:
    """Returns and costs: mean return (bootstrap interval), steps, tokens, downtime, lies."""
    t = Table(title=f"returns and costs (means per episode), {seeds_label(result.config)}")
    for col in [
        "policy",
        "scenario",
        "return [95% CI]",
        "steps",
        "tokens",
        "downtime $",
        "lies told",
        "trusted",
    ]:
        t.add_column(col, justify="left" if col in ("policy", "scenario") else "right")
    for e in result.summary:
        ret, lies = e["return"], e["lies"]
        t.add_row(
            e["policy"],
            e["scenario"],
            f"{ret['value']:+.2f} [{ret['low']:+.2f}, {ret['high']:+.2f}]",
            _num(e["steps"], "{:.1f}"),
            _num(e["tokens"], "{:.0f}"),
            _num(e["downtime_cost"], "{:,.0f}"),
            "–" if lies is None else f"{lies['told']:.2f}",
            "–" if lies is None else f"{lies['trusted']:.2f}",
        )
    return t


def write_outputs(result: EvaluationResult, rows: Sequence[Mapping[str, Any]], out: Path) -> None:
    """Write ``results.json``, ``episodes.csv``, ``report.md`` and the charts into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result.to_dict(), indent=1, sort_keys=True))
    _episodes_csv(rows, out / "episodes.csv")
    charts = _charts(result, out)
    (out / "report.md").write_text(_markdown(result, charts))


_CSV = (
    "policy",
    "scenario",
    "family",
    "seed",
    "trial",
    "split",
    "outcome",
    "accepted",
    "return",
    "steps",
    "tokens",
    "token_source",
    "downtime_cost",
    "record_hash",
)


def _episodes_csv(rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    comps = sorted({c for r in rows for c in r["rewards"]})
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([*_CSV, *(f"reward_{c}" for c in comps), "lies_told", "lies_trusted"])
        for r in sorted(rows, key=lambda r: (r["policy"], r["scenario"], r["seed"], r["trial"])):
            lies = r.get("lies") or {}
            w.writerow(
                [r.get(c) for c in _CSV]
                + [r["rewards"].get(c, 0.0) for c in comps]
                + [lies.get("told"), lies.get("trusted")]
            )


def _markdown(result: EvaluationResult, charts: list[str]) -> str:
    names = outcome_names(result.summary)
    k = str(result.config.trials)
    lines = [
        f"# Evaluation `{result.name}`",
        "",
        f"env `{result.config.env}`, scenarios {', '.join(result.config.scenarios)}, split "
        f"`{result.config.split}`, {result.config.episodes} {seeds_label(result.config)} x "
        f"{result.config.trials} trial(s). Rates carry 95% Wilson intervals; mean returns a "
        "95% bootstrap interval.",
        "",
        f"Sealed: root `{result.root}` over {result.stored} episodes. "
        f"`opsgym eval --verify {result.name}` replays every one and recomputes this root.",
        "",
        "| policy | scenario | n | " + " | ".join(names) + f" | pass^{k} | pass@{k} | return |",
        "|---|---|---:|" + "---:|" * len(names) + "---:|---:|---:|",
    ]
    for e in result.summary:
        ret = e["return"]
        lines.append(
            f"| {e['policy']} | {e['scenario']} | {e['n']} | "
            + " | ".join(_pct(e["outcomes"][o]) if o in e["outcomes"] else "–" for o in names)
            + f" | {_num(e['pass_hat_k'][k], '{:.3f}')} | {_num(e['pass_at_k'][k], '{:.3f}')}"
            + f" | {ret['value']:+.2f} [{ret['low']:+.2f}, {ret['high']:+.2f}] |"
        )
    lines += ["", PASS_K_NOTE, "", "## Reward by component (mean per episode)", ""]
    comps = sorted({c for e in result.summary for c in e["components"]})
    lines.append("| policy | scenario | " + " | ".join(comps) + " |")
    lines.append("|---|---|" + "---:|" * len(comps))
    for e in result.summary:
        lines.append(
            f"| {e['policy']} | {e['scenario']} | "
            + " | ".join(f"{e['components'].get(c, 0.0):+.3f}" for c in comps)
            + " |"
        )
    if any(e["lies"] for e in result.summary):
        lines += [
            "",
            "## Lies told and trusted",
            "",
            "A lie is a report that contradicted the truth; trusted: the agent acted on it "
            "before a call that could reconcile it (each world's manual states its rule).",
            "",
            "| policy | scenario | kind | told | trusted | reconciled | trusted share |",
            "|---|---|---|---:|---:|---:|---:|",
        ]
        for e in result.summary:
            for kind, c in (e["lies"] or {}).get("by_kind", {}).items():
                share = f"{c['trusted'] / c['told']:.0%}" if c["told"] else "–"
                lines.append(
                    f"| {e['policy']} | {e['scenario']} | {kind} | {c['told']} | "
                    f"{c['trusted']} | {c['reconciled']} | {share} |"
                )
    lines += ["", *(f"![{c}]({c})" for c in charts), ""]
    return "\n".join(lines)


def _bar_style(name: str, styles: Mapping[str, tuple[str, str, str]] | None) -> dict[str, Any]:
    if not styles or name not in styles:
        return {"label": name}
    colour, hatch, label = styles[name]
    return {"label": label, "color": colour, "hatch": hatch, "edgecolor": "white"}


def _charts(result: EvaluationResult, out: Path) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    summary, env = result.summary, result.config.env
    labels = [f"{e['policy']}\n{e['scenario']}" for e in summary]
    written = []

    def save(fig: Any, ax: Any, name: str, title: str, ylabel: str) -> None:
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
        ax.set_title(f"{title}: {env}")
        fig.tight_layout()
        fig.savefig(out / name, dpi=100)
        plt.close(fig)
        written.append(name)

    def grouped(
        series: dict[str, list[tuple[float, float, float] | None]],
        styles: Mapping[str, tuple[str, str, str]] | None = None,
    ) -> tuple[Any, Any]:
        """Bars per policy x scenario, one per series; each value ``(rate, low, high)``."""
        fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(labels) * max(1, len(series))), 4))
        width = 0.8 / max(1, len(series))
        for j, (name, values) in enumerate(series.items()):
            kept = [(i, v) for i, v in enumerate(values) if v is not None]
            ax.bar(
                [i + j * width for i, _ in kept],
                [v[0] for _, v in kept],
                width,
                yerr=[[v[0] - v[1] for _, v in kept], [v[2] - v[0] for _, v in kept]],
                capsize=2,
                **_bar_style(name, styles),
            )
        ax.set_xticks([i + width * (len(series) - 1) / 2 for i in range(len(labels))], labels)
        ax.set_ylim(0, 1)
        return fig, ax

    def interval(est: dict[str, Any] | None) -> tuple[float, float, float] | None:
        return None if not est or est["value"] is None else (est["value"], est["low"], est["high"])

    outcomes = {
        o: [interval(e["outcomes"].get(o)) for e in summary] for o in outcome_names(summary)
    }
    styles = outcome_styles(env, list(outcomes))
    save(*grouped(outcomes, styles), "outcomes.png", "Outcomes", "rate (95% Wilson interval)")

    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(labels)), 4))
    above, below = [0.0] * len(labels), [0.0] * len(labels)
    for c in sorted({c for e in summary for c in e["components"]}):
        vals = [e["components"].get(c, 0.0) for e in summary]
        base = [a if v >= 0 else b for v, a, b in zip(vals, above, below, strict=True)]
        ax.bar(range(len(labels)), vals, 0.6, bottom=base, label=c)
        for i, v in enumerate(vals):
            (above if v >= 0 else below)[i] += v
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xticks(range(len(labels)), labels)
    save(fig, ax, "components.png", "Reward by component", "mean reward per episode")

    kinds = sorted({k for e in summary for k in ((e["lies"] or {}).get("by_kind") or {})})
    if kinds:
        trusted = {
            k: [_trusted_share(((e["lies"] or {}).get("by_kind") or {}).get(k)) for e in summary]
            for k in kinds
        }
        save(*grouped(trusted), "lies.png", "Lies trusted, by kind", "share trusted (95% Wilson)")
    return written


def _trusted_share(counts: dict[str, int] | None) -> tuple[float, float, float] | None:
    if not counts or not counts["told"]:
        return None
    est = rate(counts["trusted"], counts["told"])
    return est.value, est.low, est.high
