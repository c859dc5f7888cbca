import pytest
import torch

from gtlib.models import MLP, activation


def test_shapes_and_features():
    m = MLP(40, 16, 3, 10)
    x = torch.randn(5, 40)
    feats = m.features(x)
    assert [f.shape for f in feats] == [(5, 16)] * 3 + [(5, 10)]
    assert torch.allclose(feats[-1], m(x))
    assert m.depth == 3


def test_linear_model_and_no_bias():
    m = MLP(4, 8, 0, 3, bias=False)
    assert len(m.layers) == 1 and m.layers[0].bias is None
    x = torch.randn(2, 4)
    assert torch.allclose(m(x), x @ m.layers[0].weight.T)


def test_identity_activation_is_linear():
    m = MLP(3, 5, 2, 2, activation="identity")
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    assert torch.allclose(m(x + y) + m(torch.zeros(1, 3)), m(x) + m(y), atol=1e-5)


@pytest.mark.parametrize("kw,err,match", [({"width": 0}, ValueError, "width"),
                                          ({"depth": -1}, ValueError, "depth"),
                                          ({"in_dim": 2.0}, TypeError, "in_dim"),
                                          ({"activation": "swish"}, ValueError, "activation")])
def test_bad_arguments(kw, err, match):
    args = {"in_dim": 4, "width": 8, "depth": 1, "out_dim": 2, **kw}
    with pytest.raises(err, match=match):
        MLP(**args)


def test_bad_input_shape():
    with pytest.raises(ValueError, match="x must have shape"):
        MLP(4, 8, 1, 2)(torch.randn(3, 5))
    with pytest.raises(TypeError, match="activation"):
        activation(3)


@pytest.mark.parametrize("act,fn", [("relu", torch.relu), ("tanh", torch.tanh),
                                    ("leaky_relu", lambda z: torch.where(z > 0, z, 0.1 * z))])
def test_features_are_post_activations_by_hand(act, fn):
    torch.manual_seed(0)
    m = MLP(4, 6, 2, 3, activation=act)
    x = torch.randn(5, 4)
    h1 = fn(x @ m.layers[0].weight.T + m.layers[0].bias)
    h2 = fn(h1 @ m.layers[1].weight.T + m.layers[1].bias)
    out = h2 @ m.layers[2].weight.T + m.layers[2].bias
    feats = m.features(x)
    for got, want in zip(feats, (h1, h2, out)):
        assert torch.allclose(got, want, atol=1e-6)
    assert torch.allclose(m(x), out, atol=1e-6)
    if act == "relu":
        assert all(bool((f >= 0).all()) for f in feats[:-1])  # post-activation: never negative
