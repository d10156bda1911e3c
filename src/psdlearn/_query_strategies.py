"""The query strategies of :mod:`psdlearn.active` and their shared helpers.

Every strategy has ``select(X, constraints, n_pairs, *, model=None, random_state=None)``
and returns pairs never asked before, without an ``n x n`` matrix. The public names are
exported by :mod:`psdlearn.active`.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.cluster import KMeans, MiniBatchKMeans
from sklearn.metrics import pairwise_distances_argmin_min
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_array, check_random_state

from psdlearn.constraints import PairwiseConstraints

__all__ = ["ExploreConsolidate", "KernelPlacement", "KernelUncertainty", "MinMax", "RandomPairs",
           "STRATEGIES"]

# ----------------------------------------------------------------------------- helpers
def _as_constraints(constraints, n_samples):
    """The pairs asked so far as PairwiseConstraints over ``n_samples`` points."""
    if constraints is None:
        return PairwiseConstraints(np.empty((0, 2), np.int64), np.empty(0, np.int64),
                                   n_samples)
    if isinstance(constraints, PairwiseConstraints):
        if constraints.n_samples > n_samples:
            raise ValueError(f"constraints refer to {constraints.n_samples} samples but X "
                             f"has {n_samples}.")
        return PairwiseConstraints(constraints.pairs, constraints.signs, n_samples)
    return PairwiseConstraints.from_array(constraints, n_samples=n_samples)


def _pair_keys(pairs, n):
    """One int64 key per unordered pair."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    lo, hi = np.minimum(pairs[:, 0], pairs[:, 1]), np.maximum(pairs[:, 0], pairs[:, 1])
    return lo * n + hi


class _Batch:
    """Pairs chosen so far in one call: never a pair asked before or chosen twice."""

    def __init__(self, C, n_pairs):
        self.n = C.n_samples
        self.asked = set(_pair_keys(C.pairs, self.n).tolist())
        self.pairs = []
        self.n_pairs = n_pairs

    @property
    def full(self):
        return len(self.pairs) >= self.n_pairs

    def add(self, i, j):
        i, j = int(i), int(j)
        key = min(i, j) * self.n + max(i, j)
        if i == j or key in self.asked or self.full:
            return False
        self.asked.add(key)
        self.pairs.append((min(i, j), max(i, j)))
        return True

    def fill_random(self, rng):
        """Complete the batch with uniform pairs (when a strategy runs out of candidates)."""
        n_possible = self.n * (self.n - 1) // 2
        while not self.full and len(self.asked) < n_possible:
            i, j = rng.randint(self.n, size=2)
            self.add(i, j)

    def result(self):
        return np.asarray(self.pairs, dtype=np.int64).reshape(-1, 2)


def _check_select_args(X, n_pairs):
    X = check_array(X, accept_sparse=False, dtype=np.float64, input_name="X")
    if not isinstance(n_pairs, numbers.Integral) or n_pairs < 0:
        raise ValueError(f"n_pairs must be a non-negative integer, got {n_pairs!r}.")
    return X


def _select_inputs(X, constraints, n_pairs, random_state):
    """``select``'s arguments checked: ``X``, its number of rows, the generator and the
    pairs asked so far."""
    X = _check_select_args(X, n_pairs)
    return X, X.shape[0], check_random_state(random_state), _as_constraints(constraints,
                                                                             X.shape[0])


def _unit_rows(E):
    """The rows of ``E`` scaled to unit norm (a zero row stays zero)."""
    return E / np.maximum(np.linalg.norm(E, axis=1, keepdims=True), 1e-12)


