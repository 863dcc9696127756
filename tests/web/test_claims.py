"""The state oracle: every sentence the page builds, checked against quantities this test computes
itself (torch for attention and its gradients, numpy direct draws for Monte-Carlo claims) over many
states: rho > 0, causal masks, float16, every rule, every question's preset."""
from __future__ import annotations

import re
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st
from training_runs import SHARED, losses as training_losses

from core.capped_oracle import capped_logit_moments
import sdpa_core as sc
from web import claims
from web.options import D_K_OPTIONS, DTYPES
from web.state import LabState
from web.training_state import TrainingState
from web.urlstate import apply_query
from web.views.questions import QUESTIONS, preset_link
from shown import pct_ok

# the tests that recompute with torch skip without it (the `torch` fixture); the others always run
needs_torch = pytest.mark.usefixtures("torch")

# the page's thresholds, imported: a test that copied them would keep passing after they change
SATURATION, STARVED, LITTLE, LITTLE_SATURATED = sc.SATURATION, claims.STARVED, claims.LITTLE, claims.LITTLE_SATURATED


# ---- an independent computation of one playground state ---------------------------------------------
def round_off(q, k, v, g, scale: float, normalizes: bool) -> float:
    """The float64 round-off size of one row's ||dL/dq_i||, as the page defines it (sdpa_core.rule_readouts'
    Notes: eps times 4 n |scale| max|G V^T| max|k|, over min|q| when q and k are normalised), from numpy."""
    q, k, v, g = (np.asarray(a, dtype=np.float64) for a in (q, k, v, g))
    if normalizes:
        k = k / np.linalg.norm(k, axis=-1, keepdims=True)
    with np.errstate(all="ignore"):
        size = abs(scale) * np.abs(g @ v.T).max() * np.linalg.norm(k, axis=-1).max() * 4 * len(q)
        if normalizes:
            size /= np.linalg.norm(q, axis=-1).min()
    return float(np.finfo(np.float64).eps * size) if np.isfinite(size) else 0.0


