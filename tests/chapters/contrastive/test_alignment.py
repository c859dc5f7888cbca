"""Tests of _alignment, one section per public function."""

import math
import numpy as np
import pytest
import torch
from dataclasses import replace
from gtlib import contrastive as C
from tests.chapters.contrastive.helpers import _alignment_reference, DT, rng
from gtlib.contrastive.alignment import _alignment


def _strong_reference(W, M, ratio, floor):
    a = _alignment_reference(W, M)
    K = M.shape[1]
    out = np.zeros(W.shape[:-2] + (K,))
    for idx in np.ndindex(*W.shape[:-2]):
        biggest = a["top"][idx].max()
        for r in range(W.shape[-2]):
            if a["ratio"][idx][r] >= ratio and a["top"][idx][r] >= floor * biggest:
                out[idx + (a["dominant"][idx][r],)] += 1
    return out


def _feature_summary_reference(W, M, n_min, sr, fl):
    a = _alignment_reference(W, M)
    K = M.shape[1]
    E, m = W.shape[:2]
    counts = _strong_reference(W, M, sr, fl)
    out = {
        k: []
        for k in (
            "best_major",
            "best_minor",
            "spec_major",
            "spec_minor",
            "energy",
            "single_fraction",
            "strong_purity",
            "mean_purity",
            "purity_strong",
            "purity_weak",
            "strong_share",
            "median_ratio",
            "noise",
        )
    }
    e_k = ((W.numpy() @ M.numpy()) ** 2).sum(-2)
    for e in range(E):
        best = a["proj"][e].max(0)
        out["best_major"].append(best[: K - n_min].mean())
        out["best_minor"].append(best[K - n_min :].mean())
        out["spec_major"].append(counts[e, : K - n_min].mean())
        out["spec_minor"].append(counts[e, K - n_min :].mean())
        out["energy"].append(e_k[e, K - n_min :].mean() / e_k[e, : K - n_min].mean())
        out["single_fraction"].append(np.mean(a["ratio"][e] >= sr))
        big = a["top"][e] >= fl * a["top"][e].max()
        out["strong_purity"].append(
            np.sum(big & (a["ratio"][e] >= sr)) / np.sum(big)
        )
        pur = a["proj"][e].max(1) ** 2 / (a["proj"][e] ** 2).sum(1)
        out["mean_purity"].append(np.mean(pur))
        out["purity_strong"].append(pur[big].mean())
        out["purity_weak"].append(pur[~big].mean() if (~big).any() else 0.0)
        out["strong_share"].append(np.mean(big))
        out["median_ratio"].append(
            np.sort(a["ratio"][e])[(m - 1) // 2]
        )  # torch: lower median
        out["noise"].append(a["noise"][e].mean())
    return {k: np.array(v) for k, v in out.items()}


# =================================================================================================
# _alignment
# =================================================================================================
def test_alignment_recovers_known_neurons():
    M = C.feature_dictionary(10, 4, seed=0)
    noise_dir = torch.linalg.qr(torch.cat([M, torch.randn(10, 1)], 1))[0][:, 4]
    W = torch.stack(
        [
            3 * M[:, 2] + 0.5 * M[:, 0] + 0.2 * noise_dir,  # specialist of feature 2
            M[:, 1] + M[:, 3],
        ]
    )  # an even mixture
    a = _alignment(W, M)
    assert a["dominant"][0] == 2
    assert torch.allclose(
        a["proj"][0], torch.tensor([0.5, 0.0, 3.0, 0.0]), atol=1e-5
    )
    assert math.isclose(float(a["noise"][0]), 0.2, rel_tol=1e-4)
    assert math.isclose(float(a["ratio"][0]), 6.0, rel_tol=1e-4)
    assert math.isclose(float(a["purity"][0]), 9 / 9.25, rel_tol=1e-4)
    assert math.isclose(float(a["ratio"][1]), 1.0, rel_tol=1e-4)
    s = C.feature_summary(W[None], M, n_minority=2)
    assert s["single_fraction"][0] == 0.5
    assert (
        s["spec_major"][0] == 0.0 and s["spec_minor"][0] == 0.5
    )  # feature 2 is a minority one
    with pytest.raises(ValueError, match="last dimension"):
        _alignment(W[:, :5], M)


@pytest.mark.reference
def test_alignment_negative_coefficients_and_zero_second():
    M = torch.eye(3, dtype=DT)
    W = torch.tensor([[-3.0, 1.0, 0.0], [0.0, 0.0, 2.0]], dtype=DT)
    a = _alignment(W, M)
    assert a["proj"].tolist() == [[3.0, 1.0, 0.0], [0.0, 0.0, 2.0]]
    assert a["dominant"].tolist() == [0, 2] and a["top"].tolist() == [3.0, 2.0]
    assert a["ratio"][0] == 3.0 and a["ratio"][1] == 2.0 / 1e-30  # clamped, not inf
    assert a["purity"].tolist() == pytest.approx([0.9, 1.0])
    assert a["noise"].tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="two features"):
        _alignment(W, M[:, :1])


