"""The grid: rules x d_k x learning rates x inits x seeds, each a small transformer trained on stdlib source.

    python -m experiments.real_transformer.run --size {tiny,cpu,gpu} --out PATH

Each run: AdamW (betas 0.9/0.95, weight decay 0.1 on matrices), linear warm-up over the first 10% of
the steps then cosine decay to 10% of the peak learning rate, gradient norm clipped at 1.0. The
validation loss and, per layer, the attention logits' std, max |logit| and saturated share (model.py) are
measured at step 0, every `eval_every` steps and at the end, on fixed validation windows (the stats on
the first batch of them). A run is `diverged` when a training or validation loss is not finite (training
stops there) or its final validation loss exceeds ln(256) + 1. Floats in the JSON keep 4 significant
digits; a loss that is not finite is written as null.

Runs are independent and deterministic given their seed (torch.manual_seed(seed) before the model is
built, a torch.Generator seeded with seed + 1 for the batches, deterministic algorithms): the CPU sizes
run them in `jobs` worker processes of `threads` threads each, and the numbers do not depend on `jobs`.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from . import data
from .model import INITS, RULES, Config, Transformer, param_groups

LRS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2)
DIVERGED_ABOVE = math.log(256) + 1


@dataclasses.dataclass(frozen=True)
class Size:
    n_layers: int
    n_heads: int
    d_ks: tuple
    seq_len: int
    batch: int
    steps: int
    eval_every: int
    val_windows: int
    seeds: tuple = (0, 1)
    rules: tuple = RULES
    lrs: tuple = LRS
    inits: tuple = INITS
    device: str = "cpu"
    bf16: bool = False
    threads: int = 1            # torch threads per worker process
    jobs: int = 2               # worker processes (CPU); the GPU size runs one process
    warmup_share: float = 0.1
    min_lr_ratio: float = 0.1
    betas: tuple = (0.9, 0.95)
    weight_decay: float = 0.1
    grad_clip: float = 1.0

    @property
    def eval_steps(self) -> list[int]:
        return sorted({0, self.steps, *range(self.eval_every, self.steps, self.eval_every)})

    @property
    def warmup(self) -> int:
        return max(1, round(self.warmup_share * self.steps))


SIZES = {
    # for the tests: the whole grid's shape, a few seconds
    "tiny": Size(n_layers=2, n_heads=1, d_ks=(4, 8), lrs=(1e-3, 1e-2), seq_len=16, batch=4, steps=6,
                 eval_every=3, val_windows=4, seeds=(0,), jobs=1),
    # the full grid (240 runs) within 10 minutes on 2 CPU cores: single-head models with the same d_k
    "cpu": Size(n_layers=2, n_heads=1, d_ks=(16, 64, 256), seq_len=32, batch=8, steps=150, eval_every=25,
                val_windows=64),
    # the same single-head models trained 5.3x longer on 4x the characters per step (800 steps of 16 x 64),
    # toward the regime where the logits grow: 240 runs, about 2 hours on 2 CPU cores, resumable
    "cpu-long": Size(n_layers=2, n_heads=1, d_ks=(16, 64, 256), seq_len=64, batch=16, steps=800,
                     eval_every=100, val_windows=64),
    # the outside GPU run's shape: 2 layers, 4 heads, d_model = 4 d_k, 800 steps of 32 x 128, bf16 autocast
    "gpu": Size(n_layers=2, n_heads=4, d_ks=(32, 128, 256), seq_len=128, batch=32, steps=800, eval_every=50,
                val_windows=128, device="cuda", bf16=True, jobs=1),
}


def sig(x: float, digits: int = 4):
    """x to `digits` significant digits; None when not finite (JSON has no NaN)."""
    x = float(x)
    return float(f"{x:.{digits}g}") if math.isfinite(x) else None


def lr_at(step: int, peak: float, size: Size) -> float:
    """Linear warm-up to `peak` over size.warmup steps, then cosine down to peak * min_lr_ratio."""
    if step < size.warmup:
        return peak * (step + 1) / size.warmup
    t = (step - size.warmup) / max(1, size.steps - size.warmup)
    low = peak * size.min_lr_ratio
    return low + 0.5 * (peak - low) * (1 + math.cos(math.pi * min(1.0, t)))


def grid(size: Size) -> list[dict]:
    return [{"rule": r, "d_k": d, "lr": lr, "init": i, "seed": s}
            for d in size.d_ks for r in size.rules for lr in size.lrs for i in size.inits for s in size.seeds]


def _setup(size: Size) -> None:
    # the thread count is part of a run's recipe: a reduction split over 2 threads adds in another order
    torch.set_num_threads(size.threads)
    # on CUDA a few kernels have no deterministic version: warn there rather than stop the grid
    torch.use_deterministic_algorithms(True, warn_only=size.device == "cuda")


@contextlib.contextmanager
def settings(size: Size):
    """torch set up as a worker is (threads, deterministic algorithms), and put back afterwards."""
    before = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    _setup(size)
    try:
        yield
    finally:
        torch.set_num_threads(before[0])
        torch.use_deterministic_algorithms(before[1])


def val_batches(val: torch.Tensor, size: Size) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Fixed validation windows, evenly spaced over the validation split, in batches of size.batch."""
    T = size.seq_len
    starts = np.linspace(0, len(val) - T - 1, size.val_windows).astype(np.int64)
    x = torch.stack([val[s:s + T] for s in starts]).long()
    y = torch.stack([val[s + 1:s + T + 1] for s in starts]).long()
    return [(x[i:i + size.batch], y[i:i + size.batch]) for i in range(0, len(x), size.batch)]


