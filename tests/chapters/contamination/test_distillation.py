"""Tests of gtlib.contamination.distillation, one section per public function."""

import numpy as np
import pytest
import torch
from dataclasses import replace
from gtlib import contamination as fc
from tests.oracles import contamination_loops as ref
from tests.chapters.contamination.helpers import ATOL, RTOL


# =================================================================================================
# contamination.run_distillation
# =================================================================================================
def test_gate_free_distillation_student():
    base = fc.DistillConfig(
        n=40,
        n_test=20,
        d_core=3,
        d_background=2,
        dim=8,
        width=6,
        teacher_steps=3,
        student_steps=4,
        record_every=2,
    )
    hid = fc.run_distillation(base, seed=0, device="cpu")
    pre = fc.run_distillation(
        replace(base, target="preactivation"), seed=0, device="cpu"
    )
    # same teacher (its probe and accuracy), different student fits
    assert (
        pre.probe_teacher == hid.probe_teacher and pre.teacher_acc == hid.teacher_acc
    )
    assert pre.curve_id[0] == pytest.approx(hid.curve_id[0])  # same initialization
    assert pre.probe_initial == hid.probe_initial  # the same never-distilled student
    assert pre.curve_id[-1] != hid.curve_id[-1]
    with pytest.raises((ValueError, TypeError), match="target"):
        replace(base, target="logits")


@pytest.mark.reference
def test_zeroed_student_starts_with_no_weight_along_e():
    base = fc.DistillConfig(
        n=40,
        n_test=20,
        d_core=3,
        d_background=4,
        dim=10,
        width=6,
        teacher_steps=3,
        student_steps=4,
        record_every=2,
        target="preactivation",
    )
    plain = fc.run_distillation(base, seed=2, device="cpu")
    both = fc.run_distillation(
        replace(base, zeroed_student=True), seed=2, device="cpu"
    )
    assert plain.zeroed == {}
    for key in (
        "probe_student",
        "probe_teacher",
        "curve_id",
        "student_background_mean",
    ):
        assert getattr(both, key) == getattr(plain, key), (
            key
        )  # the main student is untouched
    z = both.zeroed
    assert set(z) == {
        "probe_initial_OOD",
        "error_id",
        "probe_ID",
        "probe_OOD",
        "background_mean",
    }
    # zero steps: the zeroed student keeps its initialization, with nothing along e
    none = fc.run_distillation(
        replace(base, zeroed_student=True, student_steps=1, lr=1e-12),
        seed=2,
        device="cpu",
    )
    assert none.zeroed["background_mean"] == pytest.approx(0.0, abs=1e-6)
    assert both.zeroed["background_mean"] > 1e-4  # distillation grows it
    with pytest.raises((ValueError, TypeError), match="zeroed_student"):
        replace(base, zeroed_student="yes")


@pytest.mark.reference
def test_distillation_longer_steps_continue_the_same_run():
    base = fc.DistillConfig(
        n=40,
        n_test=20,
        d_core=3,
        d_background=2,
        dim=8,
        width=6,
        teacher_steps=3,
        student_steps=4,
        record_every=2,
    )
    short = fc.run_distillation(base, seed=1, device="cpu")
    both = fc.run_distillation(replace(base, longer_steps=3), seed=1, device="cpu")
    whole = fc.run_distillation(replace(base, student_steps=7), seed=1, device="cpu")
    assert short.longer == {}
    # the measurements at student_steps are those of the short run, untouched by the extra steps
    for key in (
        "probe_student",
        "error_id",
        "curve_id",
        "student_background_norm",
        "student_background_mean",
    ):
        assert getattr(both, key) == getattr(short, key), key
    # the continued run is the 7-step run: same optimizer state carried over
    assert both.longer["steps"] == 7
    assert both.longer["probe_ID"] == pytest.approx(whole.probe_student["ID"])
    assert both.longer["probe_OOD"] == pytest.approx(whole.probe_student["OOD"])
    assert both.longer["error_id"] == pytest.approx(whole.error_id, rel=1e-5)
    assert both.longer["background_mean"] == pytest.approx(
        whole.student_background_mean[1], rel=1e-5
    )
    with pytest.raises(ValueError, match="longer_steps"):
        replace(base, longer_steps=-1)


@pytest.mark.reference
def test_remaining_defaults_shift_one_and_seed_zero():
    emb = fc.random_embedding(2, 2, 5, seed=0)
    d, t = fc.sample_toy(5, emb, seed=0), fc.sample_toy(5, emb, seed=1)
    runs = []
    for kw in ({}, {"shift": 1.0}, {"shift": 0.5}):
        net = fc.init_two_layer(
            ["relu", "tanh"], 5, 2, [0, 1], frozen_output=False, bias=True
        )
        h = fc.train_two_layer(
            net,
            [fc.NetSpec(), fc.NetSpec(act="tanh", loss="logistic")],
            d.x,
            d.y,
            2,
            emb,
            t.x,
            t.y,
            record_every=1,
            **kw,
        )
        runs.append(h.array("ood_loss"))
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.allclose(runs[0], runs[2])
    dcfg = fc.DefaultConfig(
        n=4,
        d_core=1,
        d_background=2,
        dim=4,
        width=2,
        steps=1,
        replicates=1,
        record_every=1,
    )
    a, b = (
        fc.run_default(dcfg, device="cpu"),
        fc.run_default(dcfg, seed=0, device="cpu"),
    )
    assert torch.equal(a.train.x, b.train.x) and torch.equal(a.net.W, b.net.W)
    assert not torch.equal(
        fc.run_default(dcfg, seed=1, device="cpu").train.x, a.train.x
    )
    scfg = fc.DistillConfig(
        n=6,
        n_test=4,
        d_core=1,
        d_background=2,
        dim=4,
        width=2,
        teacher_steps=1,
        student_steps=1,
        record_every=1,
    )
    assert (
        fc.run_distillation(scfg, device="cpu").to_dict()
        == fc.run_distillation(scfg, seed=0, device="cpu").to_dict()
    )


@pytest.mark.engine
def test_run_distillation_matches_the_old_loops():
    # the teacher (AdamW on the core coordinates) and the student (AdamW on W and b, MSE to the
    # teacher's representation, recorded every 10 steps); the student's target comes from the
    # teacher, so the float32 difference of the teacher's AdamW carries into every curve
    cfg = fc.DistillConfig(
        n=41,
        n_test=21,
        d_core=3,
        d_background=2,
        dim=8,
        width=6,
        teacher_steps=30,
        student_steps=25,
        record_every=10,
        lr=1e-2,
    )
    old = ref.old_run_distillation(cfg, seed=0, device="cpu").to_dict()
    new = fc.run_distillation(cfg, seed=0, device="cpu").to_dict()
    assert new["curve_step"] == old["curve_step"] == [0, 10, 20, 25]
    assert new["curve_id"][-1] < new["curve_id"][0]  # the student learned
    assert set(new) == set(old)
    assert set(new["probe_initial"]) == {
        "ID",
        "OOD",
    }  # the never-distilled student is new
    for key in set(old) - {"probe_initial"}:
        if isinstance(old[key], dict):
            assert new[key] == old[key], (
                key
            )  # accuracies on 20 points: no prediction flips
        else:
            torch.testing.assert_close(
                torch.tensor(new[key], dtype=torch.float64),
                torch.tensor(old[key], dtype=torch.float64),
                rtol=RTOL,
                atol=ATOL,
            )
