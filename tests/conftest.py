import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
torch.set_num_threads(min(2, os.cpu_count() or 1))


@pytest.fixture(scope="session")
def builtin():
    """The built-in model (SmolLM2-135M-Instruct), converted once into the user cache."""
    from infinipot_cli.model import load_model

    return load_model(None)
