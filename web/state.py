"""The page's state: every control as a documented parameter, every derived result computed here.

No widgets and no Panel in this module (Panel's to-do/DataStore pattern): views build widgets
with ``from_param`` and read the results; tests drive these objects directly.
All maths comes from ``sdpa_core``; this module only chooses what to compute and bounds the work.
"""
from __future__ import annotations

import math
import time

import numpy as np
import param

import sdpa_core as sc

from . import claims

VIEWS = ("playground", "variance", "saturation", "training", "precision", "questions")
VIEW_LABELS = {
    "playground": "Playground", "variance": "Why the variance grows", "saturation": "Saturation & gradients",
    "training": "Train it", "precision": "Half precision", "questions": "Questions",
}
#: d_k choices: every power of two and the 1.5x step between, so 2**k is one arrow-key press away.
D_K_OPTIONS = sorted({2 ** k for k in range(13)} | {3 * 2 ** k for k in range(11)})
TRAIN_D_K_OPTIONS = [2 ** k for k in range(2, 13)]
LR_OPTIONS = [0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0]
SAMPLES_OPTIONS = [8, 16, 32, 64, 128, 256]
DTYPES = ("float64", "float32", "float16")
ORDER_LABELS = {"none": "no scaling", "after": "scale after q·kᵀ", "before": "scale q before the matmul"}
RULE_LABELS = claims.RULE_LABELS

#: Bounds that keep every setting interactive (numpy on one core, or Pyodide in a tab).
MAX_N = 64
MAX_D_K = 4096
MAX_PLAYGROUND_WORK = MAX_N * MAX_N * MAX_D_K   # n * n * d_k for one matmul
SWEEP_BUDGET = 65536                            # samples * n * n per d_k and rule
PRECISION_N = 16                                 # float16 matmuls are not BLAS: keep the sweep at n <= 16
HIST_SAMPLES = 20000
MAX_TRAIN_STEPS = 1500
GRADIENT_ROWS = 128                              # query rows pooled for the per-query gradient plot (~30 ms at d_k = 1024)

#: The shared (sidebar) settings each view uses; the sidebar disables the others and says why.
VIEW_SETTINGS = {
    "playground": {"d_k", "n", "sigma", "rho", "rule", "alpha", "temperature", "causal", "dtype", "seed"},
    "variance": {"d_k", "n", "sigma", "rho", "rule", "alpha", "temperature", "seed"},
    "saturation": {"d_k", "n", "sigma", "rho", "rule", "alpha", "temperature", "seed"},
    "training": {"seed", "alpha", "temperature"},
    "precision": {"d_k", "n", "sigma", "rho", "seed"},
    "questions": set(),
}
SHARED_SETTINGS = ("d_k", "n", "sigma", "rho", "rule", "alpha", "temperature", "causal", "dtype", "seed")
_WHY_UNUSED = {
    ("training", "d_k"): "Train it has its own d_k (next to the plots).",
    ("training", "rule"): "Train it compares the two rules chosen next to the plots.",
    ("training", "n"): "The trained head sees 8 keys per example.",
    ("training", "sigma"): "The trained head's q and k come from its weights, not from σ.",
    ("training", "rho"): "The trained head's q and k come from its weights, not from ρ.",
    ("precision", "rule"): "The half-precision view compares 1/√d_k before and after the matmul with no scaling.",
    ("precision", "dtype"): "The half-precision view shows all three dtypes at once.",
}
_KNOB_WORDS = {"alpha": "α", "temperature": "the temperature"}
_ONLY_PLAYGROUND = {"causal": "Only the Playground applies the causal mask.",
                    "dtype": "Only the Playground computes in a chosen dtype (Half precision compares all three)."}


