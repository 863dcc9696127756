"""The page's state objects and query-string parsing, without a browser."""
import math
import sys

import numpy as np
import pytest

import sdpa_core as sc
from web.claims import verdict
from web.options import D_K_OPTIONS, MAX_D_K, MAX_N, MAX_TRAIN_STEPS, SAMPLES_OPTIONS, SWEEP_BUDGET
from web.state import LabState
from web.training_state import TrainingState
from web.urlstate import HOME_VIEW, KEYS, apply_query, parse_query, to_query


@pytest.fixture
def lab():
    return LabState()


def test_changing_d_k_updates_the_readouts(lab):
    """Changing d_k updates the entropy readout and the verdict: unscaled attention gets sharper."""
    before = lab.playground["none"]["stats"]["entropy"]
    verdict_before = lab.verdict
    lab.d_k = 4096
    after = lab.playground["none"]["stats"]["entropy"]
    assert after < before
    assert lab.verdict != verdict_before
    # 1/sqrt(d_k) keeps the logit spread near sigma^2 = 1 whatever d_k is
    assert lab.playground["rule"]["stats"]["logit_std"] == pytest.approx(1.0, rel=0.3)


def test_the_playground_is_computed_while_it_is_shown_and_for_the_settings_of_then():
    """Another view's notch leaves the playground alone (it was ~8% of a saturation notch); showing the
    playground computes it at the settings of that moment, as a fresh state at those settings has it."""
    lab = LabState(view="saturation")
    assert lab.playground is None and "playground" not in lab.timings
    events = []
    lab.param.watch(lambda *e: events.extend(e), ["playground", "verdict"])
    lab.param.update(d_k=512, rho=0.3, causal=True, dtype="float16")
    assert events == [] and lab.playground is None
    lab.view = "playground"
    fresh = LabState(view="playground", d_k=512, rho=0.3, causal=True, dtype="float16")
    assert lab.verdict == fresh.verdict and lab.verdict
    for side in ("none", "rule"):
        np.testing.assert_array_equal(lab.playground[side]["weights"], fresh.playground[side]["weights"])
    lab.view = "variance"
    lab.d_k = 64
    assert lab.playground["none"]["weights"].shape == fresh.playground["none"]["weights"].shape
    np.testing.assert_array_equal(lab.playground["none"]["weights"], fresh.playground["none"]["weights"])


def test_unscaled_logit_std_grows_like_sqrt_d_k(lab):
    """The unscaled logit std at d_k = 1024 is about sqrt(1024) = 32 times sigma^2."""
    lab.d_k = 1024
    assert lab.playground["none"]["stats"]["logit_std"] == pytest.approx(32, rel=0.25)


def test_verdict_names_the_saturation_and_which_gradient(lab):
    """At large d_k the verdict gives the top-weight share and saturated rows, and names the gradient it
    speaks of: the one reaching q, with the scale included."""
    lab.d_k = 2048
    assert "of each row's weight on its top token" in lab.verdict
    assert "of rows saturated" in lab.verdict
    assert "Gradient reaching q (chain rule, scale included)" in lab.verdict
    assert "smaller than" not in lab.verdict


def test_verdict_is_published_with_the_state_it_describes(lab):
    """A watcher of ``playground`` reads the verdict of the same state, never the previous one."""
    seen = []
    lab.param.watch(lambda e: seen.append((lab.d_k, lab.verdict)), ["playground"])
    for d_k in (256, 1024, 4):
        lab.d_k = d_k
    assert [v.startswith(f"At d_k = {d}, ") for d, v in seen] == [True] * 3


def test_a_shared_link_shows_its_own_verdict():
    """Opening ?d_k=4096&sigma=4&rho=1&dtype=float16 shows that state's overflow, not the default's verdict."""
    lab, train = LabState(), TrainingState()
    apply_query("?d_k=4096&sigma=4&rho=1&dtype=float16", lab, train)
    assert lab.verdict.startswith("At d_k = 4096, ρ = 1, float16, unscaled: the logits overflow float16")


