"""Saturated at initialisation versus sharp after learning (Train it): every number in the section's sentences
recomputed here, from weights and held-out batches drawn here, a numpy forward pass and torch's per-example
autograd, over 8 seeds and the corners (d_k = 1, 4 and 4096; no scaling, 1/√d_k, the fold; Adam and SGD)."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

import sdpa_core as sc
from web import claims
from web.options import TRAIN_D_K_OPTIONS
from web.state import LabState
from web.training_state import TrainingState
from shown import pct_ok

MAX_WORDS = 25


# ---- the oracle: drawn and computed here ----------------------------------------------------------------
def draw_initial(cfg: sc.TrainConfig) -> dict:
    """A run's step-0 weights, drawn as the model documents them (stream [seed, 0]; W_q, W_k ~ N(0, 1/d_in),
    W_q times q_init, W_v ~ N(0, 1), W_o ~ N(0, 1/d_v))."""
    rng = np.random.default_rng([cfg.seed, 0])
    return {"Wq": rng.standard_normal((cfg.d_in, cfg.d_k)) / math.sqrt(cfg.d_in) * cfg.q_init,
            "Wk": rng.standard_normal((cfg.d_in, cfg.d_k)) / math.sqrt(cfg.d_in),
            "Wv": rng.standard_normal((cfg.n_classes, cfg.d_v)),
            "Wo": rng.standard_normal((cfg.d_v, cfg.n_classes)) / math.sqrt(cfg.d_v)}


def draw_probe(cfg: sc.TrainConfig):
    """The held-out batch (stream [seed, 3]): keys, labels, the target key, the query a noisy copy of it."""
    rng = np.random.default_rng([cfg.seed, 3])
    keys = rng.standard_normal((cfg.batch, cfg.n_keys, cfg.d_in))
    labels = rng.integers(0, cfg.n_classes, (cfg.batch, cfg.n_keys))
    target = rng.integers(0, cfg.n_keys, cfg.batch)
    query = keys[np.arange(cfg.batch), target] + cfg.noise * rng.standard_normal((cfg.batch, cfg.d_in))
    return keys, labels, query, target


def oracle(torch, params: dict, cfg: sc.TrainConfig) -> dict:
    """The head on the held-out batch: entropy share, weight on the right key, rows saturated, logits' rms with
    the lengths' and the cosines' parts (numpy), and each example's gradient norms (torch, its own loss)."""
    keys, labels, query, target = draw_probe(cfg)
    B, n = labels.shape
    q = query @ params["Wq"]
    k = np.einsum("bnd,de->bne", keys, params["Wk"])
    if cfg.rule == "qknorm":
        q = q / np.linalg.norm(q, axis=-1, keepdims=True)
        k = k / np.linalg.norm(k, axis=-1, keepdims=True)
    scale = {"none": 1.0, "sqrt": cfg.d_k ** -0.5, "linear": 1 / cfg.d_k, "qknorm": 1 / cfg.temperature,
             "softcap": cfg.d_k ** -0.5,                                                  # Gemma 2, then its cap
             "llama4": cfg.d_k ** -0.5 * (1 + 0.1 * math.log1p(n // 8192))}[cfg.rule]     # modeling_llama4
    cap = sc.RULES[cfg.rule].cap   # Gemma 2's attn_logit_softcapping (None for the other rules)
    z = scale * np.einsum("be,bne->bn", q, k)
    lengths = scale * np.linalg.norm(q, axis=-1)[:, None] * np.linalg.norm(k, axis=-1)
    zc = z if cap is None else cap * np.tanh(z / cap)   # what the softmax sees; the rms split is of z
    logp = zc - zc.max(-1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(-1, keepdims=True))
    p = np.exp(logp)
    out = {"entropy": float(-(p * logp).sum(-1).mean() / math.log(n)),
           "target": float(p[np.arange(B), target].mean()), "saturated": float((p.max(-1) > 0.99).mean()),
           "logit_rms": float(np.sqrt((z ** 2).mean())), "length_rms": float(np.sqrt((lengths ** 2).mean()))}
    out["cos_rms"] = out["logit_rms"] / out["length_rms"]
    # one copy of W_q and W_v per example, so that one backward pass of the summed losses gives each example's
    # own gradient (the examples share nothing else); the batch's mean-loss gradient is their mean
    t = {name: torch.tensor(w) for name, w in params.items()}
    wq = t["Wq"].expand(B, -1, -1).clone().requires_grad_()
    wv = t["Wv"].expand(B, -1, -1).clone().requires_grad_()
    tq, tk = torch.tensor(query)[:, None] @ wq, torch.tensor(keys) @ t["Wk"]
    if cfg.rule == "qknorm":
        tq, tk = torch.nn.functional.normalize(tq, dim=-1), torch.nn.functional.normalize(tk, dim=-1)
    zt = scale * tq @ tk.transpose(1, 2)
    weights = torch.softmax(zt if cap is None else cap * torch.tanh(zt / cap), dim=-1)   # (B, 1, n)
    values = wv[torch.arange(B)[:, None], torch.tensor(labels)]                # (B, n, d_v)
    logits = (weights @ values)[:, 0] @ t["Wo"]
    losses = torch.nn.functional.cross_entropy(logits, torch.tensor(labels[np.arange(B), target]), reduction="none")
    losses.sum().backward()
    per = {}
    for name, g in (("Wq", wq.grad), ("Wv", wv.grad)):
        big = g.abs().amax(dim=(1, 2), keepdim=True)   # norms below 1e-160 without their squares underflowing
        safe = torch.where(big > 0, big, torch.ones_like(big))
        per[name] = (torch.linalg.vector_norm(g / safe, dim=(1, 2)) * safe[:, 0, 0]).numpy()
    gq, gv = wq.grad.mean(0), wv.grad.mean(0)
    out.update(q_path=float(np.median(per["Wq"])), value_path=float(np.median(per["Wv"])),
               q_max=float(np.max(per["Wq"])), batch_q=torch.linalg.vector_norm(gq).item(),
               batch_v=torch.linalg.vector_norm(gv).item())
    return out


def state0(o: dict) -> str:
    e = o["entropy"]
    return "saturated" if e <= 0.1 else "near uniform" if e >= 0.9 else "partly peaked"


def state1(o: dict) -> str:
    e = o["entropy"]
    if e <= 0.1:
        return "sharp" if o["target"] >= 0.5 else "saturated off target"
    return "near uniform" if e >= 0.9 else "not sharp"


# ---- reading the page's numbers back -----------------------------------------------------------------

def shown_ok(text: str, x: float) -> bool:
    """``text`` is ``x`` rounded to the digits shown ("1.1e-05": within 0.05e-05; "0.93": within 0.005)."""
    mantissa, _, exp = text.partition("e")
    unit = 10.0 ** -len(mantissa.partition(".")[2]) * 10.0 ** int(exp or 0)
    return abs(float(text) - x) <= 0.5 * unit * (1 + 1e-9) + 1e-300


def factor_ok(text: str, r: float) -> bool:
    return shown_ok(text[1:], r) if text.startswith("×") else shown_ok(text[:-1], r)


def clause(o: dict) -> str | None:
    """What the numbers allow the sentence to say of the two paths (fact ``paths``): a saturated head's W_q gradient
    below 1/1000 of W_v's ("starved"), or both passing ("both")."""
    s = state0(o)
    if s == "saturated" and o["q_path"] < 1e-3 * o["value_path"]:
        return "starved"
    if s != "saturated" and o["q_path"] >= 1e-3 * o["value_path"]:
        return "both"
    return None


def near_a_line(o: dict) -> bool:
    """An entropy share or a weight within round-off of a threshold: the words could go either way."""
    return (any(abs(o["entropy"] - t) < 1e-9 for t in (0.1, 0.9)) or abs(o["target"] - 0.5) < 1e-9
            or abs(o["q_path"] - 1e-3 * o["value_path"]) < 1e-9 * o["value_path"])


def check_sentence(text, o0: dict, o1: dict | None, *, run: str, label: str, d_k: int, seed: int, step: int):
    """A run's sentence (its facts) against the oracle at step 0 (``o0``) and now (``o1``)."""
    facts, shown = text.facts, text.shown
    assert (facts["run"], facts["label"], facts["d_k"], facts["seed"], facts["n_keys"]) == (run, label, d_k, seed, 8)
    assert shown["run"] == run.upper() and shown["label"] == label, text
    assert facts["was"] == state0(o0) and pct_ok(shown["entropy"], o0["entropy"]), (text, o0)
    assert shown_ok(shown["q_path"], o0["q_path"]) and shown_ok(shown["value_path"], o0["value_path"]), (text, o0)
    assert facts.get("paths") == clause(o0), (text, o0)
    if "paths" in facts:    # the tense follows the step: what the head passes at step 0, what it passed then
        assert any(f" {w} " in shown["paths"] for w in (("passes", "get") if step == 0 else ("passed", "got"))), text
    if step == 0:
        assert "step" not in facts and "now" not in facts and pct_ok(shown["target"], o0["target"]), (text, o0)
        return
    assert facts["step"] == step and facts["now"] == state1(o1), (text, o1)
    assert pct_ok(shown["now_entropy"], o1["entropy"]) and pct_ok(shown["now_target"], o1["target"]), (text, o1)


def check_headline(h, o0: dict, o1: dict | None, *, run: str, step: int):
    """The headline's facts (web/claims/claim.py) against the oracle's head at step 0 and at ``step``."""
    assert len(h.split()) <= MAX_WORDS, (len(h.split()), h)
    assert h.facts["run"] == run and h.facts["n_keys"] == 8, h
    assert h.facts["was"] == state0(o0) and pct_ok(h.shown["entropy"], o0["entropy"]), (h, o0)
    assert shown_ok(h.shown["q_path"], o0["q_path"]) and shown_ok(h.shown["value_path"], o0["value_path"]), (h, o0)
    if step:
        assert h.facts["step"] == step, h
        assert h.facts["now"] == state1(o1) and pct_ok(h.shown["now_entropy"], o1["entropy"]), (h, o1)
    else:
        assert "now" not in h.facts, h


def check_growth(text, o0: dict, o1: dict, *, run: str, step: int, normalizes: bool):
    facts, shown = text.facts, text.shown
    assert (facts["run"], facts["step"]) == (run, step), text
    grow, lengths, cosines = (o1[k] / o0[k] for k in ("logit_rms", "length_rms", "cos_rms"))
    assert facts["direction"] == (grow >= 1) and shown["direction"] == ("grew" if grow >= 1 else "shrank"), (text, grow)
    assert factor_ok(shown["grow"], grow), (text, grow)
    assert shown_ok(shown["logit0"], o0["logit_rms"]) or abs(float(shown["logit0"]) / o0["logit_rms"] - 1) < 5e-3, text
    assert abs(float(shown["logit1"]) / o1["logit_rms"] - 1) < 5e-3, (text, o1)
    assert factor_ok(shown["lengths"], lengths) and factor_ok(shown["cosines"], cosines), (text, lengths, cosines)
    assert abs(float(shown["cos0"]) / o0["cos_rms"] - 1) < 5e-3 and abs(float(shown["cos1"]) / o1["cos_rms"] - 1) < 5e-3
    if normalizes:
        assert lengths == pytest.approx(1, rel=1e-9)
        assert text.endswith(", and QK-norm holds |q| = |k| = 1, so only the angles can move its logits.") \
            and "more" not in facts, text
    else:
        more = "angles" if abs(math.log(cosines)) > abs(math.log(lengths)) else "lengths"
        assert facts["more"] == more and shown["more"] == f"the {more} did more than the " + \
            ("lengths" if more == "angles" else "angles"), (text, more)
        assert factor_ok(shown["rotation"], 1 / o0["cos_rms"]), text


# ---- the page's runs ----------------------------------------------------------------------------------
def check_runs(torch, train: TrainingState, steps: int):
    """Both runs at step 0 and after ``steps``: the featured run's headline, each run's sentence, what a sharp
    head passes back, the batch's gradient and the logit growth, all from the oracle."""
    initial = {}
    for k, t in train.trainers.items():
        cfg = t.config
        np.testing.assert_array_equal(t.probe.keys, draw_probe(cfg)[0])   # the batch drawn here is the page's
        initial[k] = oracle(torch, draw_initial(cfg), cfg)
    for step in (0, steps):
        if step:
            train.advance(steps)
        now = {k: oracle(torch, t.params, t.config) if step else initial[k] for k, t in train.trainers.items()}
        if any(near_a_line(o) for o in (*initial.values(), *now.values())):
            continue
        headline, conditions, details = train.sharpness_summary()
        key = "b" if initial["b"]["entropy"] < initial["a"]["entropy"] else "a"
        t = train.trainers[key]
        check_headline(headline, initial[key], now[key], run=key, step=step)
        assert conditions == (f"run {key.upper()}: {train.label(key)}, d_k = {t.config.d_k}, seed {t.config.seed}, "
                              f"step {step}, 8 keys, {'Adam' if t.config.optimizer == 'adam' else 'SGD'} at learning "
                              f"rate {t.config.lr:g}; gradients of the median of 32 held-out examples"), conditions
        sentences = [d for d in details if "label" in d.facts]          # each run's sentence, featured run first
        assert [s.facts["run"] for s in sentences] == [key, "b" if key == "a" else "a"]
        for s, k in zip(sentences, (key, "b" if key == "a" else "a")):
            check_sentence(s, initial[k], now[k], run=k, label=train.label(k), d_k=train.d_k, seed=train.seed,
                           step=step)
        for k in ("a", "b"):
            sharp = [d for d in details if d.startswith(f"At step {step} run {k.upper()}'s median example passes")]
            if step and state1(now[k]) == "sharp" and now[k]["q_path"] < 1e-3 * now[k]["value_path"]:
                f, shown = sharp[0].facts, sharp[0].shown
                assert (f["run"], f["step"]) == (k, step), sharp
                assert shown_ok(shown["q_path"], now[k]["q_path"]) and shown_ok(shown["value_path"], now[k]["value_path"])
                assert pct_ok(shown["target"], now[k]["target"]), sharp
            else:
                assert sharp == [], sharp
            growth = [d for d in details if d.startswith(f"From step 0 to step {step} run {k.upper()}'s logits")]
            if step:
                check_growth(growth[0], initial[k], now[k], run=k, step=step,
                             normalizes=train.trainers[k].config.rule == "qknorm")
            else:
                assert growth == []
        batch = next(d for d in details if d.startswith("Over the whole batch"))
        o, f, shown = initial[key], batch.facts, batch.shown
        assert f["run"] == key and shown_ok(shown["batch_q"], o["batch_q"]) and shown_ok(shown["batch_v"], o["batch_v"])
        if state0(o) == "saturated" and o["q_path"] < 1e-3 * o["value_path"]:
            assert pct_ok(shown["saturated"], o["saturated"]) and shown_ok(shown["q_path"], o["q_path"]), (batch, o)
            assert "(top weight > 0.99)" in batch, batch
            assert shown_ok(shown["q_max"], o["q_max"]) and ("sparse" in f) == (o["q_max"] > 1e3 * o["q_path"]), (batch, o)
        else:
            assert set(f) == {"run", "batch_q", "batch_v"}, batch


@pytest.mark.parametrize("seed", range(8))
def test_the_sentences_hold_over_seeds(torch, seed):
    """At d_k = 64, no scaling (run A) against the fold (run B), at step 0 and after 40 steps of Adam, seeds
    0-7; with 1/√d_k as run B for the even seeds."""
    train = TrainingState(LabState(), d_k=64, rule_a="none", rule_b="sqrt" if seed % 2 == 0 else "fold", seed=seed)
    check_runs(torch, train, 40)


@pytest.mark.parametrize("d_k, rule_a, rule_b, optimizer, lr, steps, seed", [
    (min(TRAIN_D_K_OPTIONS), "none", "sqrt", "adam", 0.01, 60, 3),
    (max(TRAIN_D_K_OPTIONS), "none", "fold", "adam", 0.01, 6, 9),
    (256, "sqrt", "none", "sgd", 1.0, 40, 5),
    (16, "qknorm", "linear", "adam", 0.01, 40, 2),
    (256, "softcap", "llama4", "sgd", 1.0, 40, 6),   # today's rules: Gemma 2's cap, Llama 4's temperature
])
def test_the_sentences_hold_at_the_corners(torch, d_k, rule_a, rule_b, optimizer, lr, steps, seed):
    """The smallest and largest d_k of the page, SGD (run B unscaled, so B is the featured run when it starts more
    peaked), QK-norm (lengths fixed) beside 1/d_k."""
    train = TrainingState(LabState(), d_k=d_k, rule_a=rule_a, rule_b=rule_b, optimizer=optimizer, lr=lr, seed=seed)
    check_runs(torch, train, steps)


def test_the_sentence_at_d_k_1(torch):
    """d_k = 1 (every cosine ±1, below the page's range): the claim functions on a Trainer of sdpa_core directly."""
    cfg = sc.TrainConfig(d_k=1, rule="none", seed=4)
    t = sc.Trainer(cfg)
    o0 = oracle(torch, draw_initial(cfg), cfg)
    text = claims.sharpness_sentence(t.sharpness(initial=True), t.sharpness(), run="a", label="no scaling", d_k=1,
                                     seed=4, step=0)
    check_sentence(text, o0, None, run="a", label="no scaling", d_k=1, seed=4, step=0)
    t.run(50)
    o1 = oracle(torch, t.params, cfg)
    assert o1["cos_rms"] == pytest.approx(1) and o0["cos_rms"] == pytest.approx(1)
    text = claims.sharpness_sentence(t.sharpness(initial=True), t.sharpness(), run="a", label="no scaling", d_k=1,
                                     seed=4, step=50)
    check_sentence(text, o0, o1, run="a", label="no scaling", d_k=1, seed=4, step=50)
    check_growth(claims.logit_growth_sentence(t.sharpness(initial=True), t.sharpness(), run="a", step=50,
                                              normalizes=False), o0, o1, run="a", step=50, normalizes=False)


def test_the_default_state_is_the_point_the_section_makes(torch):
    """At the page's defaults (d_k = 1024, seed 9) the unscaled run A starts saturated, its median example passing
    W_q less than 1/1000 of what it passes W_v, while 1/√d_k starts spread with both paths fed."""
    train = TrainingState(LabState())
    o = {k: oracle(torch, draw_initial(t.config), t.config) for k, t in train.trainers.items()}
    assert state0(o["a"]) == "saturated" and o["a"]["q_path"] < 1e-3 * o["a"]["value_path"]
    assert state0(o["b"]) == "partly peaked" and o["b"]["q_path"] > o["b"]["value_path"]
    headline, _, _ = train.sharpness_summary()
    assert headline.startswith("At step 0 run A is saturated (entropy ")


def test_the_sources_sentence_cites_both_papers_and_claims_no_number_from_them():
    text = claims.LOGIT_GROWTH_SOURCES
    assert "Dehghani et al. (2023)" in text and "https://arxiv.org/abs/2302.05442" in text
    assert "Wortsman et al. (2023)" in text and "https://arxiv.org/abs/2309.14322" in text
    # its only numbers are the papers' years, their arXiv ids and the 22 of the title
    numbers = set(re.findall(r"\d+(?:\.\d+)?", re.sub(r"\(https://arxiv\.org/abs/[\d.]+\)", "", text)))
    assert numbers <= {"2023", "22", "1"}, numbers
