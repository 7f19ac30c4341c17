"""The tool-calling face: what an LLM agent is shown, and how its replies become calls.

Every LLM face (the LLM agents, MCP, TRL, Inspect) meets an episode through this package, and
nothing here knows a particular world. One module per job:

* :mod:`~opsgym.adapters.toolcalls.render`: what the model is shown (the system text with the
  world's brief and the reply rules, the state as compact text, what a call returned);
* :mod:`~opsgym.adapters.toolcalls.parse`: how a reply becomes calls (native ``tool_calls``,
  ``<tool_call>`` blocks, a bare JSON call; nothing guessed);
* :mod:`~opsgym.adapters.toolcalls.turn`: one turn carried out on the episode (1 to
  :data:`MAX_CALLS` calls, the batch stopped at the first unexpected result, a malformed call
  or a reply without one recorded and rejected);
* :mod:`~opsgym.adapters.toolcalls.tokens`: the token estimate for an endpoint that reports no
  usage.

The public names of all four are importable from here (``from opsgym.adapters.toolcalls import
parse_reply``).
"""

from opsgym.adapters.toolcalls.parse import ParsedCall, ParsedReply, parse_reply, reply_text
from opsgym.adapters.toolcalls.render import (
    MAX_CALLS,
    REPLY_RULES,
    call_text,
    render_messages,
    render_observation,
    render_text,
    result_text,
    schemas,
    state_text,
    system_text,
)
from opsgym.adapters.toolcalls.tokens import CHARS_PER_TOKEN, count_tokens
from opsgym.adapters.toolcalls.turn import TEXT_EXCERPT, TurnOutcome, run_turn, unexpected

__all__ = [
    "CHARS_PER_TOKEN",
    "MAX_CALLS",
    "REPLY_RULES",
    "TEXT_EXCERPT",
    "ParsedCall",
    "ParsedReply",
    "TurnOutcome",
    "call_text",
    "count_tokens",
    "parse_reply",
    "render_messages",
    "render_observation",
    "render_text",
    "reply_text",
    "result_text",
    "run_turn",
    "schemas",
    "state_text",
    "system_text",
    "unexpected",
]
