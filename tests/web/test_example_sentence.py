"""Train it's fixed example: the figure's label says what each run puts on the key to find, and that sentence is
recomputed here from the runs' weights with a forward pass of its own (numpy logits, torch's softmax) on the
example drawn here, over seeds, steps and the corners (d_k 16 and the page's largest; no scaling, 1/√d_k, 1/d_k,
QK-norm; Adam and SGD)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import sdpa_core as sc
from sdpa_core.model import clear_example
from web.figure_labels import label_of
from web.options import TRAIN_D_K_OPTIONS
from web.page import Page
from web.views.training import Training
from shown import pct_ok


def target_weight(torch, params: dict, cfg: sc.TrainConfig) -> tuple[float, int]:
    """The run's weight on the example's target key, from the example drawn here (stream [seed, 2])."""
    ex = clear_example(np.random.default_rng([cfg.seed, 2]), cfg)
    q, k = ex.query[0, 0] @ params["Wq"], ex.keys[0] @ params["Wk"]
    if cfg.rule == "qknorm":
        q, k = q / np.linalg.norm(q), k / np.linalg.norm(k, axis=-1, keepdims=True)
    scale = {"none": 1.0, "sqrt": cfg.d_k ** -0.5, "linear": 1 / cfg.d_k, "qknorm": 1 / cfg.temperature}[cfg.rule]
    w = torch.softmax(torch.tensor(scale * (k @ q)), dim=-1).numpy()
    return float(w[int(ex.target[0])]), int(ex.target[0])


@pytest.mark.parametrize("d_k, rule_a, rule_b, optimizer, steps, seed", [
    (64, "none", "sqrt", "adam", 0, 0), (64, "none", "sqrt", "adam", 40, 1),
    (min(TRAIN_D_K_OPTIONS), "linear", "qknorm", "adam", 30, 2),
    (max(TRAIN_D_K_OPTIONS), "none", "sqrt", "sgd", 5, 3),
])
def test_the_fixed_examples_label_says_each_runs_weight_on_its_key(torch, d_k, rule_a, rule_b, optimizer, steps, seed):
    page = Page(f"?view=training&train_d_k={d_k}&rule_a={rule_a}&rule_b={rule_b}&optimizer={optimizer}&seed={seed}")
    view = Training(train=page.train)
    view.__panel__()
    train = page.train
    if steps:
        view._advance(steps)    # what Step and Play do
    fig = view.example_fig
    label = fig.html_attributes["aria-label"]
    assert label == label_of(fig) and f"at step {train.steps_done}, run A puts " in label, label
    for run in "ab":
        tr = train.trainers[run]
        w, target = target_weight(torch, tr.params, tr.config)
        said = label.split(f"run {run.upper()} ")[1].split(" ")[0 if run == "b" else 1].rstrip(".,")
        assert pct_ok(said, w, tol=1e-6), (run, said, w, label)
        assert f"(key {target})" in label and math.isfinite(w)
