"""Bad input is refused where it enters gtlib.contamination (issue 19): a TypeError or ValueError
that names the argument, instead of a NaN result, a silent truncation or an error from deep
inside torch. The cases are those an independent probe found silent or unclear, plus a few that
show each kind of check (labels are the module's -1.0/+1.0 floats)."""
import math

import numpy as np
import pytest
import torch

from gtlib import contamination as fc

NAN = float("nan")


@pytest.fixture(scope="module")
def emb():
    return fc.random_embedding(3, 3, 10, seed=0)


@pytest.fixture(scope="module")
def toy(emb):
    return fc.sample_toy(20, emb, "theory", seed=0)


@pytest.fixture(scope="module")
def nets():
    return fc.init_two_layer(["relu", "tanh"], 10, 6, [0, 1])


def nan_at(t):
    t = t.clone()
    t.view(-1)[0] = NAN
    return t


def refused(error, name, fn, *args, **kwargs):
    with pytest.raises(error, match=name) as info:
        fn(*args, **kwargs)
    return str(info.value)


# --- the data model -------------------------------------------------------------------------

def test_embedding_checks_its_bases(emb):
    refused(ValueError, "core", fc.Embedding, nan_at(emb.core), emb.background)
    refused(ValueError, "core", fc.Embedding, emb.core[:0], emb.background)
    refused(ValueError, "core", fc.Embedding, emb.core[0], emb.background)
    refused(TypeError, "core", fc.Embedding, emb.core.long(), emb.background)
    refused(TypeError, "core", fc.Embedding, None, emb.background)
    refused(TypeError, "background", fc.Embedding, emb.core, emb.background.tolist())
    refused(ValueError, "orthonormal", fc.Embedding, torch.ones(10, 3), torch.ones(10, 3))
    same = fc.Embedding(emb.core.double(), emb.background.double())  # float64 bases are fine
    assert same.dim == 10


def test_embedding_methods(emb):
    refused(ValueError, "z_core", emb.embed, torch.full((4, 3), NAN), torch.zeros(4, 3))
    refused(TypeError, "z_background", emb.embed, torch.zeros(4, 3), torch.zeros(4, 3).long())
    refused(ValueError, "device", emb.to, "gpu9")
    refused(TypeError, "device", emb.to, 3.5)
    assert emb.to("cpu").core.device.type == "cpu"


def test_seeds_sizes_and_generators():
    refused(ValueError, "seed", fc.random_embedding, 3, 3, 10, seed=2 ** 64)
    refused(ValueError, "seed", fc.random_embedding, 3, 3, 10, seed=-1)
    refused(ValueError, "d_core", fc.sample_core, 10, "theory", 0, torch.Generator())
    refused(TypeError, "d_core", fc.sample_core, 10, "theory", True, torch.Generator())
    refused(TypeError, "generator", fc.sample_core, 10, "theory", 3, None)
    refused(ValueError, "kind", fc.sample_core, 10, "bogus", 3, torch.Generator())


def test_sample_toy_flags_and_shift(emb, toy):
    refused(TypeError, "centred", fc.sample_toy, 10, emb, centred="yes")
    refused(TypeError, "centred", fc.sample_toy, 10, emb, centred=None)
    refused(ValueError, "x", fc.shift_background, nan_at(toy.x), emb)
    refused(ValueError, "x", fc.shift_background, toy.x[:0], emb)
    refused(TypeError, "x", fc.shift_background, toy.x.long(), emb)
    refused(ValueError, "magnitude", fc.shift_background, toy.x, emb, math.inf)
    refused(ValueError, "emb", fc.off_subspace_direction, fc.random_embedding(5, 5, 10))


def test_labels_are_plus_minus_one_floats(toy):
    refused(ValueError, "y", fc.label_correlations, toy.x, (toy.y > 0).float())
    refused(ValueError, "y", fc.label_correlations, toy.x, nan_at(toy.y))
    refused(TypeError, "features", fc.label_correlations, toy.x.long(), toy.y)
    refused(ValueError, "features", fc.label_correlations, nan_at(toy.x), toy.y)
    refused(TypeError, "y", fc.binary_loss, "hinge", torch.zeros(2, 20), toy.y.long())
    refused(ValueError, "ToyData.y", fc.ToyData, toy.x, 2 * toy.y, toy.core, toy.background)


