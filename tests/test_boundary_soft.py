"""Bad input is refused at gtlib.soft's boundary (issue 19): a TypeError or ValueError that names
the argument, never a hang, a silent NaN or a silently wrong answer.

The cases are the independent probe's hangs and silent cases for this module, and a
representative set of its unclear errors (None, strings, NaN inside, bools, -1, empty, 0, lists).
"""
import math

import numpy as np
import pytest
import torch

from gtlib import soft
from gtlib.data import Dataset
from gtlib.models import MLP


def _raises(error, name, fn, *args, **kwargs):
    with pytest.raises(error, match=name):
        fn(*args, **kwargs)


@pytest.fixture(scope="module")
def tiny():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(30, 5, generator=g)
    y = torch.arange(30) % 3
    return MLP(5, 4, 1, 3), x, y


@pytest.fixture(scope="module")
def subnet():
    g = torch.Generator().manual_seed(1)
    return (soft.SubspaceNet(40, 10, 8, channels=2, seed=0), torch.randn(12, 40, generator=g),
            torch.arange(12) % 10)


def _ds(n=20, n_test=10):
    g = torch.Generator().manual_seed(2)
    return Dataset(torch.randn(n, 40, generator=g), torch.arange(n) % 10,
                   torch.randn(n_test, 40, generator=g), torch.arange(n_test) % 10, 10)


# -- the probe's hangs ----------------------------------------------------------------------------
@pytest.mark.parametrize("tol", [0, 0.0, -1.0, math.nan, math.inf, True, "1e-6", None])
def test_kl_inverse_refuses_a_tolerance_that_is_not_positive(tol):
    _raises((TypeError, ValueError), "tol", soft.kl_inverse, 0.1, 0.5, tol)


def test_kl_inverse_with_a_tolerance_below_float_spacing_returns():
    p = soft.kl_inverse(0.1, 0.5, tol=1e-300)  # bisection stops at adjacent floats
    assert soft.kl_bernoulli(0.1, p) == pytest.approx(0.5, abs=1e-12)
    assert p == soft.kl_inverse(0.1, 0.5, tol=1e-15) or abs(p - soft.kl_inverse(0.1, 0.5)) < 1e-11


@pytest.mark.parametrize("tol", [math.nan, 0.0, -1.0, math.inf, True, None, "x"])
def test_lanczos_refuses_a_bad_tolerance_before_eigsh(tiny, tol):
    model, x, y = tiny
    _raises((TypeError, ValueError), "tol", soft.lanczos_top_eigs, model, x, y, 3, tol=tol)


# -- silent cases ---------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [soft.simple_target, soft.complex_target])
@pytest.mark.parametrize("bad,error", [(None, TypeError), (np.zeros(0), ValueError),
                                       ("abc", TypeError), ([0.1, math.nan], ValueError)])
def test_targets_refuse_missing_empty_or_nan_inputs(fn, bad, error):
    _raises(error, "x", fn, bad)


def test_kernels_and_gp_refuse_nan_empty_int_and_float_labels():
    g = torch.Generator().manual_seed(3)
    x, xt = torch.randn(20, 4, generator=g), torch.randn(6, 4, generator=g)
    y = torch.arange(20) % 3
    nan = x.clone()
    nan[0, 0] = math.nan
    _raises(ValueError, "a", soft.rbf_kernel, nan, x, 1.0)
    _raises(ValueError, "b", soft.rbf_kernel, x, x[:0], 1.0)
    _raises(ValueError, "x", soft.median_lengthscale, nan)
    _raises(TypeError, "x", soft.gp_label_regression, x.long(), y, xt, 3, [1.0])
    _raises(TypeError, "y", soft.gp_label_regression, x, y.float(), xt, 3, [1.0])
    _raises(ValueError, "y", soft.gp_label_regression, x, y + 5, xt, 3, [1.0])
    _raises(ValueError, "x_test", soft.gp_label_regression, x, y, nan[:6], 3, [1.0])
    _raises(ValueError, "x_test", soft.gp_label_regression, x, y, xt[:0], 3, [1.0])
    _raises(ValueError, "x_test", soft.gp_label_regression, x, y, xt[:, :2], 3, [1.0])
    _raises(ValueError, "num_classes", soft.gp_label_regression, x, y, xt, 0, [1.0])
    _raises(ValueError, "lengthscales", soft.gp_label_regression, x, y, xt, 3, [-1.0])


