"""build/pyodide_patch.py: the snapshot patches apply to Pyodide 0.29.3's pyodide.asm.js exactly, and
a missing or repeated anchor fails the build loudly (fast: no browser, no site build)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from build import pyodide_patch as patch
from sitebuild import pyodide_dist


@pytest.fixture(scope="module")
def asm_js() -> str:
    dist = pyodide_dist()
    if dist is None:
        pytest.skip("needs PYODIDE_DIST (a Pyodide 0.29.3 distribution folder) to read the real pyodide.asm.js")
    return (dist / "pyodide.asm.js").read_text(encoding="utf-8")


def test_every_anchor_once_in_real_file(asm_js):
    for name, (anchor, replacement) in patch.PATCHES.items():
        assert asm_js.count(anchor) == 1, name
        assert replacement not in asm_js, name


def test_patches_apply_to_real_file(asm_js):
    out = patch.patch_pyodide_asm(asm_js)
    for name, (anchor, replacement) in patch.PATCHES.items():
        assert out.count(replacement) == 1, name
        assert anchor not in out, name
    # nothing else changed
    assert len(out) - len(asm_js) == sum(len(r) - len(a) for a, r in patch.PATCHES.values())
    assert "Module.sdpaGetMemory" in out


def test_patched_file_is_valid_javascript(asm_js, tmp_path):
    node = shutil.which("node")
    if node is None:
        pytest.skip("needs node to parse the patched file")
    target = tmp_path / "pyodide.asm.js"
    target.write_text(patch.patch_pyodide_asm(asm_js), encoding="utf-8")
    result = subprocess.run([node, "--check", str(target)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_patching_twice_fails(asm_js):
    with pytest.raises(patch.PatchError, match="found 0 times"):
        patch.patch_pyodide_asm(patch.patch_pyodide_asm(asm_js))


def test_missing_anchor_fails_loudly():
    text = "var memoryBase=something_else_upstream_wrote;" + "x" * 100
    with pytest.raises(patch.PatchError) as err:
        patch.patch_pyodide_asm(text)
    message = str(err.value)
    assert "side-module-memory" in message and "found 0 times" in message and "0.29.3" in message


def test_repeated_anchor_fails_loudly():
    anchor, _ = patch.PATCHES["globals-proxy-getters"]
    text = anchor + ";" + anchor
    with pytest.raises(patch.PatchError, match="'globals-proxy-getters'.*found 2 times"):
        patch.patch_pyodide_asm(text, {"globals-proxy-getters": patch.PATCHES["globals-proxy-getters"]})


def test_synthetic_text_is_patched():
    patches = {"demo": ("let a=getMemory(n);", "let a=(Module.x||getMemory)(n);")}
    assert patch.patch_pyodide_asm("f();let a=getMemory(n);g()", patches) == "f();let a=(Module.x||getMemory)(n);g()"
