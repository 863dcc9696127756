"""The Real models view's config.json box: every hostile config is said beside the box and leaves the head (and
the link) as they were; a published one, a dropped file and a link each give the head the reader expects; and
its sentences hold against independent computations."""
from __future__ import annotations

import json
import math
from urllib.parse import urlencode

import pytest

from sdpa_core import hf_config, hf_published
from tests.core.test_hf_config import HOSTILE, ORACLES, llama4_temperature
from web.claims import config_headline, factor_sentence, softcap_sentence, temperature_sentence
from web.claims.configs import FAR_POSITIONS
from web.state import LabState
from web.training_state import TrainingState
from web.urlstate import apply_query, parse_query, to_query
from web.views.config_paste import ConfigPaste


@pytest.fixture(scope="module")
def box():
    lab = LabState(view="models")
    return ConfigPaste(lab=lab)


def _pick(box, key):
    box.start.value = ""
    box.start.value = key
    return box.lab.config_model


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_config_is_said_and_changes_nothing(box, name):
    _pick(box, "gemma-2-27b")
    before, shown = box.lab.hf_config, box.headline.object
    text, words = HOSTILE[name]
    if isinstance(text, bytes):
        box.file.value = text
    else:
        box.text.value = text
        box.read.clicks += 1
    assert "role='alert'" in box.status.object and html_text(words) in box.status.object
    assert box.lab.hf_config == before and box.headline.object == shown   # the head and the link stay


def html_text(s: str) -> str:
    import html
    return html.escape(s)


def test_a_file_over_the_limit_is_refused_before_it_is_read(box):
    _pick(box, "llama-3.1-8b")
    before = box.lab.hf_config
    box.file.value = b"{" + b" " * hf_config.MAX_CONFIG_BYTES + b"}"
    assert "100,000" in box.status.object and box.lab.hf_config == before


@pytest.mark.parametrize("key", list(hf_published.PUBLISHED))
def test_each_published_config_and_its_dropped_file_give_the_models_factor(box, key):
    cfg = hf_published.PUBLISHED[key].config
    m = _pick(box, key)
    assert m["factors"]["model"] == pytest.approx(ORACLES[cfg["model_type"]](cfg), rel=1e-12)
    assert box.status.object == "" and "multiplies q·k by" in box.headline.object
    _pick(box, "gpt2")
    box.file.value = json.dumps(cfg).encode()            # the same config, dropped as a file
    assert box.lab.config_model["factors"]["model"] == m["factors"]["model"]


@pytest.mark.parametrize("key", list(hf_published.PUBLISHED))
def test_a_link_reproduces_the_head_and_a_clean_link_comes_back(key):
    head = hf_config.read_config(hf_published.PUBLISHED[key].config)
    query = "?" + urlencode({"view": "models", "config": hf_config.to_link(head)})
    lab, train = LabState(), TrainingState()
    assert apply_query(query, lab, train) == []
    assert lab.config_model["head"].factor == head.factor
    assert to_query(lab, train) == query
    box = ConfigPaste(lab=lab)                            # the box shows the fields the link carried
    assert json.loads(box.text.value) == json.loads(hf_config.to_link(head))


def _linkable(t) -> bool:
    """Text a link can carry: short, and UTF-8 (a lone surrogate comes only from a pasted string)."""
    return isinstance(t, str) and len(t) < 500 and t.encode("utf-8", "surrogatepass").decode("utf-8", "replace") == t


@pytest.mark.parametrize("name", [n for n, (t, _) in HOSTILE.items() if _linkable(t)])
def test_a_hostile_config_in_a_link_is_said_and_ignored(name):
    text, words = HOSTILE[name]
    lab, _, notices = parse_query("?" + urlencode({"view": "models", "config": text}))
    assert lab.get("config", "") == "" and lab.get("hf_config", "") == ""
    if text.strip():
        assert any(n.startswith("config: the model config in the link was not read") for n in notices), notices


