"""The Python examples of the README and of the guide's Python chapter,
and the notebook in examples/, run as written."""

from __future__ import annotations

import re

import pytest

# the documents whose ```python blocks run, from the repository root
DOCUMENTS = ["README.md", "docs/guide/python.md"]


def test_the_python_examples_of_the_readme_and_the_guide_run(root, monkeypatch, capsys):
    monkeypatch.chdir(root)
    for doc in DOCUMENTS:
        blocks = re.findall(r"```python\n(.*?)```", (root / doc).read_text(), flags=re.S)
        assert blocks, f"{doc} has no python block"
        for code in blocks:
            exec(compile(code, f"{doc} (Python)", "exec"), {"__name__": "__readme__"})
    out = capsys.readouterr().out
    assert "clat_ns.mean" in out  # the README's tour: the jobs table
    assert "nbd+unix:///" in out  # the guide's: a live device
    assert "command line, argument 2" in out  # and an error's place


def test_the_example_notebook_runs_top_to_bottom_and_draws_a_figure(root, tmp_path):
    nbformat = pytest.importorskip("nbformat", reason="pip install nbformat nbclient ipykernel (scripts/test does)")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(root / "examples" / "storlab.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    images = [
        o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if "image/png" in o.get("data", {})
    ]
    assert images, "the notebook showed no figure"
    assert (tmp_path / "storlab-sweep.png").stat().st_size > 10_000
