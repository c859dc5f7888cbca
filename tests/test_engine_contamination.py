"""gtlib.contamination's training loops, now compositions of gtlib.engine, against the loops they
replaced (tests/reference_loops_contamination.py): one tiny configuration trained by both gives the
same numbers, and in float64 every member follows torch.optim run on it alone."""
import copy

import pytest
import torch

from gtlib import contamination as fc
from tests import reference_loops_contamination as ref

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
CURVES = ("core_norm", "background_norm", "background_mean", "background_orth", "train_loss",
          "id_loss", "ood_loss", "id_acc", "ood_acc")


def _specs():
    # every case of the chapter in one stack: SGD with momentum and coupled decay at two learning
    # rates, AdamW, hinge and logistic losses, five activations
    return [fc.NetSpec(act="relu", lr=0.05, momentum=0.9, weight_decay=1e-3),
            fc.NetSpec(act="identity", lr=0.05, momentum=0.9, weight_decay=1e-3),
            fc.NetSpec(act="gelu", lr=0.02, momentum=0.5, weight_decay=0.0),
            fc.NetSpec(act="relu", optimizer="adamw", lr=2.5e-3, weight_decay=1e-2),
            fc.NetSpec(act="tanh", loss="logistic", lr=0.05, momentum=0.9, weight_decay=1e-3)]


def _toy(kind="theory", replicates=None):
    emb = fc.random_embedding(3, 2, 8, seed=0)
    if replicates is None:
        return emb, fc.sample_toy(41, emb, kind, seed=1), fc.sample_toy(21, emb, kind, seed=2)
    parts = [[fc.sample_toy(n, emb, kind, seed=10 * r + s) for r in range(replicates)]
             for n, s in ((41, 1), (21, 2))]
    return (emb,) + tuple(fc.ToyData(*(torch.stack([getattr(p, k) for p in ps])
                                       for k in ("x", "y", "core", "background")))
                          for ps in parts)


def _compare(old_net, new_net, old_hist, new_hist, **tol):
    assert new_hist.step == old_hist.step
    for name, p in new_net.named_parameters():
        torch.testing.assert_close(p.detach(), getattr(old_net, name).detach(), **tol)
    for name in CURVES:
        assert len(getattr(new_hist, name)) == len(getattr(old_hist, name))
        for a, b in zip(getattr(new_hist, name), getattr(old_hist, name)):
            torch.testing.assert_close(a, b, **tol)


@pytest.mark.parametrize("frozen_output", [True, False])
def test_train_two_layer_matches_the_old_loop(frozen_output):
    emb, train, test = _toy()
    specs = _specs()
    net = fc.init_two_layer([s.act for s in specs], 8, 6, list(range(len(specs))),
                            frozen_output=frozen_output, bias=True)
    old, new = copy.deepcopy(net), copy.deepcopy(net)
    h_old = ref.old_train_two_layer(old, specs, train.x, train.y, 20, emb, test.x, test.y,
                                    record_every=10)
    h_new = fc.train_two_layer(new, specs, train.x, train.y, 20, emb, test.x, test.y,
                               record_every=10)
    assert h_new.step == [0, 10, 20]
    assert not torch.equal(new.W, net.W)  # it trained
    _compare(old, new, h_old, h_new, rtol=RTOL, atol=ATOL)


def test_train_two_layer_matches_the_old_loop_on_replicates():
    # run_default's use: each member its own sample (E, n, d), trainable output, AdamW, logistic;
    # 25 steps recorded every 10 also checks the final record at a step that is not a multiple
    emb, train, test = _toy("default", replicates=3)
    specs = [fc.NetSpec(act=a, loss="logistic", optimizer="adamw", lr=1e-2, weight_decay=1e-3)
             for a in ("relu", "relu", "silu")]
    net = fc.init_two_layer([s.act for s in specs], 8, 6, [5, 6, 7], frozen_output=False,
                            bias=True)
    old, new = copy.deepcopy(net), copy.deepcopy(net)
    h_old = ref.old_train_two_layer(old, specs, train.x, train.y, 25, emb, test.x, test.y,
                                    record_every=10)
    h_new = fc.train_two_layer(new, specs, train.x, train.y, 25, emb, test.x, test.y,
                               record_every=10)
    assert h_new.step == [0, 10, 20, 25]
    _compare(old, new, h_old, h_new, rtol=RTOL, atol=ATOL)


