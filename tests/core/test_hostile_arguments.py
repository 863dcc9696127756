"""Every public function refuses hostile arguments with a ValueError or TypeError naming the argument.

Hostile: 0, negative, huge ints (2**4000), floats where ints are needed (d_k = 3.5), NaN, inf, bools,
strings, None, complex, empty arrays, masked arrays (np.ma), wrong shapes and wrong dtypes. Each
argument gets a strategy that only draws values it must refuse; the other arguments stay valid. No other exception (ZeroDivisionError,
OverflowError, IndexError, numpy's internal messages) and no RuntimeWarning may come out.
"""
import math
import re
import warnings
from dataclasses import dataclass, fields, replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import sdpa_core as sc
from sdpa_core.model import init_params, make_batch

HUGE = 2 ** 4000
NOT_NUMBERS = [None, "abc", "", "1", 1j, [], [1, 2], {}, object(), np.array([1.0, 2.0])]
BOOLS = [True, False, np.True_]


# ---- strategies: values each kind of argument must refuse ----------------------------------------------
def bad_int(low=None, high=None):
    """Anything but an int in [low, high]: out-of-range ints (huge ones too), floats (even 2.0), bools, text."""
    outside = []
    if low is not None:
        outside += [st.integers(max_value=low - 1), st.just(low - 1), st.just(-HUGE)]
    if high is not None:
        outside += [st.integers(min_value=high + 1), st.just(high + 1), st.just(HUGE)]
    return st.one_of(*outside, st.floats(allow_nan=True, allow_infinity=True), st.just(3.5), st.just(np.float64(4.0)),
                     st.sampled_from(BOOLS + NOT_NUMBERS), st.text(max_size=5))


def bad_real(low=None, high=None, low_open=False):
    """Anything but a finite real in [low, high] (or (low, high]): NaN, inf, out-of-range, huge ints, bools, text."""
    def outside(x):
        return (not math.isfinite(x) or (low is not None and (x <= low if low_open else x < low))
                or (high is not None and x > high))
    ints = [st.integers(min_value=2 ** 1024), st.integers(max_value=-2 ** 1024)]  # no float holds them
    if low is not None:
        ints.append(st.integers(max_value=math.ceil(low) if low_open and low == int(low) else math.ceil(low) - 1))
    if high is not None:
        ints.append(st.integers(min_value=math.floor(high) + 1))
    return st.one_of(st.floats(allow_nan=True, allow_infinity=True).filter(outside), *ints,
                     st.sampled_from([HUGE, -HUGE, float("nan"), float("inf"), -float("inf")]),
                     st.sampled_from(BOOLS + NOT_NUMBERS), st.text(max_size=5))


def bad_bool():
    return st.one_of(st.integers(), st.floats(), st.sampled_from(NOT_NUMBERS), st.text(max_size=5),
                     st.just(np.array([True])))


def bad_rule():
    return st.one_of(st.text(max_size=8).filter(lambda s: s not in sc.RULE_NAMES), st.integers(), st.floats(),
                     st.sampled_from([None, True, b"sqrt", ["sqrt"], ("sqrt",), "SQRT", " sqrt"]))


def bad_rules():
    return st.one_of(st.sampled_from(["sqrt", "none", "", (), [], ["bogus"], ("sqrt", "cube"), [None], [1.0],
                                      None, 5, 3.5, True]), st.text(max_size=5))


def bad_axis(ndim):
    return st.one_of(st.integers(min_value=ndim), st.integers(max_value=-ndim - 1), st.just(HUGE),
                     st.floats(), st.sampled_from([True, None, "0", 1j, np.float64(0.0), [0]]))


def bad_dtype():
    return st.sampled_from([int, "int8", np.int32, bool, np.complex128, "float128" if hasattr(np, "float128") else "U3",
                            None, True, "abc", 3, object, np.longdouble if np.dtype(np.longdouble).itemsize > 8 else str])


WRONG_DTYPES = (np.int64, np.int8, np.uint8, bool, np.complex128, "U3", object, np.longdouble)