class RandomPairs:
    """Pairs drawn uniformly at random among those not yet asked: the baseline.

    Examples
    --------
    >>> import numpy as np
    >>> from psdlearn.active import RandomPairs
    >>> X = np.random.default_rng(0).normal(size=(50, 2))
    >>> RandomPairs().select(X, None, 5, random_state=0).shape
    (5, 2)
    """

    def select(self, X, constraints, n_pairs, *, model=None, random_state=None):
        """Return ``n_pairs`` uniform pairs ``i < j`` not in ``constraints``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        constraints : PairwiseConstraints, array-like of shape (m, 3) or None
            The pairs asked so far, with their answers.
        n_pairs : int
            Number of pairs to return.
        model : estimator, optional
            Unused; present for the common signature.
        random_state : int, RandomState instance or None, default=None

        Returns
        -------
        pairs : ndarray of shape (n_pairs, 2), int64
        """
        X = _check_select_args(X, n_pairs)
        batch = _Batch(_as_constraints(constraints, X.shape[0]), n_pairs)
        batch.fill_random(check_random_state(random_state))
        return batch.result()


# ------------------------------------------------------------- neighbourhood strategies
class _Neighbourhoods:
    """The state of a neighbourhood-based strategy, read from the answers alone.

    The neighbourhoods are must-link components (transitive closure) that are pairwise
    joined by a cannot-link, grown greedily from the largest component. In Explore &
    Consolidate and Min-Max every new neighbourhood is cannot-linked to all earlier ones,
    so noiseless answers give back exactly the neighbourhoods of the sequential procedure,
    without recording its order. A constrained point outside them is *open*: it was
    compared with some neighbourhoods (cannot-link) and not yet with the others.
    """

    def __init__(self, X, C):
        comp = C.must_link_components()
        self.comp = comp
        touched = C.constrained_samples
        cl_pairs = {(min(a, b), max(a, b)) for a, b in comp[C.cannot_link].tolist()}
        comps, sizes = np.unique(comp[touched], return_counts=True)
        first = {c: i for i, c in zip(touched[::-1], comp[touched][::-1], strict=True)}
        order = sorted(range(len(comps)), key=lambda k: (-sizes[k], first[comps[k]]))
        chosen = []
        for k in order:
            c = comps[k]
            if all((min(c, d), max(c, d)) in cl_pairs for d in chosen):
                chosen.append(c)
        self.members = [np.flatnonzero(comp == c) for c in chosen]
        self.centroids = (np.vstack([X[m].mean(axis=0) for m in self.members])
                          if chosen else np.empty((0, X.shape[1])))
        in_nb = np.zeros(C.n_samples, dtype=bool)
        for m in self.members:
            in_nb[m] = True
        self.skeleton = np.flatnonzero(in_nb)
        self.constrained = touched
        # neighbourhoods each open point is already cannot-linked to
        index = {c: k for k, c in enumerate(chosen)}
        self.excluded = {int(i): set() for i in touched[~in_nb[touched]]}
        for a, b in C.cannot_link.tolist():
            for p, q in ((a, b), (b, a)):
                if p in self.excluded and comp[q] in index:
                    self.excluded[p].add(index[comp[q]])

    def __len__(self):
        return len(self.members)