def oracle(lab: LabState) -> dict:
    """Weights and dq per side with torch, from the same draws the page uses (sc.draw_qkv: the inputs).

    Weights follow the page's dtype (float32 arithmetic for float32/float16, logits rounded to half
    for float16); the gradient reaching q is taken in float64 at the rounded inputs, as the page says.
    Under a causal mask row 0 (one visible key) is left out of the saturated share. ``at_rho0`` is the
    rule's saturated share on the same draw (same q and z) at rho = 0; ``matched`` the mean of each query's
    logit with its own key. Only tests that take the ``torch`` fixture (skipped without torch) call it."""
    import torch
    dtype = np.dtype(lab.dtype).type
    q, k, v = sc.draw_qkv(lab.n, lab.d_k, sigma=lab.sigma, rho=lab.rho, seed=lab.seed, dtype=dtype)
    g = sc.upstream_gradient(lab.n, lab.d_k, seed=lab.seed, dtype=dtype)
    # the same generator stream at rho = 0: q first, then z (k = rho q + sqrt(1 - rho^2) z)
    rng = np.random.default_rng(lab.seed)
    q0, z0 = lab.sigma * rng.standard_normal((2, lab.n, lab.d_k))
    with np.errstate(over="ignore"):
        q0, z0 = q0.astype(dtype), z0.astype(dtype)
    choice = slice(1, None) if lab.causal else slice(None)
    out = {}
    for rule in dict.fromkeys(("none", lab.rule, "sqrt")):
        scale = sc.logit_scale(lab.d_k, rule, alpha=lab.alpha, temperature=lab.temperature, n=lab.n)

        def weights(tdt, rounded, q=q, k=k):
            qt, kt, vt = (torch.tensor(a.astype(np.float64), dtype=tdt, requires_grad=True) for a in (q, k, v))
            qn, kn = qt, kt
            if rule == "qknorm":
                qn, kn = qt / qt.norm(dim=-1, keepdim=True), kt / kt.norm(dim=-1, keepdim=True)
            z = (qn @ kn.T) * scale
            if rounded:   # products accumulate in float32, the result is rounded to half
                z = z.to(torch.float16).to(tdt)
            cap = sc.RULES[rule].cap
            if cap is not None:   # Gemma 2's eager attention (transformers' modeling_gemma2): cap tanh(z / cap)
                z = cap * torch.tanh(z / cap)
            matched = float(torch.diagonal(z).detach().double().mean())
            if lab.causal:
                z = z.masked_fill(~torch.ones(lab.n, lab.n, dtype=torch.bool).tril(), float("-inf"))
            return qt, vt, torch.softmax(z, dim=-1), matched

        page_dtype = torch.float64 if lab.dtype == "float64" else torch.float32
        _, _, w, matched = weights(page_dtype, lab.dtype == "float16")
        w0 = weights(page_dtype, lab.dtype == "float16", q=q0, k=z0)[2].detach().numpy().astype(np.float64)
        qt, vt, w64, _ = weights(torch.float64, False)
        (w64 @ vt * torch.tensor(g.astype(np.float64))).sum().backward()
        wn = w.detach().numpy().astype(np.float64)
        nan_rows = int((~np.isfinite(wn)).any(axis=-1).sum())
        dq = np.linalg.norm(qt.grad.numpy(), axis=-1)
        top = wn.max(axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ent = -np.where(wn > 0, wn * np.log(np.where(wn > 0, wn, 1)), 0).sum(axis=-1)
        top0 = w0.max(axis=-1)[choice]
        out[rule] = {"nan_rows": nan_rows, "top": top.mean(), "tops": top[choice], "tokens": np.exp(ent).mean(),
                     # a NaN row (float16 overflow) leaves the share undefined, as sdpa_core.row_stats says
                     "saturated": (top[choice] > SATURATION).mean() if np.isfinite(wn).all() else float("nan"),
                     "dq": dq, "matched": matched,
                     "at_rho0": (top0 > SATURATION).mean() if np.isfinite(w0).all() else float("nan"),
                     "tops0": top0, "floor": round_off(q, k, v, g, scale, rule == "qknorm")}
    ref = np.median(out["sqrt"]["dq"])
    for side in out.values():
        side["median"], side["total"] = np.median(side["dq"]), np.sqrt((side["dq"] ** 2).sum())
        side["starved"] = int((side["dq"] < STARVED * ref).sum())
        side["threshold_floor"] = max(side["floor"], out["sqrt"]["floor"])   # what a count must clear
    return out


def num(s: str) -> float:
    return 0.0 if s == "≈ 0" else float(s)


def close(shown: str, x: float, tol: float, scale: float) -> bool:
    """A number shown with 2 significant digits agrees with x (relative ``tol``; tiny values in
    half precision may differ by ``scale``)."""
    return abs(num(shown) - x) <= tol * abs(x) + scale


def check_verdict(lab: LabState) -> None:
    """The verdict's facts against torch, as the page writes them (``shown``), and which of its kinds of
    sentence it says (``finding``, ``cause``, the counts) exactly when their conditions hold."""
    text, o = lab.verdict, oracle(lab)
    facts, shown = text.facts, text.shown
    none, rule = o["none"], o[lab.rule]
    # the conditions it names: the state's, and a dtype or a mask only when there is one
    assert (facts["d_k"], facts["rho"]) == (lab.d_k, lab.rho) and text.startswith(f"At d_k = {lab.d_k}, "), text
    assert ("mask" in facts) == lab.causal and (facts.get("dtype") == lab.dtype or lab.dtype == "float64"), text
    assert str(text).split(", unscaled")[0].endswith(lab.dtype) == (lab.dtype != "float64"), text
    exact = lab.dtype == "float64"
    # float32/16 round differently from torch's float32: a share may move by a row whose top weight
    # sits at the SATURATION threshold, a ratio at its LITTLE boundary
    tol = 1e-9 if exact else 0.01
    # tokens attended exp(H) carries the weights' relative round-off times up to n
    ttol = 0.05 + {"float64": 1e-9, "float32": 1e-4, "float16": 4e-3}[lab.dtype] * lab.n

    # a weight the page computes in float16 carries up to n half-ulps (2^-11 each) of the softmax's sum: a
    # row's top weight can land on the other side of a threshold from torch's float32 by that much
    near_rel = {"float64": 0.0, "float32": 1e-3, "float16": 2.0 ** -11 * lab.n}[lab.dtype]

    def near(values, threshold, rel=near_rel):
        return not exact and bool(np.any(np.abs(np.asarray(values) / threshold - 1) < rel))

    if none["nan_rows"]:
        assert facts.get("unscaled_nan") == none["nan_rows"], (text, none["nan_rows"])
        return
    assert "unscaled_nan" not in facts, text
    assert ("row 0, which sees one key, left out" in text) == lab.causal, text
    assert pct_ok(shown["unscaled_top"], none["top"], tol) and abs(float(shown["unscaled_tokens"]) - none["tokens"]) <= ttol
    assert pct_ok(shown["unscaled_saturated"], none["saturated"], tol) or near(none["tops"], SATURATION)
    if lab.rule == "none":
        assert text.endswith("Pick a scaling rule to compare.") and "rule" not in facts
        return
    assert facts["rule"] == lab.rule and shown["rule"] == claims.RULE_LABELS[lab.rule]
    if rule["nan_rows"]:
        assert facts["scaled_nan"] == rule["nan_rows"] and facts["n"] == lab.n, text
        return
    e0, e1 = none["tokens"], rule["tokens"]
    t0, t1 = none["top"], rule["top"]
    both_saturated = none["saturated"] >= 0.5 and rule["saturated"] >= 0.5
    little = (max(e0, e1) <= LITTLE * min(e0, e1) and max(t0, t1) <= LITTLE * min(t0, t1)
              and abs(none["saturated"] - rule["saturated"]) <= LITTLE_SATURATED)
    finding = facts.get("finding")
    if not (near(np.r_[none["tops"], rule["tops"]], SATURATION)
            or near(max(e0, e1) / min(e0, e1), LITTLE, rel=ttol / min(e0, e1))
            or near(max(t0, t1) / min(t0, t1), LITTLE, rel=0.02)
            or near(abs(none["saturated"] - rule["saturated"]), LITTLE_SATURATED)):
        assert (finding == claims.SATURATED_TOO) == both_saturated, text
        assert (finding == claims.CHANGES_LITTLE) == (little and not both_saturated), (text, e0, e1)
    assert pct_ok(shown["scaled_top"], rule["top"], tol), text
    assert pct_ok(shown["scaled_saturated"], rule["saturated"], tol) or near(rule["tops"], SATURATION), text
    if finding == claims.SATURATED_TOO:
        assert "scaled_tokens" not in facts, text
        check_why(lab, text, rule, tol, near)
    else:
        assert abs(float(shown["scaled_tokens"]) - e1) <= ttol, text
        assert "cause" not in facts, text
    if finding == claims.CHANGES_LITTLE:   # the tolerances it states are the ones little_change tests
        assert (f"(top weight and tokens attended within a factor {LITTLE:g} of the unscaled ones, saturated rows "
                f"within {LITTLE_SATURATED * 100:.0f} points)") in text
    check_gradient(lab, text, o)


def check_gradient(lab: LabState, text, o: dict) -> None:
    """The verdict's gradient sentence: the gradient that reaches q, checked against torch autograd."""
    facts, shown = text.facts, text.shown
    none, rule = o["none"], o[lab.rule]
    assert ("taken in float64" in text) == (lab.dtype != "float64")
    ref = np.median(o["sqrt"]["dq"])
    # shown with 2 significant digits; below its side's floor (float64 round-off of the gradient an
    # unsaturated row would get, sdpa_core.rule_readouts' dq_floor) a norm reads "≈ 0": 1e-19 here, 1e-60 in torch
    f0, f1 = (lab.playground[side]["grad"]["floor"] for side in ("none", "rule"))
    for key, want, floor in (("grad_unscaled_median", none["median"], f0), ("grad_scaled_median", rule["median"], f1),
                             ("grad_unscaled_total", none["total"], f0), ("grad_scaled_total", rule["total"], f1)):
        assert close(shown[key], want, 0.051, 1.01 * floor), (text, key, want, floor)
    floor = max(f0, f1)
    thr = STARVED * ref
    # a count is shown only when its threshold clears float64 round-off (else it would count round-off)
    need = max(o[key]["threshold_floor"] for key in ("none", lab.rule))
    said_round_off = "round_off" in facts
    if not math.isclose(thr, need, rel_tol=0.05):   # the threshold itself is round-off-fuzzy near the floor
        assert said_round_off == (not thr > need), (text, thr, need)
    counted = "starved_unscaled" in facts
    if said_round_off:
        assert not counted, text
    else:
        for key, fact in (("none", "starved_unscaled"), (lab.rule, "starved_scaled")):
            dq = o[key]["dq"]
            fuzz = floor + 1e-6 * thr
            assert (dq < thr - fuzz).sum() <= facts.get(fact, 0) <= (dq < thr + fuzz).sum(), (text, key)
    assert ("row 0 sees only key 0" in text) == (lab.causal and counted)


def check_why(lab: LabState, text, rule: dict, tol: float, near) -> None:
    """When both sides saturate at rho > 0 the verdict names a cause only as the same draw at rho = 0
    shows it: the spread when the rule saturates half its rows there already, else aligning q and k, with
    the rule's own matched logit (rho d_k sigma^2 times its factor; rho/tau for QK-norm)."""
    facts, shown = text.facts, text.shown
    cause = facts.get("cause")
    if lab.rho == 0:
        assert cause is None, text
        return
    at0 = rule["at_rho0"]
    if not math.isfinite(at0):
        assert cause is None, text
        return
    if near(rule["tops0"], SATURATION) or (lab.dtype != "float64" and abs(at0 - 0.5) <= 1 / lab.n):
        assert cause is not None, text
        return
    assert pct_ok(shown["at_rho0"], at0, tol), (text, at0)
    if at0 >= 0.5:
        assert cause == "spread" and "matched" not in facts, (text, at0)
        return
    assert cause == "ρ", (text, at0)
    scale = sc.logit_scale(lab.d_k, lab.rule, alpha=lab.alpha, temperature=lab.temperature, n=lab.n)
    qknorm = lab.rule == "qknorm"
    theory = scale * lab.rho * (1 if qknorm else lab.d_k * lab.sigma ** 2)
    cap = sc.RULES[lab.rule].cap
    if cap is not None:   # Gemma 2's cap on the matched logit, integrated here another way (tests/core/capped_oracle.py)
        theory = capped_logit_moments(lab.d_k, scale * lab.sigma ** 2, lab.rho, cap)["matched_mean"]
    assert ("(ρ × " if qknorm else "(ρ d_k σ²") in text, text
    assert facts["matched_theory"] == pytest.approx(theory, rel=5e-3), (text, theory)
    assert float(shown["matched_theory"]) == pytest.approx(theory, rel=5e-3), (text, theory)
    assert facts["matched"] == pytest.approx(rule["matched"], rel=5e-3 if lab.dtype == "float64" else 2e-2,
                                             abs=1e-3), (text, rule["matched"])
    assert float(shown["matched"]) == pytest.approx(rule["matched"], rel=5e-3 if lab.dtype == "float64" else 2e-2,
                                                    abs=1e-3), (text, rule["matched"])


states = st.fixed_dictionaries({
    "d_k": st.sampled_from(D_K_OPTIONS),
    "n": st.integers(2, 64),
    "sigma": st.sampled_from([0.1, 0.5, 1.0, 1.5, 2.0, 4.0, 8.0]),
    "rho": st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0]),
    "seed": st.integers(0, 99999),
    "rule": st.sampled_from(sc.RULE_NAMES),
    "alpha": st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, 1.5]),
    "temperature": st.sampled_from([0.02, 0.05, 0.1, 0.3, 1.0, 2.0]),
    "causal": st.booleans(),
    "dtype": st.sampled_from(DTYPES),
})


