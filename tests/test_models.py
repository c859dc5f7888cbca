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
