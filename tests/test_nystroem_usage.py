"""GeneralizedNystroem as a user meets it: side information y, defaults, quiet and
interruptible fits."""

import dataclasses
import signal
import threading
import time

import _nystroem_problems as problems
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

import psdlearn as pl
from psdlearn._progress import FitInterruptedWarning
from psdlearn.nystroem import GeneralizedNystroem, solve_dictionary
from psdlearn.nystroem import estimator as estimator_module
from psdlearn.nystroem._beta import least_squares_beta
from psdlearn.nystroem._multi import solve_multiple
from psdlearn.nystroem.estimator import _data_term

# ---------------------------------------------------------------- side information y


def test_cannot_links_are_ignored_with_a_warning():
    X, y = problems.two_blobs(n=100)
    groups = np.full(len(y), -1)
    groups[:6], groups[6:10] = 0, 1
    C = problems.chain_must_links(groups, len(y))
    both = pl.PairwiseConstraints(np.r_[C.pairs, [[0, 7], [2, 9]]],
                                  np.r_[C.signs, [-1, -1]], n_samples=len(y))
    ref = GeneralizedNystroem(n_landmarks=15, lambdas=[1e-2], random_state=0).fit(X, C)
    with pytest.warns(UserWarning, match=r"ignores the 2 cannot-link pair\(s\).*§3.3"):
        g = GeneralizedNystroem(n_landmarks=15, lambdas=[1e-2], random_state=0).fit(X, both)
    assert np.array_equal(g.dictionary_, ref.dictionary_)


def test_labels_and_their_complete_must_links_differ_only_across_classes():
    """Labels ask for 0 across classes (eq. 6); must-link groups leave those pairs free
    (§3.3): the two data terms differ exactly by the across-class squares."""
    rng = np.random.default_rng(12)
    E = rng.uniform(size=(9, 5))
    labels = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    Y = problems.one_hot(labels)
    S = rng.normal(size=(5, 5))
    S = S + S.T
    K = E @ S @ E.T
    across = Y @ Y.T == 0
    gap = _data_term(E, Y, "labels").value(S) - _data_term(E, Y, "groups").value(S)
    assert gap == pytest.approx(np.sum(K[across] ** 2), rel=1e-12)


def test_a_single_class_takes_the_largest_lambda_with_a_warning():
    X, _ = problems.two_blobs()
    yp = np.full(len(X), -1)
    yp[:8] = 3
    with pytest.warns(UserWarning, match="single class.*largest candidate, 1000"):
        g = GeneralizedNystroem(n_landmarks=15, lambdas=[1e-2, 1e3, 1.0],
                                random_state=0).fit(X, yp)
    assert g.lambda_ == 1e3
    assert np.isnan(g.lambda_scores_[[0, 2]]).all()


def test_string_labels_with_minus_one_unlabelled():
    X, y = problems.two_blobs()
    yp = problems.partial_labels(y)
    names = np.where(yp == -1, "-1", np.where(yp == 0, "cat", "dog"))
    a = GeneralizedNystroem(n_landmarks=15, lambdas=[0.1], random_state=0).fit(X, yp)
    b = GeneralizedNystroem(n_landmarks=15, lambdas=[0.1], random_state=0).fit(X, names)
    assert np.allclose(a.transform(X), b.transform(X))


def test_sparse_input_matches_dense_and_the_tags_say_so():
    X, y = problems.two_blobs()
    yp = problems.partial_labels(y)
    g = GeneralizedNystroem(n_landmarks=15, lambdas=[0.1], random_state=0)
    dense = clone(g).fit(X, yp)
    sparse = clone(g).fit(sp.csr_matrix(X), yp)
    assert g.__sklearn_tags__().input_tags.sparse
    assert not g.__sklearn_tags__().target_tags.required
    assert np.allclose(sparse.landmarks_, dense.landmarks_)
    assert np.allclose(sparse.transform(sp.csc_matrix(X)), dense.transform(X), atol=1e-10)


def test_fit_transform_takes_y_and_equals_fit_then_transform():
    X, y = problems.two_blobs()
    yp = problems.partial_labels(y)
    g = GeneralizedNystroem(n_landmarks=15, random_state=0)
    assert np.allclose(clone(g).fit_transform(X, yp), clone(g).fit(X, yp).transform(X))
    assert np.allclose(clone(g).fit_transform(X, y=yp), g.fit(X, yp).transform(X))


# ---------------------------------------------------------------- defaults


def test_least_squares_beta_fits_the_prior_kernel_to_the_ideal_kernel():
    E_l, Y, prior, data = problems.small_problem(m=7, n_lab=12, seed=13)
    beta = least_squares_beta(prior, data)
    G = E_l @ prior @ E_l.T
    assert beta == pytest.approx(np.sum(G * (Y @ Y.T)) / np.sum(G * G), rel=1e-10)

    def loss(b):
        return data.value(b * prior)

    assert loss(beta) <= min(loss(0.9 * beta), loss(1.1 * beta))


