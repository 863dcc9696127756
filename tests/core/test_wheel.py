"""Test what ships: the wheel is py3-none-any, holds only sdpa_core, needs only numpy, and works installed."""
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_is_pure_and_works_on_its_own(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    str(ROOT), "-w", str(tmp_path)], check=True)
    (whl,) = tmp_path.glob("sdpa_core-*.whl")
    assert whl.name.endswith("-py3-none-any.whl")
    with zipfile.ZipFile(whl) as zf:
        names = zf.namelist()
        meta = zf.read(next(n for n in names if n.endswith("METADATA"))).decode()
        zf.extractall(tmp_path / "site")
    assert {n.split("/")[0] for n in names} <= {"sdpa_core", whl.name.split("-")[0] + "-" + whl.name.split("-")[1]
                                                + ".dist-info"}
    requires = [line for line in meta.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert requires == ["Requires-Dist: numpy>=1.24"]
    code = ("import sdpa_core, numpy as np; assert 'site' in sdpa_core.__file__, sdpa_core.__file__; "
            "o, w = sdpa_core.attention(np.eye(3), np.eye(3), np.eye(3)); print(round(float(w.sum()), 6))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3.0"
