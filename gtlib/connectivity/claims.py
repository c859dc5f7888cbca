"""The claims table of *Mode connectivity* (:class:`gtlib.claims.Claims`, ``declared=``)."""

from __future__ import annotations

__all__ = ["CLAIMS"]

#: The chapter's claims, by id: what the notebook checks (see the module docstring).
CLAIMS = {
    "mc.permutation_symmetry": dict(
        statement="Permuting hidden units leaves the function unchanged",
        paper="exact symmetry of MLPs (Entezari et al. 2022; Ainsworth et al. 2023)",
        rule="max_logit_diff <= 1e-10",
        kind="sanity",
    ),
    "mc.matching_recovers_planted_permutation": dict(
        statement="Weight matching finds a planted permutation under 30% weight noise (a check "
        "of the matching code on a planted answer)",
        paper="weight matching recovers permutations (Ainsworth et al. 2023, Sec. 3.2)",
        rule="min(recovered) >= 0.95",
        kind="sanity",
    ),
    "mc.naive_barrier_high": dict(
        statement="Independently trained nets are not linearly connected: the path climbs at "
        "least half-way to chance in loss and in error",
        paper="high barriers between independent SGD solutions (Frankle et al. 2020; Entezari "
        "et al. 2022; Ainsworth et al. 2023)",
        rule="loss >= chance_loss / 2 and err >= chance_err / 2",
        control="network A's twin: A's initialization, another minibatch order",
    ),
    "mc.matched_barrier_low": dict(
        statement="Weight matching cuts the train-loss and train-error barriers to at most 0.8 "
        "of the naive ones, three log-sd below a random permutation, without "
        "eliminating them (the error barrier stays above 2 points)",
        paper="weight matching makes MNIST MLPs nearly linearly connected (Ainsworth et al. "
        "2023)",
        rule="max(loss) <= bar and max(err) <= bar and min(err_left) >= 0.02",
        control="two random permutations in place of the matched one",
    ),
    "mc.repair_reduces_barrier": dict(
        statement="REPAIR needs data: with each unit's statistics from the training signals it "
        "leaves at most 2/3 of the barrier that a data-free rescaling of the weight "
        "norms leaves",
        paper="REPAIR reduces the barrier left by alignment (Jordan et al. 2023)",
        rule="max(rel) <= 2 / 3",
        control="REPAIR with its statistics on Gaussian noise, two draws",
        reason=(
            "restoring the units' scale, which needs no data, does the work: the "
            "data-free rescaling leaves less barrier than resetting each unit's mean from "
            "the data without rescaling",
            "min(means) > max(free)",
        ),
    ),
    "mc.barrier_shrinks_with_width": dict(
        statement="Wider nets align better: the matched barrier falls to 0.59 or less of "
        "itself from the narrowest to the widest width, from a barrier of 2 error "
        "points and 0.1 nats or more",
        paper="matched barrier decreases with width (Ainsworth et al. 2023; Entezari et al. "
        "2022)",
        rule="err0 >= 0.02 and barrier[0] >= 0.1 and barrier[-1] <= bar * barrier[0]",
        control="no alignment, same pairs",
    ),
    "mc.matched_barrier_falls_late": dict(
        statement="The matched barrier falls over the late epochs of training, to at most half "
        "its peak",
        paper="barrier versus epoch of an MNIST MLP (Ainsworth et al. 2023, and the authors' "
        "mnist_barrier_vs_epoch scripts)",
        rule="barrier[-1] <= 0.5 * max(barrier)",
        control="no alignment, same snapshots",
        reason=(
            "the optimizer and schedule are not the cause: trained as the paper's MNIST MLPs "
            "were, with Adam at a constant learning rate of 1e-3 and no warm-up (same width, "
            "data and epochs), the matched barrier does not fall to half its peak either",
            "adam[-1] > 0.5 * max(adam)",
        ),
    ),
    "mc.spawning_transition": dict(
        statement="Children spawned at initialization are unstable (every pair above 2 "
        "points); children spawned at the last spawn step are stable (every pair <= "
        "2 points)",
        paper="instability at k = 0 for large networks, stability after early training "
        "(Frankle et al. 2020, Sec. 3; 2 points is their threshold)",
        rule="min(k0) > 2 and max(late) <= 2",
        control="nothing shared: two independent networks at k = 0, children of two different "
        "parents at the last step",
    ),
    "mc.llfc_with_lmc": dict(
        statement="The children spawned at the last spawn step (linearly connected, and the "
        "closest pairs) have an LLFC ratio of at most tau = 0.11 at every hidden "
        "layer; the weight-matched pairs (trained, aligned, not linearly connected) "
        "stay above it (two extreme groups: the ratio does not mark connectivity "
        "among intermediate spawn steps)",
        paper="LLFC co-occurs with LMC (Zhou et al. 2023; the baseline 1 - cos(f_A, f_B) as in "
        "the authors' code)",
        rule="max(ratio) <= tau",
        control="the weight-matched pairs of the two widest widths",
    ),
    "mc.llfc_implies_lmc": dict(
        statement="LLFC at the logits implies LMC: a path whose logits are the interpolated "
        "logits never errs on more test signals than those that A or B misclassifies "
        "(convexity), for every pair",
        paper="LLFC implies LMC (Zhou et al. 2023)",
        rule="max(gap) <= 0",
        kind="sanity",
    ),
    "mc.commutativity": dict(
        statement="Alignment (weight or activation matching) and spawning make the two "
        "networks commute: the residual over its trivial bound falls by a third at "
        "every layer",
        paper="permutation and spawning methods work by inducing commutativity (Zhou et al. "
        "2023)",
        rule="max(wm + am + sp) <= 2 / 3",
        control="factor shrinkage: a randomly permuted B moved halfway towards A",
        reason=(
            "the raw residual R falls by a third at every layer for every pair, and by a "
            "third too when the two factors are shrunk without aligning any unit: the fall "
            "of R is the factors', not commutation",
            "max(raw) <= 2 / 3 and max(shrunk_raw) <= 2 / 3",
        ),
    ),
    "mc.weak_additivity": dict(
        statement="The children spawned at the last spawn step (linearly connected, and the "
        "closest pairs) have a worst-layer weak-additivity dissimilarity, over the "
        "independent pair's, of at most 0.13; the children spawned at initialization "
        "(trained, not linearly connected) stay above it (two extreme groups: it does "
        "not mark connectivity among intermediate spawn steps)",
        paper="permutation and spawning methods work by inducing weak additivity (Zhou et al. "
        "2023)",
        rule="max(cut) <= tau",
        control="the children spawned at initialization",
    ),
    "mc.cross_task_linearity": dict(
        statement="Two tasks fine-tuned from the real-label trained body are more cross-task "
        "linear than from a random initialization fine-tuned at half the learning rate, "
        "which moves its weights about as far in L2 distance: the three-run mean CTL ratio "
        "falls to {bar} or less of that arm's at every layer",
        paper="CTL emerges with pretraining and strengthens with its length (Zhou et al. 2024)",
        rule="max(fall) <= bar",
        control="a second random initialization in place of the trained body, fine-tuned at "
        "the same half learning rate, against the same arm",
    ),
    "mc.ctl_beyond_weight_scale": dict(
        statement="In hidden layer 1 the real-label trained body, fine-tuned at the chapter's "
        "learning rate, is more cross-task linear than the same body with its hidden weights "
        "and biases shuffled within each tensor (its scale and each tensor's values, in "
        "random places), fine-tuned at half that rate, where it moves about as far: the "
        "three-run mean CTL ratio falls to {bar} or less of that arm's",
        paper="CTL emerges with pretraining (Zhou et al. 2024)",
        rule="fall[0] <= bar",
        control="the second pretrained model, shuffled the same way and fine-tuned at half "
        "the rate, in place of the real-label body, against the same arm",
        reason=(
            "in hidden layer 1 the weights' scale gives the effect: the shuffled-weights "
            "body, with the trained body's scale and each tensor's values in random places, "
            "falls to {bar} or less of the untrained arm that moves as far in L2 distance",
            "scale_fall[0] <= bar",
        ),
    ),
    "mc.ctl_learned_beyond_scale": dict(
        statement="In hidden layers 2 and 3 the real-label trained body, fine-tuned at the "
        "chapter's learning rate, is more cross-task linear than the same body with its "
        "hidden weights and biases shuffled within each tensor, fine-tuned at half that "
        "rate, where it moves about as far: the three-run mean CTL ratio falls to {bar} or "
        "less of that arm's in both layers",
        paper="CTL emerges with pretraining (Zhou et al. 2024)",
        rule="max(fall) <= bar",
        control="the second pretrained model, shuffled the same way and fine-tuned at half "
        "the rate, in place of the real-label body, against the same arm",
    ),
    "mc.ctl_needs_learned_features": dict(
        statement="What pretraining learned makes the difference: the real-label body's CTL "
        "ratio is at most 2/3 of a shuffled-label body's (same pretraining budget) "
        "at every layer, three-run means",
        paper="CTL emerges with pretraining (Zhou et al. 2024)",
        rule="max(rel) <= 2 / 3",
        control="an untrained body (a second random initialization) in place of the real-label "
        "one",
        reason=(
            "training the body, not what it learns from the labels, does most of it: a "
            "body pretrained on shuffled labels for the same budget already cuts the ratio "
            "to the first claim's bar or less of the untrained arm's at the same learning "
            "rate at every layer (an arm that moves less far than it)",
            "max(shuffled) <= bar",
        ),
    ),
    "mc.averaging_is_ensembling": dict(
        statement="The weight average of two runs fine-tuned from one trained body (real or "
        "shuffled labels) departs from their logit ensemble less often than the "
        "better single run does (every pair of runs, both tasks)",
        paper="model averaging approximates ensembling via CTL (Zhou et al. 2024; Wortsman et "
        "al. 2022)",
        rule="max(rho) < 1",
        control="the arm without pretraining: a shared random init, same budget",
    ),
    "mc.task_arithmetic": dict(
        statement="Adding the other task's vector to a real-label trained body at lambda = 1, "
        "at the chapter's fine-tuning budget, keeps at least 0.65 of task 0's and 0.45 of "
        "task 1's training gain in every run pair, each bar three standard deviations above "
        "the untrained body's mean",
        paper="task addition (Ilharco et al. 2023; Zhou et al. 2024)",
        rule="min(gain0) >= bar0 and min(gain1) >= bar1",
        control="the same addition on the untrained body, same fine-tuning budget",
    ),
    "mc.curved_path": dict(
        statement="A quadratic Bezier curve joins two unaligned networks with a train-error "
        "barrier of at most Frankle et al.'s 2 points, where the straight line "
        "crosses near-chance error",
        paper="low-loss curves between independent solutions (Garipov et al. 2018; Draxler et "
        "al. 2018)",
        rule="err <= 0.02",
        control="the straight line between the same pair",
    ),
}
