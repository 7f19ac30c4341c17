"""One turn: a parsed reply carried out on the episode, every call recorded.

:func:`run_turn` carries a parsed reply out: the first :data:`MAX_CALLS` calls in order, through
``Episode.step`` (which validates the name against the episode's tools, the arguments against the
tool's model, and the preconditions); the batch stops at the first unexpected result
(:func:`unexpected`: rejected, a timeout or ambiguous report, a completion not accepted, the
episode over) and the calls after it are recorded as skipped. What cannot run is still stepped,
so that the world's rejection path records it and charges ``invalid``, but always in a form the
episode rejects: a reply without a call, or a call without a name, is the step
``(None, {"error": ..., "text": ...})`` (recorded as "no tool call", never as an unknown tool);
an unknown name (an injected ``delete_cluster``) is stepped under that raw name; arguments that
are not a JSON object are passed as the raw string. Calls past :data:`MAX_CALLS` are rejected
together in one such step. Nothing outside the episode's tools can run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opsgym.adapters.toolcalls.parse import ParsedReply
from opsgym.adapters.toolcalls.render import MAX_CALLS, call_text, inline, result_text

if TYPE_CHECKING:
    from opsgym.core.episode import StepResult
    from opsgym.core.seat import AgentView

TEXT_EXCERPT = 500
"""Characters of a reply's text kept in a rejected step's arguments (the transcript keeps all)."""

_TIMEOUT_STATUSES = frozenset({"timeout", "timed_out"})


def unexpected(result: StepResult) -> str | None:
    """Why a batch must stop after ``result``, or ``None`` to go on.

    Rejected; a report that says it is not ``accepted``, ``ambiguous`` or timed out (``status``
    ``timeout``, or ``timeout: true``); the episode over.
    """
    if result.rejected is not None:
        return "rejected"
    report = result.report
    if report.get("accepted") is False:
        return "not accepted"
    if report.get("ambiguous") is True:
        return "ambiguous"
    if report.get("status") in _TIMEOUT_STATUSES or report.get("timeout") is True:
        return "timed out"
    if result.done:
        return "the episode ended"
    return None


@dataclass
class TurnOutcome:
    """What one reply did to the episode.

    Attributes:
        calls: Per call found: its name and arguments, ``status`` (``ran``, ``rejected``,
            ``skipped`` or ``extra``), the ``step`` that recorded it, and ``reason`` (why it was
            rejected or skipped).
        results: ``[(call, result)]`` for the next prompt (see :func:`state_text`).
        stopped: Why the batch stopped early, or ``None``.
        steps: The episode steps this turn made.
    """

    calls: list[dict[str, Any]] = field(default_factory=list)
    results: list[tuple[str, str]] = field(default_factory=list)
    stopped: str | None = None
    steps: list[int] = field(default_factory=list)


def _excerpt(text: str) -> str:
    return text if len(text) <= TEXT_EXCERPT else text[: TEXT_EXCERPT - 1] + "…"


def run_turn(
    episode: AgentView,
    reply: ParsedReply,
    tokens: int | None,
    *,
    max_calls: int = MAX_CALLS,
    on_result: Any = None,
) -> TurnOutcome:
    """Carry ``reply`` out on ``episode`` (see the module docstring).

    Args:
        episode: A running episode.
        reply: The parsed reply.
        tokens: The turn's tokens, charged to its first step (``None``: the world's fixed cost).
        max_calls: Calls a turn may make.
        on_result: Called with each step's ``StepResult`` (a scripted planner's feedback).
    """
    out = TurnOutcome()
    charge = [tokens]

    def step(name: Any, args: Any) -> StepResult:
        cost, charge[0] = charge[0], (0 if tokens is not None else None)
        result = episode.step(name, args, tokens=cost)
        out.steps.append(episode.steps)
        if on_result is not None:
            on_result(result)
        return result

    if not reply.calls:
        text = reply.text or reply.reasoning
        reason = "the reply made no tool call" + ("" if text else " and was empty")
        step(None, {"error": "no tool call", "text": _excerpt(text)})
        out.calls.append(
            {"name": None, "status": "rejected", "step": episode.steps, "reason": reason}
        )
        out.results.append(("(no call)", json.dumps({"rejected": reason})))
        out.stopped = "no call"
        return out
    batch, extra = reply.calls[:max_calls], reply.calls[max_calls:]
    for i, call in enumerate(batch):
        entry: dict[str, Any] = {"name": call.name, "arguments": call.arguments}
        if out.stopped is not None or episode.done:
            entry.update(status="skipped", step=None, reason=out.stopped or "the episode ended")
            out.calls.append(entry)
            continue
        if call.error is not None and (
            not isinstance(call.name, str) or isinstance(call.arguments, dict)
        ):
            args = {"error": call.error, "text": _excerpt(inline(call.arguments))}
            result = step(None, args)
            said = json.dumps({"rejected": call.error})
        else:
            # A named call goes to the episode under its raw name: the episode runs only its
            # own tools, and refuses arguments that are not an object (malformed ones are
            # passed as their raw text).
            result = step(call.name, call.arguments)
            said = result_text(result)
        why = unexpected(result)
        entry.update(
            status="rejected" if result.rejected is not None else "ran",
            step=episode.steps,
            reason=call.error or result.rejected,
        )
        out.calls.append(entry)
        out.results.append((call_text(call.name, call.arguments), said))
        if why is not None and i + 1 < len(batch):
            out.stopped = f"call {i + 1} {why}"
    if extra:
        names = [c.name for c in extra]
        for call in extra:
            out.calls.append(
                {
                    "name": call.name,
                    "arguments": call.arguments,
                    "status": "extra",
                    "step": None,
                    "reason": f"more than {max_calls} calls in one reply",
                }
            )
        if not episode.done:
            reason = f"more than {max_calls} calls in one reply; dropped {len(extra)}"
            step(None, {"error": reason, "dropped": [inline(n) for n in names]})
            for entry in out.calls[-len(extra) :]:
                entry["step"] = episode.steps
            out.results.append(("(extra calls)", json.dumps({"rejected": reason})))
    return out
