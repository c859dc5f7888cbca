"""Tests for the mutants that survived a second, independent mutation test of gtlib (issue 19,
section 6; mutants and results in the issue's report). Each test checks one behaviour against a
reference the code cannot share a bug with: a hand computation, numpy/scipy, the mnist1d package
called directly, or a property any correct implementation has."""
import math

import numpy as np
import pytest
import torch
from scipy.spatial.distance import pdist

from gtlib.checks import Options, check_seeds
from gtlib.claims import evaluate_rule, reevaluate
from gtlib.config import read_seed, setup
from gtlib.connectivity import cosine_dissimilarity
from gtlib.contamination import binary_accuracy, label_correlations
from gtlib.contrastive import ContrastiveConfig, bias_schedule
from gtlib.data import Dataset, corrupt_labels, long_tail_indices, mnist1d
from gtlib.models import MLP, make_mlp
from gtlib.preliminaries import PrelimConfig, sample_signals, train_models
from gtlib.soft import kl_bernoulli, median_lengthscale, rbf_kernel, relu_features


# --- gtlib.models / data --------------------------------------------------------------------------
def test_make_mlp_is_torch_default_init_under_exactly_its_seed():
    """make_mlp(s) is the MLP torch builds right after torch.manual_seed(s)."""
    torch.manual_seed(11)
    ref = MLP(5, 7, 2, 3)
    got = make_mlp(11, 5, 7, 2, 3)
    for p, q in zip(got.parameters(), ref.parameters()):
        assert torch.equal(p, q)


def test_fully_corrupted_labels_are_uniform_over_every_class():
    """At fraction 1 the labels are uniform on all C classes: each of 10 classes gets about
    300 of 3000 (binomial sd about 16; 200 is more than 6 sd away)."""
    out = corrupt_labels(torch.zeros(3000, dtype=torch.int64), 1.0, 10, seed=0)
    counts = torch.bincount(out, minlength=10)
    assert len(counts) == 10 and int(counts.min()) > 200


def test_long_tail_subsample_is_random_within_each_class():
    """Different seeds keep different points of a class (not always its first n_k)."""
    y = torch.arange(400) % 4
    a, b = long_tail_indices(y, 10.0, 4, seed=0), long_tail_indices(y, 10.0, 4, seed=1)
    assert len(a) == len(b) and not torch.equal(a, b)
    first = torch.nonzero(y == 3).flatten()[:int((y[a] == 3).sum())]
    assert not torch.equal(a[y[a] == 3], first)


def test_mnist1d_gives_exactly_the_sizes_asked_when_not_a_multiple_of_ten(monkeypatch, tmp_path):
    monkeypatch.setenv("GTLIB_CACHE_DIR", str(tmp_path))
    ds = mnist1d(n_train=35, n_test=12, device="cpu")
    assert (ds.n, len(ds.y), len(ds.x_test), len(ds.y_test)) == (35, 35, 12, 12)


# --- gtlib.checks / claims / config ---------------------------------------------------------------
def test_check_seeds_refuses_an_empty_list():
    with pytest.raises(ValueError, match="seeds"):
        check_seeds("seeds", [])


@pytest.mark.parametrize("value", [True, 1.0])
def test_options_compare_types_not_only_values(value):
    """True == 1 and 1.0 == 1 in Python, but neither is the option 1."""
    with pytest.raises((TypeError, ValueError), match="k"):
        Options((1, 2)).check("k", value)


@pytest.mark.parametrize("x, expected", [(1, True), (-1, False)])
def test_conditional_expressions_evaluate_as_python_does(x, expected):
    rule = "(1 if x > 0 else 2) == 1"
    assert evaluate_rule(rule, {"x": x}) is eval(rule, {}, {"x": x}) is expected


def test_floor_division_in_rules():
    assert evaluate_rule("x // 2 == 3", {"x": 7}) is True


def test_a_false_sanity_rule_does_not_hold():
    assert reevaluate({"kind": "sanity", "rule": "x > 1", "values": {"x": 0}}) == (False, None)
    assert reevaluate({"kind": "sanity", "rule": "x > 1", "values": {"x": 2}}) == (True, None)


def test_an_empty_setting_means_its_default(monkeypatch):
    monkeypatch.setenv("GTLIB_SEED", "  ")
    assert read_seed() == 0


def test_setup_applies_the_thread_count(monkeypatch):
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        monkeypatch.setenv("GTLIB_THREADS", "1")
        setup()
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


# --- chapter modules ------------------------------------------------------------------------------
def test_cosine_dissimilarity_of_a_zero_and_a_nonzero_row_is_one():
    """Only two zero rows count as identical; a zero row against a non-zero one has cos 0."""
    u = torch.tensor([[0.0, 0.0], [1.0, 0.0]])
    v = torch.tensor([[1.0, 2.0], [1.0, 0.0]])
    assert cosine_dissimilarity(u, v) == pytest.approx(0.5)


