"""Tests of gtlib.connectivity.common, the argument checks the sections share, through every
public function (bad input refused, naming the argument), and of the package as a whole."""

from __future__ import annotations
import numpy as np
import pytest
import torch
from gtlib import connectivity as C
from gtlib.models import MLP
from tests.chapters.connectivity.helpers import (
    _stack,
    A,
    B,
    INF,
    NAN,
    RECIPE,
    X_bou,
    Y_bou,
)


def spawning(eb, fractions):
    eb = np.asarray(eb, dtype=float)
    return C.Spawning(
        list(range(len(fractions))), list(fractions), 10, {}, eb, eb * 0
    )


CFG = C.ConnectivityConfig(
    n_train=30,
    n_test=12,
    depth=1,
    widths=(4, 8),
    alphas=3,
    max_iter=2,
    recipe=RECIPE,
    spawn_width=8,
    spawn_fractions=(0.0, 0.5),
    spawn_pairs=1,
    spawn_recipe=RECIPE,
    ctl_width=8,
    probe_recipe=RECIPE,
    ft_recipe=RECIPE,
    lambdas=(0.0, 1.0),
    epoch_width=8,
    epoch_snapshots=(0, 1),
    depths=(1,),
    depth_width=8,
    bezier_width=8,
    bezier_recipe=RECIPE,
)


def _nan(t):
    t = t.clone()
    t.view(-1)[0] = NAN
    return t


def _neg(y):
    y = y.clone()
    y[0] = -1
    return y


