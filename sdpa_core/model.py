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

from ._checks import integer, real
from .attention import attention, attention_backward
from .scaling import RULES, check_rule, logit_scale, qk_normalize, qk_normalize_backward
from .softmax import unchecked_log_softmax

__all__ = ["TrainConfig", "OPTIMIZERS", "Batch", "make_batch", "clear_example", "init_params", "loss_and_grads"]


#: The optimizers a run can use (sdpa_core.train).
OPTIMIZERS = ("adam", "sgd")
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


def loss_and_grads(params, batch: Batch, cfg: TrainConfig, *, need_grads: bool = True):
    """Mean cross-entropy over the batch, its gradients w.r.t. every parameter, and extras.

    Returns ``(loss, grads, aux)``; ``aux`` has ``accuracy`` and ``weights`` (B, n). ``grads`` is None
    when not needed, or when the loss is not finite (a diverged run: no gradient would mean anything);
    non-finite q, k or v (blown-up weights) give a NaN loss and NaN weights, as before the checks.
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
    out, w = attention(q, k, v, scale=cfg.scale)  # (B, 1, d_v), (B, 1, n)
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
    dq, dk, dv = attention_backward(q, k, v, dout, scale=cfg.scale)
    if normalizes:
        dq, dk = qk_normalize_backward(q_raw, dq), qk_normalize_backward(k_raw, dk)
    grads["Wq"] = batch.query.reshape(B, -1).T @ dq.reshape(B, -1)
    grads["Wk"] = batch.keys.reshape(-1, cfg.d_in).T @ dk.reshape(-1, cfg.d_k)
    dWv = np.zeros_like(params["Wv"])
    np.add.at(dWv, batch.labels.ravel(), dv.reshape(-1, cfg.d_v))
    grads["Wv"] = dWv
    return loss, grads, aux