@needs_torch
@settings(max_examples=240, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states)
def test_every_verdict_agrees_with_torch(state):
    """For 240 random states (rho > 0, causal, float16, every rule), every number in the verdict equals an
    independent torch computation, and each kind of sentence appears exactly when its condition holds."""
    lab = LabState(**state)
    check_verdict(lab)
    # the readouts the table shows are the numbers the verdict uses
    for side in ("none", "rule"):
        s = lab.playground[side]["stats"]
        assert s["grad_median"] == lab.playground[side]["grad"]["median"] or math.isnan(s["grad_median"])


# the corners: sigma up to the page's maximum, aligned q and k (rho = 1 mostly), causal masks with few rows,
# QK-norm at its extreme temperatures, and 1/sqrt(d_k) references that are themselves round-off
SIGMA_MAX = LabState.param.sigma.bounds[1]
T_MIN, T_MAX = LabState.param.temperature.bounds
corners = st.fixed_dictionaries({
    "d_k": st.sampled_from([1, 2, 4, 16, 64, 256, 1024]),
    "n": st.sampled_from([2, 3, 8, 16, 64]),
    "sigma": st.sampled_from([0.1, 1.0, 3.0, 4.52, SIGMA_MAX]),
    "rho": st.sampled_from([0.9, 1.0, 1.0]),
    "seed": st.integers(0, 99999),
    "rule": st.sampled_from(sc.RULE_NAMES),
    "alpha": st.sampled_from([0.5, 1.0]),
    "temperature": st.sampled_from([T_MIN, T_MAX]),
    "causal": st.booleans(),
    "dtype": st.sampled_from(["float64", "float64", "float16"]),
})