def test_hessian_tools_refuse_labels_outside_the_models_classes(tiny):
    model, x, y = tiny
    for fn in (soft.hessian_matvec, soft.dense_hessian):
        _raises(ValueError, "y", fn, model, x, torch.full_like(y, 99))
        _raises(ValueError, "y", fn, model, x, y - 1)
        _raises(TypeError, "y", fn, model, x, y.float())
        _raises(ValueError, "y", fn, model, x, y[:-1])
        _raises(TypeError, "x", fn, model, x.long(), y)
        _raises(ValueError, "x", fn, model, x[:, :3], y)
        _raises(TypeError, "model", fn, None, x, y)


@pytest.mark.parametrize("kw,name", [(dict(max_k=0), "max_k"), (dict(max_k=2), "max_k"),
                                     (dict(max_k=True), "max_k"),
                                     (dict(weight_tol=1.5), "weight_tol"),
                                     (dict(weight_tol=-0.1), "weight_tol"),
                                     (dict(weight_tol=math.nan), "weight_tol"),
                                     (dict(seed=2 ** 64), "seed"), (dict(probes=None), "probes"),
                                     (dict(probes=1), "probes")])
def test_effective_parameters_refuses_bad_settings(tiny, kw, name):
    model, x, y = tiny
    _raises((TypeError, ValueError), name, soft.effective_parameters, model, x, y, 1.0, k=3, **kw)


def test_codes_refuse_bad_bits_positions_and_truncation():
    _raises(ValueError, "bits", soft.elias_gamma_decode, [2, 3, 4])
    _raises(ValueError, "bits", soft.elias_gamma_decode, [0, 0, 0])
    _raises(ValueError, "bits", soft.elias_gamma_decode, [])
    _raises(ValueError, "pos", soft.elias_gamma_decode, [1], -1)
    _raises(TypeError, "pos", soft.elias_gamma_decode, [1, 1], True)
    _raises(ValueError, "pos", soft.elias_gamma_decode, [1], 1)
    _raises(ValueError, "bits", soft.arithmetic_decode, [], 4, 3)
    _raises(TypeError, "bits", soft.arithmetic_decode, "0101", 4, 3)
    _raises(TypeError, "symbols", soft.arithmetic_encode, [0, 1.5], 3)
    _raises(TypeError, "symbols", soft.arithmetic_encode, None, 3)
    _raises(ValueError, "bits", soft.decode_quantized, soft.elias_gamma(5) + soft.elias_gamma(2))
    _raises(ValueError, "symbols", soft.encode_quantized, [0.0, 1.0], [0, 2])
    _raises(ValueError, "centres", soft.encode_quantized, [], [0])


@pytest.mark.parametrize("iters,error", [(0, ValueError), (-1, ValueError), (True, TypeError),
                                         (2.5, TypeError), (None, TypeError)])
def test_quantize_refuses_a_bad_number_of_iterations(iters, error):
    _raises(error, "iters", soft.quantize, np.linspace(-1, 1, 20), 3, iters)


@pytest.mark.parametrize("rcond", [0.0, -1.0, math.nan, math.inf, True, None, "x"])
def test_ridge_path_refuses_a_bad_rcond(rcond):
    rng = np.random.default_rng(0)
    _raises((TypeError, ValueError), "rcond", soft.ridge_path, rng.normal(size=(4, 6)),
            rng.normal(size=4), [0.1], rcond)


@pytest.mark.parametrize("tol", [-0.5, math.nan, math.inf, True, None])
def test_interpolation_threshold_refuses_a_bad_tolerance(tol):
    _raises((TypeError, ValueError), "tol", soft.interpolation_threshold, [4, 8], [0.3, 0.0], tol)


def test_interpolation_threshold_refuses_empty_or_mismatched_errors():
    _raises(ValueError, "train_err", soft.interpolation_threshold, [4, 8], [])
    _raises(ValueError, "train_err", soft.interpolation_threshold, [4, 8], [0.1])


@pytest.mark.parametrize("fn,args,name", [
    (soft.countable_bound, (True, 100.0, 1000), "train_error"),
    (soft.counting_bound, (True, 100, 1000), "train_error"),
    (soft.pac_bayes_kl_bound, (True, 10.0, 1000), "train_error"),
    (soft.kl_bernoulli, (True, 0.2), "q"),
    (soft.kl_bernoulli, (0.1, True), "p"),
    (soft.kl_inverse, (True, 0.5), "q"),
    (soft.kl_inverse, (0.1, math.nan), "c"),
    (soft.countable_bound, (0.1, 100.0, 1000, 0.0), "delta"),
])
def test_bounds_refuse_bools_and_out_of_range_numbers(fn, args, name):
    _raises((TypeError, ValueError), name, fn, *args)


@pytest.mark.parametrize("kw,name", [(dict(tail_dim=0), "tail_dim"),
                                     (dict(tail_var=0.0), "tail_var"),
                                     (dict(tail_var=True), "tail_var"),
                                     (dict(tail_var="1"), "tail_var"),
                                     (dict(seed=True), "seed"),
                                     (dict(seed=-1), "seed")])
