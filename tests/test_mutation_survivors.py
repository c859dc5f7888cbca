"""Tests written for the mutants that survived an independent mutation test of gtlib (issue 19,
section 6; the mutants and results are in the issue's report). Each test checks one behaviour the
book's numbers depend on against a reference the library cannot share a bug with: torch.optim run
member by member, torch.randperm drawn by hand, a hand computation, numpy, or a symmetry."""
import math
import random
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from gtlib.checks import Interval, check_seed
from gtlib.claims import evaluate_rule
from gtlib.config import Config, param, preset, seed_everything, setup
from gtlib.connectivity import llfc_dissimilarity
from gtlib.data import Dataset
from gtlib.engine import StackedOptimizer, StreamBatches
from gtlib.models import BatchedMLP, make_mlp
from gtlib.train import TrainConfig, check_data, stop_reason, train_ensemble, train_sequentially
from gtlib.uniform import bartlett_bound, neyshabur_bound, power_law_fit


# --- gtlib.engine ---------------------------------------------------------------------------------
def test_members_of_one_group_keep_their_own_learning_rates():
    """Members with the same optimizer settings but different learning rates (one group inside the
    optimizer) each follow torch.optim with their own lr, also when some of them are frozen."""
    E, lrs = 3, [0.1, 0.02, 0.3]
    g = torch.Generator().manual_seed(0)
    for kind in ("sgd", "adam"):
        p = torch.randn(E, 4, generator=g, dtype=torch.float64).requires_grad_()
        ref = [p.detach()[e].clone().requires_grad_() for e in range(E)]
        opt = StackedOptimizer([p], kind, lrs, momentum=0.5 if kind == "sgd" else 0.0,
                               members=E)
        refs = [torch.optim.SGD([q], lr=lr, momentum=0.5) if kind == "sgd"
                else torch.optim.Adam([q], lr=lr) for q, lr in zip(ref, lrs)]
        for t in range(6):
            grad = torch.randn(E, 4, generator=g, dtype=torch.float64)
            active = None if t % 2 == 0 else torch.tensor([False, True, True])
            opt.step([grad], active)
            for e in range(E):
                if active is None or bool(active[e]):
                    ref[e].grad = grad[e].clone()
                    refs[e].step()
        for e in range(E):
            torch.testing.assert_close(p.detach()[e], ref[e].detach(), rtol=1e-12, atol=1e-14)


def test_stream_batches_drop_only_a_short_remainder():
    """With drop_remainder, a remainder of exactly batch_size indices is a batch, not dropped."""
    s = StreamBatches([4], 2, [7], drop_remainder=True)
    got = torch.cat([next(s)[0] for _ in range(3)])
    g = torch.Generator().manual_seed(7)
    p1, p2 = torch.randperm(4, generator=g), torch.randperm(4, generator=g)
    assert torch.equal(got, torch.cat([p1, p2[:2]]))


# --- gtlib.train ----------------------------------------------------------------------------------
def test_target_accuracy_is_met_at_exactly_the_target():
    """The rule is 'accuracy >= target': 2 of 4 rows right meets a target of 0.5 (by hand)."""
    logits = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]])
    y = torch.tensor([0, 1, 1, 1])  # rows 0 and 1 right, rows 2 and 3 wrong
    assert stop_reason(logits, y, TrainConfig(target_train_acc=0.5)) == "target_train_acc"
    assert stop_reason(logits, y, TrainConfig(target_train_acc=0.75)) is None


def test_check_data_refuses_labels_on_another_device():
    """x and y on different devices are refused by name (the meta device stands in for a GPU)."""
    x = torch.zeros(3, 2)
    with pytest.raises(ValueError, match="same device"):
        check_data(x, torch.zeros(3, dtype=torch.int64, device="meta"))


# --- gtlib.models, gtlib.train---------------------------------------------------------------------
def test_default_minibatch_seeds_are_cfg_seed_plus_member_index():
    """Without ``seeds``, member i draws its minibatches from seed ``cfg.seed + i``: the plain
    PyTorch loop (train_sequentially, torch.optim) run with those seeds gives the same nets."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(40, 5, generator=g, dtype=torch.float64)
    y = torch.randint(3, (40,), generator=g)
    cfg = TrainConfig(lr=0.1, momentum=0.5, batch_size=8, epochs=2, check_every=100, seed=5)
    b = BatchedMLP.init([5, 6], 5, 7, 1, 3).double()
    train_ensemble(b, x, y, cfg)
    ref = train_sequentially([5, 6], x, y, cfg, 5, 7, 1, 3)
    with torch.no_grad():
        for i, m in enumerate(ref):
            torch.testing.assert_close(b(x)[i], m(x), rtol=0, atol=1e-10)


# --- gtlib.data -----------------------------------------------------------------------------------
def test_subset_keeps_each_row_with_its_own_label():
    """``subset`` picks rows of x and y together: here each row's label is written in the row."""
    y = torch.tensor([0, 1, 2, 1, 0, 2], dtype=torch.int64)
    x = torch.stack([y.double(), torch.arange(6.0, dtype=torch.float64)], 1)
    ds = Dataset(x=x, y=y, x_test=x[:2], y_test=y[:2], num_classes=3)
    sub = ds.subset([4, 1, 5, 2])
    assert sub.x[:, 1].tolist() == [4.0, 1.0, 5.0, 2.0]
    assert sub.y.tolist() == sub.x[:, 0].long().tolist() == [0, 1, 2, 2]


