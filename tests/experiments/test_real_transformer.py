"""experiments/real_transformer: the model is causal and applies each rule as its formula says, the tiny
grid records every field and is deterministic, the shipped CPU results are whole and carry their provenance,
and the findings and the README's table agree with the raw JSON (recomputed here without findings.py)."""
import ast
import json
import math
import re
from itertools import product
from pathlib import Path

import numpy as np
import pytest
import torch

from experiments.real_transformer import data, findings, model, run

EXP = Path(__file__).resolve().parents[2] / "experiments" / "real_transformer"
README = EXP / "README.md"
#: Every shipped grid: results/<size>.json for a size of run.SIZES (the 150-step cpu grid, the 800-step cpu-long)
SHIPPED = sorted(p.stem for p in (EXP / "results").glob("*.json") if p.stem in run.SIZES)


@pytest.fixture(scope="module", params=SHIPPED)
def cpu(request) -> dict:
    """Each shipped grid's JSON in turn."""
    return json.loads((EXP / "results" / f"{request.param}.json").read_text())


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("tiny") / "tiny.json"
    assert run.main(["--size", "tiny", "--out", str(out)]) == 0
    return json.loads(out.read_text())


# --- the model --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("rule", model.RULES)
def test_the_model_is_causal(rule):
    torch.manual_seed(0)
    net = model.Transformer(model.Config(rule=rule, init="fanin", d_k=8, n_heads=2, n_layers=2, seq_len=12)).eval()
    idx = torch.randint(0, 256, (2, 12))
    changed = idx.clone()
    changed[:, 7] = (changed[:, 7] + 1) % 256
    with torch.no_grad():
        a, _ = net(idx)
        b, _ = net(changed)
    assert torch.equal(a[:, :7], b[:, :7])          # no earlier position sees token 7
    assert not torch.allclose(a[:, 7:], b[:, 7:])   # and the later ones do


