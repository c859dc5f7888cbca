"""`make bench`: E=8 MLPs trained as one batched ensemble against the same 8 trained one by one.

Both sides run the same algorithm (same initializations, same minibatches; see
gtlib.ensemble), on one torch thread. Times are CPU seconds of this process (robust to other
load on the machine); the first, one-off set-up cost of each path is excluded by a warm-up run.
"""
import time

import torch

from gtlib import data
from gtlib.ensemble import BatchedMLP, train_ensemble, train_sequentially
from gtlib.train import TrainConfig

torch.set_num_threads(1)
E = 8
ds = data.mnist1d(4000, 1000, device="cpu")
print(f"{E} MLPs on MNIST-1D (4000 x 40), SGD with momentum, one torch thread")
print(f"{'shape':>16} {'batch':>6} {'steps':>6} {'batched s':>10} {'one by one s':>13} {'speedup':>8}")
for width, depth, batch, steps in [(32, 2, 32, 500), (64, 2, 64, 400), (100, 2, 100, 300)]:
    cfg = TrainConfig(optimizer="sgd", lr=0.01, momentum=0.9, batch_size=batch, epochs=10**6,
                      steps=steps, check_every=10**9)
    seeds = list(range(E))
    train_ensemble(BatchedMLP.init(seeds[:2], 40, width, depth, 10), ds.x, ds.y,
                   TrainConfig(batch_size=batch, steps=3), seeds=seeds[:2])  # warm-up
    train_sequentially(seeds[:1], ds.x, ds.y, TrainConfig(batch_size=batch, steps=3), 40, width, depth, 10)
    t0 = time.process_time()
    train_ensemble(BatchedMLP.init(seeds, 40, width, depth, 10), ds.x, ds.y, cfg, seeds=seeds)
    t_batched = time.process_time() - t0
    t0 = time.process_time()
    train_sequentially(seeds, ds.x, ds.y, cfg, 40, width, depth, 10)
    t_loop = time.process_time() - t0
    shape = f"40-{'-'.join([str(width)] * depth)}-10"
    print(f"{shape:>16} {batch:>6} {steps:>6} {t_batched:>10.2f} {t_loop:>13.2f} {t_loop / t_batched:>7.1f}x")
