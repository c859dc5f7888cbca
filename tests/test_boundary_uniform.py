"""Bad input is refused at gtlib.uniform's boundary (issue 19): no silent case, a clear error
(TypeError or ValueError naming the argument) instead of a crash deep inside torch."""
import math

import numpy as np
import pytest
import torch

from gtlib import uniform as U
from gtlib.models import BatchedMLP
from gtlib.train import TrainConfig

NAN = float("nan")


def _raises(error, name, func, *args, **kwargs):
    with pytest.raises(error, match=name):
        func(*args, **kwargs)


@pytest.fixture(scope="module")
def lin():
    cfg = U.LinearConstruction(D=50, m=8)
    return cfg, U.linear_data(cfg, seed=0)


def _nan_at(t):
    t = t.clone()
    t.view(-1)[0] = NAN
    return t


# -- the cases the probe found silent ------------------------------------------------------------

def test_linear_functions_refuse_nan_and_int_inputs(lin):
    _, (x1, x2, y) = lin
    for func in (U.one_step_gd, U.linear_sprime):
        _raises(ValueError, "x1", func, _nan_at(x1), x2, y)
        _raises(ValueError, "x2", func, x1, _nan_at(x2), y)
        _raises(TypeError, "x1", func, x1.long(), x2, y)
        _raises(TypeError, "x2", func, x1, x2.long(), y)
    w1, w2 = U.one_step_gd(x1, x2, y)
    _raises(ValueError, "w1", U.linear_predict, _nan_at(w1), w2, x1, x2)
    _raises(ValueError, "x2", U.linear_predict, w1, w2, x1, _nan_at(x2))
    _raises(ValueError, "x1", U.linear_predict, w1, w2, x1[0], x2)
    _raises(ValueError, "w2", U.linear_predict, w1, w2[:3], x1, x2)
    _raises(TypeError, "w1", U.linear_predict, None, w2, x1, x2)


def test_norms_and_bounds_refuse_nan_empty_and_bad_spectral():
    w = torch.randn(4, 3)
    _raises(ValueError, "w", U.norm_21, _nan_at(w))
    _raises(ValueError, "w", U.norm_21, torch.zeros(0, 3))
    _raises(TypeError, "w", U.spectral_norm, torch.ones(3, 3, dtype=torch.long))
    ws, w0 = [torch.randn(4, 3), torch.randn(2, 4)], [torch.randn(4, 3), torch.randn(2, 4)]
    _raises(ValueError, "weights", U.distance_from_init, [_nan_at(ws[0]), ws[1]], w0)
    _raises(TypeError, "weights", U.distance_from_init, None, w0)
    for bound in (U.bartlett_bound, U.neyshabur_bound):
        _raises(ValueError, "spectral", bound, ws, w0, 3.0, 1.0, 10, [NAN, 1.0])
        _raises(ValueError, "spectral", bound, ws, w0, 3.0, 1.0, 10, [])
        _raises(ValueError, "spectral", bound, ws, w0, 3.0, 1.0, 10, [1.0])
        _raises(TypeError, "spectral", bound, ws, w0, 3.0, 1.0, 10, "ab")
    _raises(ValueError, "data_norm", U.bartlett_bound, ws, w0, 0.0, 1.0, 10)
    _raises(TypeError, "data_norm", U.bartlett_bound, ws, w0, None, 1.0, 10)
    _raises(TypeError, "x", U.network_measures, ws, w0, torch.ones(5, 3, dtype=torch.long), 1.0)


def test_member_logits_and_cnn_forward_refuse_bad_x():
    model = BatchedMLP.init([0, 1], 5, 8, 1, 3)
    x = torch.randn(6, 5)
    _raises(ValueError, "x", U.member_logits, model, 0, _nan_at(x))
    _raises(ValueError, "x", U.member_logits, model, 0, x[:0])
    _raises(ValueError, "x", U.member_logits, model, 0, x[0])
    _raises(TypeError, "i", U.member_logits, model, True, x)
    _raises(ValueError, "i", U.member_logits, model, 2, x)
    _raises(TypeError, "model", U.member_logits, None, 0, x)
    cnn = U.BatchedCNN1d([0, 1], 2, 8)
    _raises(ValueError, "x", cnn, _nan_at(torch.randn(3, 40)))
    _raises(TypeError, "x", cnn, [[0.0] * 40])
    _raises(TypeError, "seeds", U.BatchedCNN1d, None)
    assert cnn(torch.randn(3, 40)).shape == (2, 3, 10)


def test_train_on_subsets_refuses_bad_labels_and_checks_sizes_first():
    model = BatchedMLP.init([0, 1], 5, 8, 1, 3)
    x, y = torch.randn(30, 5), torch.randint(0, 3, (30,))
    ok = TrainConfig(lr=0.1, batch_size=4, target_train_acc=1.0)
    _raises(ValueError, "y", U.train_on_subsets, model, x, torch.full((30,), 99), [10, 20], ok)
    _raises(TypeError, "y", U.train_on_subsets, model, x, y.float(), [10, 20], ok)
    _raises(ValueError, "x", U.train_on_subsets, model, _nan_at(x), y, [10, 20], ok)
    _raises(TypeError, "cfg", U.train_on_subsets, model, x, y, [10, 20], None)
    _raises(TypeError, "seeds", U.train_on_subsets, model, x, y, [10, 20], ok, seeds=3)
    # the size is named even when the config also lacks a stop rule
    _raises(ValueError, "sizes", U.train_on_subsets, model, x, y, [10, 300],
            TrainConfig(lr=0.1, batch_size=4))