# (call, error, the argument the message must name): every case returned silently before
SILENT = [
    (lambda: RECIPE.lr_at(True, 10), TypeError, "step"),
    (lambda: RECIPE.lr_at(2.5, 10), TypeError, "step"),
    (lambda: RECIPE.lr_at(11, 10), ValueError, "step"),
    (lambda: RECIPE.lr_factor(1, 0), ValueError, "total"),
    (lambda: RECIPE.lr_factor(1, -1), ValueError, "total"),
    (lambda: RECIPE.steps(0), ValueError, "n"),
    (lambda: RECIPE.steps(True), TypeError, "n"),
    (
        lambda: C.fit(_stack(), X_bou, Y_bou, RECIPE, [0, 1], stop_step=-1),
        ValueError,
        "stop_step",
    ),
    (
        lambda: C.fit(_stack(), X_bou, Y_bou, RECIPE, [0, 1], stop_step=2.5),
        TypeError,
        "stop_step",
    ),
    (
        lambda: C.fit(_stack(), X_bou, Y_bou, RECIPE, [0, 1], only_last_layer="yes"),
        TypeError,
        "only_last_layer",
    ),
    (
        lambda: C.fit(
            _stack(), X_bou, Y_bou, RECIPE, [0, 1], freeze_last_layer=None
        ),
        TypeError,
        "freeze_last_layer",
    ),
    (
        lambda: C.fit(
            _stack(), X_bou, Y_bou, RECIPE, [0, 1], snapshot_steps=[10**6]
        ),
        ValueError,
        "snapshot_steps",
    ),
    (lambda: C.lerp(A, B, "0.5"), TypeError, "alpha"),
    (lambda: C.evaluate_path(A, B, _nan(X_bou), Y_bou, 3), ValueError, "x"),
    (
        lambda: C.evaluate_stack(
            C.path_stack(A, B, [0, 1]), [0, 1], _nan(X_bou), Y_bou
        ),
        ValueError,
        "x",
    ),
    (
        lambda: C.Path(np.zeros(0), np.zeros(0), np.zeros(0)).error_barrier,
        ValueError,
        "alphas",
    ),
    (
        lambda: C.Path(np.array([0, 0.5, 1]), np.ones(3), np.array([NAN, 0.5, 0.9])),
        ValueError,
        "acc",
    ),
    (lambda: C.Path("abc", np.ones(3), np.ones(3)), TypeError, "alphas"),
    (lambda: C.Path(np.array([0, 0.5, 1]), None, np.ones(3)), TypeError, "loss"),
    (lambda: C.random_perms(A, 2**64), ValueError, "seed"),
    (lambda: C.random_perms(A, True), TypeError, "seed"),
    (lambda: C.weight_matching(A, B, seed=True), TypeError, "seed"),
    (lambda: C.cosine_dissimilarity(_nan(X_bou), X_bou), ValueError, "u"),
    (lambda: C.llfc_dissimilarity(A, B, X_bou[:0]), ValueError, "x"),
    (lambda: C.llfc_dissimilarity(A, B, X_bou, -0.1), ValueError, "alpha"),
    (lambda: C.llfc_dissimilarity(A, B, X_bou, 1.5), ValueError, "alpha"),
    (lambda: C.llfc_dissimilarity(A, B, X_bou, True), TypeError, "alpha"),
    (lambda: C.commutativity_residual(A, B, X_bou[:0]), ValueError, "x"),
    (lambda: C.endpoint_dissimilarity(A, B, X_bou[:0]), ValueError, "x"),
    (lambda: C.preactivations(A, _nan(X_bou)), ValueError, "x"),
    (lambda: C.preactivations(A, X_bou[0]), ValueError, "x"),
    (lambda: C.weak_additivity(A, B, _nan(X_bou)), ValueError, "x"),
    (lambda: C.repair_stack(A, B, [0, 0.5, 1], X_bou[0]), ValueError, "x"),
    (lambda: C.repair_stack(A, B, [0, 0.5, 1], X_bou[:1]), ValueError, "x"),
    (lambda: C.repair_stack(A, B, [0, 0.5, 1], X_bou, eps=0.0), ValueError, "eps"),
    (lambda: C.repair_stack(A, B, [0, 0.5, 1], X_bou, eps=NAN), ValueError, "eps"),
    (lambda: C.repair_path(A, B, X_bou[0], X_bou, Y_bou, 3), ValueError, "x_stats"),
    (lambda: C.bezier_stack(A, A, B, []), ValueError, "ts"),
    (lambda: C.bezier_stack(A, A, B, [NAN]), ValueError, "ts"),
    (lambda: C.fit_bezier(A, B, _nan(X_bou), Y_bou, RECIPE), ValueError, "x"),
    (lambda: C.fit_bezier(A, B, X_bou, Y_bou, RECIPE, seed=-1), ValueError, "seed"),
    (lambda: C.fit_bezier(A, B, X_bou, Y_bou, RECIPE, seed="0"), TypeError, "seed"),
    (lambda: C.evaluate_bezier(A, A, B, _nan(X_bou), Y_bou, 3), ValueError, "x"),
    (
        lambda: C.apply_task_vectors(A, [C.task_vector(A, B)], NAN, B),
        ValueError,
        "scale",
    ),
    (
        lambda: C.apply_task_vectors(A, [C.task_vector(A, B)], INF, B),
        ValueError,
        "scale",
    ),
    (
        lambda: C.with_head(A, _nan(torch.randn(4, 8)), torch.randn(4)),
        ValueError,
        "head_weight",
    ),
    (
        lambda: C.with_head(A, torch.randn(4, 8).long(), torch.randn(4)),
        TypeError,
        "head_weight",
    ),
    (
        lambda: C.with_head(A, torch.randn(4, 8), _nan(torch.randn(4))),
        ValueError,
        "head_bias",
    ),
    (lambda: C.with_head(A, torch.randn(4, 8), None), ValueError, "head_bias"),
    (lambda: C.accuracy(A, X_bou, torch.full_like(Y_bou, 99)), ValueError, "y"),
    (lambda: C.accuracy(A, X_bou, _neg(Y_bou)), ValueError, "y"),
    (lambda: C.accuracy(A, X_bou, Y_bou.float()), TypeError, "y"),
    (lambda: C.train_pairs(CFG, X_bou, torch.full_like(Y_bou, 99)), ValueError, "y"),
    (lambda: C.train_pairs(CFG, X_bou, Y_bou, seed=1.5), TypeError, "seed"),
    (lambda: C.align(A, B, _nan(X_bou), Y_bou, X_bou, Y_bou, 3, 2), ValueError, "x"),
    (
        lambda: C.align(A, B, X_bou, Y_bou, X_bou, Y_bou, 3, 2, seed=2**64),
        ValueError,
        "seed",
    ),
    (
        lambda: C.spawn_experiment(
            CFG, X_bou, torch.full_like(Y_bou, 99), X_bou, Y_bou
        ),
        ValueError,
        "y",
    ),
    (
        lambda: C.spawn_experiment(CFG, X_bou, Y_bou, X_bou, Y_bou, recipe={}),
        TypeError,
        "recipe",
    ),
    (
        lambda: C.spawn_experiment(CFG, X_bou, Y_bou, X_bou, Y_bou, control="yes"),
        TypeError,
        "control",
    ),
    (
        lambda: C.spawn_experiment(CFG, X_bou, Y_bou, X_bou, Y_bou, seed="0"),
        TypeError,
        "seed",
    ),
    (
        lambda: C.barrier_vs_epoch({0: [A, B]}, -1, X_bou, Y_bou, 3, 2),
        ValueError,
        "steps_per_epoch",
    ),
    (
        lambda: C.barrier_vs_epoch({0: [A, B]}, 2.5, X_bou, Y_bou, 3, 2),
        TypeError,
        "steps_per_epoch",
    ),
    (
        lambda: C.barrier_vs_epoch({0: [A, B]}, 3, _nan(X_bou), Y_bou, 3, 2),
        ValueError,
        "x",
    ),
    (lambda: C.depth_sweep(CFG, X_bou, torch.full_like(Y_bou, 99)), ValueError, "y"),
    (lambda: C.depth_sweep(CFG, X_bou, Y_bou, seed=True), TypeError, "seed"),
    (lambda: C.task_labels(_neg(Y_bou), 0), ValueError, "y"),
    (lambda: C.task_labels(torch.full_like(Y_bou, 12), "pretrain"), ValueError, "y"),
    (
        lambda: C.cross_task_experiment(CFG, X_bou, Y_bou, X_bou, _neg(Y_bou)),
        ValueError,
        "y_test",
    ),
    (
        lambda: C.cross_task_experiment(CFG, X_bou, Y_bou, X_bou, Y_bou, seed=1.5),
        TypeError,
        "seed",
    ),
    (
        lambda: C.cross_task_experiment(
            CFG, X_bou, Y_bou, X_bou, Y_bou, x_pre=X_bou
        ),
        ValueError,
        "y_pre",
    ),
    (
        lambda: C.spawn_experiment(CFG, X_bou, Y_bou, X_bou, Y_bou, unshared=1),
        TypeError,
        "unshared",
    ),
    (lambda: C.commutativity_bound_ratio(A, B, _nan(X_bou)), ValueError, "x"),
    (
        lambda: C.logit_interpolation(A, B, X_bou, torch.full_like(Y_bou, 99)),
        ValueError,
        "y",
    ),
    (
        lambda: C.logit_interpolation(A, B, X_bou, Y_bou, alphas=1),
        ValueError,
        "alphas",
    ),
    (lambda: C.disagreement_ratio(A, "B", X_bou), TypeError, "m2"),
    (lambda: C.disagreement_ratio(A, B, X_bou.long()), TypeError, "x"),
    (
        lambda: C.cross_task_experiment(CFG, X_bou, Y_bou, X_bou, Y_bou, sweep="ps"),
        TypeError,
        "sweep",
    ),
    (
        lambda: C.pretraining_sweep(CFG, X_bou, Y_bou, X_bou, _neg(Y_bou)),
        ValueError,
        "y_test",
    ),
    (
        lambda: C.pretraining_sweep(CFG, X_bou, Y_bou, X_bou, Y_bou, x_pre=X_bou),
        ValueError,
        "y_pre",
    ),
    (
        lambda: C.pretraining_sweep(CFG, X_bou, Y_bou, X_bou, Y_bou, seed=1.5),
        TypeError,
        "seed",
    ),
    (lambda: C.add_noise(A, True), TypeError, "scale"),
    (lambda: C.add_noise(A, 0.1, seed=-1), ValueError, "seed"),
    (
        lambda: C.planted_permutation_check(A, X_bou, Y_bou, noise=-0.5),
        ValueError,
        "noise",
    ),
    (
        lambda: C.planted_permutation_check(A, X_bou, Y_bou, noise=NAN),
        ValueError,
        "noise",
    ),
    (
        lambda: C.planted_permutation_check(A, X_bou, Y_bou, seed=2**64),
        ValueError,
        "seed",
    ),
    (lambda: C.llfc_profile(A, B, X_bou[:0], [0.0, 1.0]), ValueError, "x"),
    (lambda: C.llfc_profile(A, B, X_bou, []), ValueError, "alphas"),
    (
        lambda: C.from_params([torch.full((8, 5), NAN), torch.randn(3, 8)], None),
        ValueError,
        "weights",
    ),
]


