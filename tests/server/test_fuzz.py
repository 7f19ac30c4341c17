"""Fuzzing every HTTP route from the server's own OpenAPI schema (Schemathesis, on Hypothesis):
whatever arrives, no route answers a server error.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, settings  # noqa: E402

from opsgym.server import ServerSettings, create_app  # noqa: E402
from tests.server.conftest import Live, running  # noqa: E402

EXAMPLES = 25
"""Generated requests per operation (on top of Schemathesis' coverage cases)."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """A live server; evaluations kept to one episode, so that a fuzzed one is cheap, and
    training off (a fuzzed config that passes would start a real trainer: the start route still
    validates the body and checks the config before it refuses)."""
    db = tmp_path_factory.mktemp("fuzz") / "store.sqlite"
    with running(db=str(db), **SETTINGS) as live:
        assert live.client.get("/openapi.json").json() == SCHEMA
        yield live


# The schema is the app's own, read at collection (what the live server serves at
# /openapi.json, as the fixture checks); every request goes to the live server.
SETTINGS = {"max_eval_episodes": 1, "max_sessions": 4096, "training": False}
SCHEMA = create_app(ServerSettings(**SETTINGS)).openapi()
schema = schemathesis.openapi.from_dict(SCHEMA)


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_no_route_answers_a_server_error(server, case):
    response = case.call(base_url=server.url, timeout=30)
    assert response.status_code < 500, (
        f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:500]}\n"
        f"{case.as_curl_command()}"
    )
