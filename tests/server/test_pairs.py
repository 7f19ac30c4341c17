"""Paired comparison of two policies on the same seeds (``GET /api/evaluations/{name}/pairs``,
``versus=`` another evaluation) on a real server, held to a hand count of a small
stored evaluation and to an exact McNemar p-value computed here from the binomial law.
"""

from __future__ import annotations

from collections.abc import Iterator
from math import comb

import pytest

from opsgym.core.registry import spec
from opsgym.evaluation.harness import evaluate
from opsgym.evaluation.paired import mcnemar
from tests.server.conftest import Live, running

EPISODES = 8


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """A server over a store holding ``both`` (oracle and naive on 8 release test seeds) and
    ``oracle-only`` and ``naive-only`` (each alone on the same seeds).
    """
    db = str(tmp_path_factory.mktemp("pairs") / "store.sqlite")
    evaluate("release", ["oracle", "naive"], episodes=EPISODES, db=db, name="both")
    # Sealed seeds are drawn per evaluation: the others play those of ``both``.
    same = {"episodes": EPISODES, "db": db, "seeds_from": "both"}
    evaluate("release", ["oracle"], name="oracle-only", **same)
    evaluate("release", ["naive"], name="naive-only", **same)
    with running(db=db) as live:
        yield live


def exact_p(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar by hand: twice the smaller tail of Binomial(n, 1/2), at most 1."""
    n, k = only_a + only_b, min(only_a, only_b)
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(comb(n, i) for i in range(k + 1)) / 2**n)


def hand_count(rows: list[dict], a: str, b: str, met) -> dict[str, int]:
    """The paired table counted by hand from the stored rows."""
    by = {(r["policy"], r["scenario"], r["seed"], r["trial"]): r for r in rows}
    counts = {"both": 0, "only_a": 0, "only_b": 0, "neither": 0}
    for (policy, scenario, seed, trial), x in by.items():
        if policy != a or (b, scenario, seed, trial) not in by:
            continue
        y = by[(b, scenario, seed, trial)]
        if met(x) and met(y):
            counts["both"] += 1
        elif met(x):
            counts["only_a"] += 1
        elif met(y):
            counts["only_b"] += 1
        else:
            counts["neither"] += 1
    return counts


def test_the_exact_mcnemar_p_value_is_the_binomial_tail():
    assert mcnemar(6, 0) == pytest.approx(2 / 64)  # 2 * (1/2)^6
    assert mcnemar(5, 1) == pytest.approx(2 * 7 / 64)  # 2 * (C(6,0) + C(6,1)) / 2^6
    assert mcnemar(3, 3) == 1.0 and mcnemar(0, 0) == 1.0
    for a, b in ((1, 9), (4, 7), (12, 2), (0, 1)):
        assert mcnemar(a, b) == pytest.approx(exact_p(a, b)), (a, b)


@pytest.mark.parametrize("outcome", ["accepted", "safe", "deployed_verified", "unsafe"])
def test_two_policies_of_one_evaluation_match_a_hand_count(server, outcome):
    rows = server.client.get("/api/episodes", params={"evaluation": "both"}).json()
    assert len(rows) == 2 * EPISODES
    safe = spec("release").safe_outcomes
    met = {
        "accepted": lambda r: r["accepted"] is True,
        "safe": lambda r: r["outcome"] in safe,
    }.get(outcome, lambda r: r["outcome"] == outcome)
    expected = hand_count(rows, "oracle", "naive", met)

    params = {"a": "oracle", "b": "naive", "outcome": outcome}
    reply = server.client.get("/api/evaluations/both/pairs", params=params)
    assert reply.status_code == 200, reply.text
    shown = reply.json()
    assert shown["counts"] == expected
    assert shown["pairs"] == sum(expected.values()) == EPISODES
    assert shown["unpaired"] == {"a": 0, "b": 0}
    assert shown["p_value"] == pytest.approx(exact_p(expected["only_a"], expected["only_b"]))
    assert shown["a"] == {"evaluation": "both", "policy": "oracle"}
    assert shown["criterion"] == outcome

    ids = {r["id"]: r for r in rows}
    for pair in shown["rows"]:
        a, b = ids[pair["a"]["id"]], ids[pair["b"]["id"]]
        assert (a["policy"], b["policy"]) == ("oracle", "naive")
        assert (a["seed"], a["scenario"], a["trial"]) == (b["seed"], b["scenario"], b["trial"])
        assert (pair["seed"], pair["a"]["met"], pair["b"]["met"]) == (a["seed"], met(a), met(b))
        linked = server.client.get(f"/api/episodes/{pair['b']['id']}").json()["record"]
        assert linked["hash"] == b["record_hash"]
    assert sum(p["cell"] == "only_a" for p in shown["rows"]) == expected["only_a"]


def test_the_oracle_beats_naive_on_acceptance(server):
    """The small evaluation's figures, worked by hand from its 8 seeds: every naive episode the
    judge accepted the oracle's was accepted too, so the discordant pairs all favour the oracle.
    """
    shown = server.client.get(
        "/api/evaluations/both/pairs", params={"a": "oracle", "b": "naive", "outcome": "accepted"}
    ).json()
    counts = shown["counts"]
    assert counts["only_b"] == counts["neither"] == 0
    assert counts["only_a"] > 0 and counts["both"] + counts["only_a"] == EPISODES
    assert shown["p_value"] == pytest.approx(2 * 0.5 ** counts["only_a"])


def test_two_evaluations_pair_on_their_shared_seeds(server):
    one = server.client.get(
        "/api/evaluations/both/pairs", params={"a": "naive", "b": "oracle", "outcome": "safe"}
    ).json()
    two = server.client.get(
        "/api/evaluations/naive-only/pairs", params={"versus": "oracle-only", "outcome": "safe"}
    ).json()
    assert two["counts"] == one["counts"] and two["p_value"] == one["p_value"]
    assert two["a"] == {"evaluation": "naive-only", "policy": "naive"}
    assert two["b"] == {"evaluation": "oracle-only", "policy": "oracle"}
    across = server.client.get(
        "/api/evaluations/both/pairs", params={"a": "naive", "versus": "oracle-only"}
    ).json()
    assert across["counts"] == one["counts"]


@pytest.mark.parametrize(
    ("url", "params", "status", "says"),
    [
        ("/api/evaluations/both/pairs", {"a": "oracle", "b": "ppo"}, 404, "holds no episodes"),
        ("/api/evaluations/nope/pairs", {"a": "oracle", "b": "naive"}, 404, "nope"),
        ("/api/evaluations/both/pairs", {"a": "oracle"}, 422, "b"),
        ("/api/evaluations/both/pairs", {"a": "oracle", "b": "naive", "outcome": "won"}, 422,
         "deployed_verified"),
        ("/api/evaluations/both/pairs", {"versus": "oracle-only"}, 422, "several policies"),
        ("/api/evaluations/both/pairs", {"a": "oracle", "b": "oracle"}, 422, "two policies"),
    ],
)  # fmt: skip
def test_a_comparison_that_cannot_be_made_says_why(server, url, params, status, says):
    reply = server.client.get(url, params=params)
    assert reply.status_code == status, reply.text
    assert says in reply.text
