"""``POST /api/evaluations/{name}/verify`` on a real server: the stored replay check of ``opsgym
eval --verify``, run in the background; the evaluation then shows what it found.
"""

from __future__ import annotations

import sqlite3

from opsgym.evaluation.harness import evaluate
from opsgym.evaluation.verify import EXIT_MATCH, EXIT_VERDICT, verify
from tests.server.wire import wait_until

TOKEN = "operator-token-0123456789"
AGENT = "agent-token-0123456789ab"


def verified(live, name: str) -> dict:
    """Start a verification of ``name``, wait for it to end, and return it."""
    reply = live.client.post(f"/api/evaluations/{name}/verify")
    assert reply.status_code == 202, reply.text
    assert reply.json()["status"] in ("queued", "running", "done")

    def ended():
        check = live.client.get(f"/api/evaluations/{name}").json()["verify"]
        return check if check["status"] in ("done", "failed") else None

    return wait_until(ended, "the verification", 60)


def test_a_verification_replays_every_stored_episode_and_shows_on_the_evaluation(serve, tmp_path):
    db = str(tmp_path / "store.sqlite")
    published = evaluate("release", ["oracle", "naive"], episodes=3, db=db, name="checked")
    live = serve(db=db)
    assert live.client.get("/api/evaluations/checked").json()["verify"] is None

    check = verified(live, "checked")
    assert check["status"] == "done" and check["error"] is None
    root = verify("checked", db).root
    assert root is not None and len(root) == 64
    assert check["result"] == {
        "total": 6,
        "matched": 6,
        "exit_code": EXIT_MATCH,
        "problems": [],
        "root": root,  # the root of the episodes as stored, and as sealed at the end
        "sealed_root": root,
    }
    assert published.root == root  # what opsgym eval printed and results.json holds
    listed = {e["name"]: e for e in live.client.get("/api/evaluations").json()}
    assert listed["checked"]["verify"] == check

    # A stored return edited behind the store's back: the check finds it, as the CLI does.
    with sqlite3.connect(db) as edit:
        first = edit.execute("SELECT min(id) FROM episodes").fetchone()[0]
        edit.execute('UPDATE episodes SET "return" = "return" + 1 WHERE id = ?', (first,))
    check = verified(live, "checked")
    found = verify("checked", db)
    assert check["result"]["exit_code"] == found.exit_code == EXIT_VERDICT
    assert check["result"]["matched"] == 5 and len(check["result"]["problems"]) == 1
    problem = check["result"]["problems"][0]
    assert (problem["episode"], problem["kind"], problem["field"]) == (first, "verdict", "return")


def test_a_verification_needs_an_evaluation_and_the_operator(serve, tmp_path):
    db = str(tmp_path / "store.sqlite")
    evaluate("release", ["oracle"], episodes=1, db=db, name="one")
    live = serve(db=db, token=TOKEN, agent_token=AGENT)
    missing = live.client.post("/api/evaluations/nope/verify")
    assert missing.status_code == 404 and "nope" in missing.text
    agent = live.client.post(
        "/api/evaluations/one/verify", headers={"authorization": f"Bearer {AGENT}"}
    )
    assert agent.status_code == 403
    assert verified(live, "one")["result"]["matched"] == 1