# --- gtlib.checks and gtlib.config ----------------------------------------------------------------
def test_seeds_stop_where_torch_generators_stop():
    """Every seed check_seed accepts can seed a torch.Generator, and the first it refuses is the
    first torch refuses (2**63 - 1 is the largest value of torch's int64 seed)."""
    top = check_seed("seed", 2**63 - 1)
    torch.Generator().manual_seed(top)
    with pytest.raises(ValueError, match="seed"):
        check_seed("seed", 2**63)
    with pytest.raises(ValueError, match="seed"):
        seed_everything(2**63)


@dataclass
class _Toy(Config):
    """A config with a `full` preset, for the preset tests."""

    FULL = {"a": 5, "b": 0.5}
    a: int = param(1, Interval(int, 1))
    b: float = param(0.1, Interval(float, 0, 1))


def test_overrides_win_over_the_full_preset():
    """preset(cls, "full", **kw): defaults, then FULL, then the caller's overrides (by hand)."""
    assert (_Toy.full().a, _Toy.full().b) == (5, 0.5)
    c = preset(_Toy, "full", a=7)
    assert (c.a, c.b) == (7, 0.5)
    assert (_Toy.full(b=0.2).a, _Toy.full(b=0.2).b) == (5, 0.2)
    assert preset(_Toy, "quick", a=3).a == 3


def test_setup_seeds_with_the_base_seed_plus_the_offset(monkeypatch):
    """setup(k) under GTLIB_SEED=s draws what a generator seeded with s + k draws."""
    monkeypatch.setenv("GTLIB_SEED", "2")
    monkeypatch.setenv("GTLIB_THREADS", "1")
    threads, states = torch.get_num_threads(), (random.getstate(), np.random.get_state())
    try:
        with torch.random.fork_rng(devices=[]):  # leave the other tests' global streams alone
            setup(3)
            got = torch.rand(4)
    finally:
        torch.set_num_threads(threads)
        random.setstate(states[0])
        np.random.set_state(states[1])
    assert torch.equal(got, torch.rand(4, generator=torch.Generator().manual_seed(5)))


# --- gtlib.claims ---------------------------------------------------------------------------------
RULES = ["x <= y", "x < y", "x >= y", "x > y", "x == y", "x != y", "0 < x < y", "x <= y <= 1",
         "x < y <= x + 1", "not x <= y", "x <= 1 and y >= 1", "x < 1 or y <= 0"]


@pytest.mark.parametrize("rule", RULES)
def test_comparisons_evaluate_as_python_does(rule):
    """The rule evaluator agrees with Python's own evaluation on every pair of small numbers,
    ties and chained comparisons included."""
    for x in (0, 1, 2):
        for y in (0, 1, 2):
            want = eval(rule, {"__builtins__": {}}, {"x": x, "y": y})  # the reference: Python
            assert evaluate_rule(rule, {"x": x, "y": y}) is want, (rule, x, y)


# --- gtlib.connectivity (functions that are not training loops) -----------------------------------
def test_llfc_weights_alpha_on_b_and_one_minus_alpha_on_a():
    """At alpha = 0 (1) the interpolated net is a (b), so its features are a's (b's) exactly and
    every layer's LLFC dissimilarity is 0; with identity activations the first hidden layer is
    linear in the weights, so it is 0 at every alpha."""
    x = torch.randn(30, 4, generator=torch.Generator().manual_seed(0))
    a, b = make_mlp(0, 4, 6, 2, 3), make_mlp(1, 4, 6, 2, 3)
    for alpha in (0.0, 1.0):
        assert max(llfc_dissimilarity(a, b, x, alpha)) < 1e-6
    a, b = make_mlp(0, 4, 6, 2, 3, act="identity"), make_mlp(1, 4, 6, 2, 3, act="identity")
    for alpha in (0.1, 0.3, 0.8):
        assert llfc_dissimilarity(a, b, x, alpha)[0] < 1e-6


# --- gtlib.uniform (functions that are not training loops) ----------------------------------------
def test_power_law_slope_standard_error_is_scipys():
    """The OLS slope and its standard error (k - 2 degrees of freedom) equal scipy's linregress
    on log y against log x."""
    stats = pytest.importorskip("scipy.stats")
    g = np.random.default_rng(0)
    for k in (3, 5, 12):
        x = np.geomspace(10, 1000, k)
        y = 2.0 * x ** -0.4 * np.exp(0.1 * g.standard_normal(k))
        fit, ref = power_law_fit(x, y), stats.linregress(np.log(x), np.log(y))
        assert fit.slope == pytest.approx(ref.slope, rel=1e-10)
        assert fit.intercept == pytest.approx(ref.intercept, rel=1e-10)
        assert fit.slope_se == pytest.approx(ref.stderr, rel=1e-10)


def test_norm_bounds_on_diagonal_matrices_by_hand():
    """Both complexity terms on matrices whose norms are read off by hand: W1 = diag(3, 1),
    W2 = [[2, 0]], initialization 0 (spectral norms 3 and 2, Frobenius^2 10 and 4, row-norm sums
    4 and 2), L = 2 layers, largest width h = 2."""
    w = [torch.tensor([[3.0, 0.0], [0.0, 1.0]], dtype=torch.float64),
         torch.tensor([[2.0, 0.0]], dtype=torch.float64)]
    w0 = [torch.zeros_like(t) for t in w]
    B, gamma, n = 1.5, 0.5, 10
    ney = math.sqrt(B ** 2 * 2 ** 2 * 2 * math.log(2 * 2) * (3 * 2) ** 2 * (10 / 9 + 4 / 4)
                    / (gamma ** 2 * n))
    assert neyshabur_bound(w, w0, B, gamma, n) == pytest.approx(ney, rel=1e-12)
    bart = B * (3 * 2) * ((4 / 3) ** (2 / 3) + (2 / 2) ** (2 / 3)) ** 1.5 / (gamma * n)
    assert bartlett_bound(w, w0, B, gamma, n) == pytest.approx(bart, rel=1e-12)
