"""Softmax variants and the statistics of attention rows, against closed forms and high precision."""
import math
from decimal import Decimal, getcontext

import numpy as np
import pytest

from sdpa_core import (effective_support, entropy, entropy_from_logits, jacobian_norm, log_softmax,
                       max_weight, naive_softmax, softmax, softmax_jacobian)

getcontext().prec = 50


def _softmax_decimal(xs):
    ex = [Decimal(x).exp() for x in xs]
    s = sum(ex)
    return [float(e / s) for e in ex], [float((e / s).ln()) for e in ex]


def test_softmax_is_shift_invariant_and_sums_to_one():
    x = np.random.default_rng(0).standard_normal((4, 7)) * 10
    np.testing.assert_allclose(softmax(x), softmax(x + 123.0), rtol=1e-12)
    np.testing.assert_allclose(softmax(x).sum(-1), 1, rtol=1e-12)
    np.testing.assert_allclose(softmax(x, axis=0).sum(0), 1, rtol=1e-12)


@pytest.mark.parametrize("xs", [[1000.0, 0.0, -3.5], [0.1, 0.2, 0.3, 0.4], [-800.0, -801.0, -850.0], [50.0, 49.0]])
def test_softmax_and_log_softmax_match_50_digit_decimal(xs):
    """Stable softmax and log_softmax agree with 50-digit decimal arithmetic to 1e-14 (relative)."""
    p_ref, logp_ref = _softmax_decimal(xs)
    np.testing.assert_allclose(softmax(np.array(xs)), p_ref, rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(log_softmax(np.array(xs)), logp_ref, rtol=1e-14)


def test_naive_softmax_overflows_on_purpose():
    """The textbook formula returns NaN for [1000, 0]; the stable one returns [1, 0]."""
    assert np.isnan(naive_softmax(np.array([1000.0, 0.0]))[0])
    np.testing.assert_allclose(softmax(np.array([1000.0, 0.0])), [1.0, 0.0])
    assert np.isnan(naive_softmax(np.array([12.0, 0.0], np.float16))).any()  # exp(12) > 65504
    np.testing.assert_allclose(naive_softmax(np.array([1.0, 2.0])), softmax(np.array([1.0, 2.0])))


def test_all_neg_inf_row_gives_zeros_and_log_neg_inf():
    x = np.array([[-np.inf, -np.inf], [0.0, -np.inf]])
    np.testing.assert_array_equal(softmax(x), [[0, 0], [1, 0]])
    np.testing.assert_array_equal(log_softmax(x), [[-np.inf, -np.inf], [0, -np.inf]])


def test_entropy_closed_forms():
    """Uniform over S gives log S, one-hot gives 0; effective support S and 1; max weight 1/S and 1."""
    for S in (1, 2, 7, 64):
        u = np.full(S, 1 / S)
        np.testing.assert_allclose(entropy(u), math.log(S), rtol=1e-12)
        np.testing.assert_allclose(effective_support(u), S, rtol=1e-12)
        np.testing.assert_allclose(max_weight(u), 1 / S)
        onehot = np.eye(S)[0]
        assert entropy(onehot) == 0 and effective_support(onehot) == 1 and max_weight(onehot) == 1


def test_entropy_from_logits_matches_high_precision_even_when_saturated():
    """From logits the entropy stays exact where weights underflow (log_softmax, not log(softmax))."""
    xs = [0.0, -30.0, -60.0]
    p_ref, logp_ref = _softmax_decimal(xs)
    h_ref = -sum(p * lp for p, lp in zip(p_ref, logp_ref))
    np.testing.assert_allclose(entropy_from_logits(np.array(xs)), h_ref, rtol=1e-10)
    # from probabilities, p0 = 1 - 9e-14 is rounded before its log is taken: only ~5 digits survive
    np.testing.assert_allclose(entropy(softmax(np.array(xs))), h_ref, rtol=1e-4)


def test_jacobian_matches_finite_differences():
    z = np.random.default_rng(1).standard_normal(5)
    eps = 1e-6
    fd = np.stack([(softmax(z + eps * e) - softmax(z - eps * e)) / (2 * eps) for e in np.eye(5)], axis=1)
    np.testing.assert_allclose(softmax_jacobian(softmax(z)), fd, atol=1e-9)


def test_jacobian_norm_is_the_jacobian_frobenius_norm():
    """The O(S) closed form equals ||diag(p) - p p^T||_F; uniform gives sqrt(S-1)/S, one-hot 0."""
    p = softmax(np.random.default_rng(2).standard_normal((3, 6)) * 3)
    np.testing.assert_allclose(jacobian_norm(p), np.linalg.norm(softmax_jacobian(p), axis=(-2, -1)), rtol=1e-12)
    np.testing.assert_allclose(jacobian_norm(np.full(16, 1 / 16)), math.sqrt(15) / 16, rtol=1e-12)
    assert jacobian_norm(np.eye(4)[2]) == 0


@pytest.mark.parametrize("fn", [entropy, effective_support, max_weight, softmax_jacobian, jacobian_norm])
@pytest.mark.parametrize("bad,exc,match", [
    (np.array([0.5, np.nan]), ValueError, "NaN or infinity"),
    (np.array([0.5, np.inf]), ValueError, "NaN or infinity"),
    (np.array([1.5, -0.5]), ValueError, "negative"),
    (np.array([1, 0]), TypeError, "floating-point"),
])
def test_statistics_reject_bad_input(fn, bad, exc, match):
    with pytest.raises(exc, match=match):
        fn(bad)


def test_axis_out_of_range_is_a_clear_error():
    with pytest.raises(ValueError, match="axis=3 is out of range"):
        softmax(np.ones((2, 2)), axis=3)
