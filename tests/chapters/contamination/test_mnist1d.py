"""Tests of gtlib.contamination.mnist1d, one section per public function."""

import pytest
import torch
from gtlib import contamination as fc
from tests.chapters.contamination.helpers import NAN, nan_at, refused


# =================================================================================================
# contamination.append_background
# =================================================================================================
def test_shift_last_and_append_background():
    g = torch.Generator().manual_seed(0)
    x = fc.append_background(torch.zeros(3, 2), 4, g)
    assert x.shape == (3, 6) and torch.all(x[:, 2:] >= 0)
    s = fc.shift_last(x, 4, 1.0)
    assert torch.equal(s[:, :2], x[:, :2]) and torch.allclose(s[:, 2:], x[:, 2:] - 1)


@pytest.mark.reference
@pytest.mark.parametrize("centred_mlp", [False, True])
def test_run_mnist1d_is_its_recipe(centred_mlp):
    from gtlib.data import mnist1d
    from gtlib.models import MLP
    from gtlib.train import TrainConfig, accuracy, train

    seed = 2
    # a large weight decay (AdamW: x0.85 per step) so that it changes the accuracies measurably
    cfg = fc.Mnist1dConfig(
        n_train=60,
        n_test=30,
        n_background=5,
        width=8,
        depth=1,
        epochs=3,
        batch_size=16,
        lr=0.05,
        weight_decay=3.0,
        magnitudes=(1.0, -0.5, 0.0),
        centred_mlp=centred_mlp,
        centred_linear=centred_mlp,
        constant=centred_mlp,
    )
    out = fc.run_mnist1d(cfg, seed=seed, device="cpu")
    ds = mnist1d(60, 30, device="cpu")
    g = torch.Generator().manual_seed(1000 * seed + 8)
    x_tr = fc.append_background(ds.x, 5, g)
    x_te = fc.append_background(ds.x_test, 5, g)
    models = [
        ("ReLU MLP", 1, 8, slice(None), 0, 0.0),
        ("linear", 0, 1, slice(None), 1, 0.0),
        ("background only", 0, 1, slice(40, None), 2, 0.0),
    ]
    if centred_mlp:
        models.append(("ReLU MLP, centred", 1, 8, slice(None), 0, 0.5))
        models.append(("linear, centred", 0, 1, slice(None), 1, 0.5))
        models.append(
            ("ReLU MLP, constant", 1, 8, slice(None), 0, None)
        )  # background = 1/2
        models.append(("linear, constant", 0, 1, slice(None), 1, None))
    assert set(out) == {"magnitudes", "chance"} | {m[0] for m in models}
    assert out["magnitudes"] == [1.0, -0.5, 0.0] and out["chance"] == pytest.approx(
        0.1
    )
    for name, depth, width, cols, i, offset in models:
        xtr = x_tr.clone()
        xte = x_te.clone()
        if offset is None:
            xtr[:, -5:] = 0.5
            xte[:, -5:] = 0.5
        else:
            xtr[:, -5:] -= offset
            xte[:, -5:] -= offset
        torch.manual_seed(1000 * seed + 80 + i)
        model = MLP(xtr[:, cols].shape[1], width, depth, 10)
        train(
            model,
            xtr[:, cols],
            ds.y,
            TrainConfig(
                optimizer="adamw",
                lr=0.05,
                weight_decay=3.0,
                batch_size=16,
                epochs=3,
                seed=1000 * seed + 90 + i,
                check_every=10**9,
            ),
        )
        with torch.no_grad():
            shift = []
            for m in (1.0, -0.5, 0.0):
                xs = xte.clone()
                xs[:, -5:] -= m
                shift.append(accuracy(model(xs[:, cols]), ds.y_test))
            assert out[name]["train"] == pytest.approx(
                accuracy(model(xtr[:, cols]), ds.y)
            )
            neg = xte.clone()
            neg[:, -5:] = -neg[:, -5:]
            assert out[name]["negated"] == pytest.approx(
                accuracy(model(neg[:, cols]), ds.y_test)
            )
        assert out[name]["shift"] == pytest.approx(shift), name
        assert (
            out[name]["ID"] == out[name]["shift"][2]
            and out[name]["OOD"] == out[name]["shift"][0]
        )