class _NeighbourhoodStrategy:
    """Explore (farthest-first traversal) then consolidate; the subclasses differ in the
    order of the neighbourhoods a point is compared with and in the consolidation point."""

    def __init__(self, n_clusters=None):
        self.n_clusters = n_clusters

    def _order(self, X, x, state):
        """Neighbourhoods in the order point ``x`` is compared with them, and the member
        of each it is paired with."""
        raise NotImplementedError

    def _consolidation_points(self, X, state, taken, rng):
        raise NotImplementedError

    def _query_next(self, X, x, state, batch, skip=()):
        """Add the first pair of ``x`` against a neighbourhood not excluded."""
        for k, partner in self._order(X, x, state):
            if k not in skip and batch.add(x, partner):
                return True
        return False

    def select(self, X, constraints, n_pairs, *, model=None, random_state=None):
        """Return the next ``n_pairs`` pairs of the procedure.

        Each open point (compared with some neighbourhoods only) gets its next
        comparison; then, while there are fewer than ``n_clusters`` neighbourhoods, new
        points of the farthest-first traversal are compared with their first
        neighbourhood (explore); after that, new points are (consolidate). In a batch
        each point is asked once, since its next question depends on the answer; with
        batches of one pair the procedure is the papers' sequential one.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        constraints : PairwiseConstraints, array-like of shape (m, 3) or None
            The pairs asked so far, with their answers.
        n_pairs : int
            Number of pairs to return.
        model : estimator, optional
            Unused; gives ``n_clusters`` when it is None and the model has one.
        random_state : int, RandomState instance or None, default=None

        Returns
        -------
        pairs : ndarray of shape (n_pairs, 2), int64
            Pairs never asked before; fewer only when every pair was asked.
        """
        X, n, rng, C = _select_inputs(X, constraints, n_pairs, random_state)
        n_clusters = self.n_clusters or getattr(model, "n_clusters", None)
        state = _Neighbourhoods(X, C)
        batch = _Batch(C, n_pairs)
        for x, skip in state.excluded.items():
            if batch.full:
                break
            self._query_next(X, x, state, batch, skip)
        taken = np.zeros(n, dtype=bool)
        taken[state.constrained] = True
        taken[np.asarray(batch.pairs, dtype=np.int64).ravel()] = True
        if not batch.full and (n_clusters is None or len(state) < n_clusters):
            self._explore(X, state, batch, taken, rng)
        if not batch.full:
            for x in self._consolidation_points(X, state, taken, rng):
                if batch.full:
                    break
                self._query_next(X, x, state, batch)
        batch.fill_random(rng)
        return batch.result()

    def _explore(self, X, state, batch, taken, rng):
        """Farthest-first traversal: the next point maximizes its distance to the points
        already traversed (Gonzalez 1985), compared with its nearest neighbourhood."""
        if len(state) == 0:
            seed = int(rng.randint(X.shape[0]))
            state.members = [np.array([seed])]
            state.centroids = X[[seed]]
            state.skeleton = np.array([seed])
            taken[seed] = True
        dist = _distance_to_set(X, np.flatnonzero(taken))
        while not batch.full and np.isfinite(dist).any() and dist.max() > 0:
            x = int(np.argmax(dist))
            self._query_next(X, x, state, batch)
            dist = np.minimum(dist, np.linalg.norm(X - X[x], axis=1))
            dist[x] = -np.inf
            taken[x] = True


def _distance_to_set(X, S):
    """Euclidean distance of every point to its nearest point of ``S`` (chunked, no n x
    |S| matrix held); ``-inf`` on ``S`` itself."""
    _, dist = pairwise_distances_argmin_min(X, X[S])
    dist[S] = -np.inf
    return dist


class ExploreConsolidate(_NeighbourhoodStrategy):
    """Explore & Consolidate (Basu, Banerjee & Mooney 2004).

    *Explore* finds one point per cluster by the farthest-first traversal: the next point
    is the one farthest from all points traversed so far,
    ``x = argmax_x min_{y in T} ||x - y||``, and is compared with one point of each known
    neighbourhood until a must-link; cannot-linked to all, it starts a new neighbourhood.
    *Consolidate*, once there are ``n_clusters`` neighbourhoods, takes random points
    outside them and compares each with the neighbourhoods in order of increasing distance
    of their centroids, until a must-link.

    Parameters
    ----------
    n_clusters : int, default=None
        Number of neighbourhoods to explore for; None takes the ``n_clusters`` of the
        ``model`` given to :meth:`select`, else explores without end.

    References
    ----------
    Basu, Banerjee & Mooney (2004), *Active semi-supervision for pairwise constrained
    clustering*, SIAM International Conference on Data Mining.

    Examples
    --------
    >>> import numpy as np
    >>> from psdlearn.active import ExploreConsolidate
    >>> X = np.array([[0.0], [1.0], [10.0], [11.0]])
    >>> ExploreConsolidate(n_clusters=2).select(X, [[0, 1, 1]], 1).tolist()
    [[1, 3]]
    """

    def _order(self, X, x, state):
        d = np.linalg.norm(state.centroids - X[x], axis=1)
        for k in np.argsort(d, kind="stable"):
            m = state.members[k]
            yield int(k), int(m[np.argmin(np.linalg.norm(X[m] - X[x], axis=1))])

    def _consolidation_points(self, X, state, taken, rng):
        free = np.flatnonzero(~taken)
        return rng.permutation(free)