# --- networks --------------------------------------------------------------------------------

def test_two_layer_nets_constructor():
    W, a = torch.randn(2, 6, 10), torch.randn(2, 6)
    refused(ValueError, "W", fc.TwoLayerNets, nan_at(W), ["relu", "tanh"], a)
    refused(ValueError, "W", fc.TwoLayerNets, W[:0], ["relu", "tanh"], a)
    refused(TypeError, "W", fc.TwoLayerNets, W.long(), ["relu", "tanh"], a)
    refused(TypeError, "acts", fc.TwoLayerNets, W, None, a)
    refused(ValueError, "acts", fc.TwoLayerNets, W, ["relu", "bogus"], a)
    refused(ValueError, "a", fc.TwoLayerNets, W, ["relu", "tanh"], nan_at(a))
    refused(TypeError, "a", fc.TwoLayerNets, W, ["relu", "tanh"], None)
    refused(TypeError, "b", fc.TwoLayerNets, W, ["relu", "tanh"], a, b=[[0.0] * 6] * 2)
    refused(TypeError, "train_output", fc.TwoLayerNets, W, ["relu", "tanh"], a,
            train_output="yes")
    refused(TypeError, "train_output", fc.TwoLayerNets, W, ["relu", "tanh"], a,
            train_output=None)


def test_forward_hidden_preactivations(nets, toy):
    for method in (nets.forward, nets.hidden, nets.preactivations, nets):
        refused(ValueError, "x", method, nan_at(toy.x))
        refused(ValueError, "x", method, toy.x[:0])
        refused(TypeError, "x", method, toy.x.long())
        refused(TypeError, "x", method, toy.x.double())
        refused(ValueError, "x", method, toy.x[:, :5])
    refused(ValueError, "one sample per member", nets, toy.x.expand(3, -1, -1))


def test_init_two_layer():
    refused(TypeError, "acts", fc.init_two_layer, None, 10, 6, [0, 1])
    refused(TypeError, "seeds", fc.init_two_layer, ["relu"], 10, 6, 3)
    refused(ValueError, r"seeds\[0\]", fc.init_two_layer, ["relu"], 10, 6, [-1])
    refused(TypeError, r"seeds\[0\]", fc.init_two_layer, ["relu"], 10, 6, [0.5])
    refused(TypeError, "frozen_output", fc.init_two_layer, ["relu"], 10, 6, [0],
            frozen_output="yes")
    refused(TypeError, "bias", fc.init_two_layer, ["relu"], 10, 6, [0], bias=None)


# --- losses and metrics ---------------------------------------------------------------------

def test_losses_and_accuracy(toy):
    f = torch.randn(2, 20)
    for fn in (lambda *a: fc.binary_loss("hinge", *a), fc.binary_accuracy):
        refused(ValueError, "f", fn, nan_at(f), toy.y)
        refused(ValueError, "f", fn, f[:0], toy.y)
        refused(ValueError, "y", fn, f, nan_at(toy.y))
        refused(ValueError, "y", fn, f, toy.y[:0])
        refused(ValueError, "y", fn, f, toy.y[:-1])
    refused(ValueError, "name", fc.binary_loss, "bogus", f, toy.y)
    refused(TypeError, "name", fc.binary_loss, None, f, toy.y)


