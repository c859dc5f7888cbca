"""Tests of gtlib.contamination.training, one section per public function."""

import math
import numpy as np
import pytest
import torch
from gtlib import contamination as fc
from tests.chapters.contamination.helpers import (
    _double_emb,
    _np_forward,
    NAN,
    nan_at,
    np_loss,
    refused,
)


def _sk_probe(h_train, y_train, evals, max_iter):
    from sklearn.linear_model import LogisticRegression

    H = h_train.double().numpy()
    mu, sd = H.mean(0), H.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    clf = LogisticRegression(max_iter=max_iter).fit((H - mu) / sd, y_train.numpy())
    return [
        float(np.mean(clf.predict((h.double().numpy() - mu) / sd) == y.numpy()))
        for h, y in evals
    ]


# =================================================================================================
# contamination.train_two_layer
# =================================================================================================
@pytest.mark.boundary
def test_train_two_layer(emb_bou, toy):
    specs = [fc.NetSpec(act="relu"), fc.NetSpec(act="tanh")]
    net = fc.init_two_layer(["relu", "tanh"], 10, 6, [0, 1])
    W0 = net.W.detach().clone()
    refused(
        ValueError,
        "x",
        fc.train_two_layer,
        net,
        specs,
        nan_at(toy.x),
        toy.y,
        2,
        emb_bou,
    )
    refused(
        ValueError,
        "y",
        fc.train_two_layer,
        net,
        specs,
        toy.x,
        nan_at(toy.y),
        2,
        emb_bou,
    )
    refused(
        TypeError,
        "x",
        fc.train_two_layer,
        net,
        specs,
        toy.x.long(),
        toy.y,
        2,
        emb_bou,
    )
    refused(
        TypeError, "specs", fc.train_two_layer, net, None, toy.x, toy.y, 2, emb_bou
    )
    refused(
        TypeError, "specs", fc.train_two_layer, net, "ab", toy.x, toy.y, 2, emb_bou
    )
    refused(
        ValueError,
        "steps",
        fc.train_two_layer,
        net,
        specs,
        toy.x,
        toy.y,
        -1,
        emb_bou,
    )
    refused(
        ValueError,
        "record_every",
        fc.train_two_layer,
        net,
        specs,
        toy.x,
        toy.y,
        2,
        emb_bou,
        record_every=0,
    )
    for shift in (NAN, math.inf):
        refused(
            ValueError,
            "shift",
            fc.train_two_layer,
            net,
            specs,
            toy.x,
            toy.y,
            2,
            emb_bou,
            shift=shift,
        )
    refused(
        TypeError,
        "shift",
        fc.train_two_layer,
        net,
        specs,
        toy.x,
        toy.y,
        2,
        emb_bou,
        shift=None,
    )
    refused(
        ValueError,
        "x_test",
        fc.train_two_layer,
        net,
        specs,
        toy.x,
        toy.y,
        2,
        emb_bou,
        nan_at(toy.x),
        toy.y,
    )
    refused(
        ValueError,
        "y_test",
        fc.train_two_layer,
        net,
        specs,
        toy.x,
        toy.y,
        2,
        emb_bou,
        toy.x,
        toy.y[:0],
    )
    refused(
        ValueError,
        "y_test",
        fc.train_two_layer,
        net,
        specs,
        toy.x,
        toy.y,
        2,
        emb_bou,
        toy.x,
    )
    assert torch.equal(net.W, W0)  # nothing trained on bad input
    # steps=0 is valid: the history holds the initial record only
    assert fc.train_two_layer(net, specs, toy.x, toy.y, 0, emb_bou).step == [0]


