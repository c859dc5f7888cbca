"""`make bench`: the engine's training step against its peers and against the GEMM limit.

E = 8 MLPs on MNIST-1D (input 40, 10 classes), cross-entropy, minibatches, one torch thread. Four
ways to take one step for all E members are timed in one process, interleaved (every repeat runs
each method once, so load from other processes hits them alike), in CPU seconds of this process
(``time.process_time``), best of ``REPEATS``:

* ``engine``: :func:`gtlib.train.train_ensemble`, as the chapters call it. Its per-step time is
  the difference between a long and a short run divided by the extra steps, so the one-off costs
  of a call (checking the data, measuring the whole training set before and after) cancel;
* ``plain loop``: the loop a reader would write, ``torch.optim`` and ``loss.backward()``, one
  ``torch.nn`` model after another;
* ``torch.func``: ``stack_module_state`` + ``vmap(grad(...))``, stacked parameters updated by
  ``torch.optim``;
* ``baddbmm ref``: a hand-written batched forward (weights stored ``(E, in, out)``, one
  ``baddbmm`` per layer) differentiated by autograd and updated by ``torch.optim`` (foreach). It
  lives here, not in gtlib: it is the yardstick the engine should match.

All four start from the same initializations and see the same minibatches (the engine's own
order), and the ``agree`` column is the largest difference of any parameter from the engine's after
``AGREE_STEPS`` steps (float32 rounding; AdamW's normalised step turns rounding in near-zero
gradients into differences of up to a few learning rates, so its column is larger). Each timed run
is 40-300 steps, as many as make about ``RUN_S`` of matrix products. ``GEMM %`` is the step's
floating-point work (the forward and backward matrix products) as a share of the single-thread
fp32 ``torch.mm`` peak at 2048 x 2048 measured in this run; ``products`` is the time of the step's
own matrix products alone (``bmm`` at the step's shapes for the batched methods, E separate ``mm``
for the plain loop), the part of a step that no
bookkeeping can remove.
"""

import time

import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, stack_module_state, vmap

from gtlib import data
from gtlib.engine import EpochBatches
from gtlib.models import BatchedMLP, make_mlp
from gtlib.train import TrainConfig, train_ensemble

torch.set_num_threads(1)
E, D, C = 8, 40, 10
REPEATS = 7
#: Each timed run takes about this much of matrix-product time at the GEMM peak (so 0.2-0.4 s of
#: CPU): long enough that timer resolution and one-off costs are small against it. The steps of a
#: run are this divided by one step's products, between 40 and 300.
RUN_S = 0.12
#: The ``agree`` column compares parameters after this many steps.
AGREE_STEPS = 40
ds = data.mnist1d(4000, 1000, device="cpu")
N = len(ds.y)
SIZES = [  # (who uses it, width, depth, batch)
    ("reference", 32, 2, 32),
    ("reference", 64, 2, 64),
    ("reference; prelim ens.", 100, 2, 100),
    ("ref.; mode connectivity", 128, 3, 100),
    ("ref.; uniform margins", 256, 2, 64),
]
OPTS = {
    "sgd": dict(lr=0.01, momentum=0.9),
    "adamw": dict(lr=1e-3, weight_decay=0.01),
}


def cpu(fn):
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def gemm_peak() -> float:
    """Single-thread fp32 matrix-product rate (FLOP/s) at 2048 x 2048, best of 3."""
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    a @ b
    return 2 * 2048**3 / min(cpu(lambda: a @ b) for _ in range(3))


def dims(width, depth):
    return list(zip([D] + [width] * depth, [width] * depth + [C]))


def flops(width, depth, batch):
    """Forward and backward products of one step for all members (no input gradient)."""
    fwd = sum(2 * batch * a * b for a, b in dims(width, depth))
    return E * (3 * fwd - 2 * batch * D * width)