@pytest.mark.parametrize("rule", model.RULES)
def test_each_rule_is_its_formula(rule):
    """The module's logits, weights and stats against numpy from its own weights, with the factor written out."""
    d_k, H, T = 8, 2, 5
    torch.manual_seed(1)
    attn = model.Attention(model.Config(rule=rule, d_k=d_k, n_heads=H, seq_len=T))
    with torch.no_grad():
        for p in attn.parameters():            # gains and biases away from 1 and 0 too
            p.normal_(0.0, 0.5)
    x = torch.randn(1, T, H * d_k, dtype=torch.float32)
    with torch.no_grad():
        y, stats = attn(x, stats=True, keep=True)

    X = x[0].double().numpy()
    def np_(t):
        return t.detach().double().numpy()
    W, b = np_(attn.qkv.weight), np_(attn.qkv.bias)
    qkv = X @ W.T + b
    q, k, v = (qkv[:, i * H * d_k:(i + 1) * H * d_k].reshape(T, H, d_k).transpose(1, 0, 2) for i in range(3))
    if rule == "qknorm":
        def ln(z, norm):
            z = (z - z.mean(-1, keepdims=True)) / np.sqrt(z.var(-1, keepdims=True) + 1e-5)
            return z * np_(norm.weight) + np_(norm.bias)
        q, k = ln(q, attn.q_norm), ln(k, attn.k_norm)
    expected_factor = {"none": 1.0, "sqrt": d_k ** -0.5, "linear": 1.0 / d_k, "qknorm": d_k ** -0.5}[rule]
    s = q @ k.transpose(0, 2, 1) * expected_factor
    np.testing.assert_allclose(np_(attn.last_logits[0]), s, rtol=1e-4, atol=1e-4)

    causal = np.tril(np.ones((T, T), dtype=bool))
    z = np.where(causal, s, -np.inf)
    w = np.exp(z - z.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    out = (w @ v).transpose(1, 0, 2).reshape(T, H * d_k) @ np_(attn.proj.weight).T + np_(attn.proj.bias)
    np.testing.assert_allclose(np_(y[0]), out, rtol=1e-4, atol=1e-4)

    valid = s[:, causal]
    assert stats["std"] == pytest.approx(valid.std(ddof=1), rel=1e-4)
    assert stats["max"] == pytest.approx(np.abs(valid).max(), rel=1e-4)
    assert stats["sat"] == pytest.approx((w.max(-1)[:, 1:] > 0.99).mean())   # row 0 (one key) left out


def test_the_inits():
    torch.manual_seed(0)
    gpt2 = model.Transformer(model.Config(init="gpt2", d_k=64))
    fanin = model.Transformer(model.Config(init="fanin", d_k=64))
    assert gpt2.blocks[0].attn.qkv.weight.std().item() == pytest.approx(0.02, rel=0.05)
    assert fanin.blocks[0].attn.qkv.weight.std().item() == pytest.approx(64 ** -0.5, rel=0.05)
    assert fanin.blocks[0].mlp[2].weight.std().item() == pytest.approx(256 ** -0.5, rel=0.05)
    assert all(m.bias.abs().max().item() == 0 for m in gpt2.modules()
               if isinstance(m, torch.nn.Linear) and m.bias is not None)


# --- the runs ---------------------------------------------------------------------------------------------

RUN_FIELDS = {"rule", "d_k", "lr", "init", "seed", "steps_done", "final_train_loss", "final_val_loss",
              "diverged", "val_loss", "layers"}


def _check_provenance(result, size):
    prov = result["provenance"]
    assert f"--size {size}" in prov["command"] and "experiments.real_transformer.run" in prov["command"]
    assert re.fullmatch(r"[0-9a-f]{40}", prov["git_head"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", prov["date_utc"])
    assert prov["wall_seconds"] > 0
    assert prov["hardware"]["cpu"] and prov["hardware"]["cpu_count"] >= 1
    assert set(prov["versions"]) == {"python", "torch", "numpy"}
    assert result["size"] == size
    assert result["text"]["sha256"] == data.TEXT_SHA256 and result["text"]["license"] == "PSF-2.0"


def _check_grid(result):
    spec = result["spec"]
    axes = [spec["d_ks"], spec["rules"], spec["lrs"], spec["inits"], spec["seeds"]]
    keys = [(r["d_k"], r["rule"], r["lr"], r["init"], r["seed"]) for r in result["runs"]]
    assert sorted(keys) == sorted(product(*axes)) and spec["n_runs"] == len(keys)
    for r in result["runs"]:
        assert set(r) == RUN_FIELDS
        n = len(r["val_loss"]) if r["diverged"] else len(spec["eval_steps"])
        assert len(r["val_loss"]) == n and len(r["layers"]) == spec["n_layers"]
        assert all(len(layer[key]) == n for layer in r["layers"] for key in ("std", "max", "sat"))
        assert r["diverged"] == (r["final_val_loss"] is None or r["final_val_loss"] > math.log(256) + 1)


def test_tiny_run_records_every_field(tiny):
    _check_provenance(tiny, "tiny")
    _check_grid(tiny)
    assert tiny["spec"]["eval_steps"] == [0, 3, 6]
    for r in tiny["runs"]:
        numbers = [r["final_train_loss"], r["final_val_loss"], *r["val_loss"],
                   *(v for layer in r["layers"] for key in ("std", "max", "sat") for v in layer[key])]
        assert all(isinstance(v, float) and math.isfinite(v) for v in numbers), r
        assert r["steps_done"] == 6 and not r["diverged"]
        assert all(0 <= v <= 1 for layer in r["layers"] for v in layer["sat"])


def test_a_run_is_deterministic_for_its_seed(tiny):
    size = run.SIZES["tiny"]
    train, val = (torch.from_numpy(a.copy()) for a in data.split(data.load_text()))
    config = {"rule": "qknorm", "d_k": 8, "lr": 1e-2, "init": "fanin", "seed": 0}
    with run.settings(size):      # one thread, deterministic algorithms: as in the grid
        again = run.train_one(config, size, train, val)
        other = run.train_one({**config, "seed": 1}, size, train, val)
    recorded = next(r for r in tiny["runs"] if all(r[k] == v for k, v in config.items()))
    assert again == recorded
    assert other["val_loss"][1:] != recorded["val_loss"][1:]


def test_a_stopped_grid_resumes_from_its_finished_runs(tiny, tmp_path):
    """A grid stopped half-way (its last line cut short by the stop) trains only the runs it has not finished;
    the finished ones are read back as they were, and a progress file of another recipe is refused."""
    size = run.SIZES["tiny"]
    out = tmp_path / "tiny.json"
    progress = run.progress_path(out)
    kept = tiny["runs"][:20]
    # a mark no training writes, to tell a run read back from one trained again
    lines = [run._recipe(size)] + [json.dumps({"record": {**r, "final_train_loss": -1.0}, "cpu": 1.0}) for r in kept]
    progress.write_text("\n".join(lines) + "\n" + json.dumps({"record": tiny["runs"][20]})[:40])
    assert run.main(["--size", "tiny", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert not progress.exists()
    assert result["provenance"]["resumed_runs"] == 20
    by_key = {run._key(r): r for r in result["runs"]}
    assert all(by_key[run._key(r)]["final_train_loss"] == -1.0 for r in kept)
    trained = [r for r in tiny["runs"][20:]]
    assert all(by_key[run._key(r)] == r for r in trained)      # deterministic: as in the uninterrupted grid
    _check_grid(result)

    progress.write_text(run._recipe(run.SIZES["cpu"]) + "\n")
    with pytest.raises(SystemExit, match="another grid"):
        run.main(["--size", "tiny", "--out", str(out)])


def test_the_text_is_the_recorded_stdlib_list():
    assert list(data.FILES) == sorted(data.FILES) and len(set(data.FILES)) == len(data.FILES)
    train, val = data.split(data.load_text())
    assert len(val) == pytest.approx(0.1 * (len(train) + len(val)), abs=1)


# --- the shipped CPU results ------------------------------------------------------------------------------

def test_shipped_cpu_results(cpu):
    name = cpu["size"]
    assert (EXP / "results" / f"{name}.json").stat().st_size <= 300_000
    _check_provenance(cpu, name)
    _check_grid(cpu)
    spec, size = cpu["spec"], run.SIZES[name]
    assert len(cpu["runs"]) == 240
    assert (spec["d_ks"], spec["steps"], spec["seq_len"], spec["batch"], spec["n_layers"], spec["n_heads"]) == \
        (list(size.d_ks), size.steps, size.seq_len, size.batch, size.n_layers, size.n_heads)


def _seed_means(result, init="gpt2"):
    """{(d_k, rule, lr): (mean final loss of finite runs, mean end saturated share (max over layers), any diverged)}."""
    acc = {}
    for r in result["runs"]:
        if r["init"] != init:
            continue
        a = acc.setdefault((r["d_k"], r["rule"], r["lr"]), ([], [], []))
        if r["final_val_loss"] is not None:
            a[0].append(r["final_val_loss"])
        sats = [layer["sat"][-1] for layer in r["layers"]]
        a[1].append(1.0 if None in sats else max(sats))
        a[2].append(r["diverged"])
    return {k: (float(np.mean(v[0])) if v[0] else None, float(np.mean(v[1])), any(v[2])) for k, v in acc.items()}


def test_findings_recomputed_from_the_raw_json(cpu):
    got = findings.findings(cpu)
    assert set(got) == set("abcdef")
    means = _seed_means(cpu)
    d_ks, lrs = sorted(cpu["spec"]["d_ks"]), sorted(cpu["spec"]["lrs"])

    def best(d, rule, table=means):
        return min(table[(d, rule, lr)][0] if not table[(d, rule, lr)][2] else math.inf for lr in lrs)

    # (a) at the smallest d_k, none's best within 0.05 nats of sqrt's best
    small = d_ks[0]
    assert got["a"]["none_best"] == pytest.approx(best(small, "none"), abs=1e-4)
    assert got["a"]["holds"] == (best(small, "none") <= best(small, "sqrt") + 0.05)
    # (d) QK-norm at 1e-2 within 0.35 nats of its best, at every d_k, nothing diverged
    for d in d_ks:
        gap = means[(d, "qknorm", lrs[-1])][0] - best(d, "qknorm")
        assert got["d"]["per_d_k"][str(d)]["gap"] == pytest.approx(gap, abs=1e-4)
    holds_d = all(means[(d, "qknorm", lrs[-1])][0] - best(d, "qknorm") <= 0.35 for d in d_ks) and \
        not any(means[(d, "qknorm", lr)][2] for d in d_ks for lr in lrs)
    assert got["d"]["holds"] == holds_d
    # (e) linear's best lr at least sqrt's at every d_k, larger at one
    def argbest(d, rule):
        return min(lrs, key=lambda lr: means[(d, rule, lr)][0] if not means[(d, rule, lr)][2] else math.inf)
    pairs = [(argbest(d, "linear"), argbest(d, "sqrt")) for d in d_ks]
    assert got["e"]["holds"] == (all(a >= b for a, b in pairs) and any(a > b for a, b in pairs))
    # (f) at init fanin, none's best more than 0.05 nats above sqrt's at the smallest d_k
    fan = _seed_means(cpu, "fanin")
    assert got["f"]["holds"] == (best(small, "none", fan) > best(small, "sqrt", fan) + 0.05)


def test_findings_reads_no_torch():
    tree = ast.parse((EXP / "findings.py").read_text())
    imported = {n.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for n in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= {"__future__", "json", "math", "sys", "pathlib"}


def _readme_table(text, size="cpu"):
    """The README's table of the grid `size`: {(d_k, rule, lr): (value or None, saturated, diverged)}."""
    block = text.split(f"<!-- {size}-table -->")[1].split(f"<!-- /{size}-table -->")[0]
    rows = [line for line in block.splitlines() if line.startswith("|")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    lrs = [float(c) for c in header[2:]]
    cells = {}
    for line in rows[2:]:
        cols = [c.strip() for c in line.strip("|").split("|")]
        for lr, cell in zip(lrs, cols[2:]):
            m = re.fullmatch(r"(—|\d+\.\d\d)(\*?)(†?)", cell)
            assert m, cell
            cells[(int(cols[0]), cols[1], lr)] = (None if m[1] == "—" else float(m[1]), bool(m[2]), bool(m[3]))
    return cells


def test_readme_table_is_the_json(cpu):
    table = _readme_table(README.read_text(), cpu["size"])
    means = _seed_means(cpu)
    assert set(table) == set(means)
    for key, (loss, sat, div) in means.items():
        shown = table[key]
        assert shown[0] == (None if loss is None else round(loss, 2)), key
        assert shown[1:] == (sat > 0.5, div), key


def test_readme_quotes_the_findings(cpu):
    size = cpu["size"]
    text = README.read_text().split(f"<!-- {size}-findings -->")[1].split(f"<!-- /{size}-findings -->")[0]
    for name, f in findings.findings(cpu).items():
        verdict = "holds" if f["holds"] else "does not hold"
        assert f"({name}) {verdict}" in text, name


def test_export_head_reads_each_layers_own_q_and_k():
    """export_head.head_qk's q and k of a (random) model give that model's own attention logits, layer by layer."""
    from experiments.real_transformer import export_head

    torch.manual_seed(0)
    m = model.Transformer(model.Config(d_k=8, n_layers=2, seq_len=16)).eval()
    text = "def f(x): pass"
    layers = export_head.head_qk(m, text)
    with torch.no_grad():
        m(torch.tensor([list(text.encode())]), keep=True)
    for block, got in zip(m.blocks, layers):
        want = block.attn.last_logits[0, 0].numpy() / block.attn.factor
        q, k = np.array(got["q"]), np.array(got["k"])
        assert q.shape == (len(text), 8) and np.allclose(q @ k.T, want, rtol=2e-3, atol=2e-3)


def test_the_shipped_head_is_the_export_of_its_recipe():
    """The page's copy is the experiment's, and it records the recipe export_head.py runs and its text."""
    from experiments.real_transformer import export_head

    shipped = Path(__file__).resolve().parents[2] / "web" / "data" / "real_head.json"
    results = Path(export_head.__file__).parent / "results" / "real_head.json"
    assert shipped.read_bytes() == results.read_bytes()
    head = json.loads(results.read_text())
    assert head["text"] == export_head.TEXT and head["d_k"] == export_head.RUN["d_k"]
    assert {k: head["run"][k] for k in export_head.RUN} == export_head.RUN
    assert head["run"]["steps_done"] == export_head.SIZE.steps and not head["run"]["diverged"]
    assert head["training_text"]["matches_reference"]