def train_one(run: dict, size: Size, train: torch.Tensor, val: torch.Tensor, keep: list | None = None) -> dict:
    """Train one configuration; returns its record (rounded). ``keep``: a list the trained model is appended to
    (export_head.py reads a head's q and k from it)."""
    device = torch.device(size.device)
    cfg = Config(rule=run["rule"], init=run["init"], d_k=run["d_k"], n_heads=size.n_heads,
                 n_layers=size.n_layers, seq_len=size.seq_len)
    torch.manual_seed(run["seed"])
    model = Transformer(cfg).to(device)
    opt = torch.optim.AdamW(param_groups(model, size.weight_decay), lr=run["lr"], betas=size.betas)
    gen = torch.Generator().manual_seed(run["seed"] + 1)
    T, B = size.seq_len, size.batch
    vb = [(x.to(device), y.to(device)) for x, y in val_batches(val, size)]
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=size.bf16)
    eval_at = set(size.eval_steps)
    curve, layers = [], [{"std": [], "max": [], "sat": []} for _ in range(size.n_layers)]
    diverged, steps_done, train_loss = False, 0, float("nan")

    def evaluate() -> float:
        model.eval()
        total = 0.0
        with torch.no_grad(), autocast:
            for j, (x, y) in enumerate(vb):
                loss, measured = model.loss(x, y, stats=(j == 0))
                total += loss.item() * len(x)
                if j == 0:
                    for rec, m in zip(layers, measured):
                        for key in rec:
                            rec[key].append(sig(m[key]))
        model.train()
        v = total / sum(len(x) for x, _ in vb)
        curve.append(sig(v))
        return v

    v = evaluate()
    for step in range(size.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, run["lr"], size)
        ix = torch.randint(0, len(train) - T - 1, (B,), generator=gen)
        x = torch.stack([train[i:i + T] for i in ix.tolist()]).long().to(device)
        y = torch.stack([train[i + 1:i + T + 1] for i in ix.tolist()]).long().to(device)
        with autocast:
            loss, _ = model.loss(x, y)
        train_loss = loss.item()
        steps_done = step + 1
        if not math.isfinite(train_loss):
            diverged = True
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), size.grad_clip)
        opt.step()
        if steps_done in eval_at:
            v = evaluate()
            if not math.isfinite(v):
                diverged = True
                break
    if keep is not None:
        keep.append(model)
    final = v if steps_done == size.steps and not diverged else float("nan")
    diverged = diverged or not math.isfinite(final) or final > DIVERGED_ABOVE
    return {**run, "steps_done": steps_done, "final_train_loss": sig(train_loss), "final_val_loss": sig(final),
            "diverged": diverged, "val_loss": curve, "layers": layers}


_WORKER: dict = {}


def _init_worker(size: Size) -> None:
    _setup(size)
    tr, va = data.split(data.load_text())
    _WORKER.update(size=size, train=torch.from_numpy(tr.copy()), val=torch.from_numpy(va.copy()))


def _work(run: dict) -> tuple[dict, float]:
    """A run's record and the CPU seconds its process spent on it."""
    started = time.process_time()
    record = train_one(run, _WORKER["size"], _WORKER["train"], _WORKER["val"])
    return record, time.process_time() - started


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_head() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


RUN_KEYS = ("rule", "d_k", "lr", "init", "seed")


def _key(run: dict) -> tuple:
    return tuple(run[k] for k in RUN_KEYS)


def progress_path(out: Path) -> Path:
    """Where a grid writing to `out` keeps its finished runs until the whole grid is done."""
    return out.with_name(out.name + ".progress.jsonl")


def _recipe(size: Size) -> str:
    """What a run's numbers depend on: the size without its worker count."""
    return json.dumps({k: v for k, v in dataclasses.asdict(size).items() if k != "jobs"}, sort_keys=True)