def test_overfitting_taxonomy_refuses_bad_settings(kw, name):
    _raises((TypeError, ValueError), name, soft.overfitting_taxonomy, n=10, **kw)


def test_networks_refuse_bad_sizes_seeds_and_inputs(subnet):
    _raises(ValueError, "out_dim", soft.ConvNet1D, 40, 4, 0)
    _raises(TypeError, "out_dim", soft.ConvNet1D, 40, 4, None)
    _raises(ValueError, "out_dim", soft.SubspaceNet, 40, 0, 8)
    _raises(ValueError, "seed", soft.SubspaceNet, 40, 10, 8, seed=-1)
    _raises(TypeError, "seed", soft.SubspaceNet, 40, 10, 8, seed=True)
    _raises(TypeError, "seed", soft.SubspaceNet, 40, 10, 8, seed=1.5)
    model, x, y = subnet
    _raises(ValueError, "x", model, x[:, :20])
    _raises(ValueError, "z", model, x, torch.zeros(3))
    _raises(ValueError, "x", soft.ConvNet1D(40, 4, 10), x[:, :39])
    _raises(TypeError, "x", soft.ConvNet1D(40, 4, 10), x.tolist())


def test_compression_refuses_bad_levels_steps_and_symbols(subnet):
    model, x, y = subnet
    _raises(TypeError, "tune_steps", soft.compress_and_bound, model, x, y, [3], tune_steps=None)
    _raises(ValueError, "levels", soft.compress_and_bound, model, x, y, [])
    _raises(TypeError, "levels", soft.compress_and_bound, model, x, y, "abc")
    _raises(ValueError, "y", soft.compress_and_bound, model, x, y + 10, [3])
    _raises(ValueError, "symbols", soft.tune_centres, model, x, y, [-0.1, 0.1], [0, 1, 2])
    _raises(ValueError, "symbols", soft.tune_centres, model, x, y, [-0.1, 0.1], [0, 1] * 4 + [5])
    _raises(ValueError, "y", soft.train_subspace, model, x, y[:-1], 1, 0.1)
    _raises(TypeError, "batch_size", soft.train_subspace, model, x, y, 1, 0.1, batch_size=2.5)


# -- representative unclear cases: None, strings, lists where a tensor is needed, configs ---------
@pytest.mark.parametrize("fn,args,name", [
    (soft.legendre_features, ("abc", 5), "x"),
    (soft.fit_polynomial, ([0.1, 0.2], None, 1), "y"),
    (soft.fit_polynomial, ([0.1, 0.2], [1.0, 2.0], 1, "abc"), "penalty"),
    (soft.fit_soft_polynomial, ([0.1, 0.2], [1.0, 2.0], 1, [], [0.1], [1.0]), "gammas"),
    (soft.fit_soft_polynomial, ([0.1, 0.2], [1.0, 2.0], 1, [0.5], [0.1], [1.0]), "gammas"),
    (soft.effective_dimensionality, ("abc", 1.0), "eigs"),
    (soft.relu_features, (np.zeros((0, 3)), np.ones((3, 4)), np.zeros(4)), "x"),
    (soft.relu_features, (np.ones((2, 3)), np.ones((3, 4)), None), "b"),
    (soft.min_norm_lstsq, (None, np.ones(3)), "phi"),
    (soft.rf_target, (np.zeros((0, 3)),), "x"),
    (soft.rf_data, (soft.RFConfig(), None), "rng"),
    (soft.rf_data, ({}, np.random.default_rng(0)), "cfg"),
    (soft.run_polynomial, (None,), "cfg"),
    (soft.run_random_features, (soft.RFConfig(), 2 ** 64), "seed"),
    (soft.double_descent_summary, ([5, 10, 20], [1.0], 10), "mse"),
    (soft.double_descent_summary, (None, [1.0], 10), "ps"),
    (soft.masked_ensemble, ([4, 8], [0], 5, 3), "seeds"),
    (soft.masked_ensemble, ([], [], 5, 3), "widths"),
    (soft.width_peak_summary, ([4, 8], [[0.1, 0.2], [0.1, 0.2]]), "widths"),
    (soft.tail_trace, (None, np.eye(4)[:, :1]), "matvec"),
    (soft.tail_trace, (lambda v: v, np.zeros((0, 1))), "q"),
    (soft.elias_gamma, (0,), "n"),
])
def test_unclear_cases_now_name_the_argument(fn, args, name):
    _raises((TypeError, ValueError), name, fn, *args)