@needs_torch
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corners)
@example({"d_k": 2, "n": 8, "sigma": 8.0, "rho": 1.0, "seed": 97619, "rule": "sqrt", "alpha": 0.5,
          "temperature": 0.1, "causal": False, "dtype": "float64"})     # sigma saturates it, not rho
@example({"d_k": 64, "n": 64, "sigma": 4.52, "rho": 0.9, "seed": 77989, "rule": "sqrt", "alpha": 0.5,
          "temperature": 0.1, "causal": False, "dtype": "float64"})     # the reference is round-off
@example({"d_k": 1, "n": 2, "sigma": 0.1, "rho": 0.0, "seed": 0, "rule": "linear", "alpha": 0.5,
          "temperature": 0.1, "causal": True, "dtype": "float64"})      # row 0 has no choice
@example({"d_k": 256, "n": 16, "sigma": 1.0, "rho": 0.9, "seed": 3, "rule": "qknorm", "alpha": 0.5,
          "temperature": T_MIN, "causal": False, "dtype": "float64"})   # QK-norm's matched logit rho/tau
@example({"d_k": 1024, "n": 2, "sigma": 8.0, "rho": 1.0, "seed": 0, "rule": "none", "alpha": 0.5,
          "temperature": 0.02, "causal": True, "dtype": "float16"})     # row 1 overflows: no share at all