class MinMax(_NeighbourhoodStrategy):
    """Min-Max query selection (Mallapragada, Jin & Jain 2008).

    With a similarity ``s(x, y) = exp(-||x - y||^2 / 2 sigma^2)``, the next point is the
    one least covered by the *skeleton* ``S`` (the points placed in neighbourhoods):
    ``x = argmin_x max_{y in S} s(x, y)``, which is the farthest-first point, whatever
    ``sigma``. It is compared with the neighbourhoods in order of decreasing similarity
    (its most similar member first), until a must-link. The explore phase builds the
    ``n_clusters`` neighbourhoods as Explore & Consolidate does; consolidation keeps
    choosing the least covered point rather than a random one.

    Parameters
    ----------
    n_clusters : int, default=None
        Number of neighbourhoods to explore for; None takes the ``n_clusters`` of the
        ``model`` given to :meth:`select`, else explores without end.

    References
    ----------
    Mallapragada, Jin & Jain (2008), *Active query selection for semi-supervised
    clustering*, International Conference on Pattern Recognition.

    Examples
    --------
    >>> import numpy as np
    >>> from psdlearn.active import MinMax
    >>> X = np.array([[0.0], [1.0], [5.0], [10.0], [11.0]])
    >>> MinMax(n_clusters=2).select(X, [[0, 1, 1], [1, 4, -1], [3, 4, 1]], 1).tolist()
    [[1, 2]]
    """

    def _order(self, X, x, state):
        nearest = []
        for m in state.members:
            d = np.linalg.norm(X[m] - X[x], axis=1)
            nearest.append((d.min(), int(m[np.argmin(d)])))
        for k in sorted(range(len(nearest)), key=lambda k: nearest[k][0]):
            yield k, nearest[k][1]

    def _consolidation_points(self, X, state, taken, rng):
        dist = _distance_to_set(X, np.flatnonzero(taken))
        while np.isfinite(dist).any():
            x = int(np.argmax(dist))
            yield x
            dist = np.minimum(dist, np.linalg.norm(X - X[x], axis=1))
            dist[x] = -np.inf


# ----------------------------------------------------------------- learned-kernel strategy
def _model_embedding(model, X):
    """Embedding of the training points by a fitted model, or None when it has none."""
    if model is None:
        return None
    E = getattr(model, "embedding_", None)
    if E is None and hasattr(model, "transform"):
        try:
            E = model.transform(X)
        except Exception:  # an unfitted model: no kernel to use yet
            return None
    return None if E is None else np.asarray(E, dtype=np.float64)


def _threshold(scores, signs):
    """Threshold on the normalised kernel that best separates the answers so far (the
    midpoint of the best split of their sorted scores); 0.5 without both answers."""
    if len(signs) == 0 or np.all(signs == signs[0]):
        return 0.5
    order = np.argsort(scores, kind="stable")
    s, y = scores[order], signs[order] > 0
    # errors when cutting after position k: must-links below + cannot-links above
    errors = np.concatenate([[0], np.cumsum(y)]) + np.concatenate(
        [[np.sum(~y)], np.sum(~y) - np.cumsum(~y)])
    k = int(np.argmin(errors))
    if k == 0:
        return float(s[0])
    if k == len(s):
        return float(s[-1])
    return float((s[k - 1] + s[k]) / 2)