# =================================================================================================
# contrastive.strong_specialists
# =================================================================================================
def test_strong_specialists_need_a_magnitude_floor():
    M = torch.eye(4)
    W = torch.tensor(
        [
            [4.0, 0.5, 0.0, 0.0],  # strong specialist of feature 0
            [0.0, 0.0, 2.0, 0.1],  # strong specialist of feature 2 (2 >= 0.25 * 4)
            [0.0, 0.0, 0.0, 0.3],  # pure but tiny: top 0.3 < 0.25 * 4
            [1.5, 1.5, 0.0, 0.0],
        ]
    )  # strong but mixed (ratio 1)
    counts = C.strong_specialists(W, M, ratio=2.0, floor=0.25)
    assert counts.tolist() == [1.0, 0.0, 1.0, 0.0]
    assert C.strong_specialists(W, M, ratio=2.0, floor=0.0).tolist() == [
        1.0,
        0.0,
        1.0,
        1.0,
    ]
    batched = C.strong_specialists(torch.stack([W, 2 * W]), M)
    assert torch.equal(batched[0], batched[1])  # invariant to a common scale
    s = C.feature_summary(W[None], M, n_minority=2)
    assert s["spec_major"][0] == 0.5 and s["spec_minor"][0] == 0.5
    assert math.isclose(
        s["strong_purity"][0], 2 / 3, rel_tol=1e-6
    )  # 3 strong neurons, 1 of them mixed
    purities = [
        16 / 16.25,
        4 / 4.01,
        1.0,
        0.5,
    ]  # top^2 / sum of squares, every neuron
    assert math.isclose(s["mean_purity"][0], sum(purities) / 4, rel_tol=1e-5)
    # strong: the first, second and fourth neuron; weak: the tiny pure one
    strong = (purities[0] + purities[1] + purities[3]) / 3
    assert math.isclose(s["purity_strong"][0], strong, rel_tol=1e-5)
    assert math.isclose(s["purity_weak"][0], 1.0, rel_tol=1e-6)
    assert s["strong_share"][0] == 0.75  # 3 of the 4 neurons are strong
    mix = s["strong_share"][0] * strong + (1 - s["strong_share"][0]) * 1.0
    assert math.isclose(s["mean_purity"][0], mix, rel_tol=1e-5)
    none_weak = C.feature_summary(W[None], M, n_minority=2, strong_floor=0.0)
    assert none_weak["purity_weak"][0] == 0.0  # no weak neurons: 0, not nan
    assert none_weak["strong_share"][0] == 1.0
    with pytest.raises(ValueError, match="floor"):
        C.strong_specialists(W, M, floor=1.5)
    with pytest.raises(ValueError, match="ratio"):
        C.strong_specialists(W, M, ratio=0.5)