def nearest_option(value: float, options) -> int:
    """The option closest to ``value`` on a log scale (d_k choices are geometric)."""
    value = max(float(value), 1e-12)
    return min(options, key=lambda o: (abs(math.log(o) - math.log(value)), o))


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
        visible = np.tri(n, dtype=bool) if self.causal else None
        knobs = {"alpha": self.alpha, "temperature": self.temperature}
        with np.errstate(all="ignore"):   # float16 may overflow: the readouts say so
            rows = {r: np.linalg.norm(np.asarray(sc.rule_gradients(q, k, v, g, r, causal=self.causal, **knobs)[0],
                                                 dtype=np.float64), axis=-1)
                    for r in dict.fromkeys(("none", self.rule, "sqrt"))}
        ref = float(np.median(rows["sqrt"]))
        sides = {}
        for side, rule in (("none", "none"), ("rule", self.rule)):
            _, weights, logits = sc.rule_attention(q, k, v, rule, causal=self.causal, **knobs)
            w64 = np.asarray(weights, dtype=np.float64)
            norms = rows[rule]
            finite = bool(np.isfinite(norms).all())
            sides[side] = {
                "rule": rule, "weights": w64, "stats": sc.row_stats(w64, logits, visible),
                "overflow": not np.isfinite(np.asarray(logits, dtype=np.float64)).all(),
                "nan_rows": int((~np.isfinite(w64)).any(axis=-1).sum()),
                "scale": sc.logit_scale(d_k, rule, **knobs),
                "grad": {"norms": norms, "floor": _round_off(q, k, v, g, rule, **knobs),
                         "median": float(np.median(norms)) if finite else float("nan"),
                         "total": float(np.sqrt((norms ** 2).sum())) if finite else float("nan"),
                         "starved": int((norms < claims.STARVED * ref).sum()) if finite and ref > 0 else None},
            }
            sides[side]["stats"].update(grad_floor=sides[side]["grad"]["floor"],
                                        grad_median=sides[side]["grad"]["median"],
                                        grad_total=sides[side]["grad"]["total"],
                                        grad_starved=sides[side]["grad"]["starved"])
        text = claims.verdict(sides, n=n, d_k=d_k, dtype=self.dtype, rho=self.rho, causal=self.causal)
        # one update: every watcher sees the new weights and the sentence about them together
        self.param.update(playground=sides, verdict=text,
                          timings={**self.timings, "playground": time.perf_counter() - t0})

    def unused_settings(self, train: "TrainingState | None" = None) -> dict[str, str]:
        """Sidebar settings the current view ignores, each with the reason shown next to it."""
        view, used = self.view, VIEW_SETTINGS[self.view]
        rules = {train.rule_a, train.rule_b} if (view == "training" and train is not None) else {self.rule}
        if view == "saturation":
            rules = set(sc.RULE_NAMES)   # every rule is plotted there
        out = {}
        for name in SHARED_SETTINGS:
            if name not in used:
                out[name] = (_WHY_UNUSED.get((view, name)) or
                             ("Each question's button sets every setting it needs." if view == "questions" else None) or
                             _ONLY_PLAYGROUND.get(name) or f"The {VIEW_LABELS[view]} view does not use it.")
            elif name in sc.scaling.KNOBS and not any(name in sc.RULES[r].knobs for r in rules):
                users = [RULE_LABELS[r] for r, rule in sc.RULES.items() if name in rule.knobs]
                out[name] = f"Only {' and '.join(users)} uses {_KNOB_WORDS[name]}."
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
                                                 temperature=self.temperature)
        self._gradients_key = key
        self.timings = {**self.timings, "gradients": time.perf_counter() - t0}

    def _compute_dots(self):
        key = (self.d_k, self.sigma, self.rho, self.seed, self.rule, self.alpha, self.temperature)
        if key == self._dots_key:
            return
        self.dots = dot_histograms(self.d_k, sigma=self.sigma, rho=self.rho, seed=self.seed, rule=self.rule,
                                   alpha=self.alpha, temperature=self.temperature)
        self._dots_key = key

    def _compute_precision(self):
        key = (min(self.n, PRECISION_N), self.sigma, self.rho, self.seed)
        if key == self._precision_key:
            return
        t0 = time.perf_counter()
        self.precision = sc.precision_sweep(sc.POW2_D_K, n=key[0], sigma=self.sigma, rho=self.rho, seed=self.seed)
        self._precision_key = key
        self.timings = {**self.timings, "precision": time.perf_counter() - t0}


verdict = claims.verdict