class KernelUncertainty:
    """Pairs on which the learned kernel is least decided.

    With the learned embedding ``E`` of a fitted model (``K = E E^T``), the normalised
    kernel ``c_ij = K_ij / sqrt(K_ii K_jj)`` is near 1 for a pair the kernel puts
    together and near 0 or below for one it separates. The threshold ``tau`` is the cut
    of ``c`` that best separates the answers received so far (accuracy), and a pair is the
    more uncertain the smaller ``|c_ij - tau|``. Candidates, never all ``n^2`` pairs:

    - each of up to ``n_candidates`` sampled points with its ``n_neighbors`` nearest
      neighbours in the embedding (pairs near a cluster boundary);
    - each sampled point with the representative (the point nearest the centre) of its
      own and of its second-nearest cluster of the model's clustering (k-means on the
      embedding when the model has no ``labels_``): one answer places the point.

    Pairs whose answer the asked ones already imply (same must-link component, or
    components joined by a cannot-link) are skipped, and in a batch each point other than
    the representatives is asked at most once, so that a batch spreads over the data.
    Without a fitted model (the first round), the pairs come from
    :class:`ExploreConsolidate`.

    Parameters
    ----------
    n_clusters : int, default=None
        Number of clusters; None takes the model's ``n_clusters``, else 2.
    n_neighbors : int, default=10
        Neighbours per sampled point among the candidates.
    n_candidates : int, default=2000
        Number of sampled points whose pairs are scored.

    Examples
    --------
    >>> import psdlearn as pl
    >>> from psdlearn.active import KernelUncertainty
    >>> X, y = pl.datasets.load("iris")
    >>> C = pl.PairwiseConstraints.from_labels(y, n_must=20, n_cannot=20, random_state=0)
    >>> model = pl.ConstrainedClustering(3, random_state=0).fit(X, C)
    >>> KernelUncertainty().select(X, C, 10, model=model, random_state=0).shape
    (10, 2)
    """

    def __init__(self, n_clusters=None, *, n_neighbors=10, n_candidates=2000):
        self.n_clusters = n_clusters
        self.n_neighbors = n_neighbors
        self.n_candidates = n_candidates

    def select(self, X, constraints, n_pairs, *, model=None, random_state=None):
        """Return the ``n_pairs`` most uncertain candidate pairs not asked yet.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        constraints : PairwiseConstraints, array-like of shape (m, 3) or None
            The pairs asked so far, with their answers.
        n_pairs : int
            Number of pairs to return.
        model : fitted estimator, optional
            A fitted psdlearn learner or :class:`~psdlearn.ConstrainedClustering`: its
            ``embedding_`` (or ``transform(X)``) gives the kernel, its ``labels_`` the
            clusters.
        random_state : int, RandomState instance or None, default=None

        Returns
        -------
        pairs : ndarray of shape (n_pairs, 2), int64
        """
        X, n, rng, C = _select_inputs(X, constraints, n_pairs, random_state)
        n_clusters = self.n_clusters or getattr(model, "n_clusters", None) or 2
        E = _model_embedding(model, X)
        if E is None or E.shape[0] != n:
            return ExploreConsolidate(n_clusters).select(X, C, n_pairs, random_state=rng)
        U = _unit_rows(E)
        labels, reps, second = self._clusters(U, model, n_clusters, rng)
        anchors = (rng.choice(n, self.n_candidates, replace=False)
                   if n > self.n_candidates else np.arange(n))
        k = min(self.n_neighbors + 1, n)
        nbrs = NearestNeighbors(n_neighbors=k).fit(U).kneighbors(U[anchors],
                                                                 return_distance=False)
        cand = [np.column_stack([np.repeat(anchors, k), nbrs.ravel()]),
                np.column_stack([anchors, reps[labels[anchors]]]),
                np.column_stack([anchors, reps[second[anchors]]])]
        cand = np.vstack(cand)
        cand = cand[cand[:, 0] != cand[:, 1]]
        cand = np.unique(np.sort(cand, axis=1), axis=0)
        cand = cand[~self._implied(C, cand)]
        asked_scores = np.einsum("ij,ij->i", U[C.pairs[:, 0]], U[C.pairs[:, 1]])
        tau = _threshold(asked_scores, C.signs)
        scores = np.abs(np.einsum("ij,ij->i", U[cand[:, 0]], U[cand[:, 1]]) - tau)
        batch = _Batch(C, n_pairs)
        is_rep = np.zeros(n, dtype=bool)
        is_rep[reps] = True
        used = np.zeros(n, dtype=bool)
        for i, j in cand[np.argsort(scores, kind="stable")]:
            if batch.full:
                break
            if (used[i] and not is_rep[i]) or (used[j] and not is_rep[j]):
                continue
            if batch.add(i, j):
                used[i] = used[j] = True
        batch.fill_random(rng)
        return batch.result()

    @staticmethod
    def _clusters(U, model, n_clusters, rng):
        """Cluster of each point, the representative of each cluster (the point nearest
        its centre) and each point's second-nearest cluster."""
        labels = getattr(model, "labels_", None)
        if labels is None or len(labels) != U.shape[0]:
            cls = KMeans if U.shape[0] <= 20000 else MiniBatchKMeans
            labels = cls(n_clusters, n_init=3, random_state=rng.randint(2**31 - 1)).fit(
                U).labels_
        labels = np.asarray(labels, dtype=np.int64)
        present = np.unique(labels)
        centres = np.zeros((labels.max() + 1, U.shape[1]))
        for c in present:
            centres[c] = U[labels == c].mean(axis=0)
        reps = np.zeros(len(centres), dtype=np.int64)
        for c in present:
            idx = np.flatnonzero(labels == c)
            reps[c] = idx[np.argmin(np.linalg.norm(U[idx] - centres[c], axis=1))]
        d = np.linalg.norm(U[:, None, :] - centres[None, present, :], axis=2)
        d[np.arange(len(U)), np.searchsorted(present, labels)] = np.inf
        second = present[np.argmin(d, axis=1)] if len(present) > 1 else labels
        return labels, reps, second

    @staticmethod
    def _implied(C, cand):
        """Candidates whose answer follows from the asked pairs by transitivity."""
        if C.n_pairs == 0:
            return np.zeros(len(cand), dtype=bool)
        comp = C.must_link_components()
        a, b = comp[cand[:, 0]], comp[cand[:, 1]]
        cl = comp[C.cannot_link]
        n = C.n_samples
        cl_keys = set(_pair_keys(cl, n).tolist()) if len(cl) else set()
        keys = _pair_keys(np.column_stack([a, b]), n)
        return (a == b) | np.isin(keys, np.fromiter(cl_keys, np.int64, len(cl_keys)))