def bad_array(shape, *, nan_ok=False, neg_inf_ok=False, dtypes=WRONG_DTYPES, scalars=(None, "abc", 3, 2.5, HUGE, True, np.float64(1.0)),
              extra=()):
    """Arrays (or things that are not) a float argument of ``shape`` must refuse: wrong dtypes, wrong
    ranks, empty, NaN/inf (unless ``nan_ok``; only NaN/+inf if ``neg_inf_ok``: logits may be -inf),
    masked arrays, and scalars, text, ragged lists."""
    wrong_dtype = st.sampled_from([np.ones(shape, dtype=t) for t in dtypes if np.dtype(t).itemsize <= 8
                                   or np.dtype(t).kind != "f" or np.dtype(t) != np.float64])
    empty = st.sampled_from([np.zeros(s) for s in [(0,), (0,) + tuple(shape[1:]), tuple(shape[:-1]) + (0,),
                                                   (0, 0)]])
    # a masked array of the right shape and dtype: np.asarray would silently drop its mask
    masked = np.ma.masked_array(np.ones(shape), mask=np.arange(math.prod(shape)).reshape(shape) % 2 == 0)
    options = [wrong_dtype, empty, st.sampled_from(list(scalars) + [[[1.0, 2.0], [3.0]], {"a": 1}, masked])]
    if not nan_ok:
        options.append(hnp.arrays(np.float64, st.just(shape),
                                  elements=st.sampled_from([1.0, float("nan"), float("inf"), -float("inf")]))
                       .filter(lambda a: not (a < np.inf).all() if neg_inf_ok else not np.isfinite(a).all()))
    options += [st.just(x) for x in extra]
    return st.one_of(*options)


def bad_probs(shape):
    """Not rows of probabilities: negative, rows summing to 2 ([1, 1]) or 0.5, plus every bad array."""
    def unnormalised(a):
        s = a.sum(-1)
        return bool(((np.abs(s - 1) > 0.05) & (s != 0)).any() or (a < 0).any())
    rows = hnp.arrays(np.float64, st.just(shape), elements=st.floats(-2, 2)).filter(unnormalised)
    return st.one_of(bad_array(shape), rows, st.just(np.ones(shape)), st.just(np.full(shape, -1.0 / shape[-1])))


def bad_rng():
    return st.sampled_from([0, None, "abc", np.random.RandomState(0), 1.5, True, np.random])


