"""Tests of gtlib.contrastive.summaries, one section per public function."""

import numpy as np
import pytest
from gtlib import contrastive as C
from tests.chapters.contrastive.helpers import _hand_run, tiny_cfg


# =================================================================================================
# contrastive.condition_table
# =================================================================================================
@pytest.mark.reference
def test_condition_table_averages_feature_summary_and_probe_groups():
    cfg = tiny_cfg(
        neurons=8, probe_samples=30, specialist_ratio=1.4, strong_floor=0.3
    )
    run = _hand_run(cfg, [1.0, 4.0, 1.0, 4.0], [0.0, 0.5, 0.0, 0.5], [0, 0, 1, 1])
    tab = C.condition_table(run, seed=2)
    assert list(tab) == [(1.0, 0.0), (4.0, 0.5)]
    summ = C.feature_summary(run.W, run.M, 2, 1.4, 0.3)
    acc = C.feature_probe_accuracy(run, 2)
    for key, idx in (((1.0, 0.0), [0, 2]), ((4.0, 0.5), [1, 3])):
        row = tab[key]
        assert set(row) == set(summ) | {"probe_major", "probe_minor"}
        for k, v in summ.items():
            assert row[k] == pytest.approx(float(np.mean(v[idx])), rel=1e-6), k
        assert row["probe_major"] == pytest.approx(
            float(acc[idx][:, :3].mean()), rel=1e-6
        )
        assert row["probe_minor"] == pytest.approx(
            float(acc[idx][:, 3:].mean()), rel=1e-6
        )
    assert C.condition_table(run) == C.condition_table(run, seed=0)  # default seed 0
    assert C.condition_table(run, seed=1) != tab
    # the config's specialist settings are the ones used (defaults would differ here)
    dflt = C.feature_summary(run.W, run.M, 2)
    assert not all(
        np.allclose(dflt[k], summ[k])
        for k in ("spec_major", "spec_minor", "single_fraction", "strong_purity")
    )


# =================================================================================================
# contrastive.stage_curves
# =================================================================================================
@pytest.mark.reference
def test_stage_curves_average_the_chosen_models_by_hand():
    cfg = tiny_cfg()
    run = _hand_run(cfg, [1.0, 3.0, 1.0], [0.0, 0.0, 0.5], [0, 0, 0])
    steps = np.array([0, 10, 20, 30, 40])
    noise = np.array(
        [
            [4.0, 2.0, 9.0],
            [5.0, 3.0, 9.0],
            [2.0, 1.0, 9.0],
            [1.0, 0.5, 9.0],
            [1.0, 0.5, 9.0],
        ]
    )  # the mean noise peaks after step 0
    top = np.array(
        [
            [0.1, 0.3, 5.0],
            [0.5, 0.7, 5.0],
            [0.9, 0.9, 5.0],
            [1.0, 1.0, 0.0],
            [1.0, 1.0, 0.0],
        ]
    )
    ratio = np.array(
        [
            [1.0, 1.2, 7.0],
            [1.0, 1.4, 7.0],
            [2.0, 2.0, 7.0],
            [3.0, 2.4, 7.0],
            [4.0, 3.0, 0.5],
        ]
    )
    run.history = dict(step=steps, noise=noise, top=top, second=top / 2, ratio=ratio)
    c = C.stage_curves(run)
    np.testing.assert_allclose(c["noise"], [3.0, 4.0, 1.5, 0.75, 0.75])
    np.testing.assert_allclose(c["top"], [0.2, 0.6, 0.9, 1.0, 1.0])
    np.testing.assert_allclose(c["ratio"], [1.1, 1.2, 2.0, 2.7, 3.5])
    np.testing.assert_array_equal(c["step"], steps)
    # top mean reaches 0.9 * 1.0 at step 20; ratio mean reaches 0.9 * 3.5 = 3.15 at step 40
    assert (c["t1"], c["t2"]) == (20, 40)
    assert c["noise_at_t1_rel"] == pytest.approx(1.5 / 3.0)
    assert c["ratio_init_max"] == 1.2 and c["ratio_final_min"] == 3.0
    p = C.stage_curves(run, fraction=0.5)  # the single pruned model
    np.testing.assert_allclose(p["top"], top[:, 2])
    assert (p["t1"], p["t2"]) == (0, 0) and p["noise_at_t1_rel"] == 1.0
    assert p["ratio_init_max"] == 7.0 and p["ratio_final_min"] == 0.5
    with pytest.raises(ValueError, match="pruning fraction"):
        C.stage_curves(run, fraction=0.25)