@pytest.mark.reference
def test_strong_specialists_exactly_at_both_thresholds():
    M = torch.eye(4, dtype=DT)
    W = torch.tensor(
        [
            [4.0, 0.5, 0.0, 0.0],  # biggest; ratio 8
            [0.0, 0.5, 1.0, 0.0],  # ratio exactly 2, top exactly 0.25 * 4: counted
            [0.0, 0.0, 0.99, 0.5],  # ratio 1.98: not a specialist
            [0.0, 0.0, 0.0, 0.96],  # pure, but 0.96 < 1: below the floor
            [0.0, 3.0, 0.0, -1.0],
        ],
        dtype=DT,
    )  # ratio 3
    assert C.strong_specialists(W, M, 2.0, 0.25).tolist() == [1.0, 1.0, 1.0, 0.0]
    assert C.strong_specialists(W, M, 2.0, 0.24).tolist() == [1.0, 1.0, 1.0, 1.0]
    assert C.strong_specialists(W, M, 2.5, 0.25).tolist() == [1.0, 1.0, 0.0, 0.0]
    assert C.strong_specialists(W, M, 1.5, 0.25).tolist() == [1.0, 1.0, 1.0, 0.0]
    assert C.strong_specialists(W, M, 1.5, 0.24).tolist() == [1.0, 1.0, 2.0, 1.0]
    assert C.strong_specialists(W, M).tolist() == [
        1.0,
        1.0,
        1.0,
        0.0,
    ]  # defaults 2.0, 0.25


@pytest.mark.reference
def test_strong_specialists_floor_is_per_model_against_a_loop():
    M = C.feature_dictionary(6, 4, seed=4).double()
    W = torch.randn(3, 8, 6, generator=rng(1), dtype=DT)
    W[1] *= (
        0.1  # a model whose neurons are all small: its own largest sets its floor
    )
    W[2, 0] = 5 * M[:, 1]
    for ratio, floor in ((1.2, 0.3), (1.5, 0.1), (1.0, 0.0)):
        got = C.strong_specialists(W, M, ratio, floor)
        np.testing.assert_array_equal(
            got.numpy(), _strong_reference(W, M, ratio, floor)
        )
    assert (
        float(C.strong_specialists(W, M, 1.0, 0.0).sum(-1).max()) == 8
    )  # all neurons count


# =================================================================================================
# contrastive.energy_ratio
# =================================================================================================
def test_energy_ratio_closed_form_and_scale_invariance():
    M = C.feature_dictionary(6, 4, seed=1)
    W = torch.stack([3 * M[:, 0], 1 * M[:, 1] + 2 * M[:, 3], 1 * M[:, 2]])
    # majority energy per feature (9 + 1) / 2 = 5, minority (1 + 4) / 2 = 2.5
    assert math.isclose(float(C.energy_ratio(W, M, 2)), 0.5, rel_tol=1e-5)
    E = C.energy_ratio(torch.stack([W, 7 * W]), M, 2)
    assert E.shape == (2,) and torch.allclose(E[0], E[1])
    noise_dir = torch.linalg.qr(torch.cat([M, torch.randn(6, 1)], 1))[0][:, 4]
    assert torch.allclose(C.energy_ratio(W + 5 * noise_dir, M, 2), E[0], atol=1e-5)
    with pytest.raises(ValueError, match="n_minority"):
        C.energy_ratio(W, M, 4)


@pytest.mark.reference
def test_energy_ratio_against_numpy_with_unequal_groups():
    M = C.feature_dictionary(8, 5, seed=6).double()
    W = torch.randn(3, 4, 8, generator=rng(2), dtype=DT)
    got = C.energy_ratio(W, M, 2)
    e = ((W.numpy() @ M.numpy()) ** 2).sum(-2)  # (E, K)
    ref = e[:, 3:].mean(-1) / e[:, :3].mean(-1)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12)
    # hand: majority features 0, 1 with energies 4 and 0 (mean 2); minority feature 2: 9 + 1
    Mi = torch.eye(3, dtype=DT)
    Wi = torch.tensor([[2.0, 0.0, 3.0], [0.0, 0.0, -1.0]], dtype=DT)
    assert float(C.energy_ratio(Wi, Mi, 1)) == pytest.approx(10 / 2)
    assert float(C.energy_ratio(Wi, Mi, 2)) == pytest.approx(
        5 / 4
    )  # minority 1, 2: (0 + 10) / 2
    with pytest.raises(ValueError, match="n_minority"):
        C.energy_ratio(Wi, Mi, 3)


