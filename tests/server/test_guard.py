"""Who may ask: the Host allowlist against DNS rebinding, the Origin rule against cross-site
writes, and the token carried as HTTP Basic (the form a URL's ``user:TOKEN@`` takes).
"""

from __future__ import annotations

import socket

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from opsgym.server import ServerSettings
from opsgym.server.guard import host_name
from tests.server.wire import reset

TOKEN = "s3cret-token-for-tests"


def test_a_rebound_host_is_refused_what_the_issue_reported(serve):
    live = serve()
    made = live.client.post(
        "/api/sessions", json={"env": "release"}, headers={"host": "evil.example"}
    )
    assert made.status_code == 403, made.text
    assert made.json()["detail"].startswith("host not allowed")
    read = live.client.get("/api/episodes", headers={"host": "attacker.test"})
    assert read.status_code == 403
    assert len(live.manager) == 0


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:{port}",
        "127.0.0.1.evil.example",
        "localhost.attacker.test:{port}",
        "127.0.0.2:{port}",  # loopback, but not a name the allowlist holds
        "127.0.0.1:http",
        "[::1]evil",
        "",
    ],
)
def test_every_host_but_this_machines_names_is_refused_without_a_token(serve, host):
    live = serve()
    port = live.url.rsplit(":", 1)[1]
    reply = live.client.get("/api/envs", headers={"host": host.format(port=port)})
    assert reply.status_code == 403, (host, reply.text)


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST", "[::1]:9"])
def test_this_machines_names_pass_with_any_port(serve, host):
    live = serve()
    port = live.url.rsplit(":", 1)[1]
    assert live.client.get("/api/envs", headers={"host": host.format(port=port)}).status_code == 200


def test_allowed_hosts_extend_the_list_and_health_stays_open_to_any(serve):
    live = serve(allowed_hosts=["ops.example.com"])
    assert live.client.get("/api/envs", headers={"host": "ops.example.com:8000"}).status_code == 200
    assert live.client.get("/api/envs", headers={"host": "evil.example"}).status_code == 403
    assert live.client.get("/health", headers={"host": "evil.example"}).status_code == 200


def test_a_request_without_a_host_is_refused(serve):
    live = serve()
    port = int(live.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(b"GET /api/episodes HTTP/1.0\r\n\r\n")
        head = raw.recv(4096)
    assert head.startswith(b"HTTP/1.1 403"), head[:60]


def test_a_websocket_handshake_naming_a_foreign_host_is_refused(serve):
    live = serve()
    port = int(live.url.rsplit(":", 1)[1])
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    with pytest.raises(InvalidStatus) as refused:  # the URI names the Host the page would send
        connect(f"ws://evil.example:{port}/ws", sock=raw, open_timeout=10)
    assert refused.value.response.status_code == 403
    assert len(live.manager) == 0


def test_with_a_token_the_token_is_the_guard_and_any_host_may_carry_it(serve):
    live = serve(token=TOKEN)
    reply = live.client.get("/api/envs", headers={"host": "ops.example.com"})
    assert reply.status_code == 200


@pytest.mark.parametrize("bad", ["http://ops.example/", "ops.example:80", "a b", "", "x@y"])
def test_allowed_hosts_must_be_bare_names(bad):
    with pytest.raises(ValueError, match="bare host name"):
        ServerSettings(allowed_hosts=[bad])
    assert ServerSettings(allowed_hosts=["Ops.Example", "[fe80::1]"]).allowed_hosts == [
        "ops.example",
        "[fe80::1]",
    ]


@pytest.mark.parametrize(
    ("header", "name"),
    [
        (b"127.0.0.1:8000", "127.0.0.1"),
        (b"LocalHost", "localhost"),
        (b"[::1]:8000", "[::1]"),
        (b"[::1]", "[::1]"),
        (b"[::1]x", ""),
        (b"a:b:c", ""),
        (b"", ""),
    ],
)
def test_a_host_header_is_read_as_its_name_without_the_port(header, name):
    assert host_name(header) == name


# -- Origin: a page elsewhere cannot write here -------------------------------------------------


def test_a_page_from_another_loopback_port_cannot_post(serve):
    live = serve()
    page = serve()  # a second server on another loopback port: the page's origin
    foreign = page.url  # what a browser sends as Origin for a page served from there
    made = live.client.post("/api/sessions", json={"env": "release"}, headers={"origin": foreign})
    assert made.status_code == 403, made.text
    assert made.json()["detail"].startswith("origin not allowed")
    assert len(live.manager) == 0
    for origin in ("null", "http://localhost", "https://" + live.url.split("//")[1]):
        reply = live.client.post(
            "/api/sessions", json={"env": "release"}, headers={"origin": origin}
        )
        assert reply.status_code == 403, origin
    # reading is the browser's CORS business (no CORS header is given), and a GET changes nothing
    assert live.client.get("/api/envs", headers={"origin": foreign}).status_code == 200


def test_the_servers_own_origin_and_cors_origins_may_post(serve):
    live = serve(cors_origins=["http://ui.example"])
    for origin in (live.url, "http://ui.example", "HTTP://UI.EXAMPLE/"):
        made = live.client.post(
            "/api/sessions", json={"env": "release"}, headers={"origin": origin}
        )
        assert made.status_code == 201, (origin, made.text)


def test_a_websocket_from_a_foreign_origin_is_refused_and_the_own_origin_passes(serve):
    live = serve()
    with pytest.raises(InvalidStatus) as refused:
        connect(live.ws_url, origin="http://127.0.0.1:1", open_timeout=10)
    assert refused.value.response.status_code == 403
    with connect(live.ws_url, origin=live.url, open_timeout=10, close_timeout=5) as sock:
        assert reset(sock, env="release", seed=1)["type"] == "observation"


def test_the_origin_rule_holds_with_a_token_too(serve):
    live = serve(token=TOKEN)
    made = live.client.post(
        "/api/sessions", json={"env": "release"}, headers={"origin": "http://evil.example"}
    )
    assert made.status_code == 403


# -- the token as HTTP Basic --------------------------------------------------------------------


def test_the_token_may_come_as_the_password_of_http_basic(serve):
    live = serve(token=TOKEN)
    _, address = live.url.split("//")
    with httpx.Client(base_url=f"http://opsgym:{TOKEN}@{address}", timeout=30) as url_auth:
        assert url_auth.get("/api/envs").status_code == 200
    with httpx.Client(base_url=live.url, auth=("anyone", TOKEN), timeout=30) as basic:
        assert basic.post("/api/sessions", json={"env": "release"}).status_code == 201
    for auth in (("opsgym", "wrong-token-of-16-chars"), (TOKEN, "")):
        with httpx.Client(base_url=live.url, auth=auth, timeout=30) as wrong:
            assert wrong.get("/api/envs").status_code == 401
    garbled = {"authorization": "Basic !!!not-base64"}
    assert httpx.get(live.url + "/api/envs", headers=garbled).status_code == 401


def test_a_websocket_url_carrying_the_token_opens(serve):
    live = serve(token=TOKEN)
    _, address = live.ws_url.split("//")
    with connect(f"ws://opsgym:{TOKEN}@{address}", open_timeout=10, close_timeout=5) as sock:
        assert reset(sock, env="release", seed=1)["type"] == "observation"
    with pytest.raises(InvalidStatus):
        connect(f"ws://opsgym:wrong-token-of-16-chars@{address}", open_timeout=10)
