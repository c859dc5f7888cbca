"""`make bench`: E MLPs trained at once by gtlib's engine against the same E trained one by one.

The one-by-one side is the loop a reader would write: a ``torch.nn`` MLP, ``torch.optim``,
``loss.backward()``, one member after another. Both sides run the same algorithm (same
initializations, same minibatch orders; the engine's tests show the numbers agree), on one torch
thread. Times are CPU seconds of this process (robust to other load on the machine), the best of
three repeats; the one-off set-up cost of each path is excluded by a warm-up run.

The first three rows are the book's reference sizes; the others are the chapters' real ones.
Speed-up is bounded by how much of a per-member step is overhead rather than arithmetic: the
``floor`` column is the arithmetic alone (the one-by-one time of the same matrix products with no
optimizer, no indexing and no Python loop per member), so ``one by one / floor`` is the most any
batching could gain at that size on this machine.
"""
import time

import torch
import torch.nn.functional as F

from gtlib import data
from gtlib.ensemble import BatchedMLP, make_mlp, train_ensemble
from gtlib.train import TrainConfig

torch.set_num_threads(1)
ds = data.mnist1d(4000, 1000, device="cpu")
ROWS = [  # (label, E, width, depth, batch, steps, optimizer)
    ("reference", 8, 32, 2, 32, 500, "sgd"),
    ("reference", 8, 64, 2, 64, 400, "sgd"),
    ("reference", 8, 100, 2, 100, 300, "sgd"),
    ("prelim ensemble", 8, 100, 2, 100, 250, "adamw"),
    ("mode connectivity", 8, 128, 3, 100, 200, "sgd"),
    ("uniform conv. margins", 8, 256, 2, 64, 150, "sgd"),
]


def one_by_one(E, width, depth, batch, steps, optimizer):
    """The per-member loop: E separate models, optimizers and backward passes; like the engine, it
    measures each model on the whole training set before and after training."""
    for s in range(E):
        m = make_mlp(s, 40, width, depth, 10)
        opt = (torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9) if optimizer == "sgd"
               else torch.optim.AdamW(m.parameters(), lr=1e-3))
        g = torch.Generator().manual_seed(s)
        per_epoch = -(-len(ds.y) // batch)
        with torch.no_grad():
            F.cross_entropy(m(ds.x), ds.y)
        for t in range(steps):
            if t % per_epoch == 0:
                order = torch.randperm(len(ds.y), generator=g)
            idx = order[(t % per_epoch) * batch:(t % per_epoch + 1) * batch]
            loss = F.cross_entropy(m(ds.x[idx]), ds.y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        with torch.no_grad():
            F.cross_entropy(m(ds.x), ds.y)


def floor(E, width, depth, batch, steps):
    """Forward and backward matrix products of E members, nothing else."""
    x = ds.x[:batch]
    ws = [torch.randn(a, b, requires_grad=True) for a, b in
          zip([width] * depth + [10], [40] + [width] * depth)]
    for _ in range(E * steps):
        h = x
        for l, w in enumerate(ws):
            h = h @ w.T
            if l < depth:
                h = h.relu()
        torch.autograd.grad(h.sum(), ws)


def best(fn, *args):
    times = []
    for _ in range(3):
        t0 = time.process_time()
        fn(*args)
        times.append(time.process_time() - t0)
    return min(times)


def batched(E, width, depth, batch, steps, optimizer):
    cfg = TrainConfig(optimizer=optimizer, lr=0.01 if optimizer == "sgd" else 1e-3,
                      momentum=0.9 if optimizer == "sgd" else 0.0, batch_size=batch,
                      epochs=10**6, steps=steps, check_every=10**9)
    train_ensemble(BatchedMLP.init(list(range(E)), 40, width, depth, 10), ds.x, ds.y, cfg,
                   seeds=list(range(E)))


print("MLPs on MNIST-1D (4000 x 40), one torch thread; CPU seconds, best of 3")
print(f"{'':>22} {'E':>2} {'shape':>18} {'batch':>5} {'steps':>5} {'engine':>7} {'one by one':>10}"
      f" {'speed-up':>8} {'floor':>6} {'most':>5}")
for label, E, width, depth, batch, steps, opt in ROWS:
    batched(2, width, depth, batch, 3, opt)  # warm-up
    one_by_one(1, width, depth, batch, 3, opt)
    t_b = best(batched, E, width, depth, batch, steps, opt)
    t_l = best(one_by_one, E, width, depth, batch, steps, opt)
    t_f = best(floor, E, width, depth, batch, steps)
    shape = f"40-{'-'.join([str(width)] * depth)}-10"
    print(f"{label:>22} {E:>2} {shape:>18} {batch:>5} {steps:>5} {t_b:>7.2f} {t_l:>10.2f}"
          f" {t_l / t_b:>7.1f}x {t_f:>6.2f} {t_l / t_f:>4.1f}x")
