"""The real transformer's view (web/views/real.py): the shipped grid is the experiment's own results file, and
every sentence and plotted number is recomputed here from the raw runs, independently of web/real_training.py,
at every width and init of the grid."""
from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

from web import real_training as rt
from web.claims.real import SATURATED_SHARE
from web.training_state import TrainingState
from web.views.real import RULES, Real

ROOT = Path(__file__).resolve().parents[2]
#: The experiment's results file of the grid the page ships (its own "size" names it)
SOURCE = ROOT / "experiments" / "real_transformer" / "results" / f"{rt.grid()['size']}.json"
RAW = json.loads(SOURCE.read_text())


def test_the_page_ships_the_experiments_results_unchanged():
    assert rt.DATA.read_bytes() == SOURCE.read_bytes()
    assert rt.DATA.stat().st_size <= 300_000
    prov = RAW["provenance"]
    for key in ("command", "git_head", "date_utc", "wall_seconds", "hardware", "versions"):
        assert prov[key], key


def runs(init, d_k, rule, lr):
    out = [r for r in RAW["runs"] if r["init"] == init and r["d_k"] == d_k and r["rule"] == rule
           and math.isclose(r["lr"], lr)]
    assert len(out) == len(RAW["spec"]["seeds"])
    return out


def fails(init, d_k, rule, lr) -> bool:
    rs = runs(init, d_k, rule, lr)
    end = statistics.mean(max(layer["sat"][-1] for layer in r["layers"]) for r in rs)
    return end > SATURATED_SHARE or any(r["diverged"] for r in rs)


def loss(init, d_k, rule, lr) -> float:
    return statistics.mean(r["final_val_loss"] for r in runs(init, d_k, rule, lr))


SEEDS = RAW["spec"]["seeds"]


def run_of(init, d_k, rule, lr, seed):
    return next(r for r in runs(init, d_k, rule, lr) if r["seed"] == seed)


def fails_in(init, d_k, rule, lr, seed) -> bool:
    r = run_of(init, d_k, rule, lr, seed)
    return max(layer["sat"][-1] for layer in r["layers"]) > SATURATED_SHARE or r["diverged"]


def counted(cells, n) -> str:
    """A count made from the seeds' mean, with the single seeds' range where any differs (issue 56)."""
    per = [sum(fails_in(*c, seed) for c in cells) for seed in SEEDS]
    return str(n) if all(x == n for x in per) else f"{n} (seeds {min(per)}–{max(per)})"


def gap_text(init, small, lrs) -> str:
    mean = max(loss(init, small, "none", lr) - loss(init, small, "sqrt", lr) for lr in lrs)
    one = max(run_of(init, small, "none", lr, s)["final_val_loss"] - run_of(init, small, "sqrt", lr, s)["final_val_loss"]
              for lr in lrs for s in SEEDS)
    m, o = f"{max(mean, 0):.2f}", f"{max(one, 0):.2f}"
    return f"{m} nats" if o == m or one <= mean else f"{m} nats ({o} for one seed)"


CASES = [(i, d) for i in RAW["spec"]["inits"] for d in RAW["spec"]["d_ks"]]


@pytest.fixture(scope="module")
def view():
    return Real(train=TrainingState())


