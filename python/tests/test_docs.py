"""The Python examples of the README and of the guide's Python chapter,
and the notebook in examples/, run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

# the documents whose ```python blocks run, from the repository root
DOCUMENTS = ["README.md", "docs/guide/python.md"]


@pytest.mark.parametrize("doc", DOCUMENTS)
def test_the_python_examples_run_as_a_user_runs_them(root, tmp_path, doc):
    # as a user does: a document's python blocks saved to a file and run by
    # a fresh interpreter from the repository root (not exec'd in this one,
    # where a script's `if __name__ == "__main__"` mistakes cannot show:
    # Dask's spawned workers import the file again, issue 60)
    blocks = re.findall(r"```python\n(.*?)```", (root / doc).read_text(), flags=re.S)
    assert blocks, f"{doc} has no python block"
    script = tmp_path / "example.py"
    script.write_text("\n".join(blocks))
    env = dict(os.environ, TMPDIR=str(tmp_path))
    p = subprocess.run(
        [sys.executable, str(script)], cwd=root, env=env, capture_output=True, text=True, timeout=900
    )
    assert p.returncode == 0, f"{doc}: python example.py: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    for marker in MARKERS[doc]:
        assert marker in p.stdout, f"{doc}: {marker!r} not in\n{p.stdout}"


# what each document's example prints
MARKERS = {
    "README.md": ["clat_ns.mean"],  # the tour: the jobs table
    "docs/guide/python.md": [
        "clat_ns.mean",
        "transactions/s",  # the application model and its sweep
        "nbd+unix:///",  # a live device
        "command line, argument 2",  # an error's place
    ],
}


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
