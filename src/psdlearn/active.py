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
- :class:`KernelPlacement`: the points the learned kernel cannot place, asked against the
  neighbourhoods it ranks first.

An oracle is any object with a method ``query(i, j) -> bool`` (``True``: must-link), the
protocol of the ``active-semi-supervised-clustering`` package, whose oracles work here
unchanged. :class:`LabelOracle` answers from known labels, with optional mistakes.
"""

from __future__ import annotations

import numbers
import time
import warnings
from typing import NamedTuple

import numpy as np
from sklearn.base import clone
from sklearn.metrics import adjusted_rand_score
from sklearn.utils import check_array, check_random_state

from psdlearn._progress import progress_bar
from psdlearn._query_strategies import (
    STRATEGIES,
    ExploreConsolidate,
    KernelPlacement,
    KernelUncertainty,
    MinMax,
    RandomPairs,
    _as_constraints,
    _make_strategy,
    _pair_keys,
)
from psdlearn.constraints import PairwiseConstraints

__all__ = [
    "ExploreConsolidate",
    "KernelPlacement",
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


def _training_pairs(C, closure, warned):
    """The pairs a round fits on: the answers, or with ``closure`` their transitive
    closure, unless the answers contradict themselves (then the answers, with one
    warning per run)."""
    if not closure:
        return C, warned
    if C.conflicts().size:
        if not warned:
            warnings.warn("the answers contradict each other (a cannot-link inside a "
                          "must-link component; PairwiseConstraints.conflicts() names "
                          "them): fitting on the answers as given, without their closure.",
                          UserWarning, stacklevel=3)
        return C, True
    return C.closure(), warned


def _new_pairs(fitted, target):
    """The pairs of ``target`` not in ``fitted``, or None when ``target`` drops one of
    ``fitted`` or gives it the other sign (the closure was abandoned, an answer was
    edited): then the model is fitted again."""
    n = target.n_samples
    old = _pair_keys(fitted.pairs, n)
    new = _pair_keys(target.pairs, n)
    sign = dict(zip(new.tolist(), target.signs.tolist(), strict=True))
    if any(sign.get(k) != s for k, s in zip(old.tolist(), fitted.signs.tolist(), strict=True)):
        return None
    keep = ~np.isin(new, old)
    return PairwiseConstraints(target.pairs[keep], target.signs[keep], n)


def active_learning(estimator, X, oracle, *, strategy="uncertainty", budget=300,
                    batch_size=20, initial=None, closure=False, stop_tol=None,
                    callback=None, random_state=None, verbose=0):
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
    strategy : {"uncertainty", "placement", "explore_consolidate", "min_max", "random"} \
or object, default="uncertainty"
        A name of :data:`STRATEGIES` (built with the estimator's ``n_clusters``) or an
        object with the method ``select(X, constraints, n_pairs, *, model,
        random_state)``.
    budget : int, default=300
        Maximum number of questions asked.
    batch_size : int, default=20
        Questions per round (one fit per round).
    initial : PairwiseConstraints or array-like of shape (m, 3), default=None
        Answers known before the first round (not counted in the budget).
    closure : bool, default=False
        Fit on the transitive closure of the answers
        (:meth:`~psdlearn.PairwiseConstraints.closure`): every pair inside a must-link
        component, and every pair across two components joined by a cannot-link. It pays
        with the neighbourhood strategies (``"placement"``, ``"explore_consolidate"``,
        ``"min_max"``), whose answers chain points into groups, when the oracle is
        reliable; a wrong answer is multiplied by it. Once the answers contradict each
        other, the fits use the answers as given (with a ``UserWarning``).
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
    fitted, warned = _training_pairs(C, closure, False)
    model = clone(base).fit(X, fitted) if C.n_pairs else None
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
            target, warned = _training_pairs(C, closure, warned)
            if model is None:
                added = None
            else:  # without the closure the new answers are the new pairs
                added = _new_pairs(fitted, target) if closure else new
            if added is not None and hasattr(model, "partial_fit"):
                if added.n_pairs:
                    model.partial_fit(X, added)
            else:
                model = clone(base).fit(X, target)
            fitted = target
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
