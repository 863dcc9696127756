"""Scale versus initialisation in Train it: no scaling with 1/√d_k folded into W_q's init starts from the
explicit factor's logits exactly, and then learns differently; the sentence's numbers are the runs', and its
reason (a step on W_q moves the folded logits √d_k× as far under Adam, d_k× under SGD, W_k alike) is
checked on one step of each optimizer computed here."""
from __future__ import annotations

import math

import numpy as np
import pytest

import sdpa_core as sc
from sdpa_core.model import init_params, loss_and_grads, make_batch
from web import claims
from web.state import LabState
from web.training_state import TrainingState


def logits(params, batch, scale):   # (B, 1, n): the model's q·k times its scale, written out here
    q = batch.query @ params["Wq"]
    k = batch.keys @ params["Wk"]
    return scale * q @ k.swapaxes(-1, -2)


@pytest.mark.parametrize("optimizer, factor", [("adam", 0.5), ("sgd", 1.0)])
@pytest.mark.parametrize("d_k", [16, 256])
def test_one_step_on_w_q_moves_the_folded_logits_d_k_to_the_power_factor_as_far(optimizer, factor, d_k):
    """From the same draw, the folded and the explicit model have equal logits; one optimizer step on W_q alone
    changes the folded logits d_k^½ (Adam) or d_k (SGD) times as much, and one on W_k alone changes both alike."""
    lr = 1e-3
    cfg = {"explicit": sc.TrainConfig(d_k=d_k, rule="sqrt", seed=3, optimizer=optimizer, lr=lr),
           "folded": sc.TrainConfig(d_k=d_k, rule="none", q_init=d_k ** -0.5, seed=3, optimizer=optimizer, lr=lr)}
    scale = {"explicit": d_k ** -0.5, "folded": 1.0}
    batch = make_batch(np.random.default_rng(1), cfg["explicit"])
    p = {k: init_params(np.random.default_rng([3, 0]), c) for k, c in cfg.items()}
    z0 = {k: logits(p[k], batch, scale[k]) for k in p}
    np.testing.assert_allclose(z0["folded"], z0["explicit"], rtol=1e-12, atol=1e-12)
    moved = {}
    for weight in ("Wq", "Wk"):
        for k in p:
            g = loss_and_grads(p[k], batch, cfg[k])[1][weight]
            # Adam's first step is lr * m/(sqrt(v) + eps) with m, v bias-corrected: lr * g/(|g| + eps)
            step = lr * g / (np.abs(g) + 1e-8) if optimizer == "adam" else lr * g
            changed = {**p[k], weight: p[k][weight] - step}
            moved[(weight, k)] = np.linalg.norm(logits(changed, batch, scale[k]) - z0[k])
    assert moved[("Wq", "folded")] / moved[("Wq", "explicit")] == pytest.approx(d_k ** factor, rel=1e-3)
    assert moved[("Wk", "folded")] / moved[("Wk", "explicit")] == pytest.approx(1.0, rel=1e-3)


@pytest.mark.parametrize("optimizer, lr", [("adam", 0.01), ("sgd", 1.0)])
def test_the_fold_sentence_reports_the_runs_it_compares(optimizer, lr):
    """Run A folded, run B 1/√d_k: the status says the first losses are equal (they are, exactly) and gives
    the mean loss of each run over the last 20 steps, with the optimizer's factor."""
    lab = LabState()
    train = TrainingState(lab, d_k=64, rule_a="fold", rule_b="sqrt", optimizer=optimizer, lr=lr)
    train.advance(40)
    a, b = (train.trainers[k].history["loss"] for k in ("a", "b"))
    assert a[0] == b[0]
    label = {"adam": "Adam", "sgd": "SGD"}[optimizer]
    fold = claims.fold_sentence(a, b, d_k=64, optimizer=label, lr=lr)
    assert fold and fold in train.status, train.status
    f, shown = fold.facts, fold.shown
    assert f["first_folded"] == pytest.approx(a[0], abs=1e-12) and float(shown["first_explicit"]) == pytest.approx(b[0], abs=5e-4)
    assert (f["steps"], f["optimizer"], f["lr"], f["d_k"]) == (40, label, lr, 64)
    assert float(shown["mean_folded"]) == pytest.approx(np.mean(a[20:40]), abs=5e-4)
    assert float(shown["mean_explicit"]) == pytest.approx(np.mean(b[20:40]), abs=5e-4)
    assert shown["factor"] == ("√d_k = 8" if optimizer == "adam" else "d_k = 64")



def test_a_fold_run_is_a_link_setting_and_bad_values_are_refused():
    """?rule_a=fold&optimizer=sgd restores the comparison; the core refuses a bad optimizer or q_init."""
    from web.urlstate import apply_query, to_query
    lab = LabState()
    train = TrainingState(lab)
    assert apply_query("?view=training&rule_a=fold&optimizer=sgd", lab, train) == []
    assert train.rule_a == "fold" and train.optimizer == "sgd" and train.trainers["a"].config.q_init == math.sqrt(1 / train.d_k)
    assert "rule_a=fold" in to_query(lab, train) and "optimizer=sgd" in to_query(lab, train)
    with pytest.raises(ValueError, match="optimizer"):
        sc.TrainConfig(optimizer="rmsprop")
    with pytest.raises(ValueError, match="q_init"):
        sc.TrainConfig(q_init=0)