def test_default_beta_keeps_the_kernel_on_the_ideal_kernels_scale():
    """Eq. (8) scales the prior by orders of magnitude; the least-squares beta keeps the
    learned kernel's diagonal near the ideal kernel's 1 on the labelled points."""
    X, y = problems.two_blobs(n=200)
    yp = problems.partial_labels(y, per_class=10)
    lab = yp != -1
    ls = GeneralizedNystroem(n_landmarks=20, random_state=0).fit(X, yp)
    paper = GeneralizedNystroem(n_landmarks=20, beta="heuristic", random_state=0).fit(X, yp)
    assert 0.3 < ls.beta_ < 3.0
    assert paper.beta_ > 100 * ls.beta_
    diag = np.sum(ls.transform(X[lab]) ** 2, axis=1)
    assert 0.5 < np.median(diag) < 1.5


# ---------------------------------------------------------------- quiet and interruptible


def test_quiet_by_default_and_progress_on_stderr(capfd):
    X, y = problems.two_blobs()
    yp = problems.partial_labels(y)
    GeneralizedNystroem(n_landmarks=15, random_state=0).fit(X, yp).transform(X)
    GeneralizedNystroem(n_landmarks=15, kernel_gammas=[0.5, 2.0], max_iter=20,
                        random_state=0).fit(X, yp)
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    GeneralizedNystroem(n_landmarks=15, verbose=1, random_state=0).fit(X, yp)
    out, err = capfd.readouterr()
    assert out == ""
    assert "GeneralizedNystroem" in err and "lam=" in err


def _stop_after(k, how):
    """A callback that stops the solver when called the ``k``-th time: by raising
    KeyboardInterrupt (``how="interrupt"``) or by returning ``True`` (the stop signal)."""
    calls = []

    def callback(value):
        calls.append(value)
        if len(calls) == k:
            if how == "interrupt":
                raise KeyboardInterrupt
            return True
        return None

    return callback


