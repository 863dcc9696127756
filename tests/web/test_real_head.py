"""One trained head on real text: the readouts against a direct computation, the sentences against the readouts,
a damaged file refused and said, and the layer menu moving the maps."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from web import real_head
from web.claims import real_head_headline, twin_sentence


def _direct(q, k, f):
    """Row by row, in plain Python: causal softmax of q.k f; top weight, exp entropy, saturated, over rows >= 1."""
    tops, tokens, sat = [], [], []
    for i in range(1, len(q)):
        z = [float(np.dot(q[i], k[j])) * f for j in range(i + 1)]
        m = max(z)
        e = [math.exp(x - m) for x in z]
        s = sum(e)
        p = [x / s for x in e]
        tops.append(max(p))
        tokens.append(math.exp(-sum(x * math.log(x) for x in p if x > 0)))
        sat.append(max(p) > 0.99)
    return np.mean(tops), np.mean(tokens), np.mean(sat)


@pytest.mark.parametrize("index", [0, 1])
@pytest.mark.parametrize("side", ["scaled", "unscaled"])
def test_the_readouts_are_a_direct_computations(index, side):
    q, k = real_head.load()["layers"][index]
    f = real_head.load()["factor"] if side == "scaled" else 1.0
    got = real_head.readouts(q, k, f)
    top, tokens, sat = _direct(q, k, f)
    assert got["top"] == pytest.approx(top) and got["tokens"] == pytest.approx(tokens)
    assert got["saturated"] == pytest.approx(sat)
    z = np.array([float(np.dot(q[i], k[j])) * f for i in range(len(q)) for j in range(i + 1)])
    assert got["std"] == pytest.approx(z.std()) and got["pairs"] == len(z)


@pytest.mark.parametrize("index", [0, 1])
def test_the_sentences_state_the_layers_numbers(index):
    h = real_head.layer(index)
    facts = {k: v for k, (v, _) in real_head_headline(h).given().items()}
    assert facts["top"] == h["real"]["scaled"]["top"] and facts["sat_raw"] == h["real"]["unscaled"]["saturated"]
    s = twin_sentence(h)
    g = {k: v for k, (v, _) in s.given().items()}
    assert g["ratio"] == pytest.approx(h["real"]["scaled"]["std"] / h["twin"]["scaled"]["std"]["mean"])
    assert g["t_lo"] <= g["t_std"] <= g["t_hi"] and g["k_lo"] <= g["k_hi"]
    kurt, lo, hi = g["kurt"], g["k_lo"], g["k_hi"]
    assert ("heavier tails" in s) == (kurt > hi) and ("lighter tails" in s) == (kurt < lo)
    # the twins are what they say: Gaussian, with the real q's and k's rms per entry
    q, k = real_head.load()["layers"][index]
    gq, gk = real_head.twin(q, k, 3)
    assert np.sqrt((gq * gq).mean()) == pytest.approx(np.sqrt((q * q).mean()), rel=0.05)
    assert np.sqrt((gk * gk).mean()) == pytest.approx(np.sqrt((k * k).mean()), rel=0.05)


def _damaged(tmp_path, edit):
    raw = json.loads(real_head.DATA.read_text())
    text = edit(raw)
    path = tmp_path / "real_head.json"
    path.write_text(text if isinstance(text, str) else json.dumps(text))
    return path


@pytest.mark.parametrize("edit", [
    lambda raw: json.dumps(raw)[:5000],                                           # truncated
    lambda raw: {**raw, "tokens": raw["tokens"][:-1]},                            # tokens and text disagree
    lambda raw: {**raw, "layers": [{"q": raw["layers"][0]["q"][:-1], "k": raw["layers"][0]["k"]}]},  # wrong shape
    lambda raw: json.dumps(raw).replace(str(raw["layers"][1]["q"][3][5]), "NaN", 1),  # not finite
    lambda raw: {**raw, "layers": []},
    lambda raw: {k: v for k, v in raw.items() if k != "d_k"},
    lambda raw: "",
], ids=["truncated", "tokens", "shape", "nan", "no layers", "no d_k", "empty"])
def test_a_damaged_file_is_refused(tmp_path, edit):
    with pytest.raises(real_head.DamagedHead):
        real_head.load.__wrapped__(_damaged(tmp_path, edit))


def test_a_damaged_file_is_said_and_nothing_of_it_drawn(monkeypatch):
    from web.views.real_head import RealHead

    def broken(*_):
        raise real_head.DamagedHead("layer 2's q and k are not 63 x 64 finite numbers")

    monkeypatch.setattr(real_head, "load", broken)
    view = RealHead()
    assert "role='alert'" in view.summary.object and "damaged" in view.summary.object and view.maps == {}
    view.__panel__()


def test_the_layer_menu_moves_the_maps_and_the_sentences():
    from web.views.real_head import RealHead

    view = RealHead()
    before = {s: np.array(src.data["w"]) for s, src in view.sources.items()}
    assert all(len(w) == 63 * 64 // 2 for w in before.values())   # the causal cells only
    said = view.summary.object
    view.layer.value = 0
    assert all(not np.allclose(np.array(src.data["w"]), before[s]) for s, src in view.sources.items())
    assert view.summary.object != said and "Layer 1" in view.summary.object
    h = real_head.layer(0)
    w = h["real"]["unscaled"]["weights"]
    src = view.sources["unscaled"].data
    assert np.allclose(src["w"], w[src["i"], src["j"]], atol=1e-7) and (src["j"] <= src["i"]).all()
