"""Tests of gtlib.soft.common, the input checks the sections share, through the public
functions that use them: one integer check for every chapter, and a dataset too small for
a config refused by every run that takes one."""

import pytest
import torch

from gtlib import soft
from gtlib.data import Dataset

from tests.chapters.soft.helpers import _raises


def _ds(n=20, n_test=10):
    g = torch.Generator().manual_seed(2)
    return Dataset(
        torch.randn(n, 40, generator=g),
        torch.arange(n) % 10,
        torch.randn(n_test, 40, generator=g),
        torch.arange(n_test) % 10,
        10,
    )


# =================================================================================================
# one integer check for every chapter (gtlib.checks.check_int)
# =================================================================================================
def test_soft_validates_integers_with_the_core_checks():
    # one integer check for every chapter: soft's own _int helper is gone
    assert not hasattr(soft, "_int")
    with pytest.raises(ValueError, match="degree"):
        soft.legendre_features([0.0], -1)
    with pytest.raises(ValueError, match="steps"):
        soft.train_subspace(
            soft.SubspaceNet(40, 10, 4),
            torch.zeros(3, 40),
            torch.zeros(3, dtype=torch.int64),
            steps=0,
            lr=0.1,
        )


# =================================================================================================
# common._fits: a dataset smaller than the config asks for
# =================================================================================================
@pytest.mark.boundary
def test_runs_refuse_a_missing_dataset_or_one_too_small():
    small = _ds()
    _raises(TypeError, "ds", soft.run_gp_corruption, soft.GPConfig.quick(), None)
    _raises(
        ValueError,
        "n_train",
        soft.run_gp_corruption,
        soft.GPConfig(
            n_train=3000, n_test=5, corruptions=(0.0,), lengthscale_factors=(1.0,)
        ),
        small,
    )
    _raises(
        ValueError, "n_train", soft.run_mlp_sweep, soft.MLPSweepConfig.quick(), small
    )
    _raises(TypeError, "ds", soft.run_mlp_sweep, soft.MLPSweepConfig.quick(), "ds")
    _raises(
        ValueError,
        "n_train",
        soft.run_compression,
        soft.CompressionConfig.quick(),
        small,
        "true",
    )
    _raises(
        ValueError,
        "labels",
        soft.run_compression,
        soft.CompressionConfig.quick(),
        small,
        "bogus",
    )
    _raises(
        TypeError,
        "channels",
        soft.run_compression,
        soft.CompressionConfig.quick(),
        small,
        "true",
        channels=2.5,
    )