# =================================================================================================
# contrastive.learning_margin
# =================================================================================================
def test_learning_margin_matches_the_formula():
    cfg = C.ContrastiveConfig.quick()
    mu = C.learning_margin(cfg, 10.0)
    p_min = cfg.base_freq / 10
    assert math.isclose(mu, cfg.n_signal**2 * p_min / (cfg.tau * cfg.weight_decay))
    assert math.isclose(
        C.learning_margin(cfg, 2.0) / C.learning_margin(cfg, 4.0), 2.0
    )
    with pytest.raises(ValueError, match="ratio"):
        C.learning_margin(cfg, 0.5)
    with pytest.raises(ValueError, match="weight_decay"):
        C.learning_margin(replace(cfg, weight_decay=0.0), 2.0)


@pytest.mark.reference
def test_quick_and_full_constants_are_the_ones_the_chapter_states():
    """The chapter's scale table and margin derivation: quick d=48, K=12 (6 minority), 4 tokens,
    144 neurons, 1200 steps of 128, mu = 10/kappa, beta L / L_s = 0.6; full d=128, K=32 (16
    minority), 8 tokens, 256 neurons, 4000 steps of 512, mu = 9/kappa, beta L / L_s = 0.8."""
    q, f = C.ContrastiveConfig.quick(), C.ContrastiveConfig.full()
    assert (
        q.dim,
        q.n_features,
        q.n_minority,
        q.n_tokens,
        q.neurons,
        q.steps,
        q.batch,
    ) == (48, 12, 6, 4, 144, 1200, 128)
    assert (
        f.dim,
        f.n_features,
        f.n_minority,
        f.n_tokens,
        f.neurons,
        f.steps,
        f.batch,
    ) == (128, 32, 16, 8, 256, 4000, 512)
    for cfg, num in ((q, 10.0), (f, 9.0)):
        for kappa in (1.0, 3.0, 5.0, 10.0):
            assert C.learning_margin(cfg, kappa) == pytest.approx(
                num / kappa, rel=1e-12
            )
    assert q.bias_max * q.n_tokens / q.n_signal == pytest.approx(0.6)
    assert f.bias_max * f.n_tokens / f.n_signal == pytest.approx(0.8)
    assert q.ratios == f.ratios == (1.0, 2.0, 3.0, 4.0, 5.0)
    assert (q.replicates, f.replicates, q.edge_replicates, f.edge_replicates) == (
        6,
        6,
        3,
        3,
    )
    assert (q.bias_ramp, f.bias_ramp) == (600, 2000)
    assert (q.probe_samples, f.probe_samples) == (1200, 4000)
    # the documented defaults of the rest
    assert (q.noise, q.init_scale, q.lr, q.prune_fraction, q.prune_every) == (
        1.0,
        0.1,
        0.1,
        0.5,
        50,
    )
    assert (q.specialist_ratio, q.strong_floor, q.log_every) == (2.0, 0.25, 50)


@pytest.mark.reference
def test_learning_margin_each_constant_enters_once():
    cfg = C.ContrastiveConfig.quick(
        n_tokens=5, n_signal=3, base_freq=0.2, tau=1.6, weight_decay=0.05
    )
    # 3^2 * (0.2 / 4) / (1.6 * 0.05) = 0.45 / 0.08 = 5.625
    assert C.learning_margin(cfg, 4.0) == pytest.approx(5.625, rel=1e-12)
    assert C.learning_margin(replace(cfg, n_signal=2), 4.0) == pytest.approx(
        2.5, rel=1e-12
    )
    assert C.learning_margin(cfg, 1.0) == pytest.approx(22.5, rel=1e-12)
    with pytest.raises(ValueError, match="weight_decay"):
        C.learning_margin(replace(cfg, weight_decay=0.0), 4.0)


