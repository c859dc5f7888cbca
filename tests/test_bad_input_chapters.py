"""Bad input at the chapter modules' boundaries: refused before any work, naming the argument."""
import numpy as np
import pytest
import torch

from gtlib import connectivity as C
from gtlib import contrastive as CL
from gtlib import preliminaries as P


@pytest.mark.parametrize("kw,name", [({"corr_noise_scale": float("nan")}, "corr_noise_scale"),
                                     ({"iid_noise_scale": float("inf")}, "iid_noise_scale"),
                                     ({"corr_noise_scale": -1.0}, "corr_noise_scale")])
def test_sample_signals_refuses_non_finite_scales(kw, name):
    with pytest.raises(ValueError, match=name):
        P.sample_signals(**kw)


def test_fit_refuses_empty_and_non_finite_data():
    model = C.BatchedMLP.init([0], 4, 8, 1, 3)
    recipe = C.Recipe(lr=0.1, epochs=1, warmup=0.0)
    with pytest.raises(ValueError, match="n = 0"):
        C.fit(model, torch.zeros(0, 4), torch.zeros(0, dtype=torch.long), recipe, seeds=[0])
    x = torch.zeros(5, 4)
    x[0, 0] = float("nan")
    with pytest.raises(ValueError, match="finite"):
        C.fit(model, x, torch.zeros(5, dtype=torch.long), recipe, seeds=[0])


def test_train_nets_names_the_seeds():
    with pytest.raises((ValueError, TypeError), match="seeds"):
        C.train_nets([], torch.zeros(5, 4), torch.zeros(5, dtype=torch.long), 8, 1, 3,
                     C.Recipe(lr=0.1, epochs=1, warmup=0.0))


def test_cross_task_lambdas_must_not_be_empty():
    with pytest.raises((ValueError, TypeError), match="lambdas"):
        C.ConnectivityConfig(lambdas=())


@pytest.mark.parametrize("ratio", [float("nan"), float("inf"), 0.5])
def test_feature_frequencies_refuses_bad_ratio(ratio):
    with pytest.raises(ValueError, match="ratio"):
        CL.feature_frequencies(10, 2, 0.2, ratio)


@pytest.mark.parametrize("kw,name", [({"shift": -1}, "shift"), ({"scale": float("nan")}, "scale"),
                                     ({"jitter": -0.1}, "jitter")])
def test_augment_refuses_bad_settings(kw, name):
    args = {"shift": 2, "scale": 0.1, "jitter": 0.1, **kw}
    with pytest.raises((ValueError, TypeError), match=name):
        CL.augment_1d(torch.zeros(3, 8), torch.Generator().manual_seed(0), **args)
    with pytest.raises(ValueError, match="finite"):
        CL.augment_1d(torch.full((3, 8), np.nan), torch.Generator().manual_seed(0), 2, 0.1, 0.1)