@pytest.mark.boundary
def test_mnist1d_helpers():
    x = torch.randn(30, 5)
    refused(ValueError, "x", fc.append_background, nan_at(x), 4, torch.Generator())
    refused(ValueError, "x", fc.append_background, x[:0], 4, torch.Generator())
    refused(TypeError, "x", fc.append_background, x.long(), 4, torch.Generator())
    refused(TypeError, "generator", fc.append_background, x, 4, None)
    refused(ValueError, "x", fc.shift_last, nan_at(x), 2, 1.0)
    refused(TypeError, "x", fc.shift_last, x.long(), 2, 1.0)
    refused(ValueError, "n_background", fc.shift_last, x, 50, 1.0)
    refused(ValueError, "magnitude", fc.shift_last, x, 2, NAN)


# =================================================================================================
# contamination.shift_last
# =================================================================================================
@pytest.mark.reference
def test_append_background_and_shift_last():
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    g = torch.Generator().manual_seed(9)
    out = fc.append_background(x, 2, g)
    u = torch.rand(2, 2, generator=torch.Generator().manual_seed(9))
    assert torch.equal(out, torch.cat([x, u], 1))
    s = fc.shift_last(out, 2, 0.3)
    assert torch.equal(s[:, :3], x) and torch.equal(s[:, 3:], u - 0.3)
    assert torch.equal(out[:, 3:], u)  # the input is not changed in place
    whole = fc.shift_last(x, 3, -2.0)
    assert torch.equal(whole, x + 2.0)
    assert torch.equal(fc.shift_last(x, 1, 1.5)[:, :2], x[:, :2])


# =================================================================================================
# contamination.run_mnist1d
# =================================================================================================
def test_mnist1d_constant_padding_and_centred_linear():
    cfg = fc.Mnist1dConfig(
        n_train=60,
        n_test=30,
        n_background=5,
        width=8,
        depth=1,
        epochs=2,
        batch_size=16,
        magnitudes=(0.0, 1.0),
        centred_linear=True,
        constant=True,
    )
    out = fc.run_mnist1d(cfg, seed=1, device="cpu")
    assert {"linear, centred", "ReLU MLP, constant", "linear, constant"} <= set(out)
    assert "ReLU MLP, centred" not in out
    for name in ("linear, centred", "ReLU MLP, constant", "linear, constant"):
        assert 0 <= out[name]["OOD"] <= 1 and len(out[name]["shift"]) == 2


@pytest.mark.reference
def test_mnist1d_null_replicates_are_their_recipe():
    from gtlib.data import mnist1d
    from gtlib.models import MLP
    from gtlib.train import TrainConfig, accuracy, train

    seed = 3
    cfg = fc.Mnist1dConfig(
        n_train=60,
        n_test=30,
        n_background=5,
        width=8,
        depth=1,
        epochs=2,
        batch_size=16,
        lr=0.05,
        magnitudes=(0.0, 1.0),
        null_replicates=2,
    )
    out = fc.run_mnist1d(cfg, seed=seed, device="cpu")
    reps = out["linear replicates"]
    assert len(reps) == 2 and "linear, centred" not in out
    ds = mnist1d(60, 30, device="cpu")
    for j, rep in enumerate(reps):
        g = torch.Generator().manual_seed(
            1000 * seed + 400 + j
        )  # its own background draw
        x_tr = fc.append_background(ds.x, 5, g)
        x_te = fc.append_background(ds.x_test, 5, g)
        for name, offset, extra in (
            ("uniform", 0.0, 0),
            ("centred", 0.5, 0),
            ("centred, again", 0.5, 400),
        ):
            xtr, xte = x_tr.clone(), x_te.clone()
            xtr[:, -5:] -= offset
            xte[:, -5:] -= offset
            torch.manual_seed(1000 * seed + 200 + j + extra)
            model = MLP(45, 1, 0, 10)
            train(
                model,
                xtr,
                ds.y,
                TrainConfig(
                    optimizer="adamw",
                    lr=0.05,
                    weight_decay=1e-2,
                    batch_size=16,
                    epochs=2,
                    seed=1000 * seed + 300 + j + extra,
                    check_every=10**9,
                ),
            )
            with torch.no_grad():
                shifted = xte.clone()
                shifted[:, -5:] -= 1.0
                assert rep[name]["ID"] == pytest.approx(
                    accuracy(model(xte), ds.y_test)
                )
                assert rep[name]["OOD"] == pytest.approx(
                    accuracy(model(shifted), ds.y_test)
                )
    assert reps[0]["centred"] != reps[1]["centred"]  # their own draws
    with pytest.raises(ValueError, match="null_replicates"):
        fc.Mnist1dConfig(null_replicates=101)
