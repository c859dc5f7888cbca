"""Fixtures the test modules of gtlib.soft share."""

import pytest
import torch

from gtlib import soft


torch.set_num_threads(1)


@pytest.fixture(scope="module")
def subnet():
    g = torch.Generator().manual_seed(1)
    return (
        soft.SubspaceNet(40, 10, 8, channels=2, seed=0),
        torch.randn(12, 40, generator=g),
        torch.arange(12) % 10,
    )
