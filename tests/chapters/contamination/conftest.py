"""Fixtures the test modules of gtlib.contamination share."""

import pytest

from gtlib import contamination as fc


@pytest.fixture(scope="module")
def emb():
    return fc.random_embedding(4, 3, 12, seed=1)


@pytest.fixture(scope="module")
def emb_bou():
    return fc.random_embedding(3, 3, 10, seed=0)


@pytest.fixture(scope="module")
def toy(emb_bou):
    return fc.sample_toy(20, emb_bou, "theory", seed=0)


@pytest.fixture(scope="module")
def nets():
    return fc.init_two_layer(["relu", "tanh"], 10, 6, [0, 1])