def products(width, depth, batch, batched: bool, reps=20):
    """Seconds per step of the step's matrix products alone."""
    if batched:
        ops = []
        for l, (a, b) in enumerate(dims(width, depth)):
            h, w, g = (
                torch.randn(E, batch, a),
                torch.randn(E, a, b),
                torch.randn(E, batch, b),
            )
            ops.append((torch.bmm, h, w))  # forward
            ops.append((torch.bmm, h.transpose(1, 2), g))  # weight gradient
            if l:
                ops.append((torch.bmm, g, w.transpose(1, 2)))  # input gradient
    else:
        ops = []
        for l, (a, b) in enumerate(dims(width, depth)):
            h, w, g = torch.randn(batch, a), torch.randn(a, b), torch.randn(batch, b)
            ops += [(torch.mm, h, w), (torch.mm, h.T, g)] + (
                [(torch.mm, g, w.T)] if l else []
            )
        ops = ops * E

    def run():
        for _ in range(reps):
            for f, u, v in ops:
                f(u, v)

    run()
    return min(cpu(run) for _ in range(3)) / reps


def optimizer(params, opt, **kw):
    if opt == "sgd":
        return torch.optim.SGD(params, **OPTS["sgd"], **kw)
    return torch.optim.AdamW(params, **OPTS["adamw"], **kw)


# -- the four methods: each returns (run(steps), parameters as (E, ...) tensors in MLP layout) ----
def engine(width, depth, batch, opt):
    model = BatchedMLP.init(list(range(E)), D, width, depth, C)
    cfg = TrainConfig(
        optimizer=opt,
        lr=OPTS[opt]["lr"],
        momentum=OPTS[opt].get("momentum", 0.0),
        weight_decay=OPTS[opt].get("weight_decay", 0.0),
        batch_size=batch,
        epochs=10**6,
        check_every=10**9,
    )

    def run(steps):
        cfg.steps = steps
        train_ensemble(model, ds.x, ds.y, cfg, seeds=list(range(E)))

    def params():
        return [
            p.detach()
            for l in range(depth + 1)
            for p in (model.weights[l], model.biases[l])
        ]

    return run, params


def order(batch, steps):
    it = EpochBatches(N, batch, list(range(E)))
    return [next(it) for _ in range(steps)]


def plain_mlp(seed, width, depth):
    """``make_mlp(seed, ...)`` as a plain ``torch.nn.Sequential`` (no input checks)."""
    layers = []
    for l, layer in enumerate(make_mlp(seed, D, width, depth, C).layers):
        layers += [layer] + ([torch.nn.ReLU()] if l < depth else [])
    return torch.nn.Sequential(*layers)


def plain_loop(width, depth, batch, opt):
    models = [plain_mlp(s, width, depth) for s in range(E)]
    opts = [optimizer(m.parameters(), opt) for m in models]

    def run(steps):
        for idx in order(batch, steps):
            for e, (m, o) in enumerate(zip(models, opts)):
                loss = F.cross_entropy(m(ds.x[idx[e]]), ds.y[idx[e]])
                o.zero_grad(set_to_none=True)
                loss.backward()
                o.step()

    def params():
        return [
            torch.stack([p.detach() for p in ps])
            for ps in zip(*[list(m.parameters()) for m in models])
        ]

    return run, params


def functorch(width, depth, batch, opt):
    models = [plain_mlp(s, width, depth) for s in range(E)]
    stacked, buffers = stack_module_state(models)
    names = list(stacked)
    leaves = [stacked[k] for k in names]
    o = optimizer(leaves, opt)
    base = models[0]

    def one(p, b, x, y):
        return F.cross_entropy(functional_call(base, (p, b), (x,)), y)

    g = vmap(grad(one))

    def run(steps):
        for idx in order(batch, steps):
            grads = g(stacked, buffers, ds.x[idx], ds.y[idx])
            for leaf, k in zip(leaves, names):
                leaf.grad = grads[k]
            o.step()

    return run, lambda: [t.detach() for t in leaves]


