"""The claims table of *Feature contamination* (:class:`gtlib.claims.Claims`, ``declared=``)."""

from __future__ import annotations

__all__ = ["CLAIMS"]

#: The chapter's claims, by id: what the notebook checks (see the module docstring).
CLAIMS = {
    "fc.background_uncorrelated": dict(
        statement="Background coordinates carry no label information in training",
        paper="background drawn independently of the label (condition (i), Section 4)",
        rule="max_abs_corr <= 5 / n ** 0.5 and min_abs_core_corr >= 0.5",
        kind="sanity",
    ),
    "fc.relu_learns_background": dict(
        statement="A ReLU net's background projection grows in training (theory config)",
        paper="background projection norm grows for the ReLU network (Figure 3)",
        rule="ratio >= 1.3",
        control="the same ReLU network (same draw, same initialization) trained on a centred "
        "background",
    ),
    "fc.linear_ignores_background": dict(
        statement="A linear net's background projection only decays, as weight decay predicts",
        paper="linear networks do not learn the background (Section 4, Figure 3)",
        rule="abs(ratio - wd_only) <= 0.03",
        control="ReLU network, same data and training",
    ),
    "fc.growth_along_mean_direction": dict(
        statement="The ReLU net's background weights grow along the background mean direction "
        "only; orthogonal to it they do not grow",
        paper="gradient projections on background features accumulate for asymmetric neurons "
        "(Theorem 4.2 and its proof idea, Section 4)",
        rule="mean_ratio >= 2 and orth_ratio <= 1",
        control="the same ReLU network trained on a centred background U[-1/2, 1/2]",
    ),
    "fc.bias_equivalence": dict(
        statement="Under SGD each neuron's weight change along the background mean is "
        "sqrt(k_b)/2 times its bias change (weight-decay corrected), whatever the "
        "activation or loss",
        paper="book derivation (theory section); the paper proves the growth (Theorem 4.2), "
        "not this identity",
        rule="min(corrs) >= 0.95 and max(abs(s / pred - 1) for s in slopes) <= 1 / 3",
        kind="sanity",
    ),
    "fc.relu_moves_biases": dict(
        statement="The ReLU net's mean move along e is its mean bias move times the "
        "background's mean along e, mu_e, to within the allowance r = 1/3",
        paper="book derivation (the bias equivalence read off the network's mean moves); the "
        "paper proves the growth (Theorem 4.2), not this identity",
        rule="abs(mu * bias_move - along_move) <= along_move / 3",
        kind="sanity",
    ),
    "fc.shift_hurts_relu_only": dict(
        statement="The background shift (m = 1) raises the ReLU net's test hinge loss, and "
        "does not once the background has no mean",
        paper="OOD risk well above ID risk for ReLU, not for linear networks (Theorem 4.3)",
        rule="ood_minus_id_loss >= 0.1",
        control="the same ReLU network trained and tested on a centred background, same shift",
    ),
    "fc.mean_is_second_bias": dict(
        statement="A constant background at its mean 1/2, with no variation, is enough for the "
        "ReLU net's growth along e and its loss under the shift",
        paper="book test of the bias equivalence; the paper's theorems assume a random "
        "background",
        rule="mean_ratio >= 2 and ood_minus_id_loss >= 0.1",
        control="the same ReLU network on a centred background (variation, no mean)",
    ),
    "fc.asymmetric_activation": dict(
        statement="After training, most ReLU gates are open on the class their output weight "
        "votes for and shut on the other; at initialization they are not",
        paper="after enough SGD iterations many neurons are activated mainly by their positive "
        "class (Theorem 4.1)",
        rule="matched >= 0.5 * width and mismatched <= 0.05 * width",
        control="the same ReLU network at its initialization, before any training",
    ),
    "fc.contamination_is_general": dict(
        statement="Contamination is not specific to ReLU + hinge loss: ReLU-like gates and the "
        "logistic loss, trained by SGD, also grow the background along its mean",
        paper="background features grow for other activations (Figure 3(d))",
        rule="min(mean_ratios) >= 2",
        control="the same four networks trained on a centred background",
    ),
    "fc.adamw_contaminates": dict(
        statement="Trained by AdamW, the ReLU net's background weights grow along the "
        "background mean far beyond what AdamW's own random walk gives them",
        paper="background features grow with other optimizers (Figure 3(d))",
        rule="mean_ratio >= 4",
        control="the same AdamW network trained on a centred background",
    ),
    "fc.default_config_ood_drop": dict(
        statement="In the default configuration the shift along the background mean raises the "
        "logistic loss more than equal-norm background shifts orthogonal to it",
        paper="authors' default toy script (ID and OOD losses only); comparison ours",
        rule="mean(diff) - 3 * sd(diff) / len(diff) ** 0.5 > 0",
        control="the same comparison with a random direction orthogonal to e in place of e",
        reason=(
            "the background weights orthogonal to e, which the mean cannot drive, grow "
            "too: at least twofold on average over the replicates",
            "mean(orth_ratio) >= 2",
        ),
    ),
    "fc.default_activations": dict(
        statement="In the default configuration tanh and sigmoid contaminate too, through the "
        "background's mean",
        paper="background features grow for other activations (Figure 3(d)); the authors' "
        "script compares ReLU, GELU, sigmoid and tanh",
        rule="min(ratios) >= 2",
        control="the same networks, same draw, centred background",
        reason=(
            "on the U[0,1] background the same networks' weights orthogonal to e, where "
            "the mean has no component, at least double: the growth is not the mean's doing",
            "min(orth) >= 2",
        ),
    ),
    "fc.distillation_gap": dict(
        statement="After 1000 distillation steps (the quick budget), students that fit a "
        "background-blind teacher in distribution, with or without gates in their "
        "fit, are not robust to the background shift",
        paper="students distilled from CLIP representations are less robust than their "
        "teachers under linear probing (Section 3)",
        rule="max(errors) <= 0.05 and min(gaps) >= 0.05",
        control="the same two distillations on a centred background",
    ),
    "fc.distillation_gap_longer_training": dict(
        statement="After four times the distillation steps (4000), the same students are still "
        "not robust to the background shift",
        paper="students distilled from CLIP representations are less robust than their "
        "teachers under linear probing (Section 3)",
        rule="max(errors) <= 0.05 and min(gated_gap, gatefree_gap) >= 0.05 * n_test",
        control="the same two distillations on a centred background (at 1000 steps, where they "
        "already match the teacher)",
        reason=(
            "by 4000 steps both students' weight along e has fallen below a quarter of its "
            "value at initialization",
            "max(along_longer) <= along_init / 4",
        ),
    ),
    "fc.distillation_gates": dict(
        statement="At the quick budget (1000 steps) the student fails because it fits the "
        "teacher through its ReLU gates: a student fitted without gates stays robust",
        paper="book hypothesis from the paper's account through activation asymmetry (Theorem "
        "4.1)",
        rule="probe_gap >= 0.05",
        control="the gate-free student: same fit on the teacher's pre-activations",
        reason=(
            "the gate-free student fails through weight along e that distillation grows: "
            "started from the same initialization with its weight along e projected out, "
            "it grows weight along e again and its probe still loses more than the bar",
            "zeroed_gap >= 0.05",
        ),
    ),
    "fc.mnist1d_mean_hurts": dict(
        statement="On MNIST-1D with a label-independent U[0,1] background, the shift m = 1 "
        "costs the linear classifier more of its accuracy above chance than it costs "
        "the same classifier on the centred version of the same background draw",
        paper="(book extension of the paper's toy model to real signals)",
        rule="mean(diff) - 3 * sd(diff) / len(diff) ** 0.5 >= 0.1",
        control="two linear classifiers on the same centred draw, from different "
        "initializations",
    ),
    "fc.mnist1d_mean_hurts_mlp": dict(
        statement="On MNIST-1D the shift m = 1/2 of a U[0,1] background along its mean costs "
        "the ReLU MLP more of its accuracy above chance than equal-norm shifts "
        "orthogonal to the mean",
        paper="(book extension of the paper's toy model to real signals)",
        rule="mean(diff) - 3 * sd(diff) / len(diff) ** 0.5 >= 0.1",
        control="the same comparison with a fifth random direction orthogonal to the mean in "
        "place of the mean",
    ),
    "fc.mnist1d_linear_immune": dict(
        statement="On MNIST-1D the shift m = 1/2 along the mean, beyond equal-norm shifts "
        "orthogonal to it, costs a linear classifier a clearly smaller share of its "
        "accuracy above chance than the ReLU MLP trained on the same draw",
        paper="(book extension of the paper's toy model, where linear networks are immune)",
        rule="mean(diff) - 3 * sd(diff) / len(diff) ** 0.5 >= 0.1",
        control="the same comparison with a fifth random direction orthogonal to the mean in "
        "place of the mean, for both models",
        reason=(
            "the background's mean hurts the linear classifier too: draw by draw, at the "
            "same m = 1/2, it loses a tenth of its accuracy above chance more on the "
            "uniform background than on the centred version of the same draw",
            "mean(half_diff) - 3 * sd(half_diff) / len(half_diff) ** 0.5 >= 0.1",
        ),
    ),
}