def test_weights_and_asymmetries(emb, toy):
    W, pre, a = torch.randn(2, 6, 10), torch.randn(2, 20, 6), torch.randn(2, 6)
    for fn in (fc.projection_norms, fc.mean_direction_components):
        refused(ValueError, "W", fn, nan_at(W), emb)
        refused(ValueError, "W", fn, W[:0], emb)
        refused(TypeError, "W", fn, W.long(), emb)
        refused(TypeError, "emb", fn, W, None)
    refused(ValueError, "pre", fc.activation_asymmetry, nan_at(pre), toy.y)
    refused(ValueError, "pre", fc.activation_asymmetry, pre[:0], toy.y)
    refused(ValueError, "y", fc.activation_asymmetry, pre, nan_at(toy.y))
    refused(ValueError, "a", fc.signed_asymmetry, pre, toy.y, nan_at(a))
    refused(ValueError, "a", fc.signed_asymmetry, pre, toy.y, a[:0])
    refused(ValueError, "act", fc.signed_asymmetry, pre, toy.y, a, act="bogus")
    h = torch.randn(4, 3)
    refused(ValueError, "h", fc.relative_error, nan_at(h), h)
    refused(TypeError, "h", fc.relative_error, h.long(), h)
    refused(ValueError, "target", fc.relative_error, h, nan_at(h))
    refused(TypeError, "target", fc.relative_error, h, None)


# --- training, sweeps, probes ----------------------------------------------------------------

def test_train_two_layer(emb, toy):
    specs = [fc.NetSpec(act="relu"), fc.NetSpec(act="tanh")]
    net = fc.init_two_layer(["relu", "tanh"], 10, 6, [0, 1])
    W0 = net.W.detach().clone()
    refused(ValueError, "x", fc.train_two_layer, net, specs, nan_at(toy.x), toy.y, 2, emb)
    refused(ValueError, "y", fc.train_two_layer, net, specs, toy.x, nan_at(toy.y), 2, emb)
    refused(TypeError, "x", fc.train_two_layer, net, specs, toy.x.long(), toy.y, 2, emb)
    refused(TypeError, "specs", fc.train_two_layer, net, None, toy.x, toy.y, 2, emb)
    refused(TypeError, "specs", fc.train_two_layer, net, "ab", toy.x, toy.y, 2, emb)
    refused(ValueError, "steps", fc.train_two_layer, net, specs, toy.x, toy.y, -1, emb)
    refused(ValueError, "record_every", fc.train_two_layer, net, specs, toy.x, toy.y, 2, emb,
            record_every=0)
    for shift in (NAN, math.inf):
        refused(ValueError, "shift", fc.train_two_layer, net, specs, toy.x, toy.y, 2, emb,
                shift=shift)
    refused(TypeError, "shift", fc.train_two_layer, net, specs, toy.x, toy.y, 2, emb, shift=None)
    refused(ValueError, "x_test", fc.train_two_layer, net, specs, toy.x, toy.y, 2, emb,
            nan_at(toy.x), toy.y)
    refused(ValueError, "y_test", fc.train_two_layer, net, specs, toy.x, toy.y, 2, emb,
            toy.x, toy.y[:0])
    refused(ValueError, "y_test", fc.train_two_layer, net, specs, toy.x, toy.y, 2, emb, toy.x)
    assert torch.equal(net.W, W0)  # nothing trained on bad input
    # steps=0 is valid: the history holds the initial record only
    assert fc.train_two_layer(net, specs, toy.x, toy.y, 0, emb).step == [0]


