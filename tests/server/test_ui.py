"""The workbench's serving: /ui/ from the package's build, deep links, the CSP, no token needed
for the static pages (and nothing else), and a clear line when there is no build.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from fastapi import FastAPI  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from opsgym.server import create_app, ui  # noqa: E402

LOCAL = "http://127.0.0.1"
TOKEN = "t0ken-of-16-chars-or-more"


@pytest.fixture
def build(tmp_path: Path) -> Path:
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text('<!doctype html><div id="root"></div>')
    (tmp_path / "assets" / "index-abc.js").write_text("console.log(1)")
    (tmp_path.parent / "secret.txt").write_text("not for the browser")
    return tmp_path


def _app(build: Path) -> TestClient:
    app = FastAPI()
    ui.mount(app, build)
    return TestClient(app, base_url=LOCAL)


def test_pages_and_assets_are_served_with_a_strict_csp(build: Path) -> None:
    client = _app(build)
    page = client.get("/ui/")
    assert page.status_code == 200 and 'id="root"' in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert "script-src 'self'" in page.headers["content-security-policy"]
    asset = client.get("/ui/assets/index-abc.js")
    assert asset.status_code == 200
    assert "immutable" in asset.headers["cache-control"]
    assert asset.headers["content-security-policy"] == ui.CSP


def test_app_routes_are_deep_links_to_index(build: Path) -> None:
    client = _app(build)
    for path in ("/ui/episodes/12", "/ui/evaluations/e%20one", "/ui/play?env=fleet"):
        answer = client.get(path)
        assert answer.status_code == 200 and 'id="root"' in answer.text, path
        assert answer.headers["cache-control"] == "no-cache"
    assert client.get("/", follow_redirects=False).headers["location"] == "/ui/"
    assert client.get("/ui", follow_redirects=False).headers["location"] == "/ui/"


def test_a_missing_asset_is_a_404_not_the_index(build: Path) -> None:
    client = _app(build)
    assert client.get("/ui/assets/gone.js").status_code == 404
    assert client.get("/ui/other.css").status_code == 404


def test_paths_outside_the_build_are_not_served(build: Path) -> None:
    client = _app(build)
    for path in ("/ui/../secret.txt", "/ui/%2e%2e/secret.txt", "/ui/assets/../../secret.txt"):
        assert "not for the browser" not in client.get(path).text, path


def test_without_a_build_ui_says_how_to_make_one(tmp_path: Path) -> None:
    answer = _app(tmp_path / "none").get("/ui/episodes")
    assert answer.status_code == 503
    assert "make run" in answer.text and "Node" in answer.text
    assert "\n" not in answer.text.strip()


def test_with_a_token_the_pages_need_none_but_the_api_does(tmp_path: Path) -> None:
    app = create_app(db=str(tmp_path / "s.sqlite"), token=TOKEN)
    with TestClient(app, base_url=LOCAL) as client:
        assert client.get("/ui/").status_code in (200, 503)  # 503: no build in this checkout
        assert client.get("/api/server").status_code == 401
        assert client.post("/ui/").status_code == 401  # only reading is public
        about = client.get("/api/server", headers={"Authorization": f"Bearer {TOKEN}"}).json()
    assert about["auth"] == "token" and about["agent_token"] is False
    assert about["workbench"] is ui.built()


def test_server_info_says_loopback_without_a_token(tmp_path: Path) -> None:
    app = create_app(db=str(tmp_path / "s.sqlite"), training=False)
    with TestClient(app, base_url=LOCAL) as client:
        about = client.get("/api/server").json()
    assert about["auth"] == "loopback"
    assert about["training"] is False