@pytest.mark.parametrize("init, d_k", CASES)
def test_every_sentence_is_the_grids(view, init, d_k):
    tr = view.train
    tr.param.update(real_init=init, real_d_k=d_k, real_lr=RAW["spec"]["lrs"][-1])
    lrs = RAW["spec"]["lrs"]
    text = view.summary.object
    # the headline: per rule, at how many rates its runs saturate or diverge
    counts = {rule: counted([(init, d_k, rule, lr) for lr in lrs], sum(fails(init, d_k, rule, lr) for lr in lrs))
              for rule in RULES}
    words = {"none": "no scaling", "sqrt": "1/√d_k", "linear": "1/d_k", "qknorm": "QK-norm"}
    first, *rest = RULES
    plain = text.replace("<b>", "").replace("</b>", "")
    n_first, _, spread_first = counts[first].partition(" ")
    assert (f"d_k = {d_k}: rows saturate at {n_first} of {len(lrs)} rates"
            f"{' ' + spread_first if spread_first else ''} with {words[first]}") in plain, plain
    for rule in rest:
        assert f"{counts[rule]} with {words[rule]}" in plain, (rule, plain)
    # the scope, in the visible conditions (issue 56): heads, width, steps
    spec = RAW["spec"]
    summary = plain.split("<summary>")[1].split("</summary>")[0]
    assert f"{spec['n_heads']} head" in summary and "d_model = " in summary and f"{spec['steps']} AdamW steps" in summary
    # each rule's best rate and loss, and each seed's best rate where they differ
    spread = 0.0
    for rule in RULES:
        best = min(lrs, key=lambda lr: loss(init, d_k, rule, lr))
        per = [min(lrs, key=lambda lr, s=s: run_of(init, d_k, rule, lr, s)["final_val_loss"]) for s in SEEDS]
        by_seed = "" if all(x == best for x in per) else " (by seed: " + ", ".join(f"{x:g}" for x in per) + ")"
        assert f"{words[rule]} {loss(init, d_k, rule, best):.2f} at lr {best:g}{by_seed}" in plain, (rule, plain)
        at = [run_of(init, d_k, rule, best, s)["final_val_loss"] for s in SEEDS]
        spread = max(spread, max(at) - min(at))
    assert f"the seeds differ by up to {spread:.2f} nats" in plain
    # the logits' std at the start and the end, at the reader's rate (the layer with the largest, seeds' mean)
    for rule in RULES:
        rs = runs(init, d_k, rule, lrs[-1])
        std = [statistics.mean(max(layer["std"][i] for layer in r["layers"]) for r in rs) for i in (0, -1)]
        assert f"{words[rule]} {std[0]:.3g} → {std[1]:.3g}" in plain, (rule, plain)
    # the smallest width: no scaling's largest excess over 1/√d_k
    small = min(RAW["spec"]["d_ks"])
    assert f"At d_k = {small}, no scaling's final loss is at most {gap_text(init, small, lrs)} above" in plain


@pytest.mark.parametrize("init, d_k", CASES)
def test_the_plots_are_the_grids(view, init, d_k):
    view.train.param.update(real_init=init, real_d_k=d_k)
    lrs = RAW["spec"]["lrs"]
    for rule in RULES:
        data = view.loss_sources[rule].data
        assert data["lr"] == lrs
        assert data["loss"] == pytest.approx([loss(init, d_k, rule, lr) for lr in lrs], rel=1e-12)
        ringed = view.sat_sources[rule].data["lr"]
        assert ringed == [lr for lr in lrs if fails(init, d_k, rule, lr)]
        # the headline at a glance: at every width, at how many rates the rule's rows saturate
        counts = view.range_sources[rule].data
        assert counts["d_k"] == RAW["spec"]["d_ks"]
        assert counts["count"] == [sum(fails(init, d, rule, lr) for lr in lrs) for d in RAW["spec"]["d_ks"]]
    assert view.range_mark.location == d_k


def test_the_controls_move_the_state_and_back(view):
    tr = view.train
    view.d_k.value = min(rt.D_KS)
    assert tr.real_d_k == min(rt.D_KS)
    tr.real_lr = max(rt.LRS)
    assert view.lr.value == max(rt.LRS)


def test_a_link_snaps_to_the_grid():
    from web.state import LabState
    from web.urlstate import apply_query
    lab, tr = LabState(), TrainingState()
    notices = apply_query("?view=real&real_d_k=100&real_lr=0.002&real_init=nope", lab, tr)
    assert tr.real_d_k in rt.D_KS and tr.real_lr in rt.LRS and tr.real_init == "gpt2"
    assert len(notices) == 3, notices


def std_at(init, d_k, rule, lr, i):
    return statistics.mean(max(layer["std"][i] for layer in r["layers"]) for r in runs(init, d_k, rule, lr))


