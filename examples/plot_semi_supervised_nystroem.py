"""
=====================================================
Semi-supervised classification from 2 % of the labels
=====================================================

:class:`~psdlearn.GeneralizedNystroem` learns a low-rank kernel from partial labels
(``-1`` marks an unlabelled point) and all the points, labelled or not. Its ``transform``
returns features ``Q`` with ``K ~ Q Q^T``, so a *linear* SVM on ``Q`` is a kernel SVM with
the learned kernel. Here 2 % of 1000 points on two moons are labelled (about ten per
class on average); an RBF SVM trained on the labelled points alone is the baseline.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_moons
from sklearn.svm import SVC, LinearSVC

import psdlearn as pl

X, y = make_moons(n_samples=1000, noise=0.1, random_state=0)
rng = np.random.default_rng(0)
y_partial = np.where(rng.random(len(y)) < 0.02, y, -1)
labelled = y_partial >= 0
print(f"{labelled.sum()} labelled points out of {len(y)}")

Q = pl.GeneralizedNystroem(random_state=0).fit_transform(X, y_partial)
svm = LinearSVC().fit(Q[labelled], y[labelled])
pred = svm.predict(Q)

baseline = SVC(kernel="rbf").fit(X[labelled], y[labelled]).predict(X)

unlabelled = ~labelled
acc = (pred[unlabelled] == y[unlabelled]).mean()
acc_base = (baseline[unlabelled] == y[unlabelled]).mean()
print(f"accuracy on the unlabelled points: learned kernel {acc:.3f}, RBF SVM {acc_base:.3f}")

# %%
# The labelled points are the large markers.

fig, axes = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
panels = [(axes[0], baseline, f"RBF SVM on the labelled points\naccuracy {acc_base:.3f}"),
          (axes[1], pred, f"GeneralizedNystroem + linear SVM\naccuracy {acc:.3f}")]
for ax, p, title in panels:
    ax.scatter(X[:, 0], X[:, 1], c=p, cmap="coolwarm", s=6, alpha=0.6)
    ax.scatter(X[labelled, 0], X[labelled, 1], c=y[labelled], cmap="coolwarm", s=80,
               edgecolor="black")
    ax.set_title(title)
    ax.set_xticks([])
    ax.set_yticks([])
plt.show()