@example({"d_k": 16, "n": 4, "sigma": 4.0, "rho": 0.1, "seed": 1, "rule": "ssmax", "alpha": 0.0,
          "temperature": 0.02, "causal": False, "dtype": "float64"})    # SSMax's matched logit at this n
def test_every_verdict_holds_at_the_corners(state):
    """The verdict at the corners (sigma up to its maximum, rho = 1, causal with n >= 2, QK-norm at extreme
    tau, round-off references): every clause against torch, its cause against the same draw at rho = 0,
    a starved count only against a reference above round-off, row 0 of a causal mask never saturated."""
    lab = LabState(**state)
    check_verdict(lab)
    o = oracle(lab)
    if lab.causal:   # row 0 (one key, weight 1) is not counted: the share is over the n - 1 other rows
        assert lab.playground["none"]["stats"]["saturated"] == pytest.approx(
            o["none"]["saturated"], abs=1e-12 if lab.dtype == "float64" else 1.5 / (lab.n - 1), nan_ok=True)


@needs_torch
@pytest.mark.parametrize("q", QUESTIONS, ids=[q.button for q in QUESTIONS])
def test_each_question_preset_is_a_whole_state_and_its_verdict_holds(q):
    """Applying a question's preset after other settings moved gives exactly the preset (every other setting
    at its default), and the playground's verdict at that state passes the oracle."""
    lab = LabState()
    train = TrainingState(lab)
    apply_query("?d_k=3&sigma=4&rho=1&rule=qknorm&causal=true&dtype=float16&seed=9&lr=1", lab, train)
    apply_query(preset_link(q), lab, train)
    fresh_lab, fresh_train = LabState(), TrainingState()
    apply_query(preset_link(q), fresh_lab, fresh_train)
    for name in ("view", "d_k", "n", "sigma", "rho", "seed", "rule", "alpha", "temperature", "causal", "dtype",
                 "query", "samples", "order"):
        assert getattr(lab, name) == getattr(fresh_lab, name), name
    for name in ("rule_a", "rule_b", "lr", "d_k"):
        assert getattr(train, name) == getattr(fresh_train, name), name
    lab.view = "playground"    # the verdict is the playground's: computed while it is shown, at these settings
    check_verdict(lab)


def test_causal_references_are_the_visible_means():
    """Under a causal mask uniform attention has entropy mean(log(i+1)) and mean(i+1) tokens: 1.92, 8.5 at n = 16."""
    h, t = claims.references(16, True)
    assert h == pytest.approx(math.lgamma(17) / 16) and t == 8.5
    assert claims.references(16, False) == (pytest.approx(math.log(16)), 16)
    rows = dict((k, m) for _, k, m in claims.readout_rows(16, True))
    assert "1.92" in rows["entropy"] and "8.5" in rows["effective_support"]


@pytest.mark.parametrize("x, shown", [(7.25e-158, "≈ 0"), (float("inf"), "inf: overflow"), (float("nan"), "NaN"),
                                      (0.0, "0"), (2.7726, "2.77"), (123456.0, "1.23e+05")])
def test_numbers_read_as_a_learner_reads_them(x, shown):
    """One-hot entropies read "≈ 0", an overflowed logit std "inf: overflow"."""
    assert claims.fmt(x) == shown


