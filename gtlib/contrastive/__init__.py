"""Contrastive learning under imbalanced data, and pruning as a remedy.

This module backs the chapter *Contrastive learning under imbalance* (``book/imbalanced-contrastive``),
which re-runs, at laptop scale, the experiments of

    Liao, Zhou, Zhang, Wang and Zhang, "Theoretical Analysis of Contrastive Learning under
    Imbalanced Data: From Training Dynamics to a Pruning Solution", ICLR 2026 (arXiv:2602.10357).

The paper has no public code. The algorithm follows the paper and its first author's summary; every
constant below is our own choice (the chapter lists them and derives which ratios are learnable). The
pieces, top to bottom:

1. **Data** (sparse coding in the style of Wen and Li, ICML 2021): a dictionary ``M`` of ``K``
   orthonormal feature directions in ``R^d``; a sample's sparse code ``z`` in ``{-1, 0, 1}^K`` has
   feature ``k`` active with probability ``p_k``; majority features have ``p_k = q``, minority
   features ``q / ratio``. A sample is ``L`` tokens; ``n_signal`` of them carry ``M z`` and every
   token carries isotropic Gaussian noise. Two *views* (augmentations) of a sample share ``z`` but
   redraw the noise and which tokens carry the signal.
2. **Encoder**: one single-head self-attention layer (value = identity, ``softmax(X A X^T)``) followed
   by ``m`` neurons with the symmetric biased ReLU ``BReLU_b(s) = ReLU(s - b) - ReLU(-s - b)``,
   summed over tokens: ``f_r(X) = sum_l BReLU_b(<w_r, h_l>)``.
3. **Loss**: InfoNCE with temperature ``tau`` between an online view and a target view under
   stop-gradient, plus weight decay.
4. **Pruning**: every ``prune_every`` steps, mask the fraction ``rho`` of neurons with the smallest
   weight norm in the online forward pass; gradients are computed through the masked model with a
   straight-through rule, so *all* neurons keep being updated and no weight is removed for good.
5. **Metrics**: each neuron's projection on each feature and on the noise space, its dominant feature,
   the dominant-to-second ratio, purity, strong single-feature specialists (with a magnitude
   floor), the minority/majority energy ratio, the stage-I margin ``mu``; linear probes.
6. **Real data**: the same contrastive recipe on long-tailed MNIST-1D (Greydanus and Kobak 2024),
   judged against the randomly initialized encoder.

The package follows those sections: ``common`` (the shared checks and the
configuration), ``data``, ``encoder`` (encoder, loss and pruning), ``alignment``, ``training``,
``longtail`` (the long-tailed MNIST-1D), ``summaries`` and ``figures``; ``claims`` is the chapter's claims table.
"""

# Every public name of the submodules stays reachable as ``gtlib.contrastive.<name>``: the API in
# ``__all__``, the results and networks its functions return, and the building blocks they call.
from .claims import CLAIMS
from .common import ContrastiveConfig
from .data import feature_dictionary, feature_frequencies, single_feature_samples
from .encoder import infonce, infonce_orthogonal_closed_form
from .alignment import (
    energy_ratio,
    feature_summary,
    learning_margin,
    masked_energy_share,
    masked_majority_share,
    strong_specialists,
    union_purity_gap,
)
from .training import (
    best_alignment_curves,
    condition_means,
    continue_encoders,
    EncoderRun,
    energy_curves,
    feature_probe_accuracy,
    MASKS,
    paired,
    representations,
    ridge_probe,
    train_encoders,
)
from .longtail import LongTailConfig, random_encoder_accuracy, train_longtail
from .summaries import condition_table, stage_curves
from .figures import draw_alignment

__all__ = [
    # the chapter's claims table
    "CLAIMS",
    # configs and results
    "ContrastiveConfig",
    "LongTailConfig",
    # functions
    "best_alignment_curves",
    "condition_table",
    "continue_encoders",
    "draw_alignment",
    "energy_curves",
    "energy_ratio",
    "feature_frequencies",
    "feature_summary",
    "infonce",
    "infonce_orthogonal_closed_form",
    "learning_margin",
    "masked_energy_share",
    "masked_majority_share",
    "paired",
    "random_encoder_accuracy",
    "representations",
    "single_feature_samples",
    "stage_curves",
    "strong_specialists",
    "train_encoders",
    "train_longtail",
    "union_purity_gap",
]