@pytest.mark.parametrize("init", RAW["spec"]["inits"])
def test_the_questions_answer_is_the_grids(init):
    """Each fact of the answer, recomputed from the raw runs; a finding is stated exactly where the grid shows it."""
    got = rt.answer(init)
    f, lrs = got.facts, RAW["spec"]["lrs"]
    small, large = min(RAW["spec"]["d_ks"]), max(RAW["spec"]["d_ks"])
    assert (f["small"], f["large"], f["n_lrs"]) == (small, large, len(lrs))
    assert f["gap"] == pytest.approx(max(0.0, max(loss(init, small, "none", lr) - loss(init, small, "sqrt", lr)
                                                  for lr in lrs)), rel=1e-9)
    assert f"costs at most {gap_text(init, small, lrs)} at any" in got
    for rule in ("none", "sqrt", "qknorm"):
        assert f[f"sat_{rule}"] == sum(fails(init, large, rule, lr) for lr in lrs), rule
        shown = counted([(init, large, rule, lr) for lr in lrs], f[f"sat_{rule}"])
        assert f"at {shown}" in got.split("saturate")[1], (rule, shown, got)
    a, b = std_at(init, large, "sqrt", rt.LR_DEFAULT, 0), std_at(init, large, "sqrt", rt.LR_DEFAULT, -1)
    assert ("std_a" in f) == (b > 2 * a)
    if "std_a" in f:
        assert (f["std_a"], f["std_b"]) == (pytest.approx(a), pytest.approx(b))

    def near(d_k, seed=None):
        if seed is None:
            return sum(not fails(init, d_k, "sqrt", lr) for lr in lrs)
        return sum(not fails_in(init, d_k, "sqrt", lr, seed) for lr in lrs)
    shrinks = near(large) < near(small) and all(near(large, s) < near(small, s) for s in SEEDS)
    assert ("range_small" in f) == shrinks
    if "range_small" in f:
        assert (f["range_small"], f["range_large"]) == (near(small), near(large))
    # 1/d_k's best rate against 1/√d_k's: stated as moved or shared only where every seed agrees
    best = {r: min(lrs, key=lambda lr: loss(init, large, r, lr)) for r in ("sqrt", "linear")}
    per = {r: [min(lrs, key=lambda lr, s=s: run_of(init, large, r, lr, s)["final_val_loss"]) for s in SEEDS]
           for r in ("sqrt", "linear")}
    moved = [a != b for a, b in zip(per["linear"], per["sqrt"])]
    assert ("moves the best learning rate:" in got) == (best["linear"] != best["sqrt"] and all(moved))
    assert ("share their best learning rate" in got) == (best["linear"] == best["sqrt"] and not any(moved))
    if "depends on the seed" in got:
        for s, (a, b) in zip(SEEDS, zip(per["linear"], per["sqrt"])):
            assert f"{a:g} and {b:g} for seed {s}" in got


def test_the_question_states_the_answer():
    from web.views.questions import QUESTIONS
    q = next(q for q in QUESTIONS if q.preset == {"view": "real"})
    assert str(rt.answer()) in q.answer