def _round_off(q, k, v, g, rule: str, *, alpha: float, temperature: float) -> float:
    """Size below which a row's ||dL/dq|| is round-off in q's dtype, shown as "≈ 0": eps times the size
    the row's gradient has when its softmax is not saturated, |scale| max|G V^T| max|k| n (over min|q|
    under QK-norm, whose backward divides by |q|). A saturated row's true gradient (1e-60) comes out
    as anything below that, and differs between numpy builds (1e-19 here, 1e-22 in Pyodide)."""
    q64, k64 = (np.asarray(a, dtype=np.float64) for a in (q, k))
    normalizes = sc.RULES[rule].normalizes
    if normalizes:
        k64 = k64 / np.maximum(np.linalg.norm(k64, axis=-1, keepdims=True), 1e-300)
    size = abs(sc.logit_scale(q64.shape[-1], rule, alpha=alpha, temperature=temperature))
    with np.errstate(all="ignore"):
        size *= float(np.abs(np.asarray(g, np.float64) @ np.asarray(v, np.float64).T).max())
        size *= float(np.linalg.norm(k64, axis=-1).max()) * q64.shape[0] * 4
        if normalizes:
            size /= max(float(np.linalg.norm(q64, axis=-1).min()), 1e-300)
    return float(np.finfo(np.asarray(q).dtype).eps) * size if np.isfinite(size) else 0.0


def dot_histograms(d_k: int, *, sigma: float, rho: float, seed: int, rule: str, alpha: float, temperature: float,
                   m: int = HIST_SAMPLES, bins: int = 60) -> dict:
    """Histograms of q·k (unscaled) and of the logit under ``rule`` for one query-key pair, with the
    normal curves theory predicts: mean ρ d_k σ², variance (1+ρ²) d_k σ⁴ before scaling.

    Drawn from the exact 2x2 Gram matrix of [q, z] (sdpa_core.sample_gram), so d_k = 4096 is as cheap as 1.
    """
    rng = np.random.default_rng(seed)
    g = sc.sample_gram(d_k, 2, m, rng) * (sigma * sigma)
    c = math.sqrt(1 - rho * rho)
    dot = rho * g[:, 0, 0] + c * g[:, 0, 1]
    mean0, std0 = rho * d_k * sigma ** 2, math.sqrt((1 + rho * rho) * d_k) * sigma ** 2
    if sc.RULES[rule].normalizes:
        k2 = rho * rho * g[:, 0, 0] + 2 * rho * c * g[:, 0, 1] + c * c * g[:, 1, 1]
        scaled = dot / np.sqrt(np.maximum(g[:, 0, 0] * k2, 1e-300)) / temperature
        # large-d_k limit of cos(q, k): N(ρ, (1-ρ²)²/d_k)
        mean1, std1 = rho / temperature, max((1 - rho * rho) / math.sqrt(d_k), 1e-9) / temperature
    else:
        s = sc.logit_scale(d_k, rule, alpha=alpha, temperature=temperature)
        scaled = dot * s
        mean1, std1 = mean0 * s, std0 * s
    return {"unscaled": _hist(dot, mean0, std0, bins), "scaled": _hist(scaled, mean1, std1, bins),
            "theory_mean": (mean0, mean1), "theory_std": (std0, std1),
            "sample_mean": (float(dot.mean()), float(scaled.mean())), "sample_std": (float(dot.std()), float(scaled.std()))}


def _hist(x: np.ndarray, mean: float, std: float, bins: int) -> dict:
    lo, hi = np.percentile(x, [0.1, 99.9])
    lo, hi = min(lo, mean - 4 * std), max(hi, mean + 4 * std)
    if not hi > lo:
        lo, hi = lo - 1, hi + 1
    counts, edges = np.histogram(x, bins=bins, range=(lo, hi), density=True)
    grid = np.linspace(lo, hi, 200)
    pdf = np.exp(-0.5 * ((grid - mean) / std) ** 2) / (std * math.sqrt(2 * math.pi)) if std > 0 else 0 * grid
    return {"left": edges[:-1], "right": edges[1:], "density": counts, "x": grid, "pdf": pdf}