def test_train_two_layer_with_no_steps_records_the_start_only():
    emb, train, _ = _toy()
    specs = _specs()[:2]
    net = fc.init_two_layer([s.act for s in specs], 8, 6, [0, 1])
    old, new = copy.deepcopy(net), copy.deepcopy(net)
    h_old = ref.old_train_two_layer(old, specs, train.x, train.y, 0, emb)
    h_new = fc.train_two_layer(new, specs, train.x, train.y, 0, emb)
    assert h_new.step == h_old.step == [0]
    assert torch.equal(new.W, net.W)
    for name in ("core_norm", "train_loss"):
        assert torch.equal(getattr(h_new, name)[0], getattr(h_old, name)[0])


def test_train_two_layer_in_float64_is_torch_optim_member_by_member():
    # the engine keeps the hyperparameters in the parameters' precision, so in float64 member e is
    # torch.optim.SGD / AdamW run on it alone up to float64 rounding (the stacked matmul sums in
    # another order: measured 2e-16); the old MemberOptimizer, with float32 hyperparameters, was
    # off by far more (lr 0.05 is 0.0500000007 in float32)
    emb, train, _ = _toy()
    emb = fc.Embedding(emb.core.double(), emb.background.double())
    x, y = train.x.double(), train.y.double()
    specs = _specs()
    net = fc.init_two_layer([s.act for s in specs], 8, 6, list(range(len(specs))),
                            frozen_output=False, bias=True).double()
    new, old = copy.deepcopy(net), copy.deepcopy(net)
    fc.train_two_layer(new, specs, x, y, 30, emb, record_every=30)
    ref.old_train_two_layer(old, specs, x, y, 30, emb, record_every=30)
    worst_old = 0.0
    for e, s in enumerate(specs):
        one = fc.TwoLayerNets(net.W[e:e + 1], [s.act], net.a[e:e + 1], b=net.b[e:e + 1],
                              c=net.c[e:e + 1], train_output=True)
        params = list(one.parameters())
        opt = (torch.optim.SGD(params, lr=s.lr, momentum=s.momentum, weight_decay=s.weight_decay)
               if s.optimizer == "sgd" else
               torch.optim.AdamW(params, lr=s.lr, weight_decay=s.weight_decay))
        for _ in range(30):
            opt.zero_grad()
            fc.binary_loss(s.loss, one(x), y).sum().backward()
            opt.step()
        for name in ("W", "b", "a", "c"):
            want = getattr(one, name).detach()[0]
            torch.testing.assert_close(getattr(new, name).detach()[e], want, rtol=1e-12,
                                       atol=1e-14)
            worst_old = max(worst_old, float((getattr(old, name).detach()[e] - want).abs().max()))
    assert worst_old > 1e-10


def test_run_distillation_matches_the_old_loops():
    # the teacher (AdamW on the core coordinates) and the student (AdamW on W and b, MSE to the
    # teacher's representation, recorded every 10 steps); the student's target comes from the
    # teacher, so the float32 difference of the teacher's AdamW carries into every curve
    cfg = fc.DistillConfig(n=41, n_test=21, d_core=3, d_background=2, dim=8, width=6,
                           teacher_steps=30, student_steps=25, record_every=10, lr=1e-2)
    old = ref.old_run_distillation(cfg, seed=0, device="cpu").to_dict()
    new = fc.run_distillation(cfg, seed=0, device="cpu").to_dict()
    assert new["curve_step"] == old["curve_step"] == [0, 10, 20, 25]
    assert new["curve_id"][-1] < new["curve_id"][0]  # the student learned
    assert set(new) == set(old)
    for key in old:
        if isinstance(old[key], dict):
            assert new[key] == old[key], key  # accuracies on 20 points: no prediction flips
        else:
            torch.testing.assert_close(torch.tensor(new[key], dtype=torch.float64),
                                       torch.tensor(old[key], dtype=torch.float64),
                                       rtol=RTOL, atol=ATOL)