def test_training_has_its_own_seed_and_follows_the_shared_alpha_and_temperature():
    """?view=training&train_seed=3 trains seed 3 (the page's seed does not move it; by default the runs use
    TRAIN_SEED, a seed near the median); changing α, τ or the runs' seed restarts them with the new value."""
    from web.training_state import TRAIN_SEED
    lab = LabState()
    train = TrainingState(lab)
    assert train.trainers["a"].config.seed == TRAIN_SEED
    apply_query("?view=training&train_seed=3&alpha=0.8&rule_a=alpha&rule_b=qknorm&temperature=0.3", lab, train)
    cfg_a, cfg_b = (t.config for t in train.trainers.values())
    assert (cfg_a.seed, cfg_a.alpha, cfg_a.rule, cfg_b.temperature, cfg_b.rule) == (3, 0.8, "alpha", 0.3, "qknorm")
    train.advance(3)
    lab.seed = 5
    assert train.steps_done == 3 and train.trainers["a"].config.seed == 3
    train.seed = 4
    assert train.steps_done == 0 and train.trainers["a"].config.seed == 4
    lab.alpha = 0.6
    assert train.trainers["a"].config.alpha == 0.6


@pytest.mark.parametrize("view, unused, used", [
    ("playground", {"alpha", "temperature"}, {"d_k", "causal", "dtype"}),
    ("training", {"d_k", "n", "sigma", "rho", "rule", "causal", "dtype", "alpha", "temperature", "seed"}, set()),
    ("saturation", {"causal", "dtype"}, {"alpha", "temperature", "n"}),
    ("precision", {"rule", "alpha", "temperature", "causal", "dtype"}, {"d_k", "sigma", "rho", "seed"}),
    ("questions", {"d_k", "seed", "rule"}, set()),
])
def test_settings_a_view_ignores_are_listed_with_a_reason(lab, view, unused, used):
    """Each view reports the sidebar settings it does not use, each with a sentence saying why."""
    lab.view = view
    out = lab.unused_settings(TrainingState(lab))
    assert unused <= set(out) and not (used & set(out))
    assert all(reason.endswith(".") and len(reason) > 10 for reason in out.values())


def test_alpha_and_temperature_count_as_used_when_a_training_run_uses_their_rule(lab):
    """In Train it, α is live when a run uses d_k^-α, τ when a run uses QK-norm."""
    lab.view = "training"
    out = lab.unused_settings(TrainingState(lab, rule_a="alpha", rule_b="qknorm"))
    assert "alpha" not in out and "temperature" not in out


def test_float16_overflow_is_reported_not_raised(lab):
    """Large aligned float16 inputs overflow: the verdict says so and nothing raises."""
    lab.param.update(dtype="float16", sigma=8.0, rho=1.0, d_k=4096)
    assert "NaN" in lab.verdict or "overflow" in lab.verdict
    assert lab.playground["none"]["nan_rows"] > 0 and lab.playground["none"]["overflow"]


def test_query_row_follows_the_sequence_length(lab):
    """Shrinking n moves the selected query row back inside the matrix."""
    lab.n = 64
    lab.query = 60
    lab.n = 8
    assert lab.query == 7


def test_sweeps_are_computed_only_for_the_views_that_show_them(lab):
    """The Monte-Carlo sweep is lazy: computed when the saturation view opens, reused afterwards."""
    assert lab.sweep is None
    lab.view = "saturation"
    assert lab.sweep is not None and set(lab.sweep.rules) == set(sc.RULES)
    sweep = lab.sweep
    lab.d_k = 128  # the sweep covers every d_k: moving the marker recomputes nothing
    assert lab.sweep is sweep
    lab.sigma = 2.0
    assert lab.sweep is not sweep