def baddbmm_ref(width, depth, batch, opt):
    models = [make_mlp(s, D, width, depth, C) for s in range(E)]
    ws = [
        torch.stack([m.layers[l].weight.detach().T for m in models])
        .contiguous()
        .requires_grad_()
        for l in range(depth + 1)
    ]
    bs = [
        torch.stack([m.layers[l].bias.detach() for m in models])
        .unsqueeze(1)
        .contiguous()
        .requires_grad_()
        for l in range(depth + 1)
    ]
    leaves = [t for pair in zip(ws, bs) for t in pair]
    o = optimizer(leaves, opt, foreach=True)

    def run(steps):
        for idx in order(batch, steps):
            h = ds.x[idx]
            for l in range(depth + 1):
                h = torch.baddbmm(bs[l], h, ws[l])
                if l < depth:
                    h = h.relu()
            loss = (
                F.cross_entropy(
                    h.reshape(-1, C), ds.y[idx].reshape(-1), reduction="sum"
                )
                / batch
            )
            for leaf, gr in zip(leaves, torch.autograd.grad(loss, leaves)):
                leaf.grad = gr
            o.step()

    def params():
        return [
            t.detach().transpose(1, 2) if t.shape[1] != 1 else t.detach().squeeze(1)
            for t in leaves
        ]

    return run, params


METHODS = {
    "engine": engine,
    "plain loop": plain_loop,
    "torch.func": functorch,
    "baddbmm ref": baddbmm_ref,
}


def bench(width, depth, batch, opt, steps: int, short: int):
    # agreement after AGREE_STEPS steps from the same start (over hundreds of steps float32
    # rounding differences grow, and the column would measure the dynamics, not the method)
    agree, ref = {}, None
    for name, make in METHODS.items():
        run, params = make(width, depth, batch, opt)
        run(AGREE_STEPS)
        if name == "engine":
            ref = params()
        else:
            agree[name] = max(
                float((a - b).abs().max()) for a, b in zip(params(), ref)
            )
    times = {k: [] for k in METHODS}
    short_t = []
    for _ in range(REPEATS):
        for name, make in METHODS.items():
            make(width, depth, batch, opt)[0](
                1
            )  # warm-up (first calls: vmap tracing, ...)
            if name == "engine":
                run, _ = make(width, depth, batch, opt)
                short_t.append(cpu(lambda: run(short)))
            run, _ = make(width, depth, batch, opt)
            times[name].append(cpu(lambda: run(short + steps)))
    per = {k: min(v) / (short + steps) for k, v in times.items()}
    per["engine"] = (min(times["engine"]) - min(short_t)) / steps
    return per, agree


def main():
    t_start = time.process_time()
    peak = gemm_peak()
    print(
        f"E = {E} MLPs on MNIST-1D ({N} x {D}, {C} classes), cross-entropy, one torch thread; "
        f"CPU ms per step, best of {REPEATS}, methods interleaved."
    )
    print(
        f"single-thread fp32 GEMM peak (torch.mm 2048^2), this run: {peak / 1e9:.0f} GFLOP/s\n"
    )
    head = (
        f"{'shape / batch':>22} {'opt':>5} {'method':>11} {'ms/step':>8} {'/ ref':>6}"
        f" {'GEMM %':>7} {'products':>9} {'agree':>8}"
    )
    for opt in OPTS:
        print(head)
        for who, width, depth, batch in SIZES:
            fl = flops(width, depth, batch)
            steps = int(min(300, max(40, RUN_S / (fl / peak))))
            per, agree = bench(width, depth, batch, opt, steps, max(4, steps // 10))
            prod = {
                True: products(width, depth, batch, True),
                False: products(width, depth, batch, False),
            }
            shape = f"40-{'-'.join([str(width)] * depth)}-10/{batch}"
            for name in METHODS:
                t = per[name]
                p = prod[name != "plain loop"]
                ag = "" if name == "engine" else f"{agree[name]:.1e}"
                print(
                    f"{shape if name == 'engine' else '':>22} {opt:>5} {name:>11} "
                    f"{1e3 * t:>8.2f} {t / per['baddbmm ref']:>6.2f} {100 * fl / t / peak:>6.1f}%"
                    f" {1e3 * p:>7.2f}ms {ag:>8}"
                )
            print(
                f"{who:>22}   (products of this step at the GEMM peak: "
                f"{1e3 * fl / peak:.2f} ms)"
            )
        print()
    print(f"total CPU time {time.process_time() - t_start:.0f} s")


if __name__ == "__main__":
    main()
