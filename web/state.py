"""The page's shared state: every sidebar control as a documented parameter, and every result the views
show computed from them (``LabState``). The two training runs are in ``training_state.py``, the choices and
bounds in ``options.py``.

No widgets and no Panel in this module (Panel's to-do/DataStore pattern): views build widgets
with ``from_param`` and read the results; tests drive these objects directly.
All maths comes from ``sdpa_core``; this module only chooses what to compute and bounds the work.
"""
from __future__ import annotations

import time

import numpy as np
import param

import sdpa_core as sc

from . import claims
from .options import (D_K_OPTIONS, DTYPES, GRADIENT_ROWS, HIST_SAMPLES, KNOB_WORDS, LR_OPTIONS, MAX_D_K, MAX_N,
                      MAX_PLAYGROUND_WORK, MAX_TRAIN_STEPS, ONLY_PLAYGROUND, ORDER_LABELS, PRECISION_N, RULE_LABELS,
                      SAMPLES_OPTIONS, SHARED_SETTINGS, SWEEP_BUDGET, TRAIN_D_K_OPTIONS, VIEW_LABELS, VIEW_SETTINGS,
                      VIEWS, WHY_UNUSED, nearest_option)
from .training_state import TrainingState

# Importers of the page's state (web/page.py, web/urlstate.py, the views, the tests) may take these from here.
__all__ = ["LabState", "TrainingState", "D_K_OPTIONS", "DTYPES", "LR_OPTIONS", "MAX_TRAIN_STEPS", "ORDER_LABELS",
           "PRECISION_N", "RULE_LABELS", "SAMPLES_OPTIONS", "TRAIN_D_K_OPTIONS", "VIEW_LABELS", "VIEWS",
           "nearest_option"]


