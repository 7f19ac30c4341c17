"""The evaluation's statistics against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from opsgym.evaluation.metrics import mean, pass_at_k, pass_hat_k, rate

Z95 = 1.959963984540054


def wilson_by_hand(c: int, n: int) -> tuple[float, float]:
    p, z2 = c / n, Z95**2
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize("c,n", [(7, 10), (0, 20), (20, 20), (1, 3), (150, 200)])
def test_wilson_interval_matches_the_formula(c, n):
    est = rate(c, n)
    low, high = wilson_by_hand(c, n)
    assert est.value == pytest.approx(c / n)
    assert est.low == pytest.approx(low, abs=1e-9) and est.high == pytest.approx(high, abs=1e-9)


def test_wilson_seven_of_ten_is_the_textbook_interval():
    est = rate(7, 10)
    assert (round(est.low, 4), round(est.high, 4)) == (0.3968, 0.8922)


def test_wilson_interval_is_scipys_to_the_last_bit():
    from scipy.stats import binomtest

    for n in (1, 2, 3, 10, 12, 24, 199, 500, 1000):
        for c in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            ci = binomtest(c, n).proportion_ci(confidence_level=0.95, method="wilson")
            est = rate(c, n)
            assert (est.value, est.low, est.high) == (c / n, float(ci.low), float(ci.high))


def test_a_rate_of_nothing_is_nan_not_zero():
    est = rate(0, 0)
    assert math.isnan(est.value) and est.to_dict() == {"value": None, "low": None, "high": None}


def test_bootstrap_mean_is_seeded_and_brackets_the_mean():
    values = [0.0, 1.0, 3.0, 4.0, 10.0, -2.0, 5.0, 7.0]
    a, b = mean(values), mean(values)
    assert a == b
    assert a.value == pytest.approx(3.5)
    assert a.low < 3.5 < a.high
    # the percentile interval of a mean cannot leave the data's range
    assert min(values) <= a.low and a.high <= max(values)


def test_bootstrap_of_constant_data_is_a_point():
    assert mean([2.0, 2.0, 2.0]) == mean([2.0])
    assert mean([2.0]).low == mean([2.0]).high == 2.0


def test_pass_hat_k_is_the_tau_bench_estimator():
    # seed A: 2 of 4 trials pass -> C(2,2)/C(4,2) = 1/6; seed B: 4 of 4 -> 1
    assert pass_hat_k([(4, 2), (4, 4)], 2) == pytest.approx((1 / 6 + 1) / 2)
    assert pass_hat_k([(4, 2), (4, 4)], 1) == pytest.approx((0.5 + 1) / 2)
    # k = 3 with 3 of 5: C(3,3)/C(5,3) = 1/10
    assert pass_hat_k([(5, 3)], 3) == pytest.approx(0.1)


def test_pass_at_k_is_at_least_one_success():
    # 2 of 4: 1 - C(2,2)/C(4,2) = 5/6
    assert pass_at_k([(4, 2)], 2) == pytest.approx(5 / 6)
    assert pass_at_k([(4, 0)], 3) == 0.0


def test_deterministic_policy_has_pass_hat_k_equal_to_pass_one():
    trials = [(3, 3), (3, 0), (3, 3), (3, 3)]
    assert pass_hat_k(trials, 3) == pass_hat_k(trials, 1) == 0.75


def test_seeds_with_too_few_trials_are_left_out():
    assert math.isnan(pass_hat_k([(1, 1)], 2))
