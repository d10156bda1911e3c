"""Active selection of must-link / cannot-link queries, and the query loop around an oracle.

Constraints cost a person's attention: each pair ``(i, j)`` is a question, "do ``i`` and
``j`` belong together?". A *strategy* chooses the next pairs to ask from the points ``X``
and the answers so far; an *oracle* answers them; :func:`active_learning` alternates the
two with fits of a learner, up to a budget of questions.

Every strategy has the method ``select(X, constraints, n_pairs, *, model=None,
random_state=None)`` and returns pairs never asked before. None builds an ``n x n``
matrix: distances are taken to at most a few hundred constrained points (chunked), and
candidate pairs come from nearest neighbours of a sample of points.

- :class:`RandomPairs`: pairs drawn uniformly, the baseline.
- :class:`ExploreConsolidate`: Basu, Banerjee & Mooney (2004).
- :class:`MinMax`: Mallapragada, Jin & Jain (2008).
- :class:`KernelUncertainty`: pairs on which the learned kernel is least decided.

An oracle is any object with a method ``query(i, j) -> bool`` (``True``: must-link), the
protocol of the ``active-semi-supervised-clustering`` package, whose oracles work here
unchanged. :class:`LabelOracle` answers from known labels, with optional mistakes.
"""

from __future__ import annotations

import numbers
import time
from typing import NamedTuple

import numpy as np
from sklearn.base import clone
from sklearn.cluster import KMeans, MiniBatchKMeans
from sklearn.metrics import adjusted_rand_score, pairwise_distances_argmin_min
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_array, check_random_state

from psdlearn._progress import progress_bar
from psdlearn.constraints import PairwiseConstraints

__all__ = [
    "ExploreConsolidate",
    "KernelUncertainty",
    "LabelOracle",
    "MaximumQueriesExceeded",
    "MinMax",
    "RandomPairs",
    "STRATEGIES",
    "active_learning",
    "ActiveLearningResult",
]


class MaximumQueriesExceeded(Exception):
    """Raised by an oracle asked more questions than its budget allows.

    :func:`active_learning` stops on it (and on the exception of the same name of the
    ``active-semi-supervised-clustering`` package) and keeps the answers received.
    """


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
        X = _check_select_args(X, n_pairs)
        n = X.shape[0]
        rng = check_random_state(random_state)
        C = _as_constraints(constraints, n)
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
        X = _check_select_args(X, n_pairs)
        n = X.shape[0]
        rng = check_random_state(random_state)
        C = _as_constraints(constraints, n)
        n_clusters = self.n_clusters or getattr(model, "n_clusters", None) or 2
        E = _model_embedding(model, X)
        if E is None or E.shape[0] != n:
            return ExploreConsolidate(n_clusters).select(X, C, n_pairs, random_state=rng)
        U = E / np.maximum(np.linalg.norm(E, axis=1, keepdims=True), 1e-12)
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


