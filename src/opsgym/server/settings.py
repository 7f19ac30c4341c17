"""The server's settings, field by field: flags of ``opsgym serve`` or ``OPSGYM_*`` variables."""

from __future__ import annotations

import ipaddress
import re

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

LOOPBACK = {"localhost"}

HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]")
"""A bare host name or a bracketed IPv6 address, as a ``Host`` header names it before its port."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` only listens on this machine (127.0.0.0/8, ::1, ``localhost``)."""
    if host in LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class ServerSettings(BaseSettings):
    """How ``opsgym serve`` runs. Every field can be set as ``OPSGYM_<FIELD>`` (``OPSGYM_TOKEN``,
    ``OPSGYM_DB`` ...); a flag of ``opsgym serve`` wins over the variable.
    """

    model_config = SettingsConfigDict(env_prefix="OPSGYM_", extra="forbid", frozen=True)

    host: str = Field("127.0.0.1", description="Address to listen on; not loopback needs a token.")
    port: int = Field(8000, ge=0, le=65535, description="Port to listen on (0: any free port).")
    db: str | None = Field(
        None, description="The store: a SQLite path or SQLAlchemy URL (default: the user's file)."
    )
    token: str | None = Field(
        None,
        min_length=16,
        description="Bearer token every route but /health then requires (WebSocket handshake "
        "too). Required for any bind that is not loopback; at least 16 characters.",
    )
    agent_token: str | None = Field(
        None,
        min_length=16,
        description="A second bearer token that reaches only what an agent needs: the OpenEnv "
        "routes and /api/envs, /api/sessions. The store, evaluations and grading stay behind "
        "``token``: finished records hold the truth of their seeds, and an agent under evaluation "
        "could look its own episode up in them.",
    )
    default_env: str = Field("release", description="World of an OpenEnv session that names none.")
    max_sessions: int = Field(
        1024, ge=1, description="Open sessions (WebSocket and REST together) before a 503."
    )
    idle_timeout_s: float = Field(
        900.0, gt=0, description="A session untouched this long is closed (its episode dropped)."
    )
    reap_interval_s: float = Field(
        15.0, gt=0, description="How often idle sessions are looked for."
    )
    max_body_bytes: int = Field(
        1 << 20, ge=1024, description="Largest HTTP request body; larger is a 413."
    )
    max_message_bytes: int = Field(
        1 << 16, ge=1024, description="Largest WebSocket message; larger closes the connection."
    )
    ws_deflate: bool = Field(
        False,
        description="Offer permessage-deflate on WebSockets: less bandwidth for remote clients, "
        "but on loopback compressing every observation costs more time than it saves.",
    )
    malformed_limit: int = Field(
        20,
        ge=1,
        description="Malformed WebSocket messages a connection may send within "
        "``malformed_window_s`` before it is closed (code 1008).",
    )
    malformed_window_s: float = Field(10.0, gt=0, description="See ``malformed_limit``.")
    cors_origins: list[str] = Field(
        default_factory=list,
        description="Origins allowed by CORS (none: CORS stays closed). A browser page from one "
        "of them may also POST, PUT and DELETE; any other foreign ``Origin`` is refused.",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host names a request may name in its ``Host`` header when the server has no "
        "token, beside 127.0.0.1, localhost and [::1] (any port). Anything else is a 403: a web "
        "page whose name an attacker rebinds to 127.0.0.1 is same-origin to the browser, and "
        "its requests name the attacker's host (DNS rebinding).",
    )
    runs_dir: str = Field(
        "runs",
        description="The runs folder. Over HTTP a trained policy is named as a run in it "
        "(``ppo:runs:NAME``), never as a path: model files hold pickled code.",
    )
    max_eval_episodes: int = Field(
        2000,
        ge=1,
        description="Most episodes (policies x scenarios x seeds x trials) of an "
        "evaluation started over HTTP.",
    )
    training: bool = Field(
        True,
        description="Let the operator start training jobs over HTTP (/api/training), one at a "
        "time, each a child process of its own. Off: starting one is a 403; everything else "
        "under /api/training still answers.",
    )
    max_ppo_timesteps: int = Field(
        10_000_000, ge=1, description="Most environment steps of a PPO job started over HTTP."
    )
    max_llm_steps: int = Field(
        10_000, ge=1, description="Most optimizer steps of an SFT or GRPO job started over HTTP."
    )
    max_training_wall_s: float = Field(
        86_400.0,
        gt=0,
        description="Wall time after which a training job is stopped (as by its stop route: "
        "the trainer saves its model); a job may ask for less.",
    )
    training_stop_grace_s: float = Field(
        60.0,
        gt=0,
        description="After a stop's SIGINT, how long a trainer has to save its model before "
        "SIGTERM (and as long again before SIGKILL).",
    )
    allow_overrides: bool = Field(
        False,
        description="Let a session force hidden facts (``overrides``). For leak tests only: "
        "an agent that may force the truth knows it. ``opsgym serve`` never sets it.",
    )

    @field_validator("allowed_hosts")
    @classmethod
    def _bare_host_names(cls, hosts: list[str]) -> list[str]:
        for host in hosts:
            if not HOST_NAME.fullmatch(host):
                raise ValueError(
                    f"allowed host {host!r} must be a bare host name (no scheme, port or path), "
                    "e.g. 'ops.example.com' or '[fe80::1]'"
                )
        return [host.lower() for host in hosts]

    @model_validator(mode="after")
    def _token_off_loopback(self) -> ServerSettings:
        if not is_loopback(self.host) and not self.token:
            raise ValueError(
                f"host {self.host!r} is not loopback: set a token (--token or OPSGYM_TOKEN, "
                "16 characters or more) so that only its holders can reach the worlds"
            )
        if self.agent_token is not None and self.token is None:
            raise ValueError("agent_token needs token: without it every route is open anyway")
        if self.agent_token is not None and self.agent_token == self.token:
            raise ValueError("agent_token must differ from token")
        return self