# ---- the sentences against independent computations ---------------------------------------------------
@pytest.mark.parametrize("key", list(hf_published.PUBLISHED))
def test_the_headline_states_the_heads_own_numbers(key):
    head = hf_config.read_config(hf_published.PUBLISHED[key].config)
    m = {"head": head, **hf_config.config_at_init(head, n=64, samples=4, seed=1)}
    facts = {k: v for k, (v, _) in config_headline(m).given().items()}
    assert facts["factor"] == head.factor == m["factors"]["model"]
    assert facts["top"] == m["mc"]["model"]["top_weight"] and facts["top_raw"] == m["mc"]["unscaled"]["top_weight"]
    assert facts["n"] == 64


def _custom(**kw):
    return hf_config.read_config({"model_type": "granite", "hidden_size": 1024, "num_attention_heads": 16, **kw})


def test_the_factor_sentence_tells_the_four_cases_apart():
    assert "That is 1/√d_k" in factor_sentence(hf_config.read_config(hf_published.PUBLISHED["llama-3.1-8b"].config))
    assert "the √d_model bug" in factor_sentence(_custom(attention_multiplier=1024 ** -0.5))
    assert "muP's scale" in factor_sentence(_custom(attention_multiplier=1 / 64))
    gemma = factor_sentence(hf_config.read_config(hf_published.PUBLISHED["gemma-2-27b"].config))
    assert gemma.given()["ratio"][0] == pytest.approx(math.sqrt(128 / 144)) and "0.943 times as wide" in gemma


def test_the_softcap_sentence_is_the_capped_std():
    head = hf_config.read_config(hf_published.PUBLISHED["gemma-2-9b"].config)
    m = {"head": head, **hf_config.config_at_init(head, n=32, samples=2)}
    s = softcap_sentence(m)
    plain = m["theory"]["unscaled"] * head.factor
    assert s.given()["plain"][0] == pytest.approx(plain) and s.given()["capped"][0] <= plain
    assert softcap_sentence({"head": hf_config.read_config(hf_published.PUBLISHED["gpt2"].config)}) is None


def test_the_temperature_sentence_is_llama_4s_formula():
    cfg = hf_published.PUBLISHED["llama-4-scout"].config
    head = hf_config.read_config(cfg)
    s = temperature_sentence({"head": head, "n": 128})
    t = llama4_temperature(cfg, FAR_POSITIONS)
    assert (s.given()["t1"][0], s.given()["t2"][0]) == pytest.approx(tuple(t), rel=1e-6)
    first = s.given()["first"][0]
    assert llama4_temperature(cfg, [first - 1])[0] == 1.0 < llama4_temperature(cfg, [first])[0]