def test_shift_sweep_and_linear_probe(emb, toy, nets):
    specs = [fc.NetSpec(act="relu"), fc.NetSpec(act="tanh")]
    sweep = fc.shift_sweep(nets, specs, toy.x, toy.y, emb, np.array([0.0, 1.0]))
    assert sweep["loss"].shape == (2, 2)
    refused(ValueError, "specs", fc.shift_sweep, nets, [], toy.x, toy.y, emb, [0.0])
    refused(ValueError, "specs", fc.shift_sweep, nets, specs[:1], toy.x, toy.y, emb, [0.0])
    refused(TypeError, "net", fc.shift_sweep, "net", specs, toy.x, toy.y, emb, [0.0])
    refused(ValueError, "x", fc.shift_sweep, nets, specs, nan_at(toy.x), toy.y, emb, [0.0])
    refused(TypeError, "x", fc.shift_sweep, nets, specs, toy.x.long(), toy.y, emb, [0.0])
    refused(ValueError, "y", fc.shift_sweep, nets, specs, toy.x, nan_at(toy.y), emb, [0.0])
    refused(ValueError, r"magnitudes\[0\]", fc.shift_sweep, nets, specs, toy.x, toy.y, emb, [NAN])
    refused(ValueError, r"magnitudes\[1\]", fc.shift_sweep, nets, specs, toy.x, toy.y, emb,
            np.array([0.0, np.inf]))
    refused(TypeError, "magnitudes", fc.shift_sweep, nets, specs, toy.x, toy.y, emb, None)
    refused(ValueError, "magnitudes", fc.shift_sweep, nets, specs, toy.x, toy.y, emb, [])
    ev = [(toy.x, toy.y)]
    refused(TypeError, "h_train", fc.linear_probe, toy.x.long(), toy.y, ev)
    refused(ValueError, "h_train", fc.linear_probe, nan_at(toy.x), toy.y, ev)
    refused(ValueError, "y_train", fc.linear_probe, toy.x, nan_at(toy.y), ev)
    refused(ValueError, "evaluations", fc.linear_probe, toy.x, toy.y, [])
    refused(TypeError, "evaluations", fc.linear_probe, toy.x, toy.y, "abc")
    refused(ValueError, "evaluations", fc.linear_probe, toy.x, toy.y, [(toy.x[:, :3], toy.y)])


# --- experiments and results -----------------------------------------------------------------

def test_experiments_check_seed_device_and_config():
    cfg = fc.TheoryConfig(n=20, n_test=10, d_core=2, d_background=2, dim=6, width=4, steps=1,
                          variants=(), record_every=1)
    refused(ValueError, "seed", fc.run_theory, cfg, seed=2 ** 64)
    refused(ValueError, "device", fc.run_theory, cfg, device="gpu9")
    refused(TypeError, "device", fc.run_default, fc.DefaultConfig(), device=3.5)
    refused(TypeError, "cfg", fc.run_distillation, {})
    refused(TypeError, "cfg", fc.run_mnist1d, None)
    refused(TypeError, "cfg", fc.theory_specs, None)
    res = fc.run_theory(cfg, seed=0, device="cpu")
    refused(ValueError, "label", res.members, "bogus")
    refused(TypeError, "label", res.final, "id_acc", 3)
    refused(ValueError, "name", res.final, "bogus", "ReLU")
    refused(ValueError, "name", res.history.array, "bogus")
    refused(TypeError, "initial", res.preactivations, res.train.x, "ReLU", initial="yes")
    refused(ValueError, "x", res.preactivations, nan_at(res.train.x), "ReLU")
    refused(ValueError, "x", res.preactivations, res.train.x[:0], "ReLU")
    assert res.preactivations(res.train.x, "ReLU", initial=True).shape == (20, 4)


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


def test_bias_equivalence_refuses_bad_input(emb):
    W0, W1 = torch.randn(6, 10), torch.randn(6, 10)
    b0, b1 = torch.randn(6), torch.randn(6)
    refused(ValueError, "W0", fc.bias_equivalence, nan_at(W0), W1, b0, b1, emb)
    refused(ValueError, "W1", fc.bias_equivalence, W0, nan_at(W1), b0, b1, emb)
    refused(ValueError, "b1", fc.bias_equivalence, W0, W1, b0, nan_at(b1), emb)
    refused(TypeError, "W0", fc.bias_equivalence, W0.long(), W1, b0, b1, emb)
    refused(ValueError, "W0", fc.bias_equivalence, W0[None], W1, b0, b1, emb)
    refused(TypeError, "emb", fc.bias_equivalence, W0, W1, b0, b1, None)
    refused(ValueError, "W", fc.bias_equivalence, W0[:, :8], W1[:, :8], b0, b1, emb)
    for bad in (NAN, math.inf, -0.1):
        refused(ValueError, "decay", fc.bias_equivalence, W0, W1, b0, b1, emb, decay=bad)
