"""Shared fixtures: the repository's test data and quick compile options."""

import os
import pathlib

import pytest

luminal = pytest.importorskip("luminal")

ROOT = pathlib.Path(os.environ.get("LUMINAL_SOURCE_DIR", pathlib.Path(__file__).parents[2]))
MODELS = ROOT / "tests" / "data" / "models"
GGUF_MODELS = ROOT / "tests" / "data" / "gguf" / "models"


@pytest.fixture(scope="session")
def cpu():
    return luminal.cpu(threads=2)


@pytest.fixture
def quick():
    """A short, quiet, seeded search."""
    return luminal.CompileOptions(search_graph_limit=4, seed=1, verbose=False)