# =================================================================================================
# contrastive.feature_summary
# =================================================================================================
@pytest.mark.reference
def test_feature_summary_by_hand_with_a_ratio_exactly_at_the_threshold():
    M = torch.eye(4, dtype=DT)  # feature 3 is the minority one
    W = torch.tensor(
        [
            [
                [4.0, 2.0, 0.0, 0.0],  # ratio exactly 2: a specialist (>=)
                [0.0, 3.0, 0.0, 1.0],  # ratio 3
                [1.0, 1.0, 0.0, 0.0],  # ratio 1, top exactly at the floor 0.25 * 4
                [0.0, 0.0, 0.0, 2.0],  # a minority specialist
                [0.0, 0.0, 0.5, 0.0],
            ]
        ],
        dtype=DT,
    )  # pure but below the floor
    s = C.feature_summary(W, M, 1, 2.0, 0.25)
    assert s["single_fraction"][0] == pytest.approx(4 / 5)
    assert s["strong_purity"][0] == pytest.approx(
        3 / 4
    )  # 4 strong neurons, 3 of them pure
    assert s["spec_major"][0] == pytest.approx(2 / 3) and s["spec_minor"][0] == 1.0
    assert (
        s["best_major"][0] == pytest.approx((4 + 3 + 0.5) / 3)
        and s["best_minor"][0] == 2.0
    )
    assert s["energy"][0] == pytest.approx(5 / ((17 + 14 + 0.25) / 3))
    assert s["median_ratio"][0] == 3.0 and s["noise"][0] == 0.0


@pytest.mark.reference
@pytest.mark.parametrize("m", [7, 8])
def test_feature_summary_against_a_per_model_loop(m):
    M = C.feature_dictionary(9, 5, seed=8).double()
    W = torch.randn(2, m, 9, generator=rng(m), dtype=DT)
    W[0, :3] += (
        3 * M[:, [0, 3, 4]].T
    )  # some specialists, of a majority and two minority features
    W[1, 0] += 4 * M[:, 1]
    for n_min, sr, fl in ((2, 1.3, 0.2), (1, 1.6, 0.45)):
        got = C.feature_summary(W, M, n_min, sr, fl)
        ref = _feature_summary_reference(W, M, n_min, sr, fl)
        assert set(got) == set(ref)
        for k, v in ref.items():
            assert isinstance(got[k], np.ndarray) and got[k].shape == (2,), k
            np.testing.assert_allclose(
                got[k], v, rtol=1e-6, err_msg=f"{k} {n_min} {sr} {fl}"
            )
    d = C.feature_summary(
        W, M, 2
    )  # defaults specialist_ratio 2.0, strong_floor 0.25
    for k, v in _feature_summary_reference(W, M, 2, 2.0, 0.25).items():
        np.testing.assert_allclose(d[k], v, rtol=1e-6, err_msg=k)
    with pytest.raises(ValueError, match="n_minority"):
        C.feature_summary(W, M, 5)


# -- masked_energy_share -------------------------------------------------------------------------
def test_masked_energy_share_by_hand():
    M = torch.eye(4, dtype=DT)[:, :3]  # features e0, e1, e2; minority: e2
    W = torch.tensor(
        [
            [0.0, 0.0, 1.0, 0.0],  # small neuron, all minority: masked
            [3.0, 0.0, 2.0, 0.0],  # large neuron, minority energy 4
            [0.0, 5.0, 0.0, 1.0],
        ],
        dtype=DT,
    )
    share = C.masked_energy_share(W, M, 1, 1 / 3)
    assert float(share) == pytest.approx(1 / 5)
    both = C.masked_energy_share(torch.stack([W, W]), M, 1, 0.0)
    assert both.tolist() == [0.0, 0.0]


def test_masked_energy_share_rejects_bad_arguments():
    M = torch.eye(4, dtype=DT)[:, :3]
    W = torch.ones(3, 4, dtype=DT)
    with pytest.raises(ValueError, match="n_minority"):
        C.masked_energy_share(W, M, 3, 0.5)
    with pytest.raises((ValueError, TypeError), match="fraction"):
        C.masked_energy_share(W, M, 1, 1.5)


