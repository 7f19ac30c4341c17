"""``openenv.yaml``, OpenEnv's manifest of this server, generated from the code.

The worlds come from their specs (name, Gym id, summary, step budget, scenarios, held-out
families), the port and the default world from :class:`ServerSettings`' defaults; nothing in the
file is written by hand. Regenerate it after changing a world::

    opsgym openenv-yaml              # writes ./openenv.yaml
    opsgym openenv-yaml --check      # exit 1 if the file is not what the code would write

``tests/server/test_manifest.py`` checks that the committed file is up to date.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterable

from opsgym.core.scenarios import SPLITS
from opsgym.core.spec import EnvSpec
from opsgym.server.settings import ServerSettings

WIDTH = 100
_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_+.-]*")

HEADER = """\
# OpenEnv manifest of the opsgym server, generated from the code by `opsgym openenv-yaml`
# (src/opsgym/server/manifest.py): do not edit it by hand. The first six keys are OpenEnv's own
# (those of `openenv init`'s template); the rest describe what the server offers and are ignored
# by OpenEnv's tools.
spec_version: 1
name: opsgym
type: space            # OpenEnv's only manifest type: one HTTP/WebSocket server
runtime: fastapi
# An ASGI app *factory* (settings from OPSGYM_* variables): uvicorn needs `--factory`. Start it
# with `opsgym serve` (below), which refuses a bind off loopback without a token; plain
# `uvicorn ... --host 0.0.0.0` does not know its bind, so give it OPSGYM_TOKEN yourself.
app: opsgym.server.app:create_app
port: {port}

description: >-
  Production-operations worlds where an agent's tools may mislead (late, cached, partial or
  wrong reports) and every episode is judged on what was true. One server, every world below.
start: opsgym serve --host 127.0.0.1 --port {port}   # off loopback: add --token (or OPSGYM_TOKEN)
install: pip install 'opsgym[server]'
protocol:
  websocket: /ws        # one isolated session per connection (OpenEnv's EnvClient)
  http: [/reset, /step, /state, /schema, /metadata, /health, /mcp]   # /reset, /step stateless
  action: {{tool: "<tool name>", args: {{}}}}     # one tool call; GET /schema has the JSON schemas
  reset: [env, scenario, seed, split, config, episode_id]   # all optional
  default_env: {default_env}  # the world of a reset that names none (--env, OPSGYM_DEFAULT_ENV)

# The seed's last digit picks its split (0-7 train, 8 dev, 9 test); `mixed` draws the family
# from the seed, among its split's families (held-out ones only on {held_out_splits}), and never
# shows it. A world's own routes are under /api/envs/<name>/ (`routes`).
environments:
"""


def render(specs: Iterable[EnvSpec]) -> str:
    """The manifest of a server offering the worlds ``specs`` (in that order)."""
    defaults = ServerSettings.model_fields
    out = [
        HEADER.format(
            port=defaults["port"].default,
            default_env=defaults["default_env"].default,
            held_out_splits=" and ".join(SPLITS[1:]),
        )
    ]
    for spec in specs:
        out.append(f"  {spec.name}:\n")
        out.append(f"    gym_id: {spec.gym_id}\n")
        out.append(f"    summary: {_scalar(spec.summary)}\n")
        out.append(f"    max_steps: {spec.max_steps}\n")
        out.append(_sequence("scenarios", [s.name for s in spec.scenarios]))
        out.append(_sequence("held_out", [s.name for s in spec.scenarios if s.held_out]))
        if spec.routes:
            routes = [f"{r.method} /api/envs/{spec.name}{r.path}" for r in spec.routes]
            out.append(_sequence("routes", routes))
    return "".join(out)


def _scalar(text: str) -> str:
    return text if _PLAIN.fullmatch(text) else json.dumps(text, ensure_ascii=False)


def _sequence(key: str, items: list[str]) -> str:
    """``key: [a, b, ...]`` in YAML's flow style, wrapped under the bracket at :data:`WIDTH`."""
    lead = f"    {key}: ["
    body = ", ".join(_scalar(item) for item in items)
    lines = textwrap.wrap(
        body,
        WIDTH - 1,
        initial_indent=lead,
        subsequent_indent=" " * len(lead),
        break_on_hyphens=False,
        break_long_words=False,
    )
    return ("\n".join(lines) if lines else lead) + "]\n"