def read_progress(path: Path, size: Size) -> dict:
    """The finished runs a stopped grid left in `path`: {run key: (record, cpu seconds)}.

    The first line is the size's spec; a file written for another spec is refused rather than mixed in. A last
    line cut short by a stop is dropped (that run is trained again)."""
    if not path.exists():
        return {}
    lines = path.read_text().splitlines()
    if not lines or lines[0] != _recipe(size):
        raise SystemExit(f"{path} was written for another grid; delete it to start afresh")
    out = {}
    for line in lines[1:]:
        try:
            item = json.loads(line)
            out[_key(item["record"])] = (item["record"], item["cpu"])
        except (ValueError, KeyError, TypeError):
            continue
    return out


class _ProgressLog:
    """Appends each finished run to the progress file, flushed, so that a stop loses at most the runs under way."""

    def __init__(self, path: Path, size: Size):
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or not path.read_text().strip():
            path.write_text(_recipe(size) + "\n")
        self.path = path

    def add(self, out: tuple[dict, float]) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps({"record": out[0], "cpu": out[1]}, separators=(",", ":")) + "\n")
            f.flush()
            os.fsync(f.fileno())


def run_grid(size_name: str, jobs: int | None = None, command: str | None = None,
             progress: Path | None = None) -> dict:
    """The grid of `size_name`. With `progress`, each finished run is appended there as it ends, and runs already
    there are not trained again: a grid stopped half-way continues from its finished runs."""
    size = SIZES[size_name]
    if jobs is not None:
        size = dataclasses.replace(size, jobs=jobs)
    if size.device == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        if not torch.cuda.is_available():
            raise SystemExit("--size gpu needs a CUDA device")
    text = data.load_text()
    started = time.time()
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    load_before = os.getloadavg()
    runs = grid(size)
    finished = read_progress(progress, size) if progress is not None else {}
    # the widest first: two workers then finish together rather than one waiting on a last long run
    todo = sorted((r for r in runs if _key(r) not in finished), key=lambda r: -r["d_k"])
    if finished:
        print(f"resuming: {len(runs) - len(todo)} of {len(runs)} runs read from {progress}", file=sys.stderr)
    log = _ProgressLog(progress, size) if progress is not None else None
    if size.jobs > 1 and todo:
        import multiprocessing as mp
        with mp.get_context("spawn").Pool(size.jobs, _init_worker, (size,)) as pool:
            for i, out in enumerate(pool.imap(_work, todo, chunksize=1), 1):
                finished[_key(out[0])] = out
                if log:
                    log.add(out)
                if i % 20 == 0 or i == len(todo):
                    print(f"{i}/{len(todo)} runs, {time.time() - started:.0f} s", file=sys.stderr, flush=True)
    elif todo:
        # in this process: leave torch's settings as they were (a caller such as pytest goes on using it)
        with settings(size):
            _init_worker(size)
            try:
                for r in todo:
                    out = _work(r)
                    finished[_key(r)] = out
                    if log:
                        log.add(out)
            finally:
                _WORKER.clear()
    wall = time.time() - started
    done = [finished[_key(r)] for r in runs]
    records = [record for record, _ in done]
    spec = dataclasses.asdict(size)
    spec.update(eval_steps=size.eval_steps, warmup=size.warmup, diverged_above=sig(DIVERGED_ABOVE),
                saturated_above=0.99, n_runs=len(runs))
    return {
        "size": size_name,
        "provenance": {
            "command": command or shlex.join(getattr(sys, "orig_argv", sys.argv)),
            "git_head": git_head(),
            "date_utc": date,
            # this invocation's wall time; runs read back from a stopped grid's progress file count in
            # cpu_seconds but not here
            "wall_seconds": round(wall, 1),
            "resumed_runs": len(runs) - len(todo),
            # the runs' own CPU time (summed over the workers) and the machine's load average (1 min) before
            # and after: a wall time well above cpu_seconds / jobs means other work shared the cores
            "cpu_seconds": round(sum(cpu for _, cpu in done), 1),
            "load_average_1min": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
            "hardware": {"cpu": cpu_model(), "processor": platform.processor(), "machine": platform.machine(),
                         "cpu_count": os.cpu_count(),
                         "gpu": torch.cuda.get_device_name(0) if size.device == "cuda" else None},
            "versions": {"python": platform.python_version(), "torch": torch.__version__,
                         "numpy": np.__version__},
            "platform": platform.platform(),
        },
        "text": data.provenance(text),
        "spec": spec,
        "runs": records,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", choices=sorted(SIZES), required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: the size's own)")
    args = p.parse_args(argv)
    # from the command line: the command as typed; called with argv (a test): the equivalent command
    command = None if argv is None else shlex.join([sys.executable, "-m", __spec__.name, *argv])
    progress = progress_path(args.out)
    result = run_grid(args.size, args.jobs, command, progress)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, separators=(",", ":")) + "\n")
    progress.unlink(missing_ok=True)
    n_div = sum(r["diverged"] for r in result["runs"])
    print(f"{len(result['runs'])} runs, {n_div} diverged, {result['provenance']['wall_seconds']} s -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