def _check_result(res, key):
    """The frozen SolverResult of the Nystroem solvers, with its time history."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.n_iter = 0
    with pytest.raises(TypeError):
        res.info[key] = None
    assert res.embedding is None
    assert len(res.time_history) == len(res.objective_history)
    assert res.time_history[0] >= 0.0 and np.all(np.diff(res.time_history) >= 0.0)


@pytest.mark.parametrize("how", ["interrupt", "signal"])
@pytest.mark.parametrize("groups", [False, True])
def test_stopped_projected_gradient_returns_the_last_complete_iterate(groups, how):
    E_l, Y, prior, data = problems.small_problem(m=10, n_lab=15, seed=5)
    if groups:  # two blocks: the generic (not eigenbasis) iterations
        data = _data_term(E_l, Y, "groups")
    full = solve_dictionary(prior, 1e-3, data, max_iter=4, tol=0.0)
    cut = solve_dictionary(prior, 1e-3, data, max_iter=1000, tol=0.0,
                           callback=_stop_after(4, how))
    assert cut.interrupted and not cut.converged and not full.interrupted
    assert cut.n_iter == full.n_iter == 4
    assert np.array_equal(cut.S, full.S) and cut.step == full.step
    assert cut.objective_history == full.objective_history
    _check_result(cut, "S")


@pytest.mark.parametrize("how", ["interrupt", "signal"])
def test_stopped_alternation_returns_the_last_complete_alternation(how):
    _, _, priors, cross, s, c = problems.multiple_problem()
    full = solve_multiple(priors, 0.1, cross, s, c, max_iter=2, tol=0.0)
    cut = solve_multiple(priors, 0.1, cross, s, c, max_iter=50, tol=0.0,
                         callback=_stop_after(2, how))
    assert cut.interrupted and not cut.converged and not full.interrupted
    assert cut.n_iter == full.n_iter == 2
    assert all(np.array_equal(a, b) for a, b in zip(cut.T, full.T, strict=True))
    assert np.array_equal(cut.alpha, full.alpha)
    assert cut.objective_history == full.objective_history
    _check_result(cut, "T")


def _long_fit(kernel_gammas=None, m=150, max_iter=10**7):
    """An ill-conditioned problem (tiny lambda, tol=0) that runs for many seconds."""
    X, y = problems.two_blobs(n=1500, d=8, seed=1)
    yp = problems.partial_labels(y, per_class=150)
    Z = X[np.random.default_rng(0).choice(len(X), m, replace=False)]
    g = GeneralizedNystroem(landmarks=Z, lambdas=[1e-7], tol=0.0, max_iter=max_iter,
                            kernel_gammas=kernel_gammas)
    return X, yp, g


def _check_kept_iterate(g, X, max_iter):
    assert g.converged_ is False and 1 <= g.n_iter_ < max_iter
    assert len(g.objective_history_) == g.n_iter_ + 1
    hist = np.array(g.objective_history_)
    assert np.all(np.diff(hist) <= 1e-10 * np.abs(hist[:-1]))
    assert np.linalg.eigvalsh(g.dictionary_)[0] >= -1e-10 * np.abs(g.dictionary_).max()
    Q = g.transform(X[:5])
    assert Q.shape == (5, g.rank_) and np.all(np.isfinite(Q))


def _sigint_after(delay):
    timer = threading.Timer(
        delay, signal.pthread_kill, args=(threading.main_thread().ident, signal.SIGINT))
    timer.start()
    return timer


def test_sigint_from_a_timer_keeps_the_last_complete_iterate(monkeypatch):
    # the timer starts at the first complete iteration, so the signal lands inside the
    # iterations however fast the machine is
    X, yp, g = _long_fit()
    solve, timers = estimator_module.solve_dictionary, []

    def solve_with_timer(*args, callback=None, **kwargs):
        def started(*cb_args):
            if not timers:
                timers.append(_sigint_after(0.01))
            return callback(*cb_args) if callback is not None else None
        return solve(*args, callback=started, **kwargs)

    monkeypatch.setattr(estimator_module, "solve_dictionary", solve_with_timer)
    start = time.perf_counter()
    try:
        with pytest.warns(FitInterruptedWarning, match="GeneralizedNystroem: fit interrupted"):
            g.fit(X, yp)
    finally:
        timers[0].cancel()
    assert time.perf_counter() - start < 10.0
    _check_kept_iterate(g, X, g.max_iter)


def test_sigint_during_an_alternation_keeps_the_last_complete_alternation(monkeypatch):
    # three kernels: one alternation makes three dictionary solves; a timer thread sends
    # SIGINT as the fifth starts, inside the second alternation, which is then dropped
    from psdlearn.nystroem import _multi

    X, yp, g = _long_fit([0.5, 1.0, 2.0], max_iter=1000)
    solve, calls, timers = _multi.solve_dictionary, [], []

    def solve_then_signal(*args, **kwargs):
        calls.append(1)
        if len(calls) == 5:
            timers.append(_sigint_after(0.0))
        return solve(*args, **kwargs)

    monkeypatch.setattr(_multi, "solve_dictionary", solve_then_signal)
    try:
        with pytest.warns(FitInterruptedWarning, match="after 1 complete alternations"):
            g.fit(X, yp)
    finally:
        for timer in timers:
            timer.join()
    _check_kept_iterate(g, X, g.max_iter // 5)
    assert g.n_iter_ == 1 and len(calls) in (5, 6)


def test_interrupt_between_lambdas_keeps_the_best_scored_and_reraises_without_one(
        monkeypatch):
    X, y = problems.two_blobs()
    yp = problems.partial_labels(y)
    lambdas = [1e-2, 1.0, 1e2, 1e4]
    ref = GeneralizedNystroem(n_landmarks=15, lambdas=lambdas[:2], lambda_selection="alignment",
                              random_state=0).fit(X, yp)
    solve, calls = estimator_module.solve_dictionary, []

    def interrupted_at(k):
        def wrapper(*args, **kwargs):
            calls.append(1)
            if len(calls) == k:
                raise KeyboardInterrupt
            return solve(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(estimator_module, "solve_dictionary", interrupted_at(3))
    g = GeneralizedNystroem(n_landmarks=15, lambdas=lambdas, lambda_selection="alignment",
                            random_state=0)
    with pytest.warns(FitInterruptedWarning, match="interrupted"):
        g.fit(X, yp)
    assert g.converged_ is False
    assert np.array_equal(g.lambda_scores_[:2], ref.lambda_scores_)
    assert np.isnan(g.lambda_scores_[2:]).all()
    assert g.lambda_ == ref.lambda_ and np.array_equal(g.dictionary_, ref.dictionary_)
    calls.clear()
    monkeypatch.setattr(estimator_module, "solve_dictionary", interrupted_at(1))
    with pytest.raises(KeyboardInterrupt):
        clone(g).fit(X, yp)


def test_max_iter_warns_and_counts_what_ran():
    X, y = problems.two_blobs()
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        g = GeneralizedNystroem(n_landmarks=15, lambdas=[1e-4], max_iter=3, tol=0.0,
                                random_state=0).fit(X, problems.partial_labels(y))
    assert g.n_iter_ == 3 and g.converged_ is False and g.fit_time_ > 0
    g = GeneralizedNystroem(n_landmarks=15, lambdas=[1e4], max_iter=500,
                            random_state=0).fit(X, problems.partial_labels(y))
    assert g.converged_ is True and 0 < g.n_iter_ < 500