class KernelPlacement:
    """Place the points the learned kernel is least sure of into the neighbourhoods.

    The answers so far define *neighbourhoods*: must-link components pairwise joined by a
    cannot-link, as in :class:`ExploreConsolidate`. With the learned embedding ``E`` of a
    fitted model, a point's affinity to neighbourhood ``k`` is the cosine
    ``s_k(x) = <u_x, m_k> / ||m_k||`` of its normalised row ``u_x = e_x / ||e_x||`` with the
    mean ``m_k`` of the members' normalised rows. The points not yet placed are taken in
    order of increasing margin ``s_(1)(x) - s_(2)(x)`` between their two best
    neighbourhoods (the points the kernel cannot place), and each is asked against its
    most similar member of the neighbourhood it is most likely to join, then, after a
    cannot-link, of the next one: a must-link places it, cannot-links to every
    neighbourhood start a new one. Once there are ``n_clusters`` neighbourhoods, a point
    cannot-linked to all but one is placed without a question. This is the point-based
    scheme of Xiong, Azimi & Fern (2014) with the learned kernel as the similarity and the
    margin as the uncertainty.

    Each answer places, or narrows down, a whole point, and its neighbourhood's members
    share it by transitivity; a learner fitted on the closure of the answers
    (:meth:`PairwiseConstraints.closure`, ``active_learning(..., closure=True)``) sees
    those implied pairs. In a batch each point is asked once, since its next question
    depends on the answer; points left open by earlier rounds are asked first. Without a
    fitted model or neighbourhoods (the first round), the pairs come from
    :class:`ExploreConsolidate`. The cost is ``O(n r K)`` for ``K`` neighbourhoods: no
    ``n x n`` matrix.

    Parameters
    ----------
    n_clusters : int, default=None
        Number of clusters; None takes the model's ``n_clusters`` (without it, no point is
        placed by elimination).

    References
    ----------
    Xiong, Azimi & Fern (2014), *Active learning of constraints for semi-supervised
    clustering*, IEEE Transactions on Knowledge and Data Engineering.

    Examples
    --------
    >>> import psdlearn as pl
    >>> from psdlearn.active import KernelPlacement
    >>> X, y = pl.datasets.load("iris")
    >>> C = pl.PairwiseConstraints.from_labels(y, n_must=20, n_cannot=20, random_state=0)
    >>> model = pl.ConstrainedClustering(3, random_state=0).fit(X, C)
    >>> KernelPlacement().select(X, C, 10, model=model, random_state=0).shape
    (10, 2)
    """

    def __init__(self, n_clusters=None):
        self.n_clusters = n_clusters

    def select(self, X, constraints, n_pairs, *, model=None, random_state=None):
        """Return the next ``n_pairs`` questions: open points first, then new points by
        increasing margin.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        constraints : PairwiseConstraints, array-like of shape (m, 3) or None
            The pairs asked so far, with their answers.
        n_pairs : int
            Number of pairs to return.
        model : fitted estimator, optional
            A fitted psdlearn learner or :class:`~psdlearn.ConstrainedClustering`: its
            ``embedding_`` (or ``transform(X)``) gives the kernel.
        random_state : int, RandomState instance or None, default=None

        Returns
        -------
        pairs : ndarray of shape (n_pairs, 2), int64
            Pairs never asked before; fewer only when every pair was asked.
        """
        X, n, rng, C = _select_inputs(X, constraints, n_pairs, random_state)
        n_clusters = self.n_clusters or getattr(model, "n_clusters", None)
        E = _model_embedding(model, X)
        state = _Neighbourhoods(X, C)
        if E is None or E.shape[0] != n or len(state) == 0:
            return ExploreConsolidate(n_clusters).select(X, C, n_pairs, random_state=rng)
        U = _unit_rows(E)
        means = np.vstack([U[m].mean(axis=0) for m in state.members])
        affinity = U @ _unit_rows(means).T  # (n, K)
        complete = n_clusters is not None and len(state) >= n_clusters
        batch = _Batch(C, n_pairs)

        def ask(x, skip):
            left = [k for k in np.argsort(-affinity[x], kind="stable") if k not in skip]
            if not left or (complete and len(left) == 1):
                return  # nothing left to ask, or placed by elimination
            m = state.members[left[0]]
            batch.add(x, m[np.argmax(U[m] @ U[x])])

        for x, skip in state.excluded.items():
            if batch.full:
                break
            ask(x, skip)
        free = np.ones(n, dtype=bool)
        free[state.constrained] = False
        free = np.flatnonzero(free)
        if len(free) and not batch.full:
            top2 = -np.sort(-affinity[free], axis=1)[:, :2]
            margin = top2[:, 0] - top2[:, 1] if top2.shape[1] > 1 else -top2[:, 0]
            for x in free[np.argsort(margin, kind="stable")]:
                if batch.full:
                    break
                ask(x, ())
        batch.fill_random(rng)
        return batch.result()


#: Strategy classes by name, for :func:`active_learning` and the ``psdlearn query`` command.
STRATEGIES = {
    "random": RandomPairs,
    "explore_consolidate": ExploreConsolidate,
    "min_max": MinMax,
    "uncertainty": KernelUncertainty,
    "placement": KernelPlacement,
}


def _make_strategy(strategy, n_clusters):
    if isinstance(strategy, str):
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {sorted(STRATEGIES)} or an object with "
                             f"select(); got {strategy!r}.")
        cls = STRATEGIES[strategy]
        return cls() if cls is RandomPairs else cls(n_clusters)
    if not hasattr(strategy, "select"):
        raise TypeError(f"strategy must be a name or an object with select(); got "
                        f"{type(strategy).__name__}.")
    return strategy