# =================================================================================================
# contamination.shift_sweep
# =================================================================================================
@pytest.mark.reference
def test_shift_sweep_against_numpy():
    emb32 = fc.random_embedding(2, 3, 6, seed=4)
    d = fc.sample_toy(7, emb32, seed=5)
    emb = _double_emb(emb32)
    x, y = d.x.double(), d.y.double()
    specs = [
        fc.NetSpec(act="relu", loss="logistic"),
        fc.NetSpec(act="tanh", loss="hinge"),
        fc.NetSpec(act="relu", loss="hinge"),
    ]
    net = fc.init_two_layer(
        [s.act for s in specs], 6, 4, [3, 1, 7], frozen_output=False, bias=True
    ).double()
    mags = np.array([-0.5, 0.0, 1.25])
    out = fc.shift_sweep(net, specs, x, y, emb, mags)
    assert out["loss"].shape == (3, 3) and out["margins"].shape == (3, 3, 7)
    np.testing.assert_array_equal(out["magnitude"], mags)
    W, b, a, c = (getattr(net, k).detach().numpy() for k in ("W", "b", "a", "c"))
    B = emb.background.double().numpy()
    for i, m in enumerate(mags):
        f = _np_forward(W, net.acts, a, b, c, x.numpy() - m * B.sum(1))[2]
        yn = y.numpy()
        np.testing.assert_allclose(out["margins"][i], yn * f, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(out["acc"][i], (yn * f > 0).mean(-1))
        np.testing.assert_allclose(
            out["loss"][i],
            [np_loss(s.loss, f[e], yn) for e, s in enumerate(specs)],
            rtol=1e-10,
        )
    assert fc.shift_sweep(net, specs, x, y, emb, [0.3])["acc"].shape == (1, 3)
    with pytest.raises(ValueError, match="magnitudes"):
        fc.shift_sweep(net, specs, x, y, emb, [])


@pytest.mark.boundary
def test_shift_sweep_and_linear_probe(emb_bou, toy, nets):
    specs = [fc.NetSpec(act="relu"), fc.NetSpec(act="tanh")]
    sweep = fc.shift_sweep(nets, specs, toy.x, toy.y, emb_bou, np.array([0.0, 1.0]))
    assert sweep["loss"].shape == (2, 2)
    refused(
        ValueError, "specs", fc.shift_sweep, nets, [], toy.x, toy.y, emb_bou, [0.0]
    )
    refused(
        ValueError,
        "specs",
        fc.shift_sweep,
        nets,
        specs[:1],
        toy.x,
        toy.y,
        emb_bou,
        [0.0],
    )
    refused(
        TypeError, "net", fc.shift_sweep, "net", specs, toy.x, toy.y, emb_bou, [0.0]
    )
    refused(
        ValueError,
        "x",
        fc.shift_sweep,
        nets,
        specs,
        nan_at(toy.x),
        toy.y,
        emb_bou,
        [0.0],
    )
    refused(
        TypeError,
        "x",
        fc.shift_sweep,
        nets,
        specs,
        toy.x.long(),
        toy.y,
        emb_bou,
        [0.0],
    )
    refused(
        ValueError,
        "y",
        fc.shift_sweep,
        nets,
        specs,
        toy.x,
        nan_at(toy.y),
        emb_bou,
        [0.0],
    )
    refused(
        ValueError,
        r"magnitudes\[0\]",
        fc.shift_sweep,
        nets,
        specs,
        toy.x,
        toy.y,
        emb_bou,
        [NAN],
    )
    refused(
        ValueError,
        r"magnitudes\[1\]",
        fc.shift_sweep,
        nets,
        specs,
        toy.x,
        toy.y,
        emb_bou,
        np.array([0.0, np.inf]),
    )
    refused(
        TypeError,
        "magnitudes",
        fc.shift_sweep,
        nets,
        specs,
        toy.x,
        toy.y,
        emb_bou,
        None,
    )
    refused(
        ValueError,
        "magnitudes",
        fc.shift_sweep,
        nets,
        specs,
        toy.x,
        toy.y,
        emb_bou,
        [],
    )
    ev = [(toy.x, toy.y)]
    refused(TypeError, "h_train", fc.linear_probe, toy.x.long(), toy.y, ev)
    refused(ValueError, "h_train", fc.linear_probe, nan_at(toy.x), toy.y, ev)
    refused(ValueError, "y_train", fc.linear_probe, toy.x, nan_at(toy.y), ev)
    refused(ValueError, "evaluations", fc.linear_probe, toy.x, toy.y, [])
    refused(TypeError, "evaluations", fc.linear_probe, toy.x, toy.y, "abc")
    refused(
        ValueError,
        "evaluations",
        fc.linear_probe,
        toy.x,
        toy.y,
        [(toy.x[:, :3], toy.y)],
    )


# =================================================================================================
# contamination.linear_probe
# =================================================================================================
@pytest.mark.reference
def test_linear_probe_is_standardized_logistic_regression():
    import warnings

    rng = np.random.default_rng(3)
    n = 31
    y = np.where(rng.random(n) < 0.35, -1.0, 1.0)
    # one informative feature on a tiny scale and two large noise features: standardization matters
    H = np.stack(
        [
            1e-3 * (y + 0.8 * rng.normal(size=n)),
            50 * rng.normal(size=n),
            200 + 30 * rng.normal(size=n),
        ],
        1,
    )
    yt = np.where(rng.random(40) < 0.6, -1.0, 1.0)
    Ht = np.stack(
        [
            1e-3 * (yt + 0.8 * rng.normal(size=40)),
            50 * rng.normal(size=40),
            200 + 30 * rng.normal(size=40),
        ],
        1,
    )
    T = lambda a: torch.tensor(a, dtype=torch.float32)  # noqa: E731
    evals = [(T(Ht), T(yt)), (T(H), T(y))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = fc.linear_probe(T(H), T(y), evals)
        want = _sk_probe(T(H), T(y), evals, 3000)
        assert got == pytest.approx(want, abs=1e-12)
        assert got[1] > 0.8
        short = fc.linear_probe(T(H), T(y), evals, max_iter=1)
        assert short == pytest.approx(_sk_probe(T(H), T(y), evals, 1), abs=1e-12)


@pytest.mark.reference
def test_linear_probe_max_iter_is_passed_on():
    from unittest import mock

    import sklearn.linear_model as lm

    seen = []
    real = lm.LogisticRegression

    def spy(*args, **kwargs):
        seen.append(kwargs.get("max_iter"))
        return real(*args, **kwargs)

    h = torch.tensor([[0.0, 1.0], [1.0, 0.5], [2.0, -1.0], [3.0, 0.0]])
    y = torch.tensor([-1.0, -1.0, 1.0, 1.0])
    with mock.patch.object(lm, "LogisticRegression", spy):
        assert fc.linear_probe(h, y, [(h, y)], max_iter=17) == [1.0]
        fc.linear_probe(h, y, [(h, y)])
    assert seen == [17, 3000]
