"""notebooks/analysis.ipynb executes top to bottom on saved runs, so it cannot rot."""

from __future__ import annotations

import os
import sys

import nbformat
import pytest
from harness import FIXTURES, ROOT
from nbclient import NotebookClient
from runs import result_sets

NOTEBOOK = ROOT / "notebooks" / "analysis.ipynb"
EXACT = FIXTURES / "exact"  # runs with HDR histogram files: the exact paths


def test_notebook_defaults_to_results_examples():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    assert '"../results/examples"' in params.source and "SWARMBENCH_RESULTS" in params.source
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")  # committed clean


@pytest.mark.parametrize("results", result_sets(FIXTURES / "analysis", EXACT), ids=lambda p: p.name)
def test_notebook_runs(results, monkeypatch):
    monkeypatch.setenv("SWARMBENCH_RESULTS", str(results))
    # The kernelspec says `python`: make that this interpreter (the venv's), whatever PATH was.
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 4  # scaling, user classes, latency, over time
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert f"results: {results.resolve()}" in printed
