"""The training loops of gtlib.soft before gtlib.engine replaced them.

Copied verbatim from commit 421960b (only the names changed, ``old_`` prefixed, and the argument
check of ``steps`` inlined), so that tests/chapters/soft/test_compression.py can train one tiny
configuration with both and require the same numbers. The network they train,
:class:`gtlib.soft.SubspaceNet`, is unchanged and imported from gtlib.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from gtlib.checks import check_int
from gtlib.soft import SubspaceNet


# --- gtlib.soft.train_subspace ---
def old_train_subspace(
    model: SubspaceNet,
    x: torch.Tensor,
    y: torch.Tensor,
    steps: int,
    lr: float,
    batch_size: int | None = None,
    seed: int = 0,
) -> None:
    """Adam on the subspace coordinates ``z`` (cross-entropy), the learning rate decayed to 0
    along a cosine; full batch when ``batch_size`` is None, else minibatches drawn without
    replacement (reshuffled each epoch) from a generator seeded by ``seed``."""
    steps = check_int("steps", steps, 1)
    opt = torch.optim.Adam([model.z], lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    n = x.shape[0]
    g = torch.Generator().manual_seed(int(seed))
    order, pos = torch.randperm(n, generator=g), 0
    for _ in range(steps):
        if batch_size is None or batch_size >= n:
            xb, yb = x, y
        else:
            if pos + batch_size > n:
                order, pos = torch.randperm(n, generator=g), 0
            idx = order[pos : pos + batch_size].to(x.device)
            pos += batch_size
            xb, yb = x[idx], y[idx]
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(xb), yb).backward()
        opt.step()
        sched.step()


# --- gtlib.soft.tune_centres ---
def old_tune_centres(
    model: SubspaceNet,
    x: torch.Tensor,
    y: torch.Tensor,
    centres,
    symbols,
    steps: int = 30,
    lr: float = 0.01,
) -> np.ndarray:
    """Refit the ``L`` quantization centres to the training loss with the assignments held fixed.

    A learned codebook (as in Lotfi et al. 2022's quantization-aware training): only ``L`` numbers
    move, so the code length is unchanged while the quantized network's training error drops.
    Returns the new centres as float32.
    """
    c = torch.nn.Parameter(
        torch.as_tensor(np.asarray(centres, dtype=np.float32), device=x.device)
    )
    sym = torch.as_tensor(np.asarray(symbols), dtype=torch.int64, device=x.device)
    opt = torch.optim.Adam([c], lr=lr)
    for _ in range(int(steps)):
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x, c[sym]), y).backward()
        opt.step()
    return c.detach().cpu().numpy().astype(np.float32)
