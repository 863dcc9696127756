"""The hand-written attention backward against finite differences, and the exact dot-product
samplers (``_qz_dots``, ``sample_gram``) against closed-form moments and direct draws."""
import math

import numpy as np
import pytest

from sdpa_core import attention, attention_backward, sample_gram
from sdpa_core.draws import _qz_dots

# ---- attention_backward: central differences in float64 ------------------------------------------

H = 1e-5          # central-difference step: truncation ~H^2 and rounding ~1e-16 / H both stay near 1e-10


def numeric_grads(q, k, v, g, **kw):
    """d/dx of ``sum(attention(q, k, v, **kw)[0] * g)`` for x = q, k, v, one entry at a time."""
    def loss(q, k, v):
        return float(np.sum(attention(q, k, v, **kw)[0] * g))

    grads = []
    for which in range(3):
        args = [q.copy(), k.copy(), v.copy()]
        x = args[which]
        grad = np.empty_like(x)
        for i in np.ndindex(x.shape):
            x0 = x[i]
            x[i] = x0 + H
            up = loss(*args)
            x[i] = x0 - H
            down = loss(*args)
            x[i] = x0
            grad[i] = (up - down) / (2 * H)
        grads.append(grad)
    return grads


CASES = {
    # name: (q shape, k shape, v shape, keyword arguments built from an rng)
    "plain": ((3, 4), (5, 4), (5, 2), lambda rng: {}),
    "batch+scale": ((2, 3, 4, 3), (2, 3, 5, 3), (2, 3, 5, 4), lambda rng: {"scale": 0.7}),
    "batch broadcast": ((2, 3, 4, 3), (3, 5, 3), (1, 3, 5, 2), lambda rng: {"scale": 1.3}),
    "causal": ((2, 5, 3), (2, 5, 3), (2, 5, 2), lambda rng: {"causal": True}),
    "causal L<S": ((2, 3, 3), (2, 6, 3), (2, 6, 2), lambda rng: {"causal": True, "scale": 0.4}),
    "bool mask": ((2, 4, 3), (2, 6, 3), (2, 6, 3),
                  lambda rng: {"mask": _bool_mask(rng, (2, 4, 6))}),
    "bool mask+causal": ((2, 5, 3), (2, 5, 3), (2, 5, 2),
                         lambda rng: {"mask": _bool_mask(rng, (5, 5)), "causal": True, "scale": 0.9}),
    "float mask": ((2, 4, 3), (2, 5, 3), (2, 5, 2),
                   lambda rng: {"mask": np.where(rng.random((4, 5)) < 0.3, -np.inf, rng.normal(size=(4, 5)))}),
}


def _bool_mask(rng, shape):
    mask = rng.random(shape) < 0.6
    mask[..., 0, :] = False      # a query that may attend to no key: zero output, zero gradient
    return mask


