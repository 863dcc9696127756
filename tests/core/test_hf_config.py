"""The config reader against small re-implementations of each model's own attention code, and thirty hostile
configs, each refused with a clear message (a ConfigError, never another exception)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdpa_core import hf_config, hf_published, real_models
from sdpa_core.hf_config import ConfigError, parse_config, read_config


# ---- independent re-implementations: what each modelling file computes as its factor on q . k ----------------
def _text(cfg: dict) -> dict:
    return cfg.get("text_config", cfg)


def llama_scaling(cfg):        # modeling_llama.py / mistral / qwen2 / qwen3 / olmo2: head_dim ** -0.5
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    return head_dim ** -0.5


def gpt2_scaling(cfg):         # modeling_gpt2.py: attn_weights / value.size(-1) ** 0.5 when scale_attn_weights
    return (cfg["n_embd"] // cfg["n_head"]) ** -0.5 if cfg.get("scale_attn_weights", True) else 1.0


def gemma_scaling(cfg):        # modeling_gemma2.py / gemma3: config.query_pre_attn_scalar ** -0.5
    return _text(cfg)["query_pre_attn_scalar"] ** -0.5


def granite_scaling(cfg):      # modeling_granite.py: self.scaling = config.attention_multiplier
    return cfg["attention_multiplier"]


def deepseek_scaling(cfg):     # modeling_deepseek_v3.py: qk_head_dim ** -0.5, times yarn mscale squared
    s = (cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"]) ** (-0.5)
    rs = cfg.get("rope_scaling") or cfg.get("rope_parameters")   # transformers 4 reads the one, 5 the other
    if rs is not None:
        mscale_all_dim = rs.get("mscale_all_dim", 0)
        factor = rs["factor"]
        if mscale_all_dim:
            m = 1.0 if factor <= 1 else 0.1 * mscale_all_dim * math.log(factor) + 1.0
            s = s * m * m
    return s


def llama4_scaling(cfg):
    t = _text(cfg)
    return t.get("head_dim", t["hidden_size"] // t["num_attention_heads"]) ** -0.5


def llama4_temperature(cfg, positions):  # Llama4TextAttention.forward, on the layers without RoPE
    t = _text(cfg)
    cache_position = np.asarray(positions, dtype=np.float64)
    return np.log1p(np.floor((cache_position + 1.0) / t.get("floor_scale", 8192))) * t.get("attn_scale", 0.1) + 1.0


def qwen3_scaling(cfg):        # Qwen3Config has head_dim = 128 by default: getattr finds it
    return cfg.get("head_dim", 128) ** -0.5


ORACLES = {"gpt2": gpt2_scaling, "llama": llama_scaling, "mistral": llama_scaling, "qwen2": llama_scaling,
           "mixtral": llama_scaling, "granitemoe": granite_scaling,
           "qwen3": qwen3_scaling, "gemma3_text": gemma_scaling, "olmo2": llama_scaling, "gemma2": gemma_scaling, "gemma3": gemma_scaling,
           "granite": granite_scaling, "deepseek_v3": deepseek_scaling, "llama4": llama4_scaling,
           "llama4_text": llama4_scaling}


@pytest.mark.parametrize("key", list(hf_published.PUBLISHED))
def test_each_published_config_gives_its_models_own_factor(key):
    cfg = hf_published.PUBLISHED[key].config
    head = read_config(parse_config(json.dumps(cfg)))    # pasted as text, as a reader would
    assert head.factor == pytest.approx(ORACLES[cfg["model_type"]](cfg), rel=1e-12)


def test_at_least_eight_models_and_every_scaling_kind_are_published():
    kinds = {hf_config.ARCHITECTURES[read_config(p.config).model_type][2] for p in hf_published.PUBLISHED.values()}
    assert len(hf_published.PUBLISHED) >= 8
    # every kind but OLMo 2's whole-projection norm, whose published config.json could not be checked
    assert kinds == {k for _, _, k in hf_config.ARCHITECTURES.values()} - {"qk_norm_all"}


def test_gemma_2_27b_does_not_scale_by_its_head_dim():
    h = read_config(hf_published.PUBLISHED["gemma-2-27b"].config)
    assert h.d_k == 128 and h.factor == pytest.approx(1 / 12) and h.softcap == 50.0
    assert h.factor * math.sqrt(h.d_k) == pytest.approx(math.sqrt(128 / 144))


def test_deepseek_v3_mscale():
    h = read_config(hf_published.PUBLISHED["deepseek-v3"].config)
    m = 0.1 * math.log(40) + 1
    assert h.d_k == 192 and h.factor == pytest.approx(192 ** -0.5 * m * m)


def test_llama_4_temperature_is_its_modelling_codes():
    cfg = hf_published.PUBLISHED["llama-4-scout"].config
    h = read_config(cfg)
    positions = [0, 1, 8190, 8191, 8192, 16383, 131071, 1048575, 10_000_000]
    ours = [hf_config.temperature_at(h, p) for p in positions]
    assert ours == pytest.approx(llama4_temperature(cfg, positions), rel=1e-6)
    assert ours[:3] == [1.0, 1.0, 1.0] and ours[3] > 1.0   # it first acts at position floor_scale - 1


@settings(max_examples=60, deadline=None)
@given(arch=st.sampled_from(["llama", "qwen3", "olmo2", "mistral", "gemma2", "granite", "deepseek_v3"]),
       heads=st.sampled_from([1, 2, 4, 8, 12, 16, 32, 40, 64, 128]), head_dim=st.sampled_from([16, 32, 64, 80, 128, 256]),
       scalar=st.floats(1, 1e4), mult=st.floats(1e-4, 10), nope=st.integers(0, 256), rope=st.integers(1, 128),
       ext=st.floats(0.5, 100), m_all=st.sampled_from([0.5, 1.0, 2.0]))
def test_any_config_of_a_modelled_architecture_gives_its_codes_factor(arch, heads, head_dim, scalar, mult, nope, rope,
                                                                      ext, m_all):
    cfg = {"model_type": arch, "hidden_size": heads * head_dim, "num_attention_heads": heads}
    if arch == "gemma2":
        cfg |= {"head_dim": head_dim, "query_pre_attn_scalar": scalar}
    if arch == "granite":
        cfg["attention_multiplier"] = mult
    if arch == "deepseek_v3":
        cfg |= {"qk_nope_head_dim": nope, "qk_rope_head_dim": rope, "kv_lora_rank": 512,
                "rope_scaling": {"type": "yarn", "factor": ext, "mscale": m_all, "mscale_all_dim": m_all}}
    assert read_config(cfg).factor == pytest.approx(ORACLES[arch](cfg), rel=1e-12)


def test_softcap_matches_an_independent_draw():
    """The capped model's logit std, closed form (Gauss-Hermite) against a direct draw; and its Monte Carlo."""
    rng = np.random.default_rng(1)
    for std, cap in ((1.4, 50.0), (30.0, 50.0), (5.0, 2.0)):
        g = std * rng.standard_normal(2_000_000)
        assert real_models.capped_std(std, cap) == pytest.approx(np.sqrt(np.mean((cap * np.tanh(g / cap)) ** 2)),
                                                                 rel=3e-3)
    h = read_config({"model_type": "gemma2", "hidden_size": 2048, "num_attention_heads": 8, "head_dim": 256,
                     "query_pre_attn_scalar": 1, "attn_logit_softcapping": 3.0, "initializer_range": 0.02})
    m = hf_config.config_at_init(h, n=64, samples=8)
    plain = m["theory"]["unscaled"]
    assert m["theory"]["model"] == pytest.approx(real_models.capped_std(plain, 3.0))
    assert m["mc"]["model"]["logit_std"] == pytest.approx(m["theory"]["model"], rel=0.05)
    assert m["mc"]["model"]["logit_std"] < 3.0 < m["mc"]["unscaled"]["logit_std"]