#: Strategy classes by name, for :func:`active_learning` and the ``psdlearn query`` command.
STRATEGIES = {
    "random": RandomPairs,
    "explore_consolidate": ExploreConsolidate,
    "min_max": MinMax,
    "uncertainty": KernelUncertainty,
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


# --------------------------------------------------------------------------- oracles
class LabelOracle:
    """An oracle that answers from known labels, with optional mistakes and a budget.

    ``query(i, j)`` returns ``y[i] == y[j]`` (True: must-link), flipped with probability
    ``noise``: a simulated annotator for experiments.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        The true labels.
    noise : float, default=0.0
        Probability, in ``[0, 1)``, that an answer is wrong.
    max_queries : int, default=None
        Budget: the query after the ``max_queries``-th raises
        :class:`MaximumQueriesExceeded`. None: no limit.
    random_state : int, RandomState instance or None, default=None
        Seeds the mistakes.

    Attributes
    ----------
    n_queries_ : int
        Questions answered so far.
    n_mistakes_ : int
        Wrong answers given so far.

    Examples
    --------
    >>> from psdlearn.active import LabelOracle
    >>> oracle = LabelOracle([0, 0, 1], max_queries=2)
    >>> oracle.query(0, 1), oracle.query(0, 2)
    (True, False)
    """

    def __init__(self, y, *, noise=0.0, max_queries=None, random_state=None):
        self.y = np.asarray(y).ravel()
        if not 0.0 <= noise < 1.0:
            raise ValueError(f"noise must be in [0, 1), got {noise!r}.")
        if max_queries is not None and (not isinstance(max_queries, numbers.Integral)
                                        or max_queries < 0):
            raise ValueError(f"max_queries must be a non-negative integer or None, got "
                             f"{max_queries!r}.")
        self.noise = noise
        self.max_queries = max_queries
        self.random_state = random_state
        self._rng = check_random_state(random_state)
        self.n_queries_ = 0
        self.n_mistakes_ = 0

    def query(self, i, j):
        """Answer whether points ``i`` and ``j`` belong together.

        Parameters
        ----------
        i, j : int
            Indices of the two points.

        Returns
        -------
        bool
            True for must-link, False for cannot-link.

        Raises
        ------
        MaximumQueriesExceeded
            When the budget ``max_queries`` is spent.
        ValueError
            When ``i`` or ``j`` is not an index of ``y``.
        """
        if self.max_queries is not None and self.n_queries_ >= self.max_queries:
            raise MaximumQueriesExceeded(f"the oracle's budget of {self.max_queries} "
                                         "queries is spent.")
        n = len(self.y)
        if not (0 <= int(i) < n and 0 <= int(j) < n):
            raise ValueError(f"i={i}, j={j}: the oracle knows the labels of {n} points, "
                             f"indices 0 to {n - 1}.")
        self.n_queries_ += 1
        answer = bool(self.y[int(i)] == self.y[int(j)])
        if self.noise and self._rng.random_sample() < self.noise:
            self.n_mistakes_ += 1
            answer = not answer
        return answer


def _is_budget_exception(exc):
    return type(exc).__name__ == "MaximumQueriesExceeded"


# ------------------------------------------------------------------------------ loop
class ActiveLearningResult(NamedTuple):
    """What :func:`active_learning` returns (a tuple: ``est, C, history = result``).

    Parameters
    ----------
    estimator : estimator
        The estimator fitted on every answer.
    constraints : PairwiseConstraints
        The pairs asked (and those given as ``initial``) with their answers.
    history : list of dict
        One dict per round: ``n_queries``, ``n_must``, ``n_cannot``, ``select_time``,
        ``fit_time`` (seconds), ``stability`` (adjusted Rand index of the labels against
        the previous round; None without ``labels_``).
    """

    estimator: object
    constraints: PairwiseConstraints
    history: list


def active_learning(estimator, X, oracle, *, strategy="uncertainty", budget=300,
                    batch_size=20, initial=None, stop_tol=None, callback=None,
                    random_state=None, verbose=0):
    """Ask an oracle for must-link / cannot-link answers and learn from them, in rounds.

    Each round selects ``batch_size`` pairs with ``strategy`` (given the model fitted
    on the answers so far), asks ``oracle.query(i, j)`` for each, and updates the model:
    ``partial_fit(X, new_pairs)`` when the estimator has it, else a fit on all the
    answers. It stops when ``budget`` questions were asked, when the oracle raises
    ``MaximumQueriesExceeded`` (its own budget), or, with ``stop_tol``, when the clustering
    no longer changes: the adjusted Rand index between the ``labels_`` of consecutive
    rounds exceeds ``1 - stop_tol`` twice in a row.

    Parameters
    ----------
    estimator : estimator
        An unfitted psdlearn learner or :class:`~psdlearn.ConstrainedClustering`
        (cloned). The stopping rule needs ``labels_``.
    X : array-like of shape (n_samples, n_features)
        All the points (the questions are about pairs of them).
    oracle : object with ``query(i, j) -> bool``
        Answers True for must-link, False for cannot-link.
    strategy : {"uncertainty", "explore_consolidate", "min_max", "random"} or object, \
default="uncertainty"
        A name of :data:`STRATEGIES` (built with the estimator's ``n_clusters``) or an
        object with the method ``select(X, constraints, n_pairs, *, model,
        random_state)``.
    budget : int, default=300
        Maximum number of questions asked.
    batch_size : int, default=20
        Questions per round (one fit per round).
    initial : PairwiseConstraints or array-like of shape (m, 3), default=None
        Answers known before the first round (not counted in the budget).
    stop_tol : float, default=None
        Tolerance of the stopping rule; None: run to the budget.
    callback : callable, default=None
        Called after each round as ``callback(estimator, constraints)`` (the model fitted
        on the answers so far); the loop stops when it returns True.
    random_state : int, RandomState instance or None, default=None
        Seeds the strategy, and the estimator when its own ``random_state`` is None.
    verbose : int, default=0
        A progress bar (questions asked) on stderr when positive.

    Returns
    -------
    ActiveLearningResult
        ``(estimator, constraints, history)``: the fitted estimator, every answer, and one
        dict per round.

    Examples
    --------
    >>> import psdlearn as pl
    >>> from psdlearn.active import LabelOracle, active_learning
    >>> X, y = pl.datasets.load("iris")
    >>> est, C, history = active_learning(
    ...     pl.ConstrainedClustering(3, random_state=0), X, LabelOracle(y), budget=40,
    ...     random_state=0)
    >>> C.n_pairs, len(history)
    (40, 2)
    """
    X = check_array(X, accept_sparse=False, dtype=np.float64)
    n = X.shape[0]
    if not hasattr(oracle, "query"):
        raise TypeError(f"oracle must have a method query(i, j); got "
                        f"{type(oracle).__name__}.")
    for name, value in (("budget", budget), ("batch_size", batch_size)):
        if not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    if stop_tol is not None and not 0 < stop_tol < 1:
        raise ValueError(f"stop_tol must be in (0, 1) or None, got {stop_tol!r}.")
    rng = check_random_state(random_state)
    base = clone(estimator)
    params = base.get_params(deep=False)
    if "random_state" in params and params["random_state"] is None:
        base.set_params(random_state=int(rng.randint(np.iinfo(np.int32).max)))
    strat = _make_strategy(strategy, params.get("n_clusters"))
    C = _as_constraints(initial, n)
    model = clone(base).fit(X, C) if C.n_pairs else None
    history, asked, calm = [], 0, 0
    previous = getattr(model, "labels_", None)
    with progress_bar(verbose, total=budget, desc="active learning", unit="pair") as bar:
        while asked < budget:
            t0 = time.perf_counter()
            pairs = strat.select(X, C, min(batch_size, budget - asked), model=model,
                                 random_state=rng)
            select_time = time.perf_counter() - t0
            answers, exhausted = [], False
            for i, j in pairs.tolist():
                try:
                    answers.append(1 if oracle.query(i, j) else -1)
                except Exception as exc:
                    if not _is_budget_exception(exc):
                        raise
                    exhausted = True
                    break
            new = PairwiseConstraints(pairs[:len(answers)], np.asarray(answers, np.int64), n)
            if new.n_pairs == 0:
                break
            asked += new.n_pairs
            C = PairwiseConstraints(np.vstack([C.pairs, new.pairs]),
                                    np.concatenate([C.signs, new.signs]), n)
            t0 = time.perf_counter()
            if model is not None and hasattr(model, "partial_fit"):
                model.partial_fit(X, new)
            else:
                model = clone(base).fit(X, C)
            fit_time = time.perf_counter() - t0
            labels = getattr(model, "labels_", None)
            stability = (None if labels is None or previous is None
                         else float(adjusted_rand_score(previous, labels)))
            previous = labels
            history.append({"n_queries": asked, "n_must": C.n_must, "n_cannot": C.n_cannot,
                            "select_time": select_time, "fit_time": fit_time,
                            "stability": stability})
            bar.update(new.n_pairs)
            bar.set_postfix(must=C.n_must, cannot=C.n_cannot)
            calm = calm + 1 if (stop_tol is not None and stability is not None
                                and stability > 1 - stop_tol) else 0
            if callback is not None and callback(model, C):
                break
            if exhausted or calm >= 2:
                break
    return ActiveLearningResult(model, C, history)