class TrainingState(param.Parameterized):
    """Two runs of sdpa_core's tiny attention model that differ only in the scaling rule."""

    rule_a = param.Selector(default="none", objects=list(sc.RULE_NAMES), doc="Scaling rule of run A.")
    rule_b = param.Selector(default="sqrt", objects=list(sc.RULE_NAMES), doc="Scaling rule of run B.")
    lr = param.Number(default=0.01, bounds=(min(LR_OPTIONS), max(LR_OPTIONS)), doc="Adam learning rate (both runs).")
    d_k = param.Integer(default=1024, bounds=(min(TRAIN_D_K_OPTIONS), max(TRAIN_D_K_OPTIONS)),
                        doc="Key/query width of the trained head (both runs).")
    running = param.Boolean(default=False, doc="True while the animation advances the runs.")
    status = param.String(default="", doc="Plain-words status of both runs.")
    version = param.Integer(default=0, doc="Bumped on reset, so views clear their curves.")

    def __init__(self, lab: LabState | None = None, **params):
        super().__init__(**params)
        self.lab = lab
        self.reset()
        if lab is not None:  # the shared seed, α and τ are part of each run's config
            lab.param.watch(lambda *_: self.reset(), ["seed", "alpha", "temperature"])

    def config(self, rule: str):
        lab = self.lab
        return sc.TrainConfig(d_k=self.d_k, rule=rule, lr=self.lr, seed=lab.seed if lab else 0,
                              alpha=lab.alpha if lab else 0.5, temperature=lab.temperature if lab else 0.1)

    @param.depends("rule_a", "rule_b", "lr", "d_k", watch=True)
    def reset(self):
        self.running = False
        self.trainers = {"a": sc.Trainer(self.config(self.rule_a)), "b": sc.Trainer(self.config(self.rule_b))}
        self._per_step = 0.002
        self.version += 1
        self._update_status()

    @property
    def steps_done(self) -> int:
        return max(t.steps_done for t in self.trainers.values())

    @property
    def finished(self) -> bool:
        return self.steps_done >= MAX_TRAIN_STEPS or all(t.diverged for t in self.trainers.values())

    def advance(self, steps: int | None = None, budget: float = 0.05) -> dict:
        """Advance both runs by ``steps`` (or as many as fit in ``budget`` seconds); returns the new
        history points per run: ``{"a": {"step": [...], "loss": [...], "accuracy": [...]}, "b": ...}``."""
        if steps is None:
            steps = int(max(1, min(25, budget / max(self._per_step, 1e-5))))
        steps = max(0, min(int(steps), MAX_TRAIN_STEPS - self.steps_done))
        t0 = time.perf_counter()
        new = {}
        for key, tr in self.trainers.items():
            start = tr.steps_done
            with np.errstate(all="ignore"):
                tr.run(steps)
            new[key] = {k: list(v[start:]) for k, v in tr.history.items()}
        if steps:
            self._per_step = (time.perf_counter() - t0) / steps
        if self.finished:
            self.running = False
        self._update_status()
        return new

    def example(self) -> dict:
        """The fixed example's attention weights under each run's current parameters, and its target key."""
        out = {}
        for key, tr in self.trainers.items():
            with np.errstate(all="ignore"):
                w, target = tr.example_weights()
            w = np.asarray(w, dtype=np.float64)
            out[key] = (np.where(np.isfinite(w), w, 0.0), target)
        return out

    def history_csv(self) -> str:
        lines = ["run,rule,step,loss,accuracy"]
        for key, tr in self.trainers.items():
            for s, lo, ac in zip(tr.history["step"], tr.history["loss"], tr.history["accuracy"]):
                lines.append(f"{key.upper()},{tr.config.rule},{s},{lo:.6g},{ac:.6g}")
        return "\n".join(lines) + "\n"

    def _update_status(self):
        parts = []
        for key, tr in self.trainers.items():
            name = f"Run {key.upper()} ({RULE_LABELS[tr.config.rule]})"
            if tr.diverged:
                parts.append(f"{name} stopped: {tr.message}.")
            elif tr.history["loss"]:
                parts.append(f"{name}: step {tr.steps_done}, loss {tr.history['loss'][-1]:.3f}, "
                             f"accuracy {tr.history['accuracy'][-1]:.0%}.")
            else:
                parts.append(f"{name}: not started (chance loss {tr.chance_loss:.2f}).")
        if self.steps_done >= MAX_TRAIN_STEPS:
            parts.append(f"Stopped after {MAX_TRAIN_STEPS} steps; press Reset to start again.")
        self.status = " ".join(parts)