def test_every_setting_a_result_reads_refreshes_it():
    """Each of RESULTS is recomputed when a setting its key reads moves: every attribute the key reads (recorded
    on a stand-in that answers as a state would) is one that LabState refreshes its results on."""
    from web.results import RESULTS
    from web.settings import LAB_SETTINGS

    class Reads:
        def __init__(self, state):
            self.state, self.names = state, set()

        def __getattr__(self, name):
            self.names.add(name)
            return getattr(self.state, name)

    for name, result in RESULTS.items():
        reads = Reads(LabState(view=result.views[0]))
        result.key(reads)
        read = {n for n in reads.names if n in LabState.param}
        assert read and read <= set(LAB_SETTINGS), (name, read - set(LAB_SETTINGS))
    watched = {d for w in LabState.param.method_dependencies("_refresh_lazy") for d in [w.name]}
    assert watched == set(LAB_SETTINGS)


def test_sweep_work_is_capped(lab):
    """Samples are reduced so that samples * n * n stays bounded."""
    lab.param.update(n=MAX_N, samples=max(SAMPLES_OPTIONS))
    assert lab.effective_samples() * MAX_N * MAX_N <= SWEEP_BUDGET
    assert lab.effective_samples() >= 4


def test_precision_view_finds_the_naive_float16_failure(lab):
    """Unscaled float16 logits break the naive softmax (exp overflows past 65504) but not the stable one."""
    lab.param.update(view="precision", order="none")
    ps = lab.precision
    assert ps.nonfinite_rows["float16"]["none"]["naive"][-1] > 0
    assert ps.nonfinite_rows["float16"]["none"]["stable"][-1] == 0


def test_training_two_runs_stream_and_stop():
    """Advancing trains both runs; history grows; reset clears it; the step cap is respected."""
    train = TrainingState(LabState(), d_k=64)
    new = train.advance(5)
    assert len(new["a"]["loss"]) == 5 and len(new["b"]["loss"]) == 5
    assert train.steps_done == 5
    assert "Run A" in train.status and "step 5" in train.status
    train.reset()
    assert train.steps_done == 0
    train.advance(MAX_TRAIN_STEPS + 10)
    assert train.steps_done == MAX_TRAIN_STEPS and train.finished


def test_diverging_run_stops_with_a_message():
    """A run whose loss becomes NaN stops with a plain message; the other run keeps training."""
    train = TrainingState(LabState(), d_k=64)
    train.advance(3)
    train.trainers["a"].params["Wq"][...] = np.inf  # what a blown-up update leaves behind
    train.advance(5)
    assert train.trainers["a"].diverged and not train.trainers["b"].diverged
    assert train.trainers["b"].steps_done == 8
    assert "Run A" in train.status and "stopped" in train.status and "diverged" in train.status
    assert train.history_csv().startswith("run,rule,step,loss,accuracy")


@pytest.mark.parametrize("search, key, expected", [
    ("?d_k=-5", "d_k", 1),
    ("?d_k=999999999", "d_k", MAX_D_K),
    ("?d_k=100", "d_k", 96),
    ("?n=1e9", "n", MAX_N),
    ("?sigma=nan", "sigma", 1.0),
    ("?sigma=inf", "sigma", 1.0),
    ("?rho=abc", "rho", 0.0),
    ("?rho=-1", "rho", 0.0),
    ("?rule=<script>alert(1)</script>", "rule", "sqrt"),
    ("?causal=maybe", "causal", False),
    ("?dtype=float128", "dtype", "float64"),
    ("?seed=3.7", "seed", 4),
    ("?view=../../etc/passwd", "view", HOME_VIEW),      # reset to where the bare address opens
])
def test_bad_url_values_are_clamped_with_a_notice(search, key, expected):
    """Hostile query values are clamped or reset, and each correction produces a notice."""
    lab_values, train_values, notices = parse_query(search)
    assert lab_values[key] == expected
    assert notices


def test_notices_never_echo_markup():
    """A notice quotes at most a short, HTML-escaped excerpt of the bad value."""
    _, _, notices = parse_query("?rule=<img src=x onerror=alert(1)>" + "A" * 500)
    text = " ".join(notices)
    assert "<img" not in text and "too long" in text