# -- masked_majority_share -----------------------------------------------------------------------
def test_masked_majority_share_by_hand():
    M = torch.eye(4, dtype=DT)[:, :3]  # features e0, e1, e2; minority: e2
    W = torch.tensor(
        [
            [0.0, 0.0, 1.0, 0.0],  # smallest, minority-dominant: masked
            [0.5, 0.0, 0.0, 1.0],  # small, majority-dominant: masked
            [3.0, 0.0, 2.0, 0.0],  # kept, majority-dominant
            [0.0, 1.0, 4.0, 0.0],  # kept, minority-dominant
        ],
        dtype=DT,
    )
    assert C.masked_majority_share(W, M, 1, 0.5).tolist() == [0.5, 0.5]
    both = C.masked_majority_share(torch.stack([W, W[[1, 0, 3, 2]]]), M, 1, 0.25)
    assert both.tolist() == [[0.0, 2 / 3], [0.0, 2 / 3]]  # the order does not matter
    with pytest.raises(ValueError, match="fraction"):
        C.masked_majority_share(W, M, 1, 0.0)
    with pytest.raises(ValueError, match="n_minority"):
        C.masked_majority_share(W, M, 3, 0.5)


# -- union_purity_gap ----------------------------------------------------------------------------
def test_union_purity_gap_by_hand():
    M = torch.eye(3, dtype=DT)[:, :2]  # features e0, e1
    ref = torch.tensor(
        [[[4.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.1, 0.1, 0.0]]], dtype=DT
    )  # strong: neurons 0 and 1 (purity 1, 1); neuron 2 weak
    mixed = torch.tensor(
        [[[4.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.0, 1.5, 0.0]]], dtype=DT
    )  # neuron 1 mixes and drops below the floor; neuron 2 becomes strong
    # the union {0, 1, 2}: purities (1, 1, 0.5) against (1, 0.5, 1)
    gap = C.union_purity_gap(ref, mixed, M, floor=0.25)
    assert gap.shape == (1,)
    assert gap[0] == pytest.approx((0.0 + 0.5 - 0.5) / 3)
    # a re-selected strong set would drop neuron 1 and hide its mixing; the union keeps it
    alone = C.union_purity_gap(ref[:, :2], mixed[:, :2], M, floor=0.25)
    assert alone[0] == pytest.approx(0.25)
    assert C.union_purity_gap(ref, ref, M).tolist() == [0.0]


def test_union_purity_gap_rejects_bad_arguments():
    M = torch.eye(3, dtype=DT)[:, :2]
    W = torch.ones(2, 4, 3, dtype=DT)
    with pytest.raises(ValueError, match="W_ref's shape"):
        C.union_purity_gap(W, W[:, :3], M)
    with pytest.raises((ValueError, TypeError), match="floor"):
        C.union_purity_gap(W, W, M, floor=1.5)
    with pytest.raises((ValueError, TypeError), match="W_ref"):
        C.union_purity_gap(W[0], W, M)


def test_union_purity_gap_splits_opposite_shifts_by_group():
    M = torch.eye(3, dtype=DT)  # features e0, e1 (majority), e2 (minority)
    ref = torch.tensor([[[2.0, 1.0, 0.0], [0.0, 0.0, 2.0]]], dtype=DT)
    new = torch.tensor([[[2.0, 0.0, 0.0], [0.0, 1.0, 2.0]]], dtype=DT)
    # the majority neuron purifies (0.8 -> 1), the minority one mixes (1 -> 0.8)
    assert C.union_purity_gap(ref, new, M).tolist() == pytest.approx([0.0])
    major = C.union_purity_gap(ref, new, M, n_minority=1, group="majority")
    minor = C.union_purity_gap(ref, new, M, n_minority=1, group="minority")
    assert major.tolist() == pytest.approx([-0.2])
    assert minor.tolist() == pytest.approx([0.2])
    with pytest.raises(ValueError, match="n_minority"):
        C.union_purity_gap(ref, new, M, group="minority")
    with pytest.raises((ValueError, TypeError), match="group"):
        C.union_purity_gap(ref, new, M, n_minority=1, group="rare")
