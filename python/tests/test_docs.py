"""The README's Python example and the notebook in examples/ run as
written."""

from __future__ import annotations

import re

import pytest


def test_the_readmes_python_example_runs(root, monkeypatch, capsys):
    readme = (root / "README.md").read_text()
    section = readme.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks, "the README's Python section has no python block"
    monkeypatch.chdir(root)
    for code in blocks:
        exec(compile(code, "README.md (Python)", "exec"), {"__name__": "__readme__"})
    out = capsys.readouterr().out
    assert "nbd+unix:///" in out
    assert "command line, argument 2" in out


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