def test_the_toy_sweep_runs_point_by_point_and_says_how_it_compares():
    """The live sweep: one point per finished run, in order; its sentence counts, in the toy and in the real
    grid, the rates where no scaling ends above 1/√d_k (recomputed here); a new d_k starts it over."""
    import numpy as np
    import sdpa_core as sc
    from web.claims.real import ABOVE
    from web.toy_sweep import STEPS, WINDOW
    from web.training_state import TRAIN_SEED
    tr = TrainingState()
    tr.real_d_k = min(rt.D_KS)
    v = Real(train=tr)
    lrs = RAW["spec"]["lrs"]
    v.sweep.running = True
    seen = []
    while v.sweep.running:
        if v.sweep.advance() is not None:
            seen.append(sum(len(src.data["lr"]) for src in v.toy_sources.values()))
    assert seen == list(range(1, len(seen) + 1)) and len(seen) == len(v.toy_sources) * len(lrs)
    # one run against sdpa_core's trainer run by hand
    t = sc.Trainer(sc.TrainConfig(d_k=tr.real_d_k, rule="sqrt", lr=lrs[2], seed=TRAIN_SEED))
    with np.errstate(all="ignore"):
        t.run(STEPS)
    toy = v.sweep.losses
    assert toy[("sqrt", lrs[2])] == pytest.approx(np.mean(t.history["loss"][-WINDOW:]), rel=1e-12)
    d_k = tr.real_d_k
    toy_n = sum(toy[("none", lr)] > toy[("sqrt", lr)] + ABOVE for lr in lrs)
    real_n = sum(loss("gpt2", d_k, "none", lr) > loss("gpt2", d_k, "sqrt", lr) + ABOVE for lr in lrs)
    per = [sum(run_of("gpt2", d_k, "none", lr, s)["final_val_loss"] > run_of("gpt2", d_k, "sqrt", lr, s)["final_val_loss"]
               + ABOVE for lr in lrs) for s in SEEDS]
    real = str(real_n) if all(x == real_n for x in per) else f"{real_n} (seeds {min(per)}–{max(per)})"
    assert (f"no scaling ends more than {ABOVE:g} nats above 1/√d_k at {toy_n} of {len(lrs)} learning rates in the "
            f"toy, and at {real} in the real transformer") in v.toy_text.object
    assert v.toy_button.disabled
    tr.real_d_k = max(rt.D_KS)
    assert v.sweep.losses == {} and all(len(s.data["lr"]) == 0 for s in v.toy_sources.values())
    assert not v.toy_button.disabled and "Not run yet" in v.toy_text.object
    # back at the width already swept: its finished runs come back, drawn, and nothing is run again (issue 57)
    tr.real_d_k = d_k
    assert v.sweep.losses == toy and not v.sweep.pending() and v.toy_button.disabled
    assert sum(len(src.data["lr"]) for src in v.toy_sources.values()) == len(seen)


def test_the_tuned_and_necessary_answers_are_the_grids():
    """The sentences "Can the factor be tuned?" and "Is it always necessary?" take from the grid, recomputed from
    the raw runs, and the answers carry them."""
    from web.views.questions import QUESTIONS
    lrs, d_ks = RAW["spec"]["lrs"], RAW["spec"]["d_ks"]
    tuned, necessary = rt.tuned(), rt.necessary()
    assert tuned.facts["cells"] == len(lrs) * len(d_ks)
    for rule, name in (("qknorm", "qk"), ("sqrt", "sq")):
        cells = [("gpt2", d, rule, lr) for d in d_ks for lr in lrs]
        assert tuned.facts[name] == sum(fails(*c) for c in cells)
        assert f"at {counted(cells, tuned.facts[name])}" in tuned
    small, large = min(d_ks), max(d_ks)
    gap = max(loss("gpt2", small, "none", lr) - loss("gpt2", small, "sqrt", lr) for lr in lrs)
    assert necessary.facts["gap"] == pytest.approx(max(gap, 0.0))
    assert f"at most {gap_text('gpt2', small, lrs)} at" in necessary
    assert necessary.facts["sat"] == sum(fails("gpt2", large, "none", lr) for lr in lrs)
    assert f"at {counted([('gpt2', large, 'none', lr) for lr in lrs], necessary.facts['sat'])} of" in necessary
    for sentence in (tuned, necessary):     # the scope, in the sentence itself (issue 56)
        assert f"{RAW['spec']['steps']} AdamW steps" in sentence and "early training" in sentence
    answers = {q.question: q.answer for q in QUESTIONS}
    assert str(tuned) in answers["Can the factor be tuned?"]
    assert str(necessary) in answers["Is it always necessary?"]
    assert "Does that hold in a real transformer?" in answers     # the question both sentences name


def test_the_toys_caption_names_the_width_the_reader_picked():
    """Issue 56: with ?view=real&real_d_k=16 the toy's caption still said "Not run yet at d_k = 256" (no run at either
    width left its losses {}, and the caption followed the losses only). Every width of the grid, from a link and from
    a move, is named."""
    import panel as pn

    from web import real_training as rt
    from web.page import Page

    def caption(page):
        (text,) = [h.object for h in page.view("real").select(pn.pane.HTML) if "Not run yet at d_k" in (h.object or "")]
        return text

    for d_k in rt.D_KS:
        assert f"Not run yet at d_k = {d_k}:" in caption(Page(search=f"?view=real&real_d_k={d_k}"))
    page = Page(search="?view=real")
    for d_k in rt.D_KS:
        page.train.real_d_k = d_k
        assert f"Not run yet at d_k = {d_k}:" in caption(page)