def _direct_entropy(d_k, rule, rho, n=16, samples=64, seed=1):
    """Mean row entropy from directly drawn (n, d_k) vectors: independent of the sweep's exact sampler."""
    import torch
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, n, d_k))
    k = rho * q + math.sqrt(1 - rho * rho) * rng.standard_normal((samples, n, d_k))
    if rule == "qknorm":
        q, k = (a / np.linalg.norm(a, axis=-1, keepdims=True) for a in (q, k))
    z = torch.tensor(q @ k.swapaxes(-1, -2) * sc.logit_scale(d_k, rule, n=n))
    return float(torch.special.entr(torch.softmax(z, -1)).sum(-1).mean())


@needs_torch
@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9])
def test_saturation_summary_words_match_direct_draws(rho):
    """The saturation caption's "falls / stays flat / rises" for each rule agrees with entropies from directly
    drawn vectors at d_k = 16 and 4096 (at rho = 0.5, 1/sqrt(d_k) is not called flat)."""
    s = sc.sweep(sc.POW2_D_K, sc.RULE_NAMES, n=16, samples=32, rho=rho, seed=2)
    h = claims.saturation_summary(s, n=16, sigma=1.0, rho=rho)
    assert (h.facts["sigma"], h.facts["rho"], h.facts["n"], h.facts["d_from"], h.facts["d_to"]) == (1, rho, 16, 16, 4096)
    assert h.facts["uniform"] == pytest.approx(math.log(16))
    index = {h.facts[f"rule_{i}"]: i for i in range(len(s.rules))}
    for rule in ("none", "sqrt", "linear", "qknorm"):
        lo, hi = _direct_entropy(16, rule, rho), _direct_entropy(4096, rule, rho)
        i = index[rule]
        assert float(h.shown[f"from_{i}"]) == pytest.approx(lo, abs=0.15) and float(h.shown[f"to_{i}"]) == pytest.approx(hi, abs=0.15)
        how = h.facts[f"trend_{i}"]
        if abs(hi - lo) > 0.2 * math.log(16):   # clear cases cannot be called the other way
            assert how == ("falls" if hi < lo else "rises"), (rule, lo, hi, h)
        if abs(hi - lo) < 0.03 * math.log(16) and abs(hi - lo) < 0.1 * max(lo, hi):
            assert how == "flat", (rule, lo, hi, h)
        if rho >= 0.5 and rule == "sqrt":
            assert how != "flat", h


@pytest.mark.parametrize("rho", [0.0, 0.5, 1.0])
def test_loglog_slopes_match_theory(rho):
    """The measured slopes the variance view prints agree with the closed-form pooled std's slope."""
    s = sc.sweep(sc.POW2_D_K, ("none", "sqrt", "linear"), n=16, samples=64, rho=rho, seed=4)
    text = claims.loglog_summary(s, rule="linear", rho=rho)
    d = np.array([256.0, 4096.0])

    def second(d_):   # the pooled second moment minus the squared mean, n = 16
        return (rho * d_) ** 2 / 16 + (1 + rho * rho) * d_ / 16 + d_ * 15 / 16 - (rho * d_ / 16) ** 2

    theory = math.log(math.sqrt(second(d[1]) / second(d[0]))) / math.log(16)
    assert (text.facts["d_from"], text.facts["d_to"], text.facts["rho"], text.facts["rule"]) == (256, 4096, rho, "linear")
    assert text.facts["unscaled"] == pytest.approx(theory, abs=0.06)
    assert text.facts["scaled"] == pytest.approx(theory - 1, abs=0.06)
    assert ("takes over" in text) == (rho > 0)


def test_variance_summary_numbers_are_the_closed_forms_and_the_samples():
    """The variance view's sentence quotes mean rho d_k sigma^2 and std sqrt((1+rho^2) d_k) sigma^2, and the
    pooled std of all n x n logits computed from direct draws."""
    d_k, sigma, rho, n = 1024, 1.0, 0.5, 16
    dots = sc.dot_histograms(d_k, sigma=sigma, rho=rho, seed=0, rule="sqrt", alpha=0.5, temperature=0.1)
    pooled = sc.theory_logit_std(d_k, sigma=sigma, rho=rho, n=n)
    text = claims.variance_summary(dots, d_k=d_k, n=n, sigma=sigma, rho=rho, rule="sqrt", pooled=pooled)
    assert text.facts["theory_mean"] == pytest.approx(rho * d_k * sigma ** 2)
    assert text.facts["theory_std"] == pytest.approx(math.sqrt(1 + rho * rho) * math.sqrt(d_k) * sigma ** 2)
    assert text.facts["pairs"] == n * n - n and text.facts["rule"] == "sqrt"
    rng = np.random.default_rng(0)
    q = rng.standard_normal((200, n, d_k))
    k = rho * q + math.sqrt(1 - rho * rho) * rng.standard_normal((200, n, d_k))
    direct = (q @ k.swapaxes(-1, -2)).std()
    assert float(text.shown["pooled"]) == pytest.approx(direct, rel=0.05)