def test_a_failure_while_drawing_the_head_is_said_on_the_page(box, monkeypatch):
    def broken(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'numpy.polynomial'")

    monkeypatch.setattr(hf_config, "config_at_init", broken)
    box.lab.hf_config = '{"model_type":"llama","hidden_size":64,"num_attention_heads":4}'
    assert "could not draw this head: ModuleNotFoundError" in box.headline.object


def test_back_to_another_head_shows_its_fields_and_a_read_paste_is_kept():
    lab = LabState(view="models")
    box = ConfigPaste(lab=lab)
    box.text.value = "x"
    box.read.clicks += 1
    assert "unchanged" not in box.status.object          # no head was shown: nothing to keep
    full = dict(hf_published.PUBLISHED["gemma-2-9b"].config, vocab_size=256000, rope_theta=10000.0)
    box.text.value = json.dumps(full)
    box.read.clicks += 1
    assert json.loads(box.text.value) == full             # the reader's whole config stays in the box
    other = hf_config.to_link(hf_config.read_config(hf_published.PUBLISHED["qwen3-8b"].config))
    lab.hf_config = other                                  # Back/Forward to a link of another head
    assert json.loads(box.text.value) == json.loads(other)
    lab.hf_config = ""
    assert box.text.value == ""


def _llama4(**kw):
    return hf_config.read_config({"model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40,
                                  "head_dim": 128, **kw})


def test_the_temperature_sentence_says_where_it_acts_and_when_it_never_does():
    near = temperature_sentence({"head": _llama4(floor_scale=10), "n": 32})
    assert "above 1 from position 9, inside these 32 tokens" in near and "without it" in near
    assert "changes nothing" in temperature_sentence({"head": _llama4(), "n": 128})
    assert "1 at every position" in temperature_sentence({"head": _llama4(attn_scale=0), "n": 128})
    never = temperature_sentence({"head": _llama4(floor_scale=1e9), "n": 128})
    assert "widened" not in never and never.given()["t2"][0] == 1.0


def test_the_softcap_sentence_says_when_the_cap_already_bites():
    tight = hf_config.read_config({"model_type": "gemma2", "hidden_size": 3584, "num_attention_heads": 16,
                                   "head_dim": 256, "query_pre_attn_scalar": 256, "attn_logit_softcapping": 0.5})
    m = {"head": tight, **hf_config.config_at_init(tight, n=32, samples=2)}
    s = softcap_sentence(m)
    assert "already bites" in s and s.given()["change"][0] > 0.5
    loose = hf_config.read_config(hf_published.PUBLISHED["gemma-2-9b"].config)
    s = softcap_sentence({"head": loose, **hf_config.config_at_init(loose, n=32, samples=2)})
    assert "bites only once training" in s and "-0" not in s
    assert "without the factor or the soft-cap" in config_headline(
        {"head": loose, **hf_config.config_at_init(loose, n=32, samples=2)})


def test_mup_is_named_before_the_bug_when_they_coincide():
    h = _custom(hidden_size=16384, num_attention_heads=128, attention_multiplier=1 / 128)
    assert "muP's scale" in factor_sentence(h) and "also 1/√d_model" in factor_sentence(h)
    assert "That is 1/√d_k" in factor_sentence(_custom(hidden_size=2048, attention_multiplier=0.0883883))


def test_the_lesser_config_problems_are_said_plainly(box):
    """Issue 57's lesser problems: a paste cut at the box's limit is said as cut (not as invalid JSON), an empty
    dropped file is said, a 4,000-digit value is not echoed in full, and a byte-order mark is read past."""
    _pick(box, "llama-3.1-8b")
    before = box.lab.hf_config
    box.text.value = '{"model_type": "llama", "x": "' + "a" * (box.text.max_length - 31) + '"}'[:2]
    box.text.value = box.text.value[:box.text.max_length]
    box.read.clicks += 1
    assert f"at most {box.text.max_length:,} characters" in box.status.object and box.lab.hf_config == before
    box.file.value = b""
    assert "empty" in box.status.object and box.lab.hf_config == before
    huge = '{"model_type": "llama", "hidden_size": ' + "9" * 4000 + ', "num_attention_heads": 32}'
    box.text.value = huge
    box.read.clicks += 1
    assert "4,000" in box.status.object or "characters)" in box.status.object
    assert len(box.status.object) < 600, box.status.object
    bom = "\ufeff" + json.dumps(hf_published.PUBLISHED["llama-3.1-8b"].config)
    assert hf_config.parse_config(bom) == hf_published.PUBLISHED["llama-3.1-8b"].config


@pytest.mark.parametrize("key", ["gemma-2-27b", "deepseek-v3"])
def test_a_pasted_configs_head_is_drawn_in_the_width_figure(key):
    """Issue 55: the head a config sets was in the tables only; the figure kept the preset. It is drawn where the
    reader compares: at its d_model, its logit std at initialisation with its own scaling; none without a config."""
    from web.views.models import Models
    lab = LabState(view="models")
    view = Models(lab=lab)
    assert view.config_point.data["d_model"] == []
    view.config.start.value = key
    m = lab.config_model
    head = hf_config.read_config(hf_published.PUBLISHED[key].config)
    assert view.config_point.data == {"d_model": [head.d_model], "std": [m["theory"]["model"]]}
    lab.hf_config = ""
    assert view.config_point.data["d_model"] == []