# errors that came from inside torch, numpy or another gtlib function, not naming the argument
UNCLEAR = [
    (
        lambda: RECIPE.lr_factor(-1, 10),
        ValueError,
        "step",
    ),  # ZeroDivisionError before
    (lambda: C.from_params(None, None), TypeError, "weights"),
    (
        lambda: C.from_params([torch.randn(8, 5), torch.randn(3, 8)], []),
        ValueError,
        "biases",
    ),
    (
        lambda: C.from_params([torch.randn(8, 5), torch.randn(3, 7)], None),
        ValueError,
        "weights",
    ),
    (lambda: C.stack(None), TypeError, "models"),
    (lambda: C.members("net"), TypeError, "model"),
    (lambda: C.fit(_stack(), X_bou[:0], Y_bou, RECIPE, [0, 1]), ValueError, "x"),
    (lambda: C.fit(_stack(), X_bou.long(), Y_bou, RECIPE, [0, 1]), TypeError, "x"),
    (lambda: C.fit(_stack(), X_bou.double(), Y_bou, RECIPE, [0, 1]), TypeError, "x"),
    (
        lambda: C.fit(_stack(), X_bou, torch.full_like(Y_bou, 99), RECIPE, [0, 1]),
        ValueError,
        "y",
    ),
    (lambda: C.fit(_stack(), X_bou, Y_bou.float(), RECIPE, [0, 1]), TypeError, "y"),
    (lambda: C.fit(_stack(), X_bou, Y_bou, None, [0, 1]), TypeError, "recipe"),
    (lambda: C.fit(_stack(), X_bou, Y_bou, RECIPE, 3), TypeError, "seeds"),
    (
        lambda: C.fit(_stack(), X_bou, Y_bou, RECIPE, [0, 1], start_steps=[NAN, 0]),
        TypeError,
        "start_steps",
    ),
    (
        lambda: C.fit(_stack(), X_bou, Y_bou, RECIPE, [0, 1], snapshot_steps="a"),
        TypeError,
        "snapshot_steps",
    ),
    (
        lambda: C.train_nets([0, 1], X_bou, Y_bou, 8, 1, 0, RECIPE),
        ValueError,
        "num_classes",
    ),
    (lambda: C.train_nets([0, 1], X_bou, Y_bou, 8, 1, 2, RECIPE), ValueError, "y"),
    (lambda: C.path_stack(A, B, "abc"), TypeError, "alphas"),
    (lambda: C.barrier("abc", [0.1, 0.5, 0.2]), TypeError, "alphas"),
    (lambda: C.barrier_mean([0, 0.5, 1], "abc"), TypeError, "values"),
    (lambda: C.evaluate_path(A, B, X_bou, Y_bou[:-1], 3), ValueError, "y"),
    (lambda: C.evaluate_path(A, B, X_bou, Y_bou, True), TypeError, "alphas"),
    (lambda: C.evaluate_stack(None, [0, 1], X_bou, Y_bou), TypeError, "model"),
    (
        lambda: C.evaluate_stack(
            C.path_stack(A, B, [0, 1]), [0, 0.5, 1], X_bou, Y_bou
        ),
        ValueError,
        "alphas",
    ),
    (lambda: C.weight_matching(A, B, seed=-1), ValueError, "seed"),
    (lambda: C.perm_recovery(None, C.random_perms(A)), TypeError, "found"),
    (
        lambda: C.perm_recovery(C.random_perms(A), [np.zeros(8, int)]),
        ValueError,
        "planted",
    ),
    (lambda: C.permute(A, "abc"), TypeError, "perms"),
    (lambda: C.cosine_dissimilarity(X_bou.long(), X_bou.long()), TypeError, "u"),
    (lambda: C.weak_additivity(A, B, X_bou[0]), ValueError, "x"),
    (lambda: C.weak_additivity(A, B, X_bou[:, :3]), ValueError, "x"),
    (lambda: C.repair_stack(A, B, "abc", X_bou), TypeError, "alphas"),
    (lambda: C.repair_path(A, B, X_bou, X_bou, Y_bou.float(), 3), TypeError, "y"),
    (lambda: C.fit_bezier(A, B, X_bou, Y_bou[:-1], RECIPE), ValueError, "y"),
    (lambda: C.fit_bezier(A, B, X_bou, Y_bou, {}), TypeError, "recipe"),
    (lambda: C.evaluate_bezier(A, A, B, X_bou, Y_bou, 2.5), TypeError, "ts"),
    (lambda: C.task_vector(None, B), TypeError, "pretrained"),
    (lambda: C.task_vector(A, MLP(5, 9, 1, 3)), ValueError, "pretrained"),
    (lambda: C.apply_task_vectors(A, "ab", 0.5, B), TypeError, "vectors"),
    (
        lambda: C.apply_task_vectors(A, [[torch.zeros(2, 2)]], 0.5, B),
        ValueError,
        "vectors",
    ),
    (
        lambda: C.apply_task_vectors(A, [C.task_vector(A, B)], 0.5, None),
        TypeError,
        "head",
    ),
    (
        lambda: C.with_head(None, torch.randn(4, 8), torch.randn(4)),
        TypeError,
        "body",
    ),
    (
        lambda: C.with_head(A, torch.randn(4, 7), torch.randn(4)),
        ValueError,
        "head_weight",
    ),
    (
        lambda: C.with_head(A, torch.randn(4, 8), torch.randn(3)),
        ValueError,
        "head_bias",
    ),
    (lambda: C.accuracy(None, X_bou, Y_bou), TypeError, "model"),
    (lambda: C.train_pairs({}, X_bou, Y_bou), TypeError, "cfg"),
    (
        lambda: C.train_pairs(CFG, X_bou, Y_bou, snapshots=[1]),
        TypeError,
        "snapshots",
    ),
    (
        lambda: C.align(A, B, X_bou, Y_bou, X_bou[0], Y_bou, 3, 2),
        ValueError,
        "x_test",
    ),
    (
        lambda: C.align(A, B, X_bou, Y_bou, X_bou, Y_bou[:-1], 3, 2),
        ValueError,
        "y_test",
    ),
    (
        lambda: C.spawn_experiment(
            CFG, X_bou, Y_bou, X_bou, torch.full_like(Y_bou, 99)
        ),
        ValueError,
        "y_test",
    ),
    (
        lambda: C.spawn_experiment(CFG, X_bou[0], Y_bou, X_bou, Y_bou),
        ValueError,
        "x",
    ),
    (lambda: C.barrier_vs_epoch(None, 3, X_bou, Y_bou), TypeError, "snapshots"),
    (lambda: C.barrier_vs_epoch({0: [A]}, 3, X_bou, Y_bou), ValueError, "snapshots"),
    (
        lambda: C.barrier_vs_epoch({0: [A, B]}, 0, X_bou, Y_bou),
        ValueError,
        "steps_per_epoch",
    ),
    (
        lambda: C.cross_task_experiment(CFG, X_bou.long(), Y_bou, X_bou, Y_bou),
        TypeError,
        "x",
    ),
    (
        lambda: C.cross_task_experiment(CFG, X_bou, Y_bou, X_bou, Y_bou[:-1]),
        ValueError,
        "y_test",
    ),
    (lambda: C.add_noise(A, "0.1"), TypeError, "scale"),
    (lambda: C.add_noise(A, 0.1, seed=2**64), ValueError, "seed"),
    (lambda: C.planted_permutation_check(A, X_bou[:0], Y_bou), ValueError, "x"),
    (
        lambda: C.planted_permutation_check(A, X_bou, Y_bou, noise=None),
        TypeError,
        "noise",
    ),
    (lambda: C.llfc_profile(A, B, X_bou, [NAN]), ValueError, "alphas"),
    (lambda: C.llfc_profile(A, B, X_bou, [0.0, 1.5]), ValueError, "alphas"),
]


# =================================================================================================
# gtlib.connectivity as a whole
# =================================================================================================
@pytest.mark.reference
def test_spawning_first_stable_and_mean_by_hand():
    fr = [0.0, 0.1, 0.2, 0.3]
    s = spawning([[6.0, 4.0], [2.0, 2.0], [1.0, 2.0], [0.0, 1.0]], fr)
    np.testing.assert_allclose(s.mean_error_barrier, [5.0, 2.0, 1.5, 0.5])
    assert s.first_stable == 0.1  # a mean of exactly 2 points counts as stable
    assert spawning([[5.0], [1.0], [3.0], [1.0]], fr).first_stable == 0.3
    assert spawning([[5.0], [1.0], [1.0], [2.5]], fr).first_stable is None
    assert spawning([[1.0], [1.0], [1.0], [1.0]], fr).first_stable == 0.0


@pytest.mark.boundary
@pytest.mark.parametrize("call,error,name", SILENT + UNCLEAR)
def test_bad_input_is_refused_naming_the_argument(call, error, name):
    with pytest.raises(error, match=rf"\b{name}\b"):
        call()