def test_label_correlations_are_pearsons_on_unbalanced_labels():
    g = torch.Generator().manual_seed(0)
    f = torch.randn(9, 3, generator=g)
    y = torch.tensor([1.0, 1, 1, 1, 1, 1, 1, -1, -1])
    ref = [np.corrcoef(f[:, j].numpy(), y.numpy())[0, 1] for j in range(3)]
    np.testing.assert_allclose(label_correlations(f, y).numpy(), ref, rtol=1e-5, atol=1e-6)


def test_binary_accuracy_counts_a_zero_output_as_an_error():
    f, y = torch.tensor([0.0, 2.0, -1.0, 0.0]), torch.tensor([1.0, 1.0, -1.0, -1.0])
    assert float(binary_accuracy(f, y)) == pytest.approx(0.5)


def test_bias_schedule_by_hand():
    cfg = ContrastiveConfig.quick(bias_ramp=10, bias_max=0.3)
    assert [bias_schedule(s, cfg) for s in (0, 5, 10, 20)] == pytest.approx([0.0, 0.15, 0.3, 0.3])


def test_rbf_kernel_and_median_lengthscale_against_numpy_and_scipy():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(5, 3))
    d2 = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    got = rbf_kernel(torch.tensor(a), torch.tensor(b), lengthscale=1.7, variance=2.0).numpy()
    np.testing.assert_allclose(got, 2.0 * np.exp(-d2 / (2 * 1.7 ** 2)), rtol=1e-10)
    x = rng.normal(size=(7, 3))
    assert median_lengthscale(torch.tensor(x)) == pytest.approx(float(np.median(pdist(x))))


def test_kl_bernoulli_at_the_ends_by_hand():
    """0 log 0 = 0: kl(0 || p) = -ln(1 - p) and kl(1 || p) = -ln p."""
    assert kl_bernoulli(0.0, 0.3) == pytest.approx(-math.log(0.7))
    assert kl_bernoulli(1.0, 0.3) == pytest.approx(-math.log(0.3))


def test_relu_features_are_scaled_by_the_number_of_features():
    rng = np.random.default_rng(1)
    x, w, b = rng.normal(size=(6, 2)), rng.normal(size=(2, 9)), rng.normal(size=9)
    np.testing.assert_allclose(relu_features(x, w, b), np.maximum(x @ w + b, 0) / 3.0)


# --- gtlib.preliminaries --------------------------------------------------------------------------
def _tiny():
    g = torch.Generator().manual_seed(0)
    x, xt = torch.randn(20, 5, generator=g), torch.randn(15, 5, generator=g)
    y = torch.randint(3, (20,), generator=g)
    yt = (torch.arange(15) % 3)
    return Dataset(x=x, y=y, x_test=xt, y_test=yt, num_classes=3, name="tiny")


def test_train_models_steps_test_accuracy_and_seeds():
    ds = _tiny()
    cfg = PrelimConfig.quick(width=8, depth=1, seeds=2, epochs=2, batch_size=8)
    m0, out0 = train_models(ds, cfg, depth=1, seed=0)
    # minibatches of 8 from 20 points: ceil(20 / 8) = 3 steps per epoch, 2 epochs
    assert out0["history"].probes["stop_step"] == [6, 6]
    with torch.no_grad():
        ref = (m0(ds.x_test).argmax(-1) == ds.y_test).double().mean(-1).numpy()
    np.testing.assert_allclose(out0["test_acc"], ref)
    # runs with different seeds share no member: run 1's first member is not run 0's second
    m1, _ = train_models(ds, cfg, depth=1, seed=1)
    with torch.no_grad():
        assert not torch.allclose(m1(ds.x)[0], m0(ds.x)[1])


def test_sample_signals_is_mnist1d_transform_with_those_scales():
    from mnist1d.data import get_dataset_args, get_templates
    from mnist1d.transform import transform

    args = get_dataset_args()
    args.corr_noise_scale, args.iid_noise_scale, args.max_translation = 0.5, 0.0, 1
    t = get_templates()
    state = np.random.get_state()
    np.random.seed(3)
    ref = np.stack([transform(t["x"][k], t["t"], args)[0] for k in range(10)])
    np.random.set_state(state)
    got, _ = sample_signals(corr_noise_scale=0.5, iid_noise_scale=0.0, max_translation=0, seed=3)
    np.testing.assert_allclose(got, ref)


def test_sample_signals_leaves_numpys_global_generator_alone():
    np.random.seed(123)
    a = np.random.rand()
    np.random.seed(123)
    sample_signals(seed=5)
    assert np.random.rand() == a