class LabState(param.Parameterized):
    """Controls shared by all views, and the results that depend on them."""

    view = param.Selector(default="playground", objects=list(VIEWS), doc="Which view of the page is shown.")
    d_k = param.Integer(default=64, bounds=(1, MAX_D_K),
                        doc="Key/query dimension per head: the length of each q and k vector.")
    n = param.Integer(default=16, bounds=(2, MAX_N), doc="Sequence length: number of queries and keys.")
    sigma = param.Number(default=1.0, bounds=(0.1, 8.0), doc="Standard deviation of every entry of q and k.")
    rho = param.Number(default=0.0, bounds=(0.0, 1.0),
                       doc="Correlation between each query and its own key (k_i = ρ q_i + √(1-ρ²) z_i).")
    seed = param.Integer(default=0, bounds=(0, 99999), doc="Random seed for q, k and v.")
    rule = param.Selector(default="sqrt", objects=list(sc.RULE_NAMES),
                          doc="Scaling rule applied to q·k before the softmax (compared with no scaling).")
    alpha = param.Number(default=0.5, bounds=(0.0, 1.5), doc="Exponent of the custom rule: scale = d_k^-α.")
    temperature = param.Number(default=0.1, bounds=(0.02, 2.0),
                               doc="QK-norm temperature: logits = cos(q, k) / temperature.")
    causal = param.Boolean(default=False, doc="Causal mask: query i only sees keys j ≤ i.")
    dtype = param.Selector(default="float64", objects=list(DTYPES),
                           doc="Floating-point type the playground computes in.")
    query = param.Integer(default=0, bounds=(0, MAX_N - 1), doc="Which query's weights the bar chart shows.")
    samples = param.Integer(default=32, bounds=(min(SAMPLES_OPTIONS), max(SAMPLES_OPTIONS)),
                            doc="Monte-Carlo samples per d_k in the sweeps.")
    order = param.Selector(default="none", objects=list(sc.ORDERS),
                           doc="Half precision: scale the logits after the matmul, before it, or not at all.")

    # derived (read-only for views)
    playground = param.Dict(default=None, doc="Both sides of the playground: weights, logits, readouts, gradients.")
    verdict = param.String(default="", doc="Plain sentences comparing no scaling with the chosen rule "
                                           "(published together with ``playground``).")
    gradients = param.Dict(default=None, doc="Rule -> ||dL/dq_i|| of GRADIENT_ROWS query rows (saturation view).")
    dots = param.Dict(default=None, doc="Histogram data of q·k at the current d_k (variance view).")
    sweep = param.Parameter(default=None, doc="sdpa_core.Sweep over all d_k and rules (variance/saturation views).")
    sweep_samples = param.Integer(default=0, doc="Samples actually used by the sweep (after the work cap).")
    precision = param.Parameter(default=None, doc="sdpa_core.PrecisionSweep (half-precision view).")
    timings = param.Dict(default={}, doc="Seconds spent on the last computation of each result.")

    _playground_deps = ["d_k", "n", "sigma", "rho", "seed", "rule", "alpha", "temperature", "causal", "dtype"]

    def __init__(self, **params):
        super().__init__(**params)
        self._sweep_key = self._dots_key = self._precision_key = self._gradients_key = None
        self._refresh_lazy()

    # ---- playground -------------------------------------------------------------------------
    @param.depends("n", watch=True, on_init=True)
    def _clamp_query(self):
        if self.query > self.n - 1:
            self.query = self.n - 1

    @param.depends(*_playground_deps, watch=True, on_init=True)
    def _compute_playground(self):
        t0 = time.perf_counter()
        n, d_k = self.n, self.d_k
        assert n * n * d_k <= MAX_PLAYGROUND_WORK
        dtype = np.dtype(self.dtype).type
        q, k, v = sc.draw_qkv(n, d_k, sigma=self.sigma, rho=self.rho, seed=self.seed, dtype=dtype)
        g = sc.upstream_gradient(n, d_k, seed=self.seed, dtype=dtype)
        knobs = {"alpha": self.alpha, "temperature": self.temperature, "causal": self.causal}
        # each side's weights, readouts and gradient reaching q; 1/sqrt(d_k)'s median row is the reference
        # a starved row is measured against
        out = {r: sc.rule_readouts(q, k, v, g, r, **knobs) for r in dict.fromkeys(("none", self.rule, "sqrt"))}
        ref = float(np.median(out["sqrt"]["dq_norms"]))
        sides = {}
        for side, rule in (("none", "none"), ("rule", self.rule)):
            r = out[rule]
            # below dq_floor a norm is float64 round-off (a saturated row's 1e-60 comes out as 1e-19 in
            # CPython, 1e-22 in Pyodide): it reads "≈ 0"
            grad = {"floor": r["dq_floor"], **claims.gradient_figures(r["dq_norms"], ref)}
            stats = {**r["stats"], "grad_floor": grad["floor"], "grad_median": grad["median"],
                     "grad_total": grad["total"], "grad_starved": grad["starved"]}
            sides[side] = {"rule": rule, "weights": r["weights"], "stats": stats, "overflow": r["overflow"],
                           "nan_rows": r["nan_rows"], "scale": r["scale"], "grad": grad}
        text = claims.verdict(sides, n=n, d_k=d_k, dtype=self.dtype, rho=self.rho, causal=self.causal)
        # one update: every watcher sees the new weights and the sentence about them together
        self.param.update(playground=sides, verdict=text,
                          timings={**self.timings, "playground": time.perf_counter() - t0})

    def unused_settings(self, train: TrainingState | None = None) -> dict[str, str]:
        """Sidebar settings the current view ignores, each with the reason shown next to it."""
        view, used = self.view, VIEW_SETTINGS[self.view]
        rules = {train.rule_a, train.rule_b} if (view == "training" and train is not None) else {self.rule}
        if view == "saturation":
            rules = set(sc.RULE_NAMES)   # every rule is plotted there
        out = {}
        for name in SHARED_SETTINGS:
            if name not in used:
                out[name] = (WHY_UNUSED.get((view, name)) or
                             ("Each question's button sets every setting it needs." if view == "questions" else None) or
                             ONLY_PLAYGROUND.get(name) or f"The {VIEW_LABELS[view]} view does not use it.")
            elif name in sc.scaling.KNOBS and not any(name in sc.RULES[r].knobs for r in rules):
                users = [RULE_LABELS[r] for r, rule in sc.RULES.items() if name in rule.knobs]
                out[name] = f"Only {' and '.join(users)} uses {KNOB_WORDS[name]}."
        return out

    # ---- lazily computed sweeps: only for the view that shows them -----------------------------
    @param.depends("view", "d_k", "n", "sigma", "rho", "seed", "rule", "alpha", "temperature", "samples",
                   watch=True)
    def _refresh_lazy(self):
        if self.view == "variance":
            self._compute_dots()
        if self.view in ("variance", "saturation"):
            self._compute_sweep()
        if self.view == "saturation":
            self._compute_gradients()
        if self.view == "precision":
            self._compute_precision()

    @param.depends("order", watch=True)
    def _refresh_precision(self):
        if self.view == "precision":
            self._compute_precision()

    def effective_samples(self) -> int:
        """Samples per d_k after the work cap (samples * n * n <= SWEEP_BUDGET)."""
        return int(max(4, min(self.samples, SWEEP_BUDGET // (self.n * self.n))))

    def _compute_sweep(self):
        key = (self.n, self.sigma, self.rho, self.seed, self.alpha, self.temperature, self.effective_samples())
        if key == self._sweep_key:
            return
        t0 = time.perf_counter()
        self.sweep_samples = self.effective_samples()
        self.sweep = sc.sweep(sc.POW2_D_K, sc.RULE_NAMES, n=self.n, samples=self.sweep_samples, sigma=self.sigma,
                              rho=self.rho, alpha=self.alpha, temperature=self.temperature, seed=self.seed)
        self._sweep_key = key
        self.timings = {**self.timings, "sweep": time.perf_counter() - t0}

    def _compute_gradients(self):
        key = (self.d_k, self.n, self.sigma, self.rho, self.seed, self.alpha, self.temperature)
        if key == self._gradients_key:
            return
        t0 = time.perf_counter()
        self.gradients = sc.query_gradient_norms(self.n, self.d_k, sc.RULE_NAMES, reps=max(1, GRADIENT_ROWS // self.n),
                                                 sigma=self.sigma, rho=self.rho, seed=self.seed, alpha=self.alpha,
                                                 temperature=self.temperature, flush_round_off=True)
        self._gradients_key = key
        self.timings = {**self.timings, "gradients": time.perf_counter() - t0}

    def _compute_dots(self):
        key = (self.d_k, self.sigma, self.rho, self.seed, self.rule, self.alpha, self.temperature)
        if key == self._dots_key:
            return
        self.dots = sc.dot_histograms(self.d_k, sigma=self.sigma, rho=self.rho, seed=self.seed, rule=self.rule,
                                      alpha=self.alpha, temperature=self.temperature, m=HIST_SAMPLES)
        self._dots_key = key

    def _compute_precision(self):
        key = (min(self.n, PRECISION_N), self.sigma, self.rho, self.seed)
        if key == self._precision_key:
            return
        t0 = time.perf_counter()
        self.precision = sc.precision_sweep(sc.POW2_D_K, n=key[0], sigma=self.sigma, rho=self.rho, seed=self.seed)
        self._precision_key = key
        self.timings = {**self.timings, "precision": time.perf_counter() - t0}
