"""
====================================================
How good is a low-rank fit? The certificate and rank
====================================================

NPKL solves its problem over low-rank factors ``K = E E^T``, which is fast but not convex.
After a fit, ``certificate_`` computes a duality bound: how far, at most, the objective
is from the optimum of the convex problem over all PSD kernels (``gap_bound``, and
``relative_gap`` divided by the objective). When the bound is at or below
``certificate_tol`` the fit is certified optimal.

Below: the relative gap of fits at increasing fixed ranks on the glass data (six classes,
``square`` loss, solved to ``tol=1e-6``), and the rank that ``rank="adaptive"`` settles
on, growing the rank until the certificate holds.
"""

import matplotlib.pyplot as plt

import psdlearn as pl

X, y = pl.datasets.load("glass")
C = pl.PairwiseConstraints.from_labels(y, n_must=0.6, n_cannot=0.6, random_state=0)
params = dict(loss="square", tol=1e-6, random_state=0)

ranks = [1, 2, 3, 4, 5, 6, 7, 8]
gaps = []
for r in ranks:
    model = pl.NPKL(rank=r, **params).fit(X, C)
    gaps.append(model.certificate_.relative_gap)
    print(f"rank {r:2d}: relative gap <= {model.certificate_.relative_gap:.2e}")

adaptive = pl.NPKL(rank="adaptive", rank_init=2, **params).fit(X, C)
cert = adaptive.certificate_
print(f'rank="adaptive": rank {adaptive.rank_}, relative gap {cert.relative_gap:.2e}, '
      f"certified: {cert.certified}")

# %%
# The bound falls by orders of magnitude at rank 6 (glass has six classes): a rank-6
# kernel is within the tolerance of the best PSD kernel, and no larger rank helps.
# ``rank_path_`` lists the ``(rank, relative_gap)`` of each certificate the adaptive fit
# computed on its way.

fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
ax.semilogy(ranks, gaps, "o-", label="fixed rank")
path_r, path_gap = zip(*adaptive.rank_path_, strict=True)
ax.semilogy(path_r, path_gap, "s--", label='rank="adaptive" (its path)')
ax.axhline(adaptive.certificate_tol, color="gray", ls=":", label="certificate_tol")
ax.set_xlabel("rank of the learned kernel")
ax.set_ylabel("relative gap bound to the convex optimum")
ax.set_title(f"glass: n = {len(y)}, {C.n_pairs} pairs, square loss")
ax.legend()
plt.show()