@pytest.mark.parametrize("key", list(hf_published.PUBLISHED))
def test_a_link_rebuilds_the_same_head(key):
    h = read_config(hf_published.PUBLISHED[key].config)
    again = read_config(parse_config(hf_config.to_link(h)))
    assert (again.factor, again.d_k, again.softcap, again.qk_norm, again.temperature, again.q_std, again.k_std) == (
        h.factor, h.d_k, h.softcap, h.qk_norm, h.temperature, h.q_std, h.k_std)
    assert len(hf_config.to_link(h)) <= 600   # web/urlstate.MAX_TEXT_CHARS


def test_the_monte_carlo_follows_the_closed_form_for_every_published_head():
    for key, p in hf_published.PUBLISHED.items():
        m = hf_config.config_at_init(read_config(p.config), n=64, samples=8)
        for v in ("model", "unscaled", "sqrt_d_k"):
            assert m["mc"][v]["logit_std"] == pytest.approx(m["theory"][v], rel=0.1), (key, v)


def test_ignored_fields_are_named():
    h = read_config({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10,
                     "rope_theta": 1e4})
    assert h.ignored == ("vocab_size", "rope_theta")
    assert not h.fields[-1].given     # initializer_range: the default, said so


# ---- thirty hostile configs -------------------------------------------------------------------------------
GOOD = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32}


