"""A tiny single-head attention model on a toy retrieval task, with hand-written forward/backward.

Task: an example is ``n_keys`` random key vectors ``x_j`` (d_in) each carrying a class label
``c_j``, and one query, a noisy copy of one key ``x_t``. The model must output ``c_t``: it can
only do that by attending to the key that matches the query. Chance accuracy is 1/n_classes.

Model (one head, shapes per example)::

    q = x_query Wq          (1, d_k)     K = X Wk            (n, d_k)
    V = Wv[c]               (n, d_v)     out, w = attention(q, K, V, scale=rule)
    logits = out Wo         (1, C)       loss = cross-entropy(logits, c_t)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._checks import _asarray, finite, float_array, integer, real
from .attention import attention, cap_slope, _backward_from_weights
from .scaling import RULES, check_rule, logit_scale, qk_normalize, qk_normalize_backward
from .softmax import unchecked_log_softmax
from .stats import SATURATION, entropy_from_logits

__all__ = [
    "TrainConfig",
    "OPTIMIZERS",
    "PARAMS",
    "Batch",
    "make_batch",
    "clear_example",
    "init_params",
    "loss_and_grads",
    "head_sharpness",
]


#: The optimizers a run can use (sdpa_core.train).
OPTIMIZERS = ("adam", "sgd")
#: The model's weights, in the order of the forward pass: W_q and W_k say where to look (the query/key path),
#: W_v and W_o what to read there (the value path).
PARAMS = ("Wq", "Wk", "Wv", "Wo")
#: Cap on the numbers one training step holds per batch (keys, their projections, values).
MAX_BATCH_NUMBERS = 2**26


@dataclass(frozen=True)
class TrainConfig:
    """Everything a run depends on. Two configs that differ only in ``rule`` see the same data and init."""

    # one field a line, comments aligned as a table (the formatter leaves it as written)
    # fmt: off
    d_k: int = 64           # query/key width: the quantity the scaling rule must compensate
    rule: str = "sqrt"      # a name in sdpa_core.RULES: "none" | "sqrt" | "linear" | "alpha" | "qknorm" | ...
    alpha: float = 0.5      # exponent for rule "alpha": scale = d_k**-alpha
    temperature: float = 0.1  # for rule "qknorm": logits = cos(q, k) / temperature
    n_keys: int = 8         # keys per example (the sequence length)
    n_classes: int = 8      # chance accuracy is 1/n_classes, chance loss log(n_classes)
    d_in: int = 16          # width of the token vectors
    d_v: int = 16           # width of the values
    batch: int = 32         # examples per step
    lr: float = 1e-2        # Adam learning rate
    noise: float = 0.5      # query = matching key + noise * N(0, 1): retrieval by similarity
    seed: int = 0           # data and init; shared by runs that are compared
    q_init: float = 1.0     # factor on W_q's init: 1/sqrt(d_k) folds the scale into the init (T5), not the logits
    optimizer: str = "adam"  # "adam" or "sgd": the fold and an explicit scale agree at step 0, not after it
    # fmt: on

    def __post_init__(self):
        integer(self.d_k, "d_k", low=1, high=4096)
        check_rule(self.rule, alpha=self.alpha, temperature=self.temperature)
        integer(self.n_keys, "n_keys", low=2, high=256)
        integer(self.n_classes, "n_classes", low=2, high=256)
        integer(self.d_in, "d_in", low=1, high=1024)
        integer(self.d_v, "d_v", low=1, high=1024)
        integer(self.batch, "batch", low=1, high=4096)
        real(self.lr, "lr", low=0.0, low_open=True, high=10.0)
        real(self.noise, "noise", low=0.0, high=100.0)
        integer(self.seed, "seed", low=0)
        real(self.q_init, "q_init", low=0.0, low_open=True, high=1e3)
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(map(repr, OPTIMIZERS))}, got {self.optimizer!r}")
        if self.batch * self.n_keys * (self.d_in + self.d_k + self.d_v) > MAX_BATCH_NUMBERS:
            raise ValueError(
                f"batch * n_keys * (d_in + d_k + d_v) must be <= {MAX_BATCH_NUMBERS}, got "
                f"{self.batch * self.n_keys * (self.d_in + self.d_k + self.d_v)}: one step would "
                f"need gigabytes"
            )

    @property
    def scale(self) -> float:
        return logit_scale(self.d_k, self.rule, alpha=self.alpha, temperature=self.temperature, n=self.n_keys)


@dataclass
class Batch:
    # fmt: off
    keys: np.ndarray     # (B, n, d_in)
    labels: np.ndarray   # (B, n) ints in [0, C)
    query: np.ndarray    # (B, 1, d_in)
    target: np.ndarray   # (B,) index of the matching key
    # fmt: on


def make_batch(rng: np.random.Generator, cfg: TrainConfig, size: int | None = None) -> Batch:
    size = cfg.batch if size is None else size
    keys = rng.standard_normal((size, cfg.n_keys, cfg.d_in))
    labels = rng.integers(0, cfg.n_classes, (size, cfg.n_keys))
    target = rng.integers(0, cfg.n_keys, size)
    query = keys[np.arange(size), target][:, None, :] + cfg.noise * rng.standard_normal((size, 1, cfg.d_in))
    return Batch(keys, labels, query, target)


def clear_example(rng: np.random.Generator, cfg: TrainConfig, candidates: int = 64) -> Batch:
    """One example whose query is unmistakably closest to its target key (the largest cosine margin
    over the runner-up among ``candidates`` draws): the one the page shows, so a trained head's
    attention visibly lands on the right key rather than on a borderline case."""
    b = make_batch(rng, cfg, size=candidates)
    x = b.keys / np.linalg.norm(b.keys, axis=-1, keepdims=True)
    cos = (x @ (b.query / np.linalg.norm(b.query, axis=-1, keepdims=True)).swapaxes(-1, -2))[..., 0]  # (B, n)
    rows = np.arange(candidates)
    target = cos[rows, b.target]
    cos[rows, b.target] = -np.inf
    i = int(np.argmax(target - cos.max(axis=-1)))
    return Batch(b.keys[i : i + 1], b.labels[i : i + 1], b.query[i : i + 1], b.target[i : i + 1])


def init_params(rng: np.random.Generator, cfg: TrainConfig) -> dict[str, np.ndarray]:
    """Unit-variance q and k entries at init (``Wq, Wk ~ N(0, 1/d_in)``), as in a standard transformer; W_q
    times ``cfg.q_init`` (the same draw: a folded run starts from the explicit run's logits exactly)."""
    return {
        "Wq": rng.standard_normal((cfg.d_in, cfg.d_k)) / math.sqrt(cfg.d_in) * cfg.q_init,
        "Wk": rng.standard_normal((cfg.d_in, cfg.d_k)) / math.sqrt(cfg.d_in),
        "Wv": rng.standard_normal((cfg.n_classes, cfg.d_v)),
        "Wo": rng.standard_normal((cfg.d_v, cfg.n_classes)) / math.sqrt(cfg.d_v),
    }


def loss_and_grads(params, batch: Batch, cfg: TrainConfig, *, need_grads: bool = True, per_example: bool = False):
    """Mean cross-entropy over the batch, its gradients w.r.t. every parameter, and extras.

    Returns ``(loss, grads, aux)``; ``aux`` has ``accuracy`` and ``weights`` (B, n). ``grads`` is None
    when not needed, or when the loss is not finite (a diverged run: no gradient would mean anything);
    non-finite q, k or v (blown-up weights) give a NaN loss and NaN weights, as before the checks.
    With ``per_example`` (and gradients), ``aux["example_grad_norms"]`` maps each parameter name to a (B,)
    array: the Frobenius norm of the gradient of each example's own loss (B times its share of the mean's).
    """
    B = len(batch.target)
    q_raw = batch.query @ params["Wq"]  # (B, 1, d_k)
    k_raw = batch.keys @ params["Wk"]  # (B, n, d_k)
    v = params["Wv"][batch.labels]  # (B, n, d_v)
    if not all(np.isfinite(a).all() for a in (q_raw, k_raw, v)):  # blown-up weights: NaN loss, NaN map
        nan = float("nan")
        return nan, None, {"accuracy": nan, "weights": np.full((B, cfg.n_keys), nan)}
    normalizes = RULES[cfg.rule].normalizes  # QK-norm: attention sees unit q and k
    q, k = (qk_normalize(q_raw), qk_normalize(k_raw)) if normalizes else (q_raw, k_raw)
    cap = RULES[cfg.rule].cap  # Gemma 2's soft-cap: c tanh(z / c) of the scaled logits
    out, w = attention(q, k, v, scale=cfg.scale, softcap=cap)  # (B, 1, d_v), (B, 1, n)
    logits = out[:, 0] @ params["Wo"]  # (B, C)
    label = batch.labels[np.arange(B), batch.target]
    logp = unchecked_log_softmax(logits)  # NaN when the run diverged: Trainer reports it
    loss = float(-logp[np.arange(B), label].mean())
    aux = {"accuracy": float((logits.argmax(axis=-1) == label).mean()), "weights": w[:, 0]}
    if not need_grads or not math.isfinite(loss):
        return loss, None, aux

    dlogits = np.exp(logp)  # softmax - onehot, / B
    dlogits[np.arange(B), label] -= 1
    dlogits /= B
    grads = {"Wo": out[:, 0].T @ dlogits}
    dout = (dlogits @ params["Wo"].T)[:, None, :]  # (B, 1, d_v)
    slope = None if cap is None else cap_slope(q, k, cfg.scale, cap, w.dtype)
    dq, dk, dv = _backward_from_weights(q, k, v, w, dout, cfg.scale, slope)  # q, k, v checked by attention() above
    if normalizes:
        dq, dk = qk_normalize_backward(q_raw, dq), qk_normalize_backward(k_raw, dk)
    grads["Wq"] = batch.query.reshape(B, -1).T @ dq.reshape(B, -1)
    grads["Wk"] = batch.keys.reshape(-1, cfg.d_in).T @ dk.reshape(-1, cfg.d_k)
    dWv = np.zeros_like(params["Wv"])
    np.add.at(dWv, batch.labels.ravel(), dv.reshape(-1, cfg.d_v))
    grads["Wv"] = dWv
    if per_example:
        aux["example_grad_norms"] = _example_grad_norms(batch, cfg, out[:, 0], dlogits, dq, dk, dv)
    return loss, grads, aux


def _norms(a: np.ndarray, axes: tuple) -> np.ndarray:
    """Euclidean norm over ``axes``, scaled by the largest entry first: a gradient of 1e-200 keeps its size
    instead of squaring to 0."""
    big = np.abs(a).max(axis=axes, keepdims=True)
    safe = np.where(big > 0, big, 1.0)
    return np.sqrt(((a / safe) ** 2).sum(axis=axes)) * safe.reshape(-1)


def _example_grad_norms(batch: Batch, cfg: TrainConfig, out, dlogits, dq, dk, dv) -> dict[str, np.ndarray]:
    """Each example's own gradient norm per parameter, from the batch's backward pass (whose upstream
    gradients carry the mean's 1/B): W_q's and W_o's are outer products (rank one), W_k's a sum of n of them,
    W_v's the value rows' gradients added up by label."""
    B = len(batch.target)
    x = batch.query[:, 0]  # (B, d_in)
    wq = B * _norms(x, (1,)) * _norms(dq[:, 0], (1,))
    wo = B * _norms(out, (1,)) * _norms(dlogits, (1,))
    # ||X_b^T dk_b||_F^2 = sum_ij (X_b X_b^T)_ij (dk_b dk_b^T)_ij, with dk_b scaled to its largest entry
    big = np.abs(dk).max(axis=(1, 2), keepdims=True)
    safe = np.where(big > 0, big, 1.0)
    dks = dk / safe
    gram = (batch.keys @ batch.keys.swapaxes(1, 2)) * (dks @ dks.swapaxes(1, 2))  # (B, n, n)
    wk = B * np.sqrt(np.maximum(gram.sum(axis=(1, 2)), 0.0)) * safe.reshape(-1)
    onehot = (batch.labels[..., None] == np.arange(cfg.n_classes)).astype(dv.dtype)  # (B, n, C)
    wv = B * _norms(np.einsum("bnc,bnv->bcv", onehot, dv), (1, 2))
    return {"Wq": wq, "Wk": wk, "Wv": wv, "Wo": wo}


def head_sharpness(params, batch: Batch, config: TrainConfig) -> dict:
    """How peaked the head's attention is on ``batch`` under ``params``, and where the gradient goes.

    A head that is one-hot at initialisation (saturated) and one that is one-hot after learning (sharp)
    look alike in their weights; they differ in where their weight sits and in which weights still get
    gradient. This measures both, for any parameters: a :class:`~sdpa_core.Trainer`'s initial ones
    (``Trainer.initial_params``) or its current ones (:meth:`~sdpa_core.Trainer.sharpness` does both).

    Parameters
    ----------
    params : dict
        ``{"Wq", "Wk", "Wv", "Wo"}`` as :func:`init_params` gives them: finite float arrays of shapes
        (d_in, d_k), (d_in, d_k), (n_classes, d_v) and (d_v, n_classes).
    batch : Batch
        Examples (:func:`make_batch`) of ``config``'s shape: B query rows, each over n_keys keys.
    config : TrainConfig

    Returns
    -------
    dict
        ``loss``, ``accuracy``; ``entropy``: the rows' mean attention entropy in nats; ``max_entropy``:
        log n_keys (uniform weights); ``entropy_fraction``: their ratio (0 one-hot, 1 uniform);
        ``saturated``: share of rows whose top weight is above ``SATURATION``; ``target_weight``: mean
        weight on the key that holds the answer; ``grad_norms``: per parameter, the Frobenius norm of
        the batch's mean-loss gradient (what an optimizer steps on); ``example_grad_norms``: per
        parameter, a (B,) array of each example's own loss gradient's norm; ``q_path`` and
        ``value_path``: the median example's W_q and W_v gradient norms; ``logit_rms``: root mean
        square of the scaled logits over every (query, key) pair (before a soft-cap, which the entropy and
        weights include); ``length_rms``: the same of
        scale * |q| |k| (what the logits would be with every cosine 1); ``cos_rms``: their ratio, the
        rms of cos(q, k) weighted by (|q| |k|)^2, so that ``logit_rms = length_rms * cos_rms`` exactly.
        Under QK-norm q and k are the normalised ones (``length_rms`` is 1 / temperature). Every number
        is NaN when the loss is not finite (weights so large the logits overflow).

    Examples
    --------
    >>> cfg = TrainConfig(d_k=1024, rule="none", seed=9)
    >>> probe = make_batch(np.random.default_rng([9, 3]), cfg)
    >>> m = head_sharpness(init_params(np.random.default_rng([9, 0]), cfg), probe, cfg)
    >>> round(m["entropy_fraction"], 2), m["q_path"] < 1e-3 * m["value_path"]   # saturated: W_q gets ~nothing
    (0.04, True)
    >>> round(m["logit_rms"] / (m["length_rms"] * m["cos_rms"]), 12)
    1.0
    """
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    params = _checked_params(params, config)
    batch = _checked_batch(batch, config)
    B = len(batch.target)
    with np.errstate(all="ignore"):
        loss, grads, aux = loss_and_grads(params, batch, config, per_example=True)
        if grads is None or not all(np.isfinite(g).all() for g in grads.values()):
            return _nan_sharpness(B, config)
        q, k = batch.query @ params["Wq"], batch.keys @ params["Wk"]  # (B, 1, d_k), (B, n, d_k)
        if RULES[config.rule].normalizes:
            q, k = qk_normalize(q), qk_normalize(k)
        z = config.scale * (q @ k.swapaxes(-1, -2))[:, 0]  # (B, n), before a soft-cap
        lengths = config.scale * np.linalg.norm(q, axis=-1) * np.linalg.norm(k, axis=-1)  # (B, n)
        if not (np.isfinite(z).all() and np.isfinite(lengths).all()):
            return _nan_sharpness(B, config)
    w = aux["weights"]
    h = entropy_from_logits(RULES[config.rule].capped(z))  # of the logits the softmax sees
    logit_rms = float(np.sqrt(np.mean(z**2)))
    length_rms = float(np.sqrt(np.mean(lengths**2)))
    ex = aux["example_grad_norms"]
    return {
        "loss": float(loss),
        "accuracy": float(aux["accuracy"]),
        "entropy": float(h.mean()),
        "max_entropy": math.log(config.n_keys),
        "entropy_fraction": float(h.mean() / math.log(config.n_keys)),
        "saturated": float((w.max(axis=-1) > SATURATION).mean()),
        "target_weight": float(w[np.arange(B), batch.target].mean()),
        "grad_norms": {name: float(np.linalg.norm(grads[name])) for name in PARAMS},
        "example_grad_norms": ex,
        "q_path": float(np.median(ex["Wq"])),
        "value_path": float(np.median(ex["Wv"])),
        "logit_rms": logit_rms,
        "length_rms": length_rms,
        "cos_rms": logit_rms / length_rms if length_rms > 0 else float("nan"),
    }


def _nan_sharpness(B: int, config: TrainConfig) -> dict:
    nan = float("nan")
    out: dict = {
        key: nan
        for key in (
            "loss",
            "accuracy",
            "entropy",
            "entropy_fraction",
            "saturated",
            "target_weight",
            "q_path",
            "value_path",
            "logit_rms",
            "length_rms",
            "cos_rms",
        )
    }
    out["max_entropy"] = math.log(config.n_keys)
    out["grad_norms"] = {name: nan for name in PARAMS}
    out["example_grad_norms"] = {name: np.full(B, nan) for name in PARAMS}
    return out


def _checked_params(params, cfg: TrainConfig) -> dict[str, np.ndarray]:
    """``params`` as float64 arrays of the model's shapes, or a TypeError/ValueError naming it."""
    if not isinstance(params, dict):
        raise TypeError(
            f"params must be a dict of the arrays {', '.join(PARAMS)} (init_params gives one), got "
            f"{type(params).__name__}"
        )
    if set(params) != set(PARAMS):
        raise ValueError(f"params must have exactly the keys {', '.join(PARAMS)}, got {sorted(map(str, params))}")
    shapes = {
        "Wq": (cfg.d_in, cfg.d_k),
        "Wk": (cfg.d_in, cfg.d_k),
        "Wv": (cfg.n_classes, cfg.d_v),
        "Wo": (cfg.d_v, cfg.n_classes),
    }
    out = {}
    for name in PARAMS:
        label = f"params['{name}']"
        a = finite(float_array(params[name], label), label, "no gradient of it would mean anything")
        if a.shape != shapes[name]:
            raise ValueError(f"{label} must have shape {shapes[name]} for this config, got {a.shape}")
        out[name] = a.astype(np.float64, copy=False)
    return out


def _checked_batch(batch, cfg: TrainConfig) -> Batch:
    """``batch`` with arrays of the config's shapes (labels and targets in range), or an error naming it."""
    if not isinstance(batch, Batch):
        raise TypeError(f"batch must be a Batch (make_batch gives one), got {type(batch).__name__}")
    keys = finite(float_array(batch.keys, "batch.keys", min_ndim=3), "batch.keys")
    B = keys.shape[0]
    if keys.shape != (B, cfg.n_keys, cfg.d_in):
        raise ValueError(f"batch.keys must have shape (B, {cfg.n_keys}, {cfg.d_in}) for this config, got {keys.shape}")
    if B * cfg.n_keys * (cfg.d_in + cfg.d_k + cfg.d_v) > MAX_BATCH_NUMBERS:
        raise ValueError(
            f"batch holds {B} examples: batch * n_keys * (d_in + d_k + d_v) must be <= {MAX_BATCH_NUMBERS}"
        )
    query = finite(float_array(batch.query, "batch.query", min_ndim=3), "batch.query")
    if query.shape != (B, 1, cfg.d_in):
        raise ValueError(f"batch.query must have shape ({B}, 1, {cfg.d_in}), got {query.shape}")
    labels = _indices(batch.labels, "batch.labels", (B, cfg.n_keys), cfg.n_classes)
    target = _indices(batch.target, "batch.target", (B,), cfg.n_keys)
    return Batch(keys.astype(np.float64, copy=False), labels, query.astype(np.float64, copy=False), target)


def _indices(x, name: str, shape: tuple, high: int) -> np.ndarray:
    a = _asarray(x, name)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array, got dtype {a.dtype}")
    if a.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {a.shape}")
    if a.size and (a.min() < 0 or a.max() >= high):
        raise ValueError(f"{name} must hold integers in [0, {high}), got values from {a.min()} to {a.max()}")
    return a