def A(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def P(*shape):
    return sc.softmax(A(*shape, seed=1))


@dataclass
class Fn:
    """A public callable, valid keyword arguments, and a strategy of hostile values per argument."""
    call: object
    valid: dict
    hostile: dict


CFG = sc.TrainConfig(d_k=4, n_keys=3, n_classes=2, d_in=3, d_v=2, batch=2)
ATT = dict(q=A(3, 4), k=A(5, 4, seed=1), v=A(5, 2, seed=2))
ATT_BAD = {
    "q": bad_array((3, 4), extra=[A(3, 5), A(4), A(2, 3, 5)]),
    "k": bad_array((5, 4), extra=[A(5, 3), A(4)]),
    "v": bad_array((5, 2), extra=[A(4, 2), A(2)]),
    "scale": bad_real().filter(lambda x: x is not None),   # None means 1/sqrt(E)
    "mask": bad_array((3, 5), nan_ok=True, dtypes=[t for t in WRONG_DTYPES if t is not bool],
                      scalars=("abc", 3, HUGE), extra=[np.ones((3, 4), bool), np.ones((2, 3, 6), bool),
                                                      np.full((3, 5), np.nan), np.full((3, 5), np.inf),
                                                      np.ones((4, 3, 5), bool)]),
    "causal": bad_bool(),
    "softcap": bad_real(0.0, low_open=True).filter(lambda x: x is not None),   # None means no cap
}
GRAD_SCALARS = (None, "abc", 3, HUGE, True, float("nan"))  # a float scalar is a valid grad_out (d sum(out))
RULE_BAD = {"rule": bad_rule(), "alpha": bad_real(0.0, 4.0), "temperature": bad_real(1e-6, 1e6)}
SAMPLING_BAD = {"sigma": bad_real(0.0, 1e3, low_open=True), "rho": bad_real(0.0, 1.0), "seed": bad_int(0)}

FUNCTIONS = {
    "attention": Fn(sc.attention, ATT, ATT_BAD),
    "attention_backward": Fn(sc.attention_backward, {**ATT, "grad_out": A(3, 2, seed=4)},
                             {**ATT_BAD, "grad_out": bad_array((3, 2), scalars=GRAD_SCALARS, extra=[A(3, 3), A(4, 3, 2), A(2, 1)])}),
    "softmax": Fn(sc.softmax, {"x": A(2, 3)}, {"x": bad_array((2, 3), neg_inf_ok=True), "axis": bad_axis(2)}),
    "log_softmax": Fn(sc.log_softmax, {"x": A(2, 3)}, {"x": bad_array((2, 3), neg_inf_ok=True), "axis": bad_axis(2)}),
    "naive_softmax": Fn(sc.naive_softmax, {"x": A(2, 3)}, {"x": bad_array((2, 3), neg_inf_ok=True),
                                                            "axis": bad_axis(2)}),
    "scale_for": Fn(sc.scale_for, {"d_k": 64, "rule": "sqrt"},
                    {"d_k": bad_int(1, 2 ** 53),
                     "rule": st.one_of(bad_real(0.0, 4.0).filter(lambda x: not isinstance(x, str)),
                                       st.sampled_from(["cube", "", "SQRT", None, True, b"sqrt"]))}),
    "logit_scale": Fn(sc.logit_scale, {"d_k": 64, "rule": "ssmax", "n": 16},
                      {"d_k": bad_int(1, 2 ** 53), **RULE_BAD, "n": bad_int(2, 2 ** 53)}),
    "check_rule": Fn(sc.check_rule, {"rule": "sqrt"}, RULE_BAD),
    "qk_normalize": Fn(sc.qk_normalize, {"x": A(3, 4)}, {"x": bad_array((3, 4)), "eps": bad_real(0.0, 1.0, low_open=True)}),
    "entropy": Fn(sc.entropy, {"p": P(3, 4)}, {"p": bad_probs((3, 4)), "axis": bad_axis(2)}),
    "entropy_from_logits": Fn(sc.entropy_from_logits, {"logits": A(3, 4)},
                              {"logits": bad_array((3, 4)), "axis": bad_axis(2)}),
    "effective_support": Fn(sc.effective_support, {"p": P(3, 4)}, {"p": bad_probs((3, 4)), "axis": bad_axis(2)}),
    "max_weight": Fn(sc.max_weight, {"p": P(3, 4)}, {"p": bad_probs((3, 4)), "axis": bad_axis(2)}),
    "saturated": Fn(sc.saturated, {"p": P(3, 4)},
                    {"p": bad_probs((3, 4)), "axis": bad_axis(2), "threshold": bad_real(0.0, 1.0)}),
    "softmax_jacobian": Fn(sc.softmax_jacobian, {"p": P(3, 4)},
                           {"p": st.one_of(bad_probs((3, 4)), st.just(np.full((2, 2 ** 14), 2.0 ** -14)))}),
    "jacobian_norm": Fn(sc.jacobian_norm, {"p": P(3, 4)}, {"p": bad_probs((3, 4))}),
    "draw_qkv": Fn(sc.draw_qkv, {"n": 4, "d_k": 8},
                   {"n": bad_int(1, 4096), "d_k": st.one_of(bad_int(1, 65536)), **SAMPLING_BAD, "dtype": bad_dtype()}),
    "rule_attention": Fn(sc.rule_attention, {**ATT, "rule": "qknorm"},
                         {**{a: ATT_BAD[a] for a in ("q", "k", "v", "causal")}, **RULE_BAD}),
    "rule_gradients": Fn(sc.rule_gradients, {**ATT, "grad_out": A(3, 2, seed=4), "rule": "qknorm"},
                         {**{a: ATT_BAD[a] for a in ("q", "k", "v", "causal")}, **RULE_BAD,
                          "grad_out": bad_array((3, 2), scalars=GRAD_SCALARS, extra=[A(3, 3)])}),
    "query_gradient_norms": Fn(sc.query_gradient_norms, {"n": 4, "d_k": 8, "rules": ("sqrt",)},
                               {"n": bad_int(2, 512), "d_k": bad_int(1, 65536), "rules": bad_rules(),
                                "reps": bad_int(1, 1024), **SAMPLING_BAD, "alpha": bad_real(0.0, 4.0),
                                "temperature": bad_real(1e-6, 1e6), "causal": bad_bool(),
                                "flush_round_off": bad_bool()}),
    "upstream_gradient": Fn(sc.upstream_gradient, {"n": 4, "d_v": 3},
                            {"n": bad_int(1, 4096), "d_v": bad_int(1, 65536), "seed": bad_int(0), "dtype": bad_dtype()}),
    "row_stats": Fn(sc.row_stats, {"weights": P(3, 4), "logits": A(3, 4)},
                    {"weights": st.one_of(bad_probs((3, 4)).filter(lambda a: not (isinstance(a, np.ndarray) and a.dtype == np.float64 and a.shape == (3, 4) and not np.isfinite(a).all())),
                                          st.just(np.zeros((3, 4))), st.just(P(3, 5))),
                     "logits": bad_array((3, 4), nan_ok=True, extra=[A(4, 3)]),
                     "visible": st.one_of(bad_array((3, 4), nan_ok=True, dtypes=[np.float64, np.int64, "U3"],
                                                    scalars=("abc", 3, True)),
                                          st.just(np.ones((3, 4))), st.just(np.zeros((3, 4), bool)),
                                          st.just(np.ones((4, 3), bool)))}),
    "rule_readouts": Fn(sc.rule_readouts, {**ATT, "grad_out": A(3, 2, seed=4), "rule": "qknorm"},
                        {**{a: ATT_BAD[a] for a in ("q", "k", "v", "causal")}, **RULE_BAD,
                         "grad_out": bad_array((3, 2), scalars=GRAD_SCALARS, extra=[A(3, 3)])}),
    "dot_histograms": Fn(sc.dot_histograms, {"d_k": 8, "m": 50, "rule": "ssmax", "n": 16},
                         {"d_k": bad_int(1, 65536), **SAMPLING_BAD, "sigma": bad_real(1e-150, 1e3), **RULE_BAD,
                          "m": bad_int(2, 1_000_000),
                          "bins": bad_int(1, 10_000), "n": bad_int(2, 2 ** 53)}),
    "sample_gram": Fn(sc.sample_gram, {"d_k": 8, "p": 2, "m": 3, "rng": np.random.default_rng(0)},
                      {"d_k": bad_int(1, 65536), "p": bad_int(1, 4096), "m": bad_int(1, 2 ** 26), "rng": bad_rng()}),
    "sweep": Fn(sc.sweep, {"d_ks": [4, 16], "rules": ("sqrt", "qknorm"), "n": 4, "samples": 2},
                {"d_ks": st.one_of(st.lists(bad_int(1, 65536), min_size=1, max_size=3),
                                   st.sampled_from([0, -4, HUGE, 3.5, float("nan"), True, [[4, 8]], [4, [8]]]),
                                   st.sampled_from([[], np.array([[4, 8]]), None, "abc", np.array([4.0, 8.0])])),
                 "rules": bad_rules(), "n": bad_int(2, 512), "samples": bad_int(2, 100_000),
                 **SAMPLING_BAD, "alpha": bad_real(0.0, 4.0), "temperature": bad_real(1e-6, 1e6)}),
    "dot_samples": Fn(sc.dot_samples, {"d_k": 8, "m": 5},
                      {"d_k": bad_int(1, 65536), "m": bad_int(1, 1_000_000), **SAMPLING_BAD,
                       "sigma": bad_real(1e-150, 1e3)}),
    "theory_logit_std": Fn(sc.theory_logit_std, {"d_k": 64},
                           {"d_k": bad_int(1, 2 ** 53), "sigma": bad_real(0.0, low_open=True), "rho": bad_real(0.0, 1.0),
                            "n": bad_int(1, 2 ** 53), "scale": bad_real(), "qknorm": bad_bool()}),
    "precision_sweep": Fn(sc.precision_sweep, {"d_ks": [4, 16], "n": 4},
                          {"d_ks": st.one_of(st.lists(bad_int(1, 65536), min_size=1, max_size=3),
                                             st.sampled_from([[], None, "abc", [4.5]])),
                           "n": bad_int(2, 256), **SAMPLING_BAD}),
    "first_breaks": Fn(sc.first_breaks, {"d_ks": [4, 16], "n": 4, "draws": 2},
                       {"d_ks": st.one_of(st.lists(bad_int(1, 65536), min_size=1, max_size=3),
                                          st.sampled_from([[], None, "abc", [4.5]])),
                        "n": bad_int(2, 256), "draws": bad_int(1, 200),
                        "order": st.one_of(st.text(max_size=8).filter(lambda s: s not in sc.ORDERS), st.integers(),
                                           st.sampled_from([None, True, ["after"], "AFTER"])),
                        **SAMPLING_BAD}),
    "TrainConfig": Fn(sc.TrainConfig, {}, {
        "d_k": bad_int(1, 4096), "rule": bad_rule(), "alpha": bad_real(0.0, 4.0), "temperature": bad_real(1e-6, 1e6),
        "n_keys": bad_int(2, 256), "n_classes": bad_int(2, 256), "d_in": bad_int(1, 1024), "d_v": bad_int(1, 1024),
        "batch": bad_int(1, 4096), "lr": bad_real(0.0, 10.0, low_open=True), "noise": bad_real(0.0, 100.0),
        "seed": bad_int(0), "q_init": bad_real(0.0, 1e3, low_open=True),
        "optimizer": st.sampled_from([None, "", "ADAM", "rmsprop", 1, ["adam"], True])}),
    "Rule": Fn(sc.Rule, {"name": "quarter", "label": "d_k^-1/4", "scale": lambda d, alpha, temperature: d ** -0.25},
               {"name": st.sampled_from([None, "", "  ", 3, b"quarter", ["quarter"], True]),
                "label": st.sampled_from([None, "", 0.25, b"x", ("d_k",)]),
                "scale": st.sampled_from([None, 0.25, "d ** -0.25", np.array([0.25])]),
                "normalizes": bad_bool(),
                "knobs": st.sampled_from([None, "alpha", ["alpha"], ("beta",), ("alpha", 3), 1]),
                "length": st.sampled_from([0.43, "log", np.log(16), True]),
                "cap": st.sampled_from([0.0, -50.0, float("nan"), float("inf"), "50", True, 10 ** 400])}),
    "Trainer": Fn(sc.Trainer, {"config": CFG}, {"config": st.sampled_from([None, {}, "sqrt", 1, CFG.__dict__])}),
    "train": Fn(sc.train, {"config": CFG, "steps": 1},
                {"config": st.sampled_from([None, {}, "sqrt", 1]), "steps": bad_int(0, 1_000_000)}),
}

FUNCTIONS.update({
    "two_token_curve": Fn(sc.two_token_curve, {"x": A(3)},
                          {"x": st.one_of(hnp.arrays(np.float64, st.just((3,)), elements=st.sampled_from([1.0, float("nan"), float("inf"), -float("inf")])).filter(lambda a: not np.isfinite(a).all()),
                                          st.sampled_from([None, "abc", 1j, [], np.zeros(0), np.ones(3, bool), True, [[1.0], [2.0, 3.0]], {"a": 1},
                                                           np.ones(3, np.complex128), np.ones(3, object), float("nan"), np.ones(3, "U3")]))}),
    "dial_attention": Fn(sc.dial_attention, {"s": 1.0, "n": 4},
                         {"s": bad_real(0.0, 1e4), "n": bad_int(2, 1024), "seed": bad_int(0), "causal": bad_bool(),
                          "offset": bad_real(-1e4, 1e4), "diagonal_std": bad_real(0.0, 1e4).filter(lambda x: x is not None)}),
    "dial_expectation": Fn(sc.dial_expectation, {"s": 1.0, "n": 4}, {"s": bad_real(0.0, 1e4), "n": bad_int(2, 1024)}),
    "settings_logit_moments": Fn(sc.settings_logit_moments, {"d_k": 64},
                                 {"d_k": bad_int(1, 2 ** 53), "sigma": bad_real(0.0, 1e3, low_open=True), "rho": bad_real(0.0, 1.0),
                                  **RULE_BAD, "n": bad_int(1, 2 ** 53)}),
    "output_similarity": Fn(sc.output_similarity, {"weights": P(3, 4), "v": A(4, 2)},
                            {"weights": st.one_of(bad_probs((3, 4)), st.just(P(3, 5)), st.just(P(2, 3, 4))),
                             "v": st.one_of(bad_array((4, 2), extra=[A(3, 2), A(4), A(2, 4, 2)]), st.just(np.zeros((4, 2))))}),
    "head_at_init": Fn(sc.head_at_init, {"d_model": 64, "heads": 4, "n": 8, "samples": 2},
                       {"d_model": bad_int(1, 65536), "heads": st.one_of(bad_int(1, 64), st.sampled_from([3, 5, 7, 63])),
                        **{a: bad_real(1e-6, 1e3).filter(lambda x: x is not None) for a in ("init_std", "q_std", "k_std")},
                        "input_std": bad_real(1e-6, 1e3), "layernorm": bad_bool(),
                        "qk_norm": st.sampled_from([None, True, False, "", "HEAD", "qknorm", 1, ["head"]]),
                        "scale": st.sampled_from([None, True, "sqrt_d_model", "d_model", 0.125, "SQRT", ("sqrt",)]),
                        "n": bad_int(2, 4096), "samples": bad_int(2, 4096), "seed": bad_int(0),
                        "d_k": bad_int(1, 4096).filter(lambda x: x is not None),
                        "factor": bad_real(0.0, 1e3, low_open=True).filter(lambda x: x is not None),
                        "softcap": bad_real(0.0, 1e6, low_open=True).filter(lambda x: x is not None),
                        "norm_width": bad_int(16, 4 * 65536).filter(lambda x: x is not None),
                        "k_norm_width": bad_int(16, 4 * 65536).filter(lambda x: x is not None)}),
    "preset_at_init": Fn(sc.preset_at_init, {"name": "gpt2", "n": 8, "samples": 2},
                         {"name": st.one_of(st.text(max_size=8).filter(lambda s: s not in sc.PRESETS),
                                            st.sampled_from([None, 3, b"gpt2", ["gpt2"], "GPT2", True])),
                          "n": bad_int(2, 4096), "samples": bad_int(2, 4096), "seed": bad_int(0)}),
    "random_geometry": Fn(sc.random_geometry, {"d_ks": [4, 16], "samples": 8},
                          {"d_ks": st.one_of(st.lists(bad_int(1, 65536), min_size=1, max_size=3),
                                             st.sampled_from([[], None, "abc", [[4]], np.array([4.5])])),
                           "sigma": bad_real(1e-150, 1e3), "samples": bad_int(2, 2 ** 20), "seed": bad_int(0)}),
    "expected_norm": Fn(sc.expected_norm, {"d_k": 16},
                        {"d_k": bad_int(1, 65536), "sigma": bad_real(0.0, 1e3, low_open=True)}),
    "length_path": Fn(sc.length_path, {"ns": [2, 16], "rules": ("sqrt", "ssmax"), "samples": 4},
                      {"ns": st.one_of(st.lists(bad_int(2, 4096), min_size=1, max_size=3),
                                       st.sampled_from([[], None, "abc", [[4]], np.array([4.5]), 1])),
                       "rules": bad_rules(), "d_k": bad_int(1, 65536), "samples": bad_int(2, 4096),
                       **SAMPLING_BAD, "alpha": bad_real(0.0, 4.0), "temperature": bad_real(1e-6, 1e6)}),
    "rho_path": Fn(sc.rho_path, {"rhos": [0.0, 0.5], "d_k": 16, "n": 4, "samples": 2, "rules": ("sqrt", "qknorm")},
                   {"rhos": st.one_of(st.lists(bad_real(0.0, 1.0), min_size=1, max_size=3),
                                      st.sampled_from([[], None, "abc", [[0.5]], np.linspace(0, 1, 102), np.array([0.5, 2.0])])),
                    "rules": bad_rules(), "d_k": bad_int(1, 65536), "n": bad_int(2, 512),
                    "sigma": bad_real(0.0, 1e3, low_open=True), "samples": bad_int(2, 100_000), "seed": bad_int(0),
                    "alpha": bad_real(0.0, 4.0), "temperature": bad_real(1e-6, 1e6)}),
})

# head_sharpness: the model's weights and a batch of CFG's shapes
WEIGHTS = init_params(np.random.default_rng(0), CFG)
BATCH = make_batch(np.random.default_rng(1), CFG)


def bad_weights():
    """Not the four weights of CFG's shapes: a missing, extra or misshapen one, or one that is not finite floats."""
    one_bad = st.one_of(*(st.builds(lambda a, n=name: {**WEIGHTS, n: a}, bad_array(w.shape, extra=[w[:, :1], w[None], w[0]]))
                          for name, w in WEIGHTS.items()))
    return st.one_of(one_bad, st.sampled_from([None, {}, "Wq", [1.0], list(WEIGHTS.values()), {"Wq": WEIGHTS["Wq"]},
                                               {**WEIGHTS, "Wz": WEIGHTS["Wq"]}, {**WEIGHTS, 3: 1.0}]))


def bad_batch():
    """Not a Batch of CFG's shape: keys or query misshapen or not finite, labels or targets out of range or not ints."""
    k, lab, q, t = BATCH.keys, BATCH.labels, BATCH.query, BATCH.target
    return st.one_of(
        st.builds(lambda a: replace(BATCH, keys=a), bad_array(k.shape, extra=[k[:, :2], k[..., :2], k[0]])),
        st.builds(lambda a: replace(BATCH, query=a), bad_array(q.shape, extra=[q[:1], q[:, :, :2], q[:, 0]])),
        st.sampled_from([None, {}, BATCH.__dict__, (k, lab, q, t),
                         replace(BATCH, labels=lab + CFG.n_classes), replace(BATCH, labels=lab - 1),
                         replace(BATCH, labels=lab.astype(float)), replace(BATCH, labels=lab[:, :2]),
                         replace(BATCH, labels=[[0, 1, "a"]] * 2), replace(BATCH, target=t + CFG.n_keys),
                         replace(BATCH, target=t.astype(bool)), replace(BATCH, target=t[:1]),
                         replace(BATCH, target=None)]))


FUNCTIONS["head_sharpness"] = Fn(sc.head_sharpness, {"params": WEIGHTS, "batch": BATCH, "config": CFG},
                                 {"params": bad_weights(), "batch": bad_batch(),
                                  "config": st.sampled_from([None, {}, "sqrt", 1, CFG.__dict__, sc.Trainer(CFG)])})
CASES = [(name, arg) for name, fn in FUNCTIONS.items() for arg in fn.hostile]


def test_every_public_function_is_covered():
    """Each public callable in sdpa_core.__all__ has hostile cases for each of its arguments."""
    import inspect
    public = {n for n in sc.__all__ if callable(getattr(sc, n))}
    public -= {"Sweep", "PrecisionSweep", "StepResult"}  # result containers, built by the library
    assert public == set(FUNCTIONS)
    for name, fn in FUNCTIONS.items():
        if name in ("TrainConfig", "Rule"):
            params = {f.name for f in fields(getattr(sc, name))}
        else:
            params = set(inspect.signature(fn.call).parameters)
        assert params == set(fn.hostile), name


def _named(message: str, arg: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(arg)}(?![A-Za-z0-9_])", message) is not None


@pytest.mark.parametrize("name,arg", CASES, ids=[f"{n}-{a}" for n, a in CASES])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_hostile_argument_is_refused_with_its_name(name, arg, data):
    fn = FUNCTIONS[name]
    value = data.draw(fn.hostile[arg], label=arg)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no RuntimeWarning may escape either
        with pytest.raises((ValueError, TypeError)) as info:
            fn.call(**{**fn.valid, arg: value})
    assert type(info.value) in (ValueError, TypeError), repr(info.value)
    assert _named(str(info.value), arg), (name, arg, str(info.value))


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_valid_arguments_pass(name):
    """The baseline each hostile case starts from is itself valid: the refusal is the hostile value's."""
    fn = FUNCTIONS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fn.call(**fn.valid)


def test_a_rules_cap_takes_scalars_and_checks_out():
    """Issue 57: ``RULES['softcap'].capped(3.0)`` failed with numpy's "return arrays must be of ArrayType", and an
    ``out=`` of the wrong shape or dtype gave numpy's errors or truncated to int. Scalars and arrays both work, for
    every rule; a wrong ``out`` is refused naming itself."""
    import math

    import numpy as np
    import pytest

    import sdpa_core as sc

    for name, rule in sc.RULES.items():
        for z in (3.0, 3, np.float32(3.0), np.array(3.0)):
            got = float(rule.capped(z))
            want = 3.0 if rule.cap is None else rule.cap * math.tanh(3.0 / rule.cap)
            assert math.isclose(got, want, rel_tol=1e-6), (name, z, got)
        for bad in (np.zeros(2), np.zeros(3, dtype=np.int64), [0.0, 0.0, 0.0]):
            with pytest.raises(ValueError, match="out must be"):
                rule.capped(np.ones(3), out=bad)
        out = np.empty(3)
        assert rule.capped(np.ones(3), out=out) is out