def test_repeated_unknown_and_oversized_queries():
    """Repeated keys keep the first value; unknown keys and overlong strings are reported."""
    lab, _, notices = parse_query("?d_k=8&d_k=16&zzz=1&" + "x=1&" * 600)
    assert lab["d_k"] == 8
    assert any("given 2 times" in n for n in notices)
    assert any("more than 64 settings" in n for n in notices)
    assert len(notices) <= 6


def test_apply_and_serialise_round_trip():
    """A query string restores the state, and the state writes the same query string back."""
    lab, train = LabState(), TrainingState()
    search = "?view=saturation&d_k=512&n=8&rho=0.5&rule=linear&causal=true&dtype=float32&lr=0.1&rule_a=qknorm"
    assert apply_query(search, lab, train) == []
    assert (lab.view, lab.d_k, lab.n, lab.rho, lab.rule, lab.causal, lab.dtype) == \
        ("saturation", 512, 8, 0.5, "linear", True, "float32")
    assert (train.lr, train.rule_a) == (0.1, "qknorm")
    again_lab, again_train = LabState(), TrainingState()
    apply_query(to_query(lab, train), again_lab, again_train)
    for key, (obj, name, _) in KEYS.items():
        a, b = (lab, again_lab) if obj == "lab" else (train, again_train)
        assert getattr(a, name) == getattr(b, name), key


def test_every_option_of_d_k_includes_the_powers_of_two():
    """Every power of two from 1 to the largest d_k is a slider step."""
    assert all(2 ** k in D_K_OPTIONS for k in range(MAX_D_K.bit_length())) and max(D_K_OPTIONS) == MAX_D_K


def test_verdict_handles_all_nan_sides():
    """The verdict is a sentence even when both sides overflow."""
    nan = dict.fromkeys(("logit_std", "entropy", "max_weight", "effective_support", "saturated"), float("nan"))
    grad = {"median": float("nan"), "total": float("nan"), "starved": None}
    side = {"rule": "none", "stats": nan, "overflow": True, "nan_rows": 2, "grad": grad}
    text = verdict({"none": side, "rule": {**side, "rule": "sqrt"}}, n=2, d_k=4096, dtype="float16", rho=1.0,
                   causal=False)
    assert text.endswith(".") and "2 of 2 rows are NaN too" in text


def test_page_builds_every_view_without_a_server():
    """The whole page builds in plain Python (as the Pyodide pre-render does) and building it imports no nh3
    (Panel's HTML sanitiser; rendering its ReactiveHTML into a document does, which another test in this
    process may have done: it is set aside meanwhile)."""
    from web.page import create_app
    earlier = sys.modules.pop("nh3", None)
    try:
        tmpl = create_app(search="?view=questions&d_k=abc")
        page = tmpl.page
        assert page.notices and page.notice.visible
        for view in ("playground", "variance", "saturation", "training", "precision", "questions"):
            page.lab.view = view
            assert page.content.objects
        assert "nh3" not in sys.modules
    finally:
        if earlier is not None:
            sys.modules["nh3"] = earlier
    assert math.isfinite(page.lab.timings["playground"])


def test_the_widest_one_head_model_gets_standard_errors():
    """d_model 16257-16384 with one head bounded the work down to one sample, which sdpa_core refuses (its
    standard errors need two): the calculator takes fewer tokens instead, at every width up to the widest."""
    from types import SimpleNamespace

    from web.options import MAX_D_MODEL
    from web.results import _real_model
    lab = LabState()
    for d_model in (16257, MAX_D_MODEL):
        got = _real_model(SimpleNamespace(d_model=d_model, heads=1, preset="custom", init_std=0.02, layernorm=lab.layernorm,
                                          qk_norm=lab.qk_norm, model_scale=lab.model_scale, seed=0))["real_model"]
        assert "error" not in got and got["d_k"] == d_model