@needs_torch
def test_gradient_summary_agrees_with_torch():
    """The per-query gradient caption's medians, totals and starved share equal torch autograd's."""
    lab = LabState(d_k=1024, view="saturation")
    text = claims.gradient_summary(lab.gradients, rule="sqrt", d_k=1024, n=16, rho=0.0)
    rows = {r: [] for r in ("none", "sqrt")}
    for s in range(len(lab.gradients["none"]) // 16):   # the draws the page pooled: seeds 0, 1, ...
        probe = LabState(d_k=1024, seed=s)
        o = oracle(probe)
        for r in rows:
            rows[r].append(o[r]["dq"])
    g = {r: np.concatenate(v) for r, v in rows.items()}
    med = np.median(g["sqrt"])
    assert (text.facts["d_k"], text.facts["rows"], text.facts["n"]) == (1024, sum(len(r) for r in rows["none"]), 16)
    assert pct_ok(text.shown["starved"], (g["none"] < STARVED * med).mean()), text
    for key, want in (("median_unscaled", np.median(g["none"])), ("median_sqrt", med),
                      ("total_unscaled", np.sqrt((g["none"] ** 2).sum())), ("total_sqrt", np.sqrt((g["sqrt"] ** 2).sum()))):
        assert close(text.shown[key], want, 0.051, 0), (text, key, want)
    assert "(larger:" in text


@needs_torch
def test_question_claims_hold_at_their_presets():
    """The Questions' specific claims, checked: d_k = 4 is far from one-hot; at rho = 0.5 1/sqrt(d_k) saturates
    at d_k = 4096 and 1/d_k does not; QK-norm with a fixed tau flattens as d_k grows; d_k^-0.75 at 64 is 1/22.6;
    exp overflows float16 at 11.1 and float32 at 88.7."""
    lab = LabState(d_k=4)
    o = oracle(lab)
    assert o["none"]["top"] < 0.5 and o["sqrt"]["top"] < 0.5 and o["none"]["saturated"] == 0
    s = sc.sweep([4096], ("sqrt", "linear"), n=16, samples=32, rho=0.5)
    assert s.mean["saturated"]["sqrt"][0] > 0.5 and s.mean["saturated"]["linear"][0] < 0.05
    assert _direct_entropy(4096, "qknorm", 0.0) > _direct_entropy(16, "qknorm", 0.0) + 0.5
    assert 64 ** -0.75 == pytest.approx(1 / math.sqrt(512), rel=1e-12)
    assert round(math.log(np.finfo(np.float16).max), 1) == 11.1
    assert round(math.log(np.finfo(np.float32).max), 1) == 88.7   # where kernels take exp
    # QK-norm with a fixed tau: flattens on independent vectors, concentrates once q and k align
    s = sc.sweep([16, 4096], ("qknorm",), n=16, samples=32, rho=0.5)
    assert s.mean["max_weight"]["qknorm"][1] > s.mean["max_weight"]["qknorm"][0] + 0.2


@SHARED
def test_training_claims_hold_over_the_seeds_they_count():
    """The training answer's counts and medians (web/training_state.py OVER_SEEDS), recomputed over seeds
    0-11: the unscaled / 1/sqrt(d_k) loss ratio over steps 280-300 at d_k = 1024 and 16 (lr 0.01), and the
    default seed sits near the median at d_k = 1024 (not at an end, as seed 0 does)."""
    from web.training_state import OVER_SEEDS, SEEDS, TRAIN_SEED
    from web.views.questions import QUESTIONS
    answer = next(q.answer for q in QUESTIONS if q.question == "How does it affect training?")
    assert SEEDS >= 8
    ratios, accuracy = {}, {}
    for d_k in OVER_SEEDS:
        ratios[d_k], accuracy[d_k] = [], []
        for seed in range(SEEDS):
            runs = {r: training_losses(d_k, r, seed) for r in ("none", "sqrt")}
            loss = {r: np.mean(lo[280:300]) for r, (lo, _) in runs.items()}
            ratios[d_k].append(loss["none"] / loss["sqrt"])
            accuracy[d_k].append([np.mean(acc[280:300]) for _, acc in runs.values()])
        r, want = np.array(ratios[d_k]), OVER_SEEDS[d_k]
        # on this machine's BLAS kernel: the count and the median within what the page states for any CPU
        assert (r > want["more_than"]).sum() >= want["at_least"], (d_k, r)
        lo, hi = want["median"]
        assert lo <= np.median(r) <= hi, (d_k, r)
        # the words: "about 3 to 4" spans the range it stands for (rounded to the nearest whole number)
        words = [float(x) for x in re.findall(r"[0-9.]+", want["median_words"])]
        assert min(words) - 0.25 <= lo and hi <= max(words) + 0.25, want
    big, small = OVER_SEEDS[1024], OVER_SEEDS[16]
    assert big["more_than"] == 2 and small["more_than"] == 1   # what the words say
    assert (f"more than twice 1/√d_k's in at least {big['at_least']} of {SEEDS} seeds (median ratio "
            f"{big['median_words']}:") in answer, answer
    assert small["at_least"] == SEEDS and f"still higher in {SEEDS} of {SEEDS} (median ratio {small['median_words']})" in answer
    assert 0.94 <= np.median(accuracy[16]) <= 0.99 and "about 97% accurate" in answer
    ranks = np.argsort(np.argsort(ratios[1024]))
    assert 2 <= ranks[TRAIN_SEED] <= SEEDS - 3, ratios[1024]   # a middle seed, not an extreme one
    assert "narrow" not in answer


def test_gradient_summary_says_when_even_the_scaled_rows_get_nothing():
    """When 1/sqrt(d_k) saturates too (its median row gradient is 0), the caption says so instead of
    reporting 0% starved rows."""
    zero = {"none": np.zeros(8), "sqrt": np.r_[np.zeros(6), 1e-3, 2e-3]}
    text = claims.gradient_summary(zero, rule="sqrt", d_k=3072, n=8, rho=0.85)
    assert "even with 1/√d_k the median row gets no gradient at all" in text and "starved" not in text
    assert "≈ 0 (round-off or less) for 75% of its rows and 100% of the unscaled ones" in text


def check_headline(lab: LabState) -> None:
    """The Playground's one-sentence headline: the top key's mean share, without scaling and with the
    rule, or the NaN rows, each as torch computes it from the same draws."""
    h, o = claims.headline(lab.playground, n=lab.n, dtype=lab.dtype), oracle(lab)
    none, rule = o["none"], o[lab.rule]
    assert len(h.split()) <= 25, h
    tol = 1e-9 if lab.dtype == "float64" else 0.01
    if none["nan_rows"] or rule["nan_rows"]:
        assert (h.facts["n"], h.facts["dtype"]) == (lab.n, lab.dtype), h
    for side, key in ((none, "unscaled"), (rule, "scaled")):
        if key == "scaled" and lab.rule == "none":
            assert not {"rule", "scaled_top", "scaled_nan"} & set(h.facts), h
            break
        if side["nan_rows"]:
            assert h.facts[f"{key}_nan"] == side["nan_rows"] and f"{key}_top" not in h.facts, h
        else:
            assert pct_ok(h.shown[f"{key}_top"], side["top"], tol), (h, side["top"])
    if lab.rule != "none":
        assert h.facts["rule"] == lab.rule


@needs_torch
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states)
def test_every_playground_headline_agrees_with_torch(state):
    """For 120 random states (float16 overflow, causal, every rule), the headline's numbers are torch's,
    and it stays within 25 words."""
    check_headline(LabState(**state))


@needs_torch
@pytest.mark.parametrize("state", [
    {"d_k": 1024, "n": 2, "sigma": 8.0, "rho": 1.0, "seed": 0, "rule": "linear", "dtype": "float16"},
    {"d_k": 4096, "n": 64, "sigma": 8.0, "rho": 1.0, "seed": 1, "rule": "none", "dtype": "float16"},
    {"d_k": 4096, "n": 64, "sigma": 8.0, "rho": 1.0, "seed": 2, "rule": "sqrt", "dtype": "float16"},
])
def test_the_longest_headlines_stay_within_25_words(state):
    """Overflow on both sides or one, at the widest settings: the longest forms the headline takes."""
    check_headline(LabState(**state))
