"""Networks, data and reference implementations that several test
modules of gtlib.connectivity use."""

import copy
import numpy as np
import torch
import torch.nn.functional as F
from gtlib import connectivity as C
from gtlib.models import BatchedMLP, make_mlp, MLP


def net(seed=0, width=16, depth=3, d=6, out=4, bias=True):
    return make_mlp(seed, d, width, depth, out, bias=bias)


X = torch.randn(50, 6, generator=torch.Generator().manual_seed(1))


Y = torch.randint(0, 4, (50,), generator=torch.Generator().manual_seed(2))


D, W, K = 4, 5, 3  # input size, width, classes: nothing square


def net_ref(seed=0, width=W, depth=2, d=D, out=K, bias=True, act="relu"):
    return make_mlp(seed, d, width, depth, out, bias=bias, act=act)


def data(n=23, d=D, classes=K, seed=0, shift=0.0):
    g = torch.Generator().manual_seed(1000 + seed)
    x = torch.randn(n, d, generator=g) + shift
    y = torch.randint(0, classes, (n,), generator=g)
    return x, y


X_ref, Y_ref = data()


def npw(model):
    """Weights and biases of an MLP as float64 numpy arrays."""
    ws = [l.weight.detach().double().numpy() for l in model.layers]
    bs = (
        None
        if model.layers[0].bias is None
        else [l.bias.detach().double().numpy() for l in model.layers]
    )
    return ws, bs


ACT = {
    "relu": lambda z: np.maximum(z, 0),
    "tanh": np.tanh,
    "leaky_relu": lambda z: np.where(z > 0, z, 0.1 * z),
    "identity": lambda z: z,
}


def np_forward(ws, bs, x, act="relu"):
    """Pre-activations of the hidden layers, post-activations, and logits, by hand."""
    h = np.asarray(x, dtype=float)
    pre, post = [], []
    for l, w in enumerate(ws):
        z = h @ w.T + (0 if bs is None else bs[l])
        if l < len(ws) - 1:
            pre.append(z)
            h = ACT[act](z)
            post.append(h)
        else:
            return pre, post, z


def np_features(model, x):
    ws, bs = npw(model)
    _, post, logits = np_forward(ws, bs, x.double().numpy(), model.act_name)
    return post + [logits]


def same_params(m, n, atol=0.0):
    for p, q in zip(m.parameters(), n.parameters()):
        if atol:
            torch.testing.assert_close(
                p.detach().double(), q.detach().double(), atol=atol, rtol=0
            )
        else:
            assert torch.equal(p.detach(), q.detach())


def ref_factor(r, step, total):
    w = int(round(r.warmup * total))
    if step < w:
        return r.start_factor + (1 - r.start_factor) * step / w
    if not r.decay:
        return 1.0
    return max(0.0, (total - step) / max(1, total - w))


def ref_fit_member(m, x, y, r, seed, start=0, stop=None, train="all", snaps=()):
    """One network alone: torch.optim.SGD (or Adam), its own generator's permutation per epoch."""
    m = copy.deepcopy(m)
    n = x.shape[0]
    total = r.steps(n)
    stop = total if stop is None else stop
    per_epoch = -(-n // r.batch_size)
    layers = list(m.layers)
    if train == "head":
        ps = list(layers[-1].parameters())
    elif train == "body":
        ps = [p for l in layers[:-1] for p in l.parameters()]
    else:
        ps = list(m.parameters())
    if r.optimizer == "adam":
        opt = torch.optim.Adam(ps, lr=r.lr, weight_decay=r.weight_decay)
    else:
        opt = torch.optim.SGD(
            ps, lr=r.lr, momentum=r.momentum, weight_decay=r.weight_decay
        )
    g = torch.Generator().manual_seed(seed)
    order, out = None, {}
    for step in range(stop + 1):
        if step in snaps:
            out[step] = copy.deepcopy(m)
        if step == stop:
            break
        pos = step % per_epoch
        if pos == 0:
            order = torch.randperm(n, generator=g)
        idx = order[pos * r.batch_size : (pos + 1) * r.batch_size]
        if step < start:
            continue
        for gr in opt.param_groups:
            gr["lr"] = r.lr * ref_factor(r, step, total)
        opt.zero_grad()
        F.cross_entropy(m(x[idx]), y[idx]).backward()
        opt.step()
    return m, out


def ref_path(models, x, y):
    loss, acc = [], []
    for m in models:
        z = np_features(m, x)[-1]
        z = z - z.max(1, keepdims=True)
        lp = z - np.log(np.exp(z).sum(1, keepdims=True))
        loss.append(-lp[np.arange(len(y)), y.numpy()].mean())
        acc.append(np.mean(z.argmax(1) == y.numpy()))
    return np.array(loss), np.array(acc)


def tiny_cfg(**kw):
    base = dict(
        n_train=20,
        n_test=20,
        depth=1,
        widths=(3, 4),
        alphas=5,
        max_iter=5,
        recipe=C.Recipe(lr=0.1, batch_size=8, epochs=2, warmup=0.2),
        spawn_width=4,
        spawn_fractions=(0.3, 0.0, 0.01),
        spawn_pairs=1,
        spawn_recipe=C.Recipe(lr=0.1, batch_size=8, epochs=2, warmup=0.0),
        epoch_width=4,
        epoch_snapshots=(0, 1),
        depths=(1, 2),
        depth_width=3,
    )
    base.update(kw)
    return C.ConnectivityConfig(**base).validate()


def _blobs(n=48, d=5, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % classes
    x = (
        torch.randn(n, d, generator=g, dtype=torch.float64)
        + 2 * F.one_hot(y, d).double()
    )
    return x, y


NAN, INF = float("nan"), float("inf")


torch.manual_seed(0)


X_bou = torch.randn(30, 5, generator=torch.Generator().manual_seed(0))


Y_bou = torch.arange(30) % 3


A, B = MLP(5, 8, 1, 3), MLP(5, 8, 1, 3)


RECIPE = C.Recipe(lr=0.05, epochs=1, warmup=0.0, batch_size=10)


def _stack():
    return BatchedMLP.init([0, 1], 5, 8, 1, 3)