def test_runs_refuse_a_missing_dataset_or_one_too_small():
    small = _ds()
    _raises(TypeError, "ds", soft.run_gp_corruption, soft.GPConfig.quick(), None)
    _raises(ValueError, "n_train", soft.run_gp_corruption,
            soft.GPConfig(n_train=3000, n_test=5, corruptions=(0.0,),
                          lengthscale_factors=(1.0,)), small)
    _raises(ValueError, "n_train", soft.run_mlp_sweep, soft.MLPSweepConfig.quick(), small)
    _raises(TypeError, "ds", soft.run_mlp_sweep, soft.MLPSweepConfig.quick(), "ds")
    _raises(ValueError, "n_train", soft.run_compression, soft.CompressionConfig.quick(), small,
            "true")
    _raises(ValueError, "labels", soft.run_compression, soft.CompressionConfig.quick(), small,
            "bogus")
    _raises(TypeError, "channels", soft.run_compression, soft.CompressionConfig.quick(), small,
            "true", channels=2.5)


def test_member_at_width_refuses_a_width_beyond_the_members():
    model = soft.masked_ensemble([4, 8], [0, 1], 5, 3)
    _raises(ValueError, "width", soft.member_at_width, model, 0, 8)
    _raises(ValueError, "i", soft.member_at_width, model, 2, 4)
    assert soft.member_at_width(model, 1, 8).layers[0].out_features == 8


# -- inputs that stay accepted: they are meaningful -----------------------------------------------
def test_meaningful_edge_inputs_stay_accepted(subnet):
    # no symbols to decode, no penalty, no refit steps, lists for arrays
    assert soft.arithmetic_decode(soft.arithmetic_encode([], 3), 0, 3) == []
    assert np.all(soft.order_penalty(3, 1.5, 0.0) == 0)
    model, x, y = subnet
    c = soft.tune_centres(model, x, y, [-0.1, 0.0, 0.1], [0, 1, 2, 1, 0, 2, 1, 0], steps=0)
    assert np.allclose(c, [-0.1, 0.0, 0.1])
    assert soft.effective_dimensionality([1.0, 1.0, 0.0], 1.0) == pytest.approx(1.0)
    assert soft.interpolation_threshold([4, 8, 16], [0.3, 0.0, 0.0]) == 8
    assert soft.interpolation_threshold([4, 8], [0.3, 0.2]) is None
    assert soft.kl_inverse(0.3, 0.0) == pytest.approx(0.3)


def test_the_unchecked_training_path_is_the_checked_network_bitwise():
    # SubspaceNet's training loops skip the boundary checks (_forward, ConvNet1D._apply_params);
    # they compute what functional_call of the base network computes, values and gradients
    net = soft.SubspaceNet(40, 10, 16, channels=4, seed=3)
    with torch.no_grad():
        net.z.normal_(generator=torch.Generator().manual_seed(4))
    x = torch.randn(9, 40, generator=torch.Generator().manual_seed(5))
    theta = net.theta0 + net.proj @ net.z
    params = {n: t.view(s) for n, t, s in zip(net.names, torch.split(theta, net.sizes),
                                              net.shapes)}
    ref = torch.func.functional_call(net.base, params, (x,))
    out = net._forward(x)
    assert torch.equal(ref, out) and torch.equal(net(x), out)
    g_ref = torch.autograd.grad(ref.square().sum(), net.z)[0]
    assert torch.equal(g_ref, torch.autograd.grad(net._forward(x).square().sum(), net.z)[0])


@pytest.mark.parametrize("args, name", [
    (([4, 8, 16], np.zeros((3, 3))), "err_reps"),              # fewer than 4 replicates
    (([4, 8, 16], np.zeros((4, 2))), "err_reps"),              # one column short
    (([4, 8, 16], [[0.1, math.nan, 0.2]] * 4), "err_reps"),
    (([4, 8], np.zeros((4, 2))), "widths"),
    ((None, np.zeros((4, 3))), "widths"),
    (([4, 8, 16], np.zeros((4, 3)), -1.0), "threshold"),
    (([4, 8, 16], np.zeros((4, 3)), "16"), "threshold"),
])
def test_split_peak_test_refuses_bad_input(args, name):
    _raises((TypeError, ValueError), name, soft.split_peak_test, *args)


@pytest.mark.parametrize("target", [-0.1, 1.5, math.nan, None, "0.2", True])
def test_bits_at_fit_refuses_a_bad_target(target):
    _raises((TypeError, ValueError), "target", soft.bits_at_fit, [(3, 100, 0.5)], target)


def test_run_mlp_sweep_refuses_a_bad_check_period():
    for bad in (-1, 1.5, "10", None):
        _raises((TypeError, ValueError), "check_epochs", soft.MLPSweepConfig.quick,
                check_epochs=bad)