@pytest.mark.parametrize("name", list(CASES))
def test_attention_backward_matches_central_differences(name):
    """attention_backward's dq, dk, dv equal central finite differences of sum(out * grad_out) to
    rtol 1e-6, with batch dims (also broadcast ones), a given scale, causal=True and masks."""
    q_shape, k_shape, v_shape, make_kw = CASES[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    q, k, v = (rng.normal(size=s) for s in (q_shape, k_shape, v_shape))
    kw = make_kw(rng)
    out, _ = attention(q, k, v, **kw)
    g = rng.normal(size=out.shape)
    analytic = attention_backward(q, k, v, g, **kw)
    numeric = numeric_grads(q, k, v, g, **kw)
    for label, a, n, x in zip("qkv", analytic, numeric, (q, k, v)):
        assert a.shape == x.shape, label
        assert a.dtype == np.float64, label
        np.testing.assert_allclose(a, n, rtol=1e-6, atol=1e-9, err_msg=f"d{label} ({name})")
    if "mask" in kw and kw["mask"].dtype == bool:
        assert np.all(analytic[0][..., 0, :] == 0), "a fully masked query gets no gradient"


# ---- the exact samplers: moments against closed forms and direct draws ----------------------------

N = 4            # vectors per draw
M = 20_000       # draws
SE_LIMIT = 5     # allowed distance, in standard errors


def gram_features(g, d):
    """Per-draw statistics of Gram matrices g (..., m, p, p) of p vectors in d dims, and their exact
    expectations for i.i.d. N(0, 1) entries. Each statistic is averaged over positions within a draw,
    so the m draws are independent samples of it."""
    p = g.shape[-1]
    diag = np.diagonal(g, axis1=-2, axis2=-1)                    # |q_i|^2 ~ chi^2(d)
    rows, cols = np.tril_indices(p, -1)
    off = g[..., rows, cols]                                     # q_i . q_j, i != j
    feats = {
        "E diag = d": (diag.mean(-1), d),
        "Var diag = 2d": (((diag - d) ** 2).mean(-1), 2 * d),
        "E off = 0": (off.mean(-1), 0.0),
        "Var off = d": ((off ** 2).mean(-1), d),
        "E |q_i|^2 (q_i.q_j)^2 = d(d+2)": ((diag[..., rows] * off ** 2).mean(-1), d * (d + 2)),
        "E |q_i|^2 |q_j|^2 = d^2": ((diag[..., rows] * diag[..., cols]).mean(-1), d * d),
    }
    if p >= 3:   # E (q_i.q_j)(q_j.q_k)(q_k.q_i) = E (q_i.q_j)^2 = d: ties the entries of one draw together
        i, j, k = np.array([t for t in np.ndindex(p, p, p) if len(set(t)) == 3]).T
        feats["E G_ij G_jk G_ki = d"] = ((g[..., i, j] * g[..., j, k] * g[..., k, i]).mean(-1), d)
    return feats


def qz_features(gqq, gqz, zz, d):
    """``gram_features`` of Q Q^T plus statistics of Q Z^T and |z_j|^2 (shapes (m, n, n), (m, n))."""
    n = gqq.shape[-1]
    diag = np.diagonal(gqq, axis1=-2, axis2=-1)
    feats = gram_features(gqq, d)
    triple = (np.einsum("...ij,...ik,...jk->...", gqq, gqz, gqz)           # over i != j
              - np.einsum("...ii,...ik,...ik->...", gqq, gqz, gqz))
    feats.update({
        "E q.z = 0": (gqz.mean((-2, -1)), 0.0),
        "Var q.z = d": ((gqz ** 2).mean((-2, -1)), d),
        "E |z|^2 = d": (zz.mean(-1), d),
        "Var |z|^2 = 2d": (((zz - d) ** 2).mean(-1), 2 * d),
        # given z_j, q_i . z_j ~ N(0, |z_j|^2); given q_i, ~ N(0, |q_i|^2): both are E chi^2(d)^2
        "E (q_i.z_j)^2 |z_j|^2 = d(d+2)": ((gqz ** 2 * zz[..., None, :]).mean((-2, -1)), d * (d + 2)),
        "E (q_i.z_j)^2 |q_i|^2 = d(d+2)": ((gqz ** 2 * diag[..., :, None]).mean((-2, -1)), d * (d + 2)),
        # E (q_i.q_j)(q_i.z_k)(q_j.z_k) = E (q_i.q_j)^2 = d: Q Q^T and Q Z^T come from the same Q
        "E (q_i.q_j)(q_i.z_k)(q_j.z_k) = d": (triple / (n * (n - 1) * n), d),
    })
    return feats


def closed_form_misses(feats, label):
    """The statistics whose sample mean is more than SE_LIMIT standard errors from its expectation."""
    bad = []
    for name, (x, expected) in feats.items():
        se = x.std() / math.sqrt(x.size)
        if abs(x.mean() - expected) > SE_LIMIT * se:
            bad.append(f"{label}: {name}: {x.mean():.5g} vs {expected:.5g} ({(x.mean() - expected) / se:+.1f} s.e.)")
    return bad


def check_same_distribution(feats, direct, label):
    bad = []
    for name in feats:
        x, y = feats[name][0], direct[name][0]
        se = math.sqrt(x.var() / x.size + y.var() / y.size)
        if abs(x.mean() - y.mean()) > SE_LIMIT * se:
            bad.append(f"{name}: sampler {x.mean():.5g} vs direct {y.mean():.5g} "
                       f"({(x.mean() - y.mean()) / se:+.1f} s.e.)")
    assert not bad, f"{label}: " + "; ".join(bad)


QZ_D_KS = np.array([1, 2, N - 1, N, N + 1, 12, 4096])   # below n (drawn directly), n, n + 1, larger


def test_qz_dots_moments_match_closed_forms():
    """_qz_dots draws Q Q^T, Q Z^T and |z_j|^2 with the moments of explicit Gaussian vectors
    (E|z|^2 = d_k, Var 2 d_k; E q.z = 0, Var d_k; Var q_i.q_j = d_k; joint moments too), for d_k
    below n, at n, at n + 1 and far above, within 5 standard errors."""
    gqq, gqz, zz = _qz_dots(QZ_D_KS, N, M, np.random.default_rng(20240501))
    assert gqq.shape == gqz.shape == (len(QZ_D_KS), M, N, N) and zz.shape == (len(QZ_D_KS), M, N)
    np.testing.assert_allclose(gqq, gqq.swapaxes(-1, -2))
    assert (zz > 0).all() and (np.diagonal(gqq, axis1=-2, axis2=-1) > 0).all()
    bad = [miss for i, d in enumerate(QZ_D_KS)
           for miss in closed_form_misses(qz_features(gqq[i], gqz[i], zz[i], float(d)), f"d_k={d}")]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("d_k", [N - 1, N, N + 1, 12])
def test_qz_dots_matches_direct_draws(d_k):
    """For small d_k, _qz_dots's statistics match those of Q, Z drawn entry by entry (two-sample,
    within 5 standard errors)."""
    gqq, gqz, zz = _qz_dots(np.array([d_k]), N, M, np.random.default_rng(7 + d_k))
    q, z = np.random.default_rng(1000 + d_k).standard_normal((2, M, N, d_k))
    direct = qz_features(q @ q.swapaxes(-1, -2), q @ z.swapaxes(-1, -2), (z * z).sum(-1), float(d_k))
    check_same_distribution(qz_features(gqq[0], gqz[0], zz[0], float(d_k)), direct, f"d_k={d_k}")


@pytest.mark.parametrize("d_k, p", [(1, 4), (3, 4), (4, 4), (5, 4), (12, 4), (4096, 4), (2, 2), (9, 3)])
def test_sample_gram_moments(d_k, p):
    """sample_gram's (m, p, p) Gram matrices have the closed-form moments of p Gaussian vectors in
    d_k dims, below p (direct), at p, at p + 1 and far above (Bartlett), and those of direct draws."""
    g = sample_gram(d_k, p, M, np.random.default_rng(31 * d_k + p))
    assert g.shape == (M, p, p)
    np.testing.assert_allclose(g, g.swapaxes(-1, -2))
    bad = closed_form_misses(gram_features(g, float(d_k)), f"sample_gram d_k={d_k} p={p}")
    assert not bad, "\n".join(bad)
    if d_k <= 12:
        x = np.random.default_rng(5000 + d_k).standard_normal((M, p, d_k))
        check_same_distribution(gram_features(g, float(d_k)), gram_features(x @ x.swapaxes(-1, -2), float(d_k)),
                                f"sample_gram d_k={d_k} p={p} vs direct")
