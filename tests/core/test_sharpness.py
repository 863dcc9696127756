"""head_sharpness and Trainer.sharpness: how peaked the head is and where its gradient goes, each number
against a computation written here (a numpy forward pass, finite differences, torch's per-example autograd)."""
import math
from dataclasses import replace

import numpy as np
import pytest

import sdpa_core as sc
from sdpa_core import RULE_NAMES, TrainConfig, Trainer, head_sharpness
from sdpa_core.model import PARAMS, Batch, init_params, loss_and_grads, make_batch

SMALL = TrainConfig(d_k=8, n_keys=5, n_classes=4, d_in=6, d_v=5, batch=7)


def _setup(cfg, seed=0):
    return init_params(np.random.default_rng([seed, 0]), cfg), make_batch(np.random.default_rng([seed, 1]), cfg)


def _one(batch, b):
    return Batch(batch.keys[b:b + 1], batch.labels[b:b + 1], batch.query[b:b + 1], batch.target[b:b + 1])


def _forward(params, batch, cfg):
    """The head's scaled logits (B, n) and the lengths' part scale |q| |k|, written out here."""
    q = batch.query[:, 0] @ params["Wq"]                  # (B, d_k)
    k = np.einsum("bnd,de->bne", batch.keys, params["Wk"])  # (B, n, d_k)
    if sc.RULES[cfg.rule].normalizes:
        q = q / np.linalg.norm(q, axis=-1, keepdims=True)
        k = k / np.linalg.norm(k, axis=-1, keepdims=True)
    written = {"none": 1.0, "sqrt": cfg.d_k ** -0.5, "linear": 1.0 / cfg.d_k, "alpha": cfg.d_k ** -cfg.alpha,
               "qknorm": 1.0 / cfg.temperature, "ssmax": 0.43 * math.log(cfg.n_keys) / math.sqrt(cfg.d_k),
               "softcap": cfg.d_k ** -0.5, "llama4": cfg.d_k ** -0.5 * (1 + 0.1 * math.log1p(cfg.n_keys // 8192))}
    # a rule added to RULES after these were written: its own scale, the rest of the pass still written here
    scale = written[cfg.rule] if cfg.rule in written else cfg.scale
    z = scale * np.einsum("be,bne->bn", q, k)
    lengths = scale * np.linalg.norm(q, axis=-1)[:, None] * np.linalg.norm(k, axis=-1)
    return z, lengths


@pytest.mark.parametrize("rule", RULE_NAMES)
@pytest.mark.parametrize("d_k, q_init", [(1, 1.0), (8, 1.0), (256, 1.0), (256, 256 ** -0.5), (4096, 1.0)])
def test_entropy_weights_and_logit_split_match_a_forward_pass_written_here(rule, d_k, q_init):
    """Mean entropy (nats and share of log n), the weight on the right key, the share of saturated rows and the
    logits' rms with its exact split into lengths and cosines, from a numpy forward pass written here (entropy
    as -sum p log p with log p = z - logsumexp z), at d_k = 1 (where every cosine is ±1), 8, 256 (with and
    without the fold) and 4096."""
    cfg = TrainConfig(d_k=d_k, rule=rule, q_init=q_init, batch=16, seed=2)
    params, batch = _setup(cfg, seed=2)
    m = head_sharpness(params, batch, cfg)
    z, lengths = _forward(params, batch, cfg)
    cap = sc.RULES[cfg.rule].cap   # Gemma 2's soft-cap: the softmax sees cap tanh(z / cap); the rms split is of z
    zc = z if cap is None else cap * np.tanh(z / cap)
    logp = zc - zc.max(-1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(-1, keepdims=True))
    p = np.exp(logp)
    h = -(p * logp).sum(-1).mean()
    assert m["entropy"] == pytest.approx(h, rel=1e-9, abs=1e-12)
    assert m["max_entropy"] == math.log(cfg.n_keys)
    assert m["entropy_fraction"] == pytest.approx(h / math.log(cfg.n_keys), rel=1e-9, abs=1e-12)
    assert m["target_weight"] == pytest.approx(p[np.arange(16), batch.target].mean(), rel=1e-9)
    assert m["saturated"] == (p.max(-1) > 0.99).mean()
    assert m["logit_rms"] == pytest.approx(np.sqrt((z ** 2).mean()), rel=1e-9)
    assert m["length_rms"] == pytest.approx(np.sqrt((lengths ** 2).mean()), rel=1e-9)
    assert m["logit_rms"] == pytest.approx(m["length_rms"] * m["cos_rms"], rel=1e-12)
    cos = z / lengths   # the cosines themselves, weighted by the squared lengths
    assert m["cos_rms"] == pytest.approx(np.sqrt((lengths ** 2 * cos ** 2).sum() / (lengths ** 2).sum()), rel=1e-9)
    if d_k == 1:
        assert np.allclose(np.abs(cos), 1)
    if rule == "qknorm":
        assert m["length_rms"] == pytest.approx(1 / cfg.temperature, rel=1e-12)


@pytest.mark.parametrize("rule", ["none", "sqrt", "qknorm"])
def test_each_examples_gradient_norm_matches_central_finite_differences(rule):
    """Each example's own-loss gradient norm per parameter (and the batch's) against central differences of
    the loss alone (the forward pass, never the backward)."""
    cfg = replace(SMALL, rule=rule, temperature=0.5)
    params, batch = _setup(cfg)
    m = head_sharpness(params, batch, cfg)
    eps = 1e-6

    def fd_grad(sub):
        out = {}
        for name, p in params.items():
            g = np.zeros_like(p)
            for idx in np.ndindex(p.shape):
                old = p[idx]
                p[idx] = old + eps
                up = loss_and_grads(params, sub, cfg, need_grads=False)[0]
                p[idx] = old - eps
                down = loss_and_grads(params, sub, cfg, need_grads=False)[0]
                p[idx] = old
                g[idx] = (up - down) / (2 * eps)
            out[name] = np.linalg.norm(g)
        return out

    for b in (0, 3):
        fd = fd_grad(_one(batch, b))
        for name in PARAMS:
            assert m["example_grad_norms"][name][b] == pytest.approx(fd[name], rel=1e-5, abs=1e-9), (b, name)
    fd = fd_grad(batch)
    for name in PARAMS:
        assert m["grad_norms"][name] == pytest.approx(fd[name], rel=1e-5, abs=1e-9), name


@pytest.mark.parametrize("rule, d_k", [("none", 64), ("sqrt", 64), ("qknorm", 16), ("linear", 1)])
def test_each_examples_gradient_norm_matches_torch_per_example_autograd(torch, rule, d_k):
    """Per-example gradient norms and their medians (q_path: W_q, value_path: W_v) against torch autograd of
    each example's own cross-entropy, the model written here in torch; the batch's norms against the mean loss."""
    cfg = TrainConfig(d_k=d_k, rule=rule, batch=9, seed=4)
    params, batch = _setup(cfg, seed=4)
    m = head_sharpness(params, batch, cfg)
    t = {k: torch.from_numpy(v.copy()).requires_grad_() for k, v in params.items()}
    q = torch.from_numpy(batch.query) @ t["Wq"]
    k = torch.from_numpy(batch.keys) @ t["Wk"]
    if rule == "qknorm":
        q, k = torch.nn.functional.normalize(q, dim=-1), torch.nn.functional.normalize(k, dim=-1)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, t["Wv"][torch.from_numpy(batch.labels)],
                                                           scale=cfg.scale)
    logits = out[:, 0] @ t["Wo"]
    label = torch.from_numpy(batch.labels[np.arange(9), batch.target])
    losses = torch.nn.functional.cross_entropy(logits, label, reduction="none")
    want = {name: [] for name in PARAMS}
    for b in range(9):
        grads = torch.autograd.grad(losses[b], [t[n] for n in PARAMS], retain_graph=True)
        for name, g in zip(PARAMS, grads):
            want[name].append(torch.linalg.vector_norm(g).item())
    for name in PARAMS:
        np.testing.assert_allclose(m["example_grad_norms"][name], want[name], rtol=1e-9, atol=1e-14, err_msg=name)
    assert m["q_path"] == pytest.approx(np.median(want["Wq"]), rel=1e-9)
    assert m["value_path"] == pytest.approx(np.median(want["Wv"]), rel=1e-9)
    batch_grads = torch.autograd.grad(losses.mean(), [t[n] for n in PARAMS])
    for name, g in zip(PARAMS, batch_grads):
        assert m["grad_norms"][name] == pytest.approx(torch.linalg.vector_norm(g).item(), rel=1e-9), name


def test_a_saturated_examples_tiny_gradient_keeps_its_size():
    """Unscaled at d_k = 1024 with W_q 4× its init, most rows are one-hot: the W_q gradients of saturated
    examples go below 1e-160, where squaring their entries underflows (np.linalg.norm gives 0). Each norm is the
    one of the example's own full gradient matrix (loss_and_grads on that example alone), taken here after
    dividing by its largest entry."""
    cfg = TrainConfig(d_k=1024, rule="none", seed=0)
    params, batch = _setup(cfg)
    params["Wq"] *= 4
    m = head_sharpness(params, batch, cfg)
    norms = m["example_grad_norms"]["Wq"]
    assert 0 < norms.min() < 1e-160 and norms.max() > 1e-3
    for b in range(len(batch.target)):
        g = loss_and_grads(params, _one(batch, b), cfg)[1]["Wq"]
        big = np.abs(g).max()
        want = big * np.linalg.norm(g / big) if big > 0 else 0.0
        assert norms[b] == pytest.approx(want, rel=1e-6), b


def test_the_trainer_keeps_its_initial_weights_and_measures_both():
    """Trainer.initial_params are the step-0 weights after steps (Adam updates params in place); sharpness
    measures them and the current ones on the seed's held-out batch (the [seed, 3] stream), shared by runs
    that share a seed, and learning moves the current head while the initial one stays put."""
    cfg = TrainConfig(d_k=64, rule="sqrt", seed=7)
    t = Trainer(cfg)
    start = {k: v.copy() for k, v in t.params.items()}
    before = t.sharpness(initial=True)
    assert t.sharpness()["entropy"] == before["entropy"]
    t.run(60)
    for name in PARAMS:
        np.testing.assert_array_equal(t.initial_params[name], start[name])
        assert not np.array_equal(t.params[name], start[name])
    probe = make_batch(np.random.default_rng([7, 3]), cfg)
    np.testing.assert_array_equal(t.probe.keys, probe.keys)
    np.testing.assert_array_equal(Trainer(replace(cfg, rule="none")).probe.query, probe.query)
    assert t.sharpness(initial=True) is before   # measured once
    assert head_sharpness(start, probe, cfg)["entropy"] == before["entropy"]
    now = t.sharpness()
    assert now["entropy"] == head_sharpness(t.params, probe, cfg)["entropy"]
    assert now["entropy_fraction"] < before["entropy_fraction"] and now["target_weight"] > before["target_weight"]
    with pytest.raises(TypeError, match="initial"):
        t.sharpness(initial="yes")


def test_weights_so_large_the_logits_overflow_give_nan_not_a_number_that_looks_measured():
    """Finite weights whose logits overflow: every number NaN (the loss is not finite), the example arrays too."""
    cfg = TrainConfig(d_k=16, rule="none", seed=1)
    params, batch = _setup(cfg)
    params["Wq"] = params["Wq"] * 1e300
    with np.errstate(all="ignore"):
        m = head_sharpness(params, batch, cfg)
    assert all(math.isnan(m[k]) for k in ("entropy", "entropy_fraction", "q_path", "value_path", "logit_rms"))
    assert all(np.isnan(a).all() for a in m["example_grad_norms"].values())
    assert m["max_entropy"] == math.log(cfg.n_keys)


def test_arguments_that_do_not_fit_the_config_are_refused_by_name():
    cfg = TrainConfig(d_k=16, seed=1)
    params, batch = _setup(cfg)
    with pytest.raises(ValueError, match=r"params\['Wq'\] must have shape"):
        head_sharpness({**params, "Wq": params["Wq"][:, :8]}, batch, cfg)
    with pytest.raises(ValueError, match="params must have exactly the keys"):
        head_sharpness({k: v for k, v in params.items() if k != "Wo"}, batch, cfg)
    with pytest.raises(ValueError, match=r"batch.labels must hold integers in \[0, 8\)"):
        head_sharpness(params, replace(batch, labels=batch.labels + 8), cfg)
    with pytest.raises(ValueError, match="batch.keys must have shape"):
        head_sharpness(params, batch, replace(cfg, n_keys=9))
    with pytest.raises(TypeError, match="config"):
        head_sharpness(params, batch, cfg.__dict__)
    assert sc.head_sharpness is head_sharpness and "head_sharpness" in sc.__all__
