"""Fixtures for the torch.compile backend's tests.

They need torch (and transformers for the model tests). The ctest python_torch_tests sets
LUMINAL_REQUIRE_TORCH=1: there a missing torch is an error, never a skip.
"""

import os

import pytest

try:
    import torch
except ImportError:
    if os.environ.get("LUMINAL_REQUIRE_TORCH") == "1":
        raise
    torch = None
    collect_ignore_glob = ["test_*.py"]  # no torch here: nothing to collect

if torch is not None:
    import luminal.torch_backend as lt

QUICK = {"search_budget": 4, "seed": 1, "max_dim": 64, "threads": 2}


@pytest.fixture
def quick():
    """Backend options for a short, seeded search on two threads."""
    return dict(QUICK)


@pytest.fixture(autouse=True)
def fresh():
    """Each test starts with Dynamo's caches and the backend's report empty."""
    torch._dynamo.reset()
    lt.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture
def counted():
    """A backend that counts Dynamo's compiles: (backend, calls)."""
    calls = []

    def make(options=None):
        options = options or QUICK

        def backend(gm, example_inputs, **kw):
            calls.append(len(example_inputs))
            return lt.luminal_backend(gm, example_inputs, options=options)

        return backend

    return make, calls