def test_experiments_refuse_wrong_config_seed_flag_and_device():
    _raises(TypeError, "cfg", U.corruption_experiment, None)
    _raises(TypeError, "cfg", U.cnn_randomization, {"lr": 0.1})
    _raises(TypeError, "cfg", U.margin_sweep, None)
    _raises(TypeError, "fixed_size", U.margin_sweep,
            U.MarginSweepConfig(sizes=(8, 16), n_test=20, width=8, max_epochs=1.0), fixed_size=1)
    x = torch.zeros(4, 3)
    _raises(ValueError, "x must have 3 columns", U.nearest_neighbour_predict, x,
            torch.zeros(4, dtype=torch.long), torch.zeros(2, 5))
    _raises(ValueError, "y_train", U.nearest_neighbour_predict, x,
            torch.zeros(3, dtype=torch.long), torch.zeros(2, 3))
    _raises(ValueError, "chunk", U.nearest_neighbour_predict, x,
            torch.zeros(4, dtype=torch.long), torch.zeros(2, 3), chunk=0)
    cfg = U.CorruptionConfig(n_train=30, n_test=20, levels=(0.0, 1.0), width=8, max_steps=3,
                             check_every=1)
    _raises(TypeError, "replicate", U.corruption_experiment, cfg, replicate=None)
    _raises(TypeError, "replicate", U.corruption_experiment, cfg, replicate="yes")
    sph = U.SpheresConfig(d=5, sizes=(8, 16), n_test=20, width=8, max_epochs=2.0)
    _raises(ValueError, "device", U.spheres_sweep, sph, device="gpu9")
    _raises(ValueError, "seed", U.spheres_sweep, sph, seed=2**64)
    lin = U.LinearConstruction(D=50, m=8)
    _raises(ValueError, "seed", U.linear_errors, lin, seed=-1)
    _raises(TypeError, "cfg", U.linear_nn_errors, None)
    _raises(ValueError, "n_test", U.linear_nn_errors, U.LinearConstruction(D=10, m=4), n_test=0)
    _raises(TypeError, "generator", lin.sample, 5, None)


def test_sphere_helpers_refuse_bad_labels_tolerance_seed_and_point():
    x, y = U.sphere_data(20, 5, generator=torch.Generator().manual_seed(0))
    _raises(TypeError, "y", U.sphere_sprime, x, y.float())
    for atol in (0.0, math.inf, True):
        with pytest.raises((TypeError, ValueError), match="atol"):
            U.sphere_sprime(x, y, atol=atol)
    _raises(ValueError, "n", U.sphere_data, 10**12, 5)
    model = BatchedMLP.init([0], 5, 8, 1, 2)
    _raises(ValueError, "seed", U.boundary_slice, model, 0, x[0], seed=-1)
    _raises(TypeError, "member", U.boundary_slice, model, None, x[0])
    _raises(ValueError, "point", U.bulge_width, model, 0, _nan_at(x[0]), 0)
    _raises(TypeError, "label", U.bulge_width, model, 0, x[0], True)
    _raises(ValueError, "label", U.bulge_width, model, 0, x[0], 2)
    _raises(TypeError, "half_angle_deg", U.cap_fraction, 5, True)
    _raises(ValueError, "half_angle_deg", U.cap_fraction, 5, 400.0)


def test_plot_helpers_refuse_bad_input():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    a = b = np.linspace(-1, 1, 5)
    f = np.zeros((5, 5))
    for r in (0.0, -1.0, NAN, math.inf, True):
        with pytest.raises((TypeError, ValueError), match="point_radius"):
            U.plot_slice(ax, a, b, f, (1.0, 1.2), r)
    _raises(TypeError, "ax", U.plot_slice, None, a, b, f, (1.0, 1.2), 1.0)
    _raises(ValueError, "f", U.plot_slice, ax, a, b, np.zeros((0, 5)), (1.0, 1.2), 1.0)
    _raises(ValueError, "values", U.log_ticks, ax, [])
    _raises(ValueError, "values", U.log_ticks, ax, [0, 10])
    _raises(TypeError, "values", U.log_ticks, ax, None)
    for axis in ("z", 1, None):
        with pytest.raises((TypeError, ValueError), match="axis"):
            U.log_ticks(ax, [1, 10], axis=axis)
    U.log_ticks(ax, np.array([1, 10, 100]))
    plt.close(fig)


def test_power_law_fit_names_non_numeric_input():
    _raises(TypeError, "x", U.power_law_fit, "abc", [1.0, 2.0, 3.0])
    _raises(TypeError, "y", U.power_law_fit, [1.0, 2.0, 3.0], ["a", "b", "c"])
    _raises(ValueError, "x must be positive", U.power_law_fit, [1.0, NAN, 2.0], [1.0, 2.0, 3.0])
    _raises(ValueError, "y must be positive", U.power_law_fit, [1.0, 2.0, 3.0], [1.0, NAN, 2.0])
