"""Networks, data and reference implementations that several test
modules of gtlib.contamination use."""

import numpy as np
import pytest
import torch
from gtlib import contamination as fc
from gtlib.contamination.training import _CURVES


def axis_embedding(dtype=torch.float32):
    """R^6 with core = (e4, e0) and background = (e1, e5, e2); e3 lies outside both."""
    eye = torch.eye(6, dtype=dtype)
    return fc.Embedding(
        core=eye[:, [4, 0]].contiguous(), background=eye[:, [1, 5, 2]].contiguous()
    )


def np_acts(name, z):
    z = np.asarray(z, dtype=np.float64)
    if name == "relu":
        return np.maximum(z, 0)
    if name == "identity":
        return z
    if name == "tanh":
        return np.tanh(z)
    if name == "sigmoid":
        return 1 / (1 + np.exp(-z))
    raise KeyError(name)


def np_loss(name, f, y):
    m = np.asarray(y, dtype=np.float64) * np.asarray(f, dtype=np.float64)
    per = np.maximum(0.0, 1.0 - m) if name == "hinge" else np.log1p(np.exp(-m))
    return per.mean(-1)


def _np_forward(W, acts, a, b=None, c=None, x=None):
    W, a = np.asarray(W, float), np.asarray(a, float)
    out, hid, pre = [], [], []
    for e, name in enumerate(acts):
        xe = np.asarray(x[e] if x.ndim == 3 else x, float)
        p = xe @ W[e].T + (0.0 if b is None else np.asarray(b[e], float))
        h = np_acts(name, p)
        pre.append(p)
        hid.append(h)
        out.append(h @ a[e] + (0.0 if c is None else float(c[e])))
    return np.stack(pre), np.stack(hid), np.stack(out)


def _double_emb(emb):
    return fc.Embedding(emb.core.double(), emb.background.double())


def _same_history(h1, h2):
    assert h1.step == h2.step
    for name in _CURVES:
        a, b = getattr(h1, name), getattr(h2, name)
        assert len(a) == len(b), name
        for u, v in zip(a, b):
            torch.testing.assert_close(u, v, rtol=1e-6, atol=1e-7)


NAN = float("nan")


def nan_at(t):
    t = t.clone()
    t.view(-1)[0] = NAN
    return t


def refused(error, name, fn, *args, **kwargs):
    with pytest.raises(error, match=name) as info:
        fn(*args, **kwargs)
    return str(info.value)


# The old MemberOptimizer held lr, momentum and weight decay as float32 tensors and wrote its own
# arithmetic: SGD as p - lr_t * buf with buf = mom * buf + (g + wd * p), AdamW as
# p - lr * (m_hat / (sqrt(v_hat) + eps) + wd * p) with m = b1 * m + (1 - b1) g. The engine uses
# PyTorch's formulas (p + (-lr) * buf in one fused add, m.lerp_(g, 1 - b1),
# p * (1 - lr wd) - (lr / bc1) m / (sqrt(v) / sqrt(bc2) + eps)). In float32 the two round
# differently: measured over 25 steps, weights of size ~0.35 differ by at most 4.5e-7 (a few
# float32 ulps) and the recorded curves by at most 3e-7, hence rtol 1e-5 and atol 1e-6.
# The samples have an odd size, so the classes are unequal: with balanced classes, a unit active
# on every point inside the hinge has the bias gradient -a_j mean(y) = 0 exactly, its float32
# gradient is rounding noise, and AdamW (which divides by the gradient's size) turns that noise
# into steps of size lr, so two loops one ulp apart walk apart by O(lr) (measured 1e-3 in 10
# steps): a property of Adam at a zero gradient, in the old loop as in the new.
RTOL, ATOL = 1e-5, 1e-6


def _specs():
    # every case of the chapter in one stack: SGD with momentum and coupled decay at two learning
    # rates, AdamW, hinge and logistic losses, five activations
    return [
        fc.NetSpec(act="relu", lr=0.05, momentum=0.9, weight_decay=1e-3),
        fc.NetSpec(act="identity", lr=0.05, momentum=0.9, weight_decay=1e-3),
        fc.NetSpec(act="gelu", lr=0.02, momentum=0.5, weight_decay=0.0),
        fc.NetSpec(act="relu", optimizer="adamw", lr=2.5e-3, weight_decay=1e-2),
        fc.NetSpec(
            act="tanh", loss="logistic", lr=0.05, momentum=0.9, weight_decay=1e-3
        ),
    ]


def _toy(kind="theory", replicates=None):
    emb = fc.random_embedding(3, 2, 8, seed=0)
    if replicates is None:
        return (
            emb,
            fc.sample_toy(41, emb, kind, seed=1),
            fc.sample_toy(21, emb, kind, seed=2),
        )
    parts = [
        [fc.sample_toy(n, emb, kind, seed=10 * r + s) for r in range(replicates)]
        for n, s in ((41, 1), (21, 2))
    ]
    return (emb,) + tuple(
        fc.ToyData(
            *(
                torch.stack([getattr(p, k) for p in ps])
                for k in ("x", "y", "core", "background")
            )
        )
        for ps in parts
    )