def _with(**kw):
    return json.dumps({**GOOD, **kw})


HOSTILE = {
    "empty": ("", "empty"),
    "blank": ("   \n", "empty"),
    "not json": ("hidden_size: 4096", "Not valid JSON"),
    "truncated": ('{"model_type": "llama", "hidden_size": 40', "Not valid JSON"),
    "trailing comma": ('{"model_type": "llama",}', "Not valid JSON"),
    "a list": ("[1, 2, 3]", "one JSON object"),
    "a number": ("42", "one JSON object"),
    "a string": ('"llama"', "one JSON object"),
    "NaN": ('{"model_type": "llama", "hidden_size": NaN, "num_attention_heads": 8}', "NaN"),
    "Infinity": ('{"model_type": "granite", "hidden_size": 64, "num_attention_heads": 8, "attention_multiplier": '
                 'Infinity}', "Infinity"),
    "-Infinity": ('{"model_type": "llama", "hidden_size": -Infinity}', "-Infinity"),
    "huge": ('{"model_type": "llama", "pad": "' + "x" * 200_000 + '"}', "100,000"),
    "deep": ("[" * 20_000 + "]" * 20_000, "nests deeper"),
    "deep objects": ('{"a":' * 50 + "1" + "}" * 50, "nests deeper"),
    "no model_type": (json.dumps({"hidden_size": 64, "num_attention_heads": 8}), "no model_type"),
    "model_type a number": (json.dumps({"model_type": 3}), "no model_type"),
    "unknown architecture": (json.dumps({"model_type": "mamba", "hidden_size": 64, "num_attention_heads": 8}),
                             "hidden_size, num_attention_heads were ignored"),
    "missing heads": (json.dumps({"model_type": "llama", "hidden_size": 64}), "num_attention_heads is missing"),
    "heads as text": (_with(num_attention_heads="32"), "must be a whole number, got text"),
    "heads as bool": (_with(num_attention_heads=True), "must be a whole number, got true/false"),
    "heads fractional": (_with(num_attention_heads=32.5), "must be a whole number"),
    "zero heads": (_with(num_attention_heads=0), "must be in [1"),
    "negative width": (_with(hidden_size=-4096), "must be in [1"),
    "huge width": (_with(hidden_size=10**12), "must be in [1"),
    "heads not dividing": (_with(num_attention_heads=48), "does not divide hidden_size"),
    "kv heads not dividing": (_with(num_key_value_heads=5), "must divide num_attention_heads"),
    "zero init": (_with(initializer_range=0), "initializer_range must be >"),
    "negative multiplier": (json.dumps({**GOOD, "model_type": "granite", "attention_multiplier": -0.01}),
                            "attention_multiplier must be >"),
    "gemma without scalar": (json.dumps({**GOOD, "model_type": "gemma2", "head_dim": 128}),
                             "query_pre_attn_scalar is missing"),
    "softcap as text": (json.dumps({**GOOD, "model_type": "gemma2", "head_dim": 128, "query_pre_attn_scalar": 128,
                                    "attn_logit_softcapping": "50"}), "must be a number, got text"),
    "head_dim far off": (_with(head_dim=1), "far from hidden_size"),
    "wrapper without text": (json.dumps({"model_type": "llama4", "text_config": [1]}), "text_config, an object"),
    "rope_scaling a list": (json.dumps({"model_type": "deepseek_v3", "hidden_size": 64, "num_attention_heads": 1,
                                        "qk_nope_head_dim": 8, "qk_rope_head_dim": 8, "kv_lora_rank": 8,
                                        "rope_scaling": [40]}), "rope_scaling must be an object"),
    "not utf-8": (b'{"model_type": "\xff"}', "not UTF-8"),
    "model_type a list": (json.dumps({"model_type": ["llama"]}), "no model_type"),
    "model_type an object": (json.dumps({"model_type": {}}), "no model_type"),
    "a 400-digit init": ('{"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "initializer_range": '
                         + "9" * 400 + "}", "far too large"),
    "a 5000-digit number": ('{"model_type": "llama", "hidden_size": ' + "9" * 5000 + "}", "too long to read"),
    "a lone surrogate": ('{"model_type": "llama\ud800"}', "not one the page models"),
    "text_config of another model": (json.dumps({"model_type": "llama4", "text_config": {"model_type": "gpt2"}}),
                                     "text_config.model_type must be"),
    "yarn's attention factor": (json.dumps({**GOOD, "rope_scaling": {"type": "yarn", "factor": 4}}),
                                "attention factor"),
    "factor over the page's": (json.dumps({**GOOD, "model_type": "gemma2", "head_dim": 128,
                                           "query_pre_attn_scalar": 1e-9}), "which the page does not draw"),
    "init too small for MLA": (json.dumps({"model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128,
                                           "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "kv_lora_rank": 512,
                                           "q_lora_rank": 1536, "initializer_range": 2e-6}), "outside"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_config_gets_a_clear_message(name):
    text, words = HOSTILE[name]
    with pytest.raises(ConfigError) as e:
        read_config(parse_config(text))
    assert words in str(e.value)
    assert len(str(e.value)) < 400      # a message, not an echo of the input


def test_thirty_hostile_configs():
    assert len(HOSTILE) >= 30


def test_llama_4_without_its_temperature_fields_takes_its_config_classs_defaults():
    h = read_config({"model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40, "head_dim": 128})
    assert h.temperature == (8192, 0.1)
    assert [f.given for f in h.fields if f.name in hf_config.LLAMA4_DEFAULTS] == [False] * len(hf_config.LLAMA4_DEFAULTS)
    off = read_config({"model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40, "head_dim": 128,
                       "attn_temperature_tuning": False})
    assert off.temperature is None and off.qk_norm == "head"   # use_qk_norm's default: True


ROUND_TRIPS = [
    {"model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40, "head_dim": 128,
     "attn_temperature_tuning": False},
    {"model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40, "head_dim": 128,
     "attn_temperature_tuning": False, "use_qk_norm": False},
    {"model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40, "head_dim": 128},
    {"model_type": "gemma2", "hidden_size": 2304, "num_attention_heads": 8, "head_dim": 256, "query_pre_attn_scalar": 256},
    {"model_type": "gemma2", "hidden_size": 2304, "num_attention_heads": 8, "head_dim": 256, "query_pre_attn_scalar": 256,
     "attn_logit_softcapping": None},
    {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "head_dim": 32, "scale_attn_weights": False},
    {"model_type": "qwen3", "hidden_size": 1024, "num_attention_heads": 16},
]


@pytest.mark.parametrize("cfg", ROUND_TRIPS, ids=range(len(ROUND_TRIPS)))
def test_a_link_rebuilds_every_kind_of_head(cfg):
    """The head a link rebuilds is the head read, in every branch (defaults, explicit nulls, false flags)."""
    h = read_config(cfg)
    again = read_config(parse_config(hf_config.to_link(h)))
    keys = ("factor", "d_k", "softcap", "qk_norm", "temperature", "q_std", "k_std", "norm_width", "k_norm_width")
    assert {k: getattr(again, k) for k in keys} == {k: getattr(h, k) for k in keys}


def test_olmo_2_normalises_k_over_its_key_heads_only():
    """Olmo2Attention builds q_norm over num_attention_heads * head_dim and k_norm over num_key_value_heads *
    head_dim: under grouped-query attention k's norm runs over fewer coordinates, and the draw follows (a head
    drawn with both widths equal to q's differs, with the same seed, from the one the config gives)."""
    cfg = {"model_type": "olmo2", "hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 4}
    h = read_config(cfg)
    assert (h.qk_norm, h.norm_width, h.k_norm_width) == ("all", 16 * 64, 4 * 64)
    assert "4 × 64 = 256 for k" in " ".join(h.notes)
    drawn = hf_config.config_at_init(h, n=16, samples=4)
    same = real_models.head_at_init(1024, 16, qk_norm="all", norm_width=1024, k_norm_width=1024, q_std=h.q_std,
                                    k_std=h.k_std, n=16, samples=4)
    apart = real_models.head_at_init(1024, 16, qk_norm="all", norm_width=1024, k_norm_width=256, q_std=h.q_std,
                                     k_std=h.k_std, n=16, samples=4)
    assert drawn["mc"]["model"]["logit_std"] == apart["mc"]["model"]["logit_std"]
    assert drawn["mc"]["model"]["logit_std"] != same["mc"]["model"]["logit_std"]
    assert read_config({**cfg, "num_key_value_heads": 16}).k_norm_width == 1024


def test_gemma_2_without_a_cap_field_is_capped_as_its_config_class_is():
    base = {"model_type": "gemma2", "hidden_size": 2304, "num_attention_heads": 8, "head_dim": 256,
            "query_pre_attn_scalar": 256}
    assert read_config(base).softcap == 50.0                      # Gemma2Config's default
    assert read_config({**base, "attn_logit_softcapping": None}).softcap is None


def test_gpt2_ignores_head_dim_as_its_attention_does():
    assert read_config({"model_type": "gpt2", "n_embd": 768, "n_head": 12, "head_dim": 32}).d_k == 64


def test_only_config_errors_escape_for_any_json():
    """Random JSON values in every field the reader looks at: a ConfigError or a head, nothing else."""
    import random

    rng = random.Random(0)
    values = [None, True, False, 0, -1, 1, 2, 7, 64, 10**400, 1e-300, 1e300, 0.5, "8", "", [], [1], {}, {"a": 1},
              {"type": "yarn", "factor": 4, "mscale": 1, "mscale_all_dim": 2}, {"factor": "x", "mscale_all_dim": 1}]
    fields = [*hf_config.SCALE_FIELDS, "model_type", "text_config", "use_qk_norm", "attn_temperature_tuning"]
    archs = [*hf_config.ARCHITECTURES, *hf_config.WRAPPERS]
    for _ in range(1500):
        cfg = {"model_type": rng.choice(archs), "hidden_size": 64, "num_attention_heads": 4}
        for name in rng.sample(fields, 4):
            cfg[name] = rng.choice(values)
        try:
            read_config(parse_config(json.dumps(cfg)))
        except ConfigError:
            pass


def test_every_numeric_field_of_every_published_config_at_floats_extremes_is_read_or_refused_plainly():
    """Issue 57: a link with Llama 4's floor_scale at 5e-324 stopped the app's start (floor(inf) raised
    OverflowError). Every numeric field of every published config, set to a subnormal, the largest float, ±0 and
    -1, is either read, and then its head's temperature and scale computed at the largest position, or refused with
    a ConfigError naming it: never another exception."""
    import math

    from sdpa_core import scaling
    from sdpa_core.hf_published import PUBLISHED

    extremes = (5e-324, 1.7976931348623157e308, 0.0, -0.0, -1.0, 2.2250738585072014e-308)
    tried = 0
    for published in PUBLISHED.values():
        for field, value in published.config.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            for x in extremes:
                cfg = {**published.config, field: x}
                tried += 1
                try:
                    head = hf_config.read_config(cfg)
                except hf_config.ConfigError as e:
                    assert str(e).strip(), (field, x)      # said (GPT-2's n_embd is named as hidden_size, its alias)
                    continue
                for position in (0, scaling.MAX_N - 1):
                    assert math.isfinite(hf_config.temperature_at(head, position))
    assert tried > 100


def test_both_spellings_of_rope_scaling_read_alike():
    """Issue 56: configs saved by transformers >= 5 put RoPE's scaling under ``rope_parameters``, not
    ``rope_scaling``: DeepSeek-V3 re-saved so read as 1/√192 (0.0722) where its code gives 0.1352, and Qwen3 with
    YaRN ×4 was read with no refusal. Every published config reads to the same head in both spellings (its factor
    checked against the modelling file's re-implementation above), and a YaRN that scales the rotated coordinates
    is refused in both, naming the spelling given."""
    import math

    from sdpa_core.hf_published import PUBLISHED

    renamed = 0
    for key, published in PUBLISHED.items():
        cfg = published.config
        text = cfg.get("text_config", cfg)
        if "rope_scaling" not in text:
            continue
        moved = {k: v for k, v in text.items() if k != "rope_scaling"}
        moved["rope_parameters"] = {**(text["rope_scaling"] or {}), "rope_theta": 10000.0}
        moved = {**cfg, "text_config": moved} if "text_config" in cfg else moved
        old, new = hf_config.read_config(cfg), hf_config.read_config(moved)
        assert math.isclose(old.factor, new.factor, rel_tol=1e-12), (key, old.factor, new.factor)
        renamed += 1
    assert renamed >= 1
    deepseek = {k: v for k, v in PUBLISHED["deepseek-v3"].config.items() if k != "rope_scaling"}
    deepseek["rope_parameters"] = PUBLISHED["deepseek-v3"].config["rope_scaling"]
    assert math.isclose(hf_config.read_config(deepseek).factor, 0.1352, abs_tol=5e-5)
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    qwen = {"model_type": "qwen3", "hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128}
    for spelling in ("rope_scaling", "rope_parameters"):
        with pytest.raises(hf_config.ConfigError, match=spelling):
            hf_config.read_config({**qwen, spelling: yarn})
    layered = {**qwen, "rope_parameters": {"full_attention": yarn, "sliding_attention": {"rope_type": "default"}}}
    with pytest.raises(hf_config.ConfigError, match="rope_parameters"):
        hf_config.read_config(layered)
    plain = {**qwen, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}}
    assert math.isclose(hf_config.read_config(plain).factor, 128 ** -0.5)


def _minimal(model_type: str, rope_spelling: str | None) -> dict:
    """A small config of `model_type` with the fields its kind of scaling needs, RoPE scaling under `rope_spelling`."""
    how = hf_config.ARCHITECTURES[model_type][2]
    cfg = {"model_type": model_type, "hidden_size": 1024, "num_attention_heads": 8}
    if model_type == "gpt2":
        cfg = {"model_type": "gpt2", "n_embd": 768, "n_head": 12}
    if how == "multiplier":
        cfg["attention_multiplier"] = 0.0078125
    if how in ("pre_attn", "temperature"):
        cfg["head_dim"] = 128
    if how == "pre_attn":
        cfg["query_pre_attn_scalar"] = 144
    rope = {"rope_type": "linear", "factor": 2.0}
    if how == "mla":
        cfg |= {"qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "kv_lora_rank": 512}
        rope = {"rope_type": "yarn", "factor": 40.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                "original_max_position_embeddings": 4096}
    if rope_spelling and model_type != "gpt2":       # GPT-2 has learned positions, no RoPE
        cfg[rope_spelling] = rope
    return cfg


@pytest.mark.parametrize("spelling", [None, "rope_scaling", "rope_parameters"])
@pytest.mark.parametrize("model_type", sorted(hf_config.ARCHITECTURES))
def test_every_supported_type_in_both_rope_spellings_gives_its_codes_factor(model_type, spelling):
    """Issue 56: every model type the reader takes (read from ARCHITECTURES), with RoPE scaling under either
    spelling or none, gives the factor its modelling file computes (the oracles above)."""
    assert model_type in ORACLES, f"{model_type}: add its modelling file's factor to ORACLES"
    cfg = _minimal(model_type, spelling)
    assert read_config(cfg).factor == pytest.approx(ORACLES[model_type](cfg), rel=1e-12)


def test_a_kind_of_scaling_without_its_branch_raises(monkeypatch):
    """A model type added to ARCHITECTURES with a kind read_config has no branch for is never read as 1/√head_dim."""
    monkeypatch.setitem(hf_config.ARCHITECTURES, "newmodel", ("New", "newmodel", "a_new_kind"))
    with pytest.raises(NotImplementedError, match="a_new_kind"):
        read_config({"model_type": "newmodel", "hidden_size": 512, "num_attention_heads": 8})


def test_a_refused_model_names_its_logit_cap():
    """Grok-1 (remote code, not transformers'): q·k times attn_output_multiplier, then 30·tanh(z / 30)."""
    grok = {"model_type": "grok-1", "hidden_size": 6144, "num_attention_heads": 48,
            "attn_output_multiplier": 0.08838834764831845, "max_attn_value": 30.0}
    with pytest.raises(ConfigError) as refused:
        read_config(grok)
    said = str(refused.value)
    assert "max_attn_value = 30" in said and "±30" in said and "attn_output_multiplier = 0.0883883" in said
    with pytest.raises(ConfigError) as plain:
        read_config({"model_type": "grok-1", "hidden_size": 6144, "num_attention_heads": 48})
    assert "caps" not in str(plain.value)
