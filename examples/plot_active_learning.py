"""
Asking for the pairs that matter, with an annotator who makes mistakes
======================================================================

Each must-link / cannot-link answer costs a person's attention, and some answers
are wrong. :func:`psdlearn.active.active_learning` runs the loop a labelling
session would: choose a batch of pairs, ask them, update the model, repeat
until the budget is spent. Here a simulated annotator,
:class:`psdlearn.active.LabelOracle`, answers from the true classes of two
interleaved half-moons and gets 10% of the answers wrong.

We compare three ways of choosing the pairs: at random;
:class:`psdlearn.active.KernelUncertainty`, which asks about the pairs the
kernel learned so far is least sure of (its normalised kernel value closest to
the threshold that separates the answers received), each point at most once
per batch; and :class:`psdlearn.active.KernelPlacement`, which takes the points
the kernel cannot place and asks each against the group it ranks first.
Afterwards the fitted kernel names the answers it disagrees with most, the
first ones to check again.
"""

# %%
# The data and the annotator
# --------------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_moons
from sklearn.metrics import rand_score

import psdlearn as pl
from psdlearn.active import LabelOracle, active_learning

X, y = make_moons(n_samples=300, noise=0.08, random_state=0)

# %%
# The loop, once per strategy
# ---------------------------
# Each round updates the clustering with the new answers by ``partial_fit`` (the
# kNN graph of the first round is kept). ``callback`` is called after every round
# with the model of the answers so far: here it records the Rand index against the
# true classes (which the loop itself never sees).
curves, mistakes = {}, {}
for strategy in ("random", "uncertainty", "placement"):
    oracle = LabelOracle(y, noise=0.1, random_state=0)
    curve = []

    def record(model, C, curve=curve):
        curve.append((C.n_pairs, rand_score(y, model.labels_)))

    model, C, history = active_learning(
        pl.ConstrainedClustering(n_clusters=2, estimator=pl.NPKL(certificate_tol=None),
                                 random_state=0),
        X, oracle, strategy=strategy, budget=120, batch_size=20, callback=record,
        random_state=0)
    curves[strategy] = (np.array(curve), model, C)
    mistakes[strategy] = oracle.n_mistakes_
    print(f"{strategy:>11}: {C.n_pairs} answers ({oracle.n_mistakes_} wrong), "
          f"Rand index {curve[-1][1]:.3f}")

# %%
# Rand index against the number of answers, and the pairs each strategy asked
# ---------------------------------------------------------------------------
fig, axes = plt.subplots(1, 4, figsize=(17, 4))
for name, (curve, _, _) in curves.items():
    axes[0].plot(curve[:, 0], curve[:, 1], "o-", label=name)
axes[0].set_xlabel("answers received")
axes[0].set_ylabel("Rand index")
axes[0].set_title("learning curve (10% wrong answers)")
axes[0].legend()
for ax, (name, (_, model, C)) in zip(axes[1:], curves.items(), strict=True):
    ax.scatter(X[:, 0], X[:, 1], c=model.labels_, s=8, cmap="coolwarm", alpha=0.6)
    for (i, j), s in zip(C.pairs, C.signs, strict=True):
        ax.plot(X[[i, j], 0], X[[i, j], 1], "-" if s > 0 else ":",
                color="tab:green" if s > 0 else "tab:red", lw=0.8)
    ax.set_title(f"{name}: pairs asked (green must, red cannot)")
    ax.set_xticks([])
    ax.set_yticks([])
fig.tight_layout()
plt.show()

# %%
# Which answers does the kernel contradict?
# -----------------------------------------
# ``constraint_scores_`` of the learned NPKL ranks the answers by how strongly
# the kernel disagrees with them. With a reliable annotator, pass
# ``closure=True`` to ``active_learning``: the fits then see every pair the
# answers imply by transitivity, which multiplies what ``"placement"`` learns
# from each answer (and multiplies wrong answers too, which is why it is off
# here).
_, model, C = curves["placement"]
_, top = model.estimator_.suspicious_constraints(k=10)
wrong = (y[top[:, 0]] == y[top[:, 1]]) != (top[:, 2] > 0)
print(f"of the 10 answers ranked most suspicious, {wrong.sum()} are wrong "
      f"(the annotator gave {mistakes['placement']} wrong answers in all)")
