"""The example notebook runs from top to bottom in a real Jupyter kernel, and every check in it holds."""
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "sdpa_core_tour.ipynb"


@pytest.mark.slow
def test_the_sdpa_core_tour_notebook_runs(tmp_path, monkeypatch):
    """examples/sdpa_core_tour.ipynb executes cell by cell in an IPython kernel of this interpreter (nbclient),
    with sdpa_core imported from this checkout; its asserts (attention against a numpy formula, the backward
    against finite differences, the sweep against theory, a new rule, a training run) all pass, and it needs
    nothing beyond sdpa_core and numpy."""
    nbformat = pytest.importorskip("nbformat", reason="nbformat (test extra) reads the notebook")
    nbclient = pytest.importorskip("nbclient", reason="nbclient and ipykernel (test extra) run the notebook")
    pytest.importorskip("ipykernel", reason="nbclient and ipykernel (test extra) run the notebook")
    # a kernel spec naming this interpreter, found first: a system-wide "python3" may be another Python
    spec = tmp_path / "kernels" / "sdpa-core-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "sdpa_core tests", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert not any(cell.get("outputs") for cell in nb.cells if cell.cell_type == "code"), "commit it without outputs"
    imports = {line.split()[1].split(".")[0] for cell in nb.cells if cell.cell_type == "code"
               for line in cell.source.splitlines() if line.startswith(("import ", "from "))}
    assert imports == {"numpy", "sdpa_core"}
    # run in the checkout's root, so the kernel imports this sdpa_core (not an installed copy)
    nbclient.NotebookClient(nb, kernel_name="sdpa-core-test", timeout=600,
                            resources={"metadata": {"path": str(ROOT)}}).execute()
    printed = "".join(o.get("text", "") for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs)
    assert f"sdpa_core {__import__('sdpa_core').__version__}" in printed and "max |dq - finite differences|" in printed
    errors = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs if o.output_type == "error"]
    assert errors == []
