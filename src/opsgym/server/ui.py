"""The workbench: the React app in ``web/``, built into this package, served at ``/ui/``.

``make run`` builds it (``npm ci``, ``vite build`` into ``opsgym/server/ui_dist``); a server
whose package holds no build answers ``/ui/`` with one line saying how to make it, and serves the
API as ever. The pages are static: everything they show they fetch from ``/api`` with the token
the user typed (kept in ``sessionStorage``), so ``/ui/`` itself needs no token and carries no
data. Every page is served with a strict Content-Security-Policy: scripts, styles, fonts, images
and connections from this origin only, no inline script, no ``eval``, no frames.

Paths under ``/ui/`` that name no file are the app's own routes (``/ui/episodes/ab12``): they
get ``index.html`` and the app's router draws the page, so every view has a deep link.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, PlainTextResponse, RedirectResponse, Response

BUILD = Path(__file__).with_name("ui_dist")
"""Where ``vite build`` writes the workbench (package data; not in git)."""

PREFIX = "/ui"

CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data: blob:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
        "form-action 'self'",
    )
)
"""The workbench's Content-Security-Policy: nothing from another origin, nothing inline."""

HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}

NOT_BUILT = (
    "the workbench is not built into this package: run `make run` (it needs Node >= 20.19), "
    "or `cd web && npm ci && npx vite build`; the API is served as ever under /api"
)


def built(build: Path = BUILD) -> bool:
    """Whether the package holds a workbench build."""
    return (build / "index.html").is_file()


def mount(app: FastAPI, build: Path = BUILD) -> None:
    """Serve the workbench at ``/ui/`` (and send ``/`` there)."""

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse(f"{PREFIX}/")

    @app.get(PREFIX, include_in_schema=False)
    def bare() -> RedirectResponse:
        return RedirectResponse(f"{PREFIX}/")

    @app.get(PREFIX + "/{path:path}", include_in_schema=False)
    def page(path: str) -> Response:
        if not built(build):
            return PlainTextResponse(NOT_BUILT, status_code=503, headers=HEADERS)
        root = build.resolve()
        wanted = (root / path).resolve()
        if path and wanted.is_file() and wanted.is_relative_to(root):
            immutable = wanted.parent.name == "assets"  # hashed names: never change
            cache = "public, max-age=31536000, immutable" if immutable else "no-cache"
            return FileResponse(wanted, headers={**HEADERS, "Cache-Control": cache})
        if path.startswith("assets/") or Path(path).suffix in (".js", ".css", ".map", ".png"):
            return PlainTextResponse(f"no such file: {path}", status_code=404, headers=HEADERS)
        return FileResponse(root / "index.html", headers={**HEADERS, "Cache-Control": "no-cache"})
