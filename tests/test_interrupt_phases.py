"""Ctrl-C in every phase of a fit: prompt, named, and nothing half-fitted.

Each test sends SIGINT to the main thread from a timer thread, as a terminal does. The
timer is armed at a fixed point inside the phase (the ``k``-th step a progress bar of the
phase counts, or the call of a function the phase makes) and fires at once, so the signal
arrives while the phase's own work runs, on a fast machine and a loaded one alike. The
bound on the seconds from the signal to ``fit`` returning or raising (1.5 s) is generous
against the about one second every phase promises; the latency of each phase at 10^5 and
10^6 points is measured by ``benchmarks/bench_interrupt_latency.py``.
"""

import copy
import re
import signal
import threading
import time

import numpy as np
import pytest

import psdlearn as pl
from psdlearn._interrupt import fitting, phase
from psdlearn._progress import FitInterruptedWarning, progress_bar

LATENCY = 1.5


class Interrupter:
    """Send SIGINT to the main thread from a timer thread at the ``after``-th :meth:`tick`."""

    def __init__(self, after=1):
        self.after = after
        self.calls = 0
        self.sent = None
        self.timer = None

    def tick(self):
        self.calls += 1
        if self.calls == self.after:
            self.timer = threading.Thread(target=self._fire)
            self.timer.start()

    def _fire(self):
        self.sent = time.perf_counter()
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    def wrap(self, func):
        """``func``, ticking as each call starts."""
        def armed(*args, **kwargs):
            self.tick()
            return func(*args, **kwargs)
        return armed

    def on_progress(self, monkeypatch, module):
        """Tick at each step a progress bar of ``module`` counts (a complete iterate)."""
        make = module.progress_bar
        interrupter = self

        class Bar:
            def __init__(self, *args, **kwargs):
                self.bar = make(*args, **kwargs)

            def update(self, n=1):
                self.bar.update(n)
                interrupter.tick()

            def __getattr__(self, name):
                return getattr(self.bar, name)

            def __enter__(self):
                self.bar.__enter__()
                return self

            def __exit__(self, *exc):
                return self.bar.__exit__(*exc)

        monkeypatch.setattr(module, "progress_bar", Bar)

    def run(self, fit):
        """Run ``fit()``: ``(latency, exception or None)``."""
        error, returned = None, False
        try:
            fit()
            returned = True
            if self.timer is not None:
                self.timer.join()
            time.sleep(0.01)  # a signal sent after fit returned is handled here
        except KeyboardInterrupt as exc:
            assert not returned, "the phase ended before the signal arrived"
            error = exc
        end = time.perf_counter()
        assert self.sent is not None, "the phase ended before the timer was armed"
        return end - self.sent, error


def _gaussians(n, n_labelled=300):
    X, y = pl.datasets.make_two_gaussians(n, n_features=10, random_state=0)
    labels = np.full(n, -1)
    idx = np.random.default_rng(0).choice(n, n_labelled, replace=False)
    labels[idx] = y[idx]
    return X, labels, pl.PairwiseConstraints.from_labels(labels, random_state=0)


@pytest.fixture(scope="module")
def graph_problem():
    X, labels, C = _gaussians(4_000)  # above the size where gamma_0 runs LOBPCG
    L = pl.graph.knn_laplacian(X, n_neighbors=10, knn_method="approximate", random_state=0)
    return X, labels, C, L


def _assert_unchanged(model, fresh):
    """The estimator holds exactly its parameters, as before fit."""
    assert vars(model).keys() == vars(fresh).keys()
    assert not any(k.endswith("_") for k in vars(model))


# ------------------------------------------------------------------ the helper itself
def test_phase_names_the_innermost_phase_and_its_progress():
    with pytest.raises(KeyboardInterrupt) as info:
        with phase("the outer phase"), phase("the inner phase"):
            with progress_bar(0, total=10, desc="block", unit="rows") as bar:
                bar.update(4)
                raise KeyboardInterrupt
    message = str(info.value)
    assert message.startswith("interrupted in the inner phase after ")
    assert "at 40% of the block (4/10 rows" in message
    assert "(in the outer phase after " in message


def test_fitting_restores_the_estimator_and_names_it():
    model = pl.NPKL(loss="square")
    fresh = copy.deepcopy(model)
    with pytest.raises(KeyboardInterrupt, match=r"^NPKL.fit interrupted in the graph build "
                       r"after .* s; the estimator is unchanged \(not fitted\)\.$"):
        with fitting(model):
            model.partial_attribute_ = 1
            with phase("the graph build"):
                raise KeyboardInterrupt
    _assert_unchanged(model, fresh)
    # a fitted estimator keeps its previous fit
    model.embedding_ = np.ones((2, 1))
    with pytest.raises(KeyboardInterrupt, match=r"unchanged \(as fitted before\)"):
        with fitting(model):
            model.embedding_ = None
            raise KeyboardInterrupt
    assert np.array_equal(model.embedding_, np.ones((2, 1)))


# ------------------------------------------------------------------ NPKL phases
@pytest.mark.parametrize("method", ["approximate", "exact"])
def test_knn_graph_build(monkeypatch, method):
    from psdlearn import graph

    X, _, C = _gaussians(20_000)
    if method == "exact":
        X = X[:, :6]  # the kd-tree
    interrupter = Interrupter(after=1)
    interrupter.on_progress(monkeypatch, graph)  # the first block of the index or search
    model = pl.NPKL(loss="square", knn_method=method, random_state=0)
    fresh = copy.deepcopy(model)
    latency, error = interrupter.run(lambda: model.fit(X, C))
    assert error is not None and latency < LATENCY
    assert str(error).startswith("NPKL.fit interrupted in the kNN graph build after ")
    assert re.search(r"at \d+% of the kNN (index|search) \(\d+/20000 pt", str(error))
    _assert_unchanged(model, fresh)


def test_gamma0(monkeypatch, graph_problem):
    from psdlearn.npkl import gamma

    _, _, C, L = graph_problem
    interrupter = Interrupter()
    monkeypatch.setattr(gamma, "lobpcg", interrupter.wrap(gamma.lobpcg))
    model = pl.NPKL(loss="square", rank=5, graph="precomputed", random_state=0)
    latency, error = interrupter.run(lambda: model.fit(L, C))
    assert error is not None and latency < LATENCY
    assert "NPKL.fit interrupted in the gamma_0 eigen-solve" in str(error)
    _assert_unchanged(model, pl.NPKL())


def test_solver_keeps_the_last_sweep(monkeypatch, graph_problem):
    from psdlearn.npkl import _rounds

    _, _, C, L = graph_problem
    interrupter = Interrupter(after=3)
    interrupter.on_progress(monkeypatch, _rounds)
    model = pl.NPKL(loss="square", rank=5, gamma=100.0, graph="precomputed", tol=0.0,
                    max_iter=10**6, certificate_tol=None, random_state=0,
                    solver_options={"multilevel": False})
    with pytest.warns(FitInterruptedWarning, match=r"in the bcd solver after \d+ complete "
                      "sweeps"):
        latency, error = interrupter.run(lambda: model.fit(L, C))
    assert error is None and latency < LATENCY
    assert model.converged_ is False and 3 <= model.n_iter_ < 10**6
    assert len(model.objective_history_) == model.n_iter_ + 1
    # the kept iterate is the last complete sweep's, whose objective was recorded
    assert model.objective() == pytest.approx(model.objective_history_[-1], rel=1e-9)


def test_solver_keeps_a_partial_sweep_with_its_objective(monkeypatch, graph_problem):
    """The signal lands between two bounded calls of a sweep: the kept iterate has some
    rows updated, and its recorded objective (the last sweep's plus the exact changes of
    the rows done, no pass over the graph after the stop) is its objective."""
    from psdlearn.npkl import _blocks

    _, _, C, L = graph_problem
    monkeypatch.setattr(_blocks, "CALL_WORK", 1.0)  # calls of 64 rows
    interrupter = Interrupter(after=150)  # in the third sweep or so
    for name in ("sweep_unconstrained", "_sweep_part_slices"):
        monkeypatch.setattr(_blocks, name, interrupter.wrap(getattr(_blocks, name)))
    model = pl.NPKL(loss="square", rank=5, gamma=100.0, graph="precomputed", tol=0.0,
                    max_iter=10**6, certificate_tol=None, random_state=0,
                    solver_options={"multilevel": False})
    with pytest.warns(FitInterruptedWarning, match="in the bcd solver"):
        latency, error = interrupter.run(lambda: model.fit(L, C))
    assert error is None and latency < LATENCY
    assert model.objective() == pytest.approx(model.objective_history_[-1], rel=1e-9)
    assert model.objective_history_[-1] <= model.objective_history_[-2]


def test_certificate_keeps_the_solution(monkeypatch, graph_problem):
    from psdlearn.npkl import escalation

    _, _, C, L = graph_problem
    interrupter = Interrupter()
    monkeypatch.setattr(escalation, "certify", interrupter.wrap(escalation.certify))
    model = pl.NPKL(loss="square", rank=5, gamma=1.0, graph="precomputed", max_iter=3,
                    random_state=0)
    with pytest.warns(FitInterruptedWarning, match="in the duality certificate"):
        latency, error = interrupter.run(lambda: model.fit(L, C))
    assert error is None and latency < LATENCY
    assert model.certificate_ is None and model.converged_ is False
    assert model.n_iter_ == 3

@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_interrupt_before_a_later_round_keeps_the_previous_one(monkeypatch):
    """rank="adaptive": a Ctrl-C before the second round's first step keeps the first."""
    from dataclasses import replace

    from psdlearn.npkl.solvers import NPKL_SOLVERS

    X, _, C = _gaussians(400, 60)
    spec, calls = NPKL_SOLVERS["bcd"], []

    def solve(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return spec.solve(*args, **kwargs)

    monkeypatch.setitem(NPKL_SOLVERS._specs, "bcd", replace(spec, solve=solve))
    model = pl.NPKL(loss="square", rank="adaptive", rank_init=1, max_iter=20, random_state=0)
    with pytest.warns(FitInterruptedWarning, match="in the bcd solver"):
        model.fit(X, C)
    assert len(calls) == 2 and model.converged_ is False
    assert model.embedding_.shape == (400, 1)
    assert model.objective() == pytest.approx(model.objective_history_[-1], rel=1e-9)


def test_npklcv_folds(monkeypatch, graph_problem):
    from psdlearn.npkl import _rounds

    _, _, C, L = graph_problem
    interrupter = Interrupter(after=2)
    interrupter.on_progress(monkeypatch, _rounds)  # in the first fold's first fit
    model = pl.NPKLCV(loss="square", rank=5, graph="precomputed", gammas=[30.0, 100.0, 300.0],
                      cv=3, cv_tol=1e-12, tol=1e-12, max_iter=10**5, random_state=0,
                      solver_options={"multilevel": False})
    fresh = copy.deepcopy(model)
    latency, error = interrupter.run(lambda: model.fit(L, C))
    assert error is not None and latency < LATENCY
    message = str(error)
    assert message.startswith("NPKLCV.fit interrupted in the bcd solver")
    assert "(in the cross-validation after " in message
    assert re.search(r"\([0-8]/9 fit", message)
    _assert_unchanged(model, fresh)


# ------------------------------------------------------------------ other estimators
def test_psdboost_interior_point(monkeypatch):
    from psdlearn.psdboost import solvers

    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 20))
    T = pl.triplets_from_labels(X, rng.integers(0, 3, 200), n_triplets=500, random_state=0)
    interrupter = Interrupter(after=2)
    interrupter.on_progress(monkeypatch, solvers)  # after the second Newton step
    model = pl.PSDBoost(solver="interior-point", tol=1e-12, max_iter=10**4, random_state=0)
    fresh = copy.deepcopy(model)
    latency, error = interrupter.run(lambda: model.fit(X, pl.Triplets(T)))
    assert error is not None and latency < LATENCY
    assert str(error).startswith("PSDBoost.fit interrupted in the interior-point solver")
    assert re.search(r"at \d+% of the PSDBoost interior point \(\d+/", str(error))
    _assert_unchanged(model, fresh)


def test_generalized_nystroem_dictionary_solves(monkeypatch):
    from psdlearn.nystroem import estimator

    X, labels, _ = _gaussians(1_000, 200)
    interrupter = Interrupter(after=3)
    interrupter.on_progress(monkeypatch, estimator)
    # verbose: the iterations of the final solve report to the bar (on stderr)
    # a tiny lambda and tol=0: an ill-conditioned solve that runs for many iterations
    model = pl.GeneralizedNystroem(n_landmarks=100, lambdas=[1e-7], max_iter=10**5, tol=0.0,
                                   verbose=1, random_state=0)
    with pytest.warns(FitInterruptedWarning, match="in the dictionary solves"):
        latency, error = interrupter.run(lambda: model.fit(X, labels))
    assert error is None and latency < LATENCY
    assert model.converged_ is False


def test_kernel_metric_learner_eigen_solve(monkeypatch):
    from psdlearn.kml import estimator

    X, labels, _ = _gaussians(1_000, 300)
    interrupter = Interrupter()
    monkeypatch.setattr(estimator, "centered_eigenpairs",
                        interrupter.wrap(estimator.centered_eigenpairs))
    model = pl.KernelMetricLearner(kernel_gamma=0.1)
    fresh = copy.deepcopy(model)
    latency, error = interrupter.run(lambda: model.fit(X, labels))
    assert error is not None and latency < LATENCY
    assert "KernelMetricLearner.fit interrupted in the kernel eigen-solve" in str(error)
    _assert_unchanged(model, fresh)


# ------------------------------------------------------------------ NPKL: other solvers
def _admm_problem(n=3_000):
    X, labels, _ = _gaussians(n, 200)
    C = pl.PairwiseConstraints.from_labels(labels, n_must=300, n_cannot=300, random_state=0)
    L = pl.graph.knn_laplacian(X, n_neighbors=10, random_state=0)
    return L, C


def test_admm_blocked_half_steps_are_the_half_steps(monkeypatch):
    """A half step cut into many bounded calls gives the one-call result (rows are
    independent), to rounding."""
    from psdlearn.npkl import _admm_kernels, _blocks
    from psdlearn.npkl.problem import NPKLProblem

    L, C = _admm_problem(2_000)
    problem = NPKLProblem(L, C.pairs, C.signs.astype(float), "square", 3.0)
    Lp, Li, Lx = L.indptr.astype(np.int64), L.indices.astype(np.int64), L.data
    Tp, Ti, Tt = problem.ordered_targets()
    rng = np.random.default_rng(0)
    S, own, lam = (rng.standard_normal((2_000, 4)) for _ in range(3))
    monkeypatch.setattr(_blocks, "PARALLEL_MIN_WORK", 20_000)  # many calls of few rows
    step = _blocks.BlockedHalfStep(Lp, Tp, 4)
    assert len(step.calls) > 5
    for finish in (False, True):
        X1, X2 = np.zeros((2_000, 4)), np.zeros((2_000, 4))
        lam1, lam2 = lam.copy(), lam.copy()
        sums1 = step(Lp, Li, Lx, Tp, Ti, Tt, S, own, lam1, 1.0, 100.0, 3.0, X1, finish)
        sums2 = _admm_kernels.half_step_serial(Lp, Li, Lx, Tp, Ti, Tt, S, own, lam2, 1.0, 100.0,
                                               3.0, X2, finish)
        assert np.array_equal(X1, X2) and np.array_equal(lam1, lam2)
        assert np.allclose(sums1, sums2, rtol=1e-12, atol=0)


def test_admm_keeps_the_last_complete_iteration(monkeypatch):
    """The signal lands inside a half step (a bounded call of it): the kept V, U and Lambda
    are those of the last complete iteration, whose objective was recorded."""
    from psdlearn.npkl import _blocks

    L, C = _admm_problem()
    monkeypatch.setattr(_blocks, "PARALLEL_MIN_WORK", 200_000)  # half steps of many calls
    interrupter = Interrupter(after=25)  # inside the third iteration or later
    monkeypatch.setattr(_blocks, "_half_step_chunks",
                        interrupter.wrap(_blocks._half_step_chunks))
    model = pl.NPKL(loss="square", rank=5, gamma=10.0, graph="precomputed", solver="admm",
                    tol=0.0, max_iter=10**6, certificate_tol=None, random_state=0)
    with pytest.warns(FitInterruptedWarning, match=r"in the admm solver after \d+ complete "
                      "iterations"):
        latency, error = interrupter.run(lambda: model.fit(L, C))
    assert error is None and latency < LATENCY
    assert model.converged_ is False and 1 <= model.n_iter_ < 10**6
    assert len(model.objective_history_) == model.n_iter_ + 1
    assert len(model.primal_residual_history_) == model.n_iter_
    # a half-updated V would not have the recorded objective
    assert model.objective() == pytest.approx(model.objective_history_[-1], rel=1e-9)


def test_mfpc_keeps_the_last_step(monkeypatch):
    from psdlearn.npkl import mfpc

    L, C = _admm_problem(1_000)
    interrupter = Interrupter(after=20)
    monkeypatch.setattr(mfpc, "psd_projection", interrupter.wrap(mfpc.psd_projection))
    model = pl.NPKL(loss="square", rank=10, gamma=1.0, graph="precomputed", solver="mfpc",
                    tol=0.0, max_iter=10**6, random_state=0)
    with pytest.warns(FitInterruptedWarning, match="in the mfpc solver after"):
        latency, error = interrupter.run(lambda: model.fit(L, C))
    assert error is None and latency < LATENCY
    assert model.converged_ is False and 5 <= model.n_iter_ < 10**6
    assert model.objective() == pytest.approx(model.objective_history_[-1], rel=1e-9)


def test_simplenpkl_keeps_the_last_step(monkeypatch):
    from psdlearn.npkl import _rounds

    X, _, C = _gaussians(300, 60)
    interrupter = Interrupter(after=3)
    interrupter.on_progress(monkeypatch, _rounds)
    model = pl.NPKL(loss="square", rank=5, gamma=1.0, solver="simplenpkl", tol=0.0,
                    max_iter=10**6, random_state=0)
    with pytest.warns(FitInterruptedWarning, match="in the simplenpkl solver after"):
        latency, error = interrupter.run(lambda: model.fit(X, C))
    assert error is None and latency < LATENCY
    assert model.converged_ is False and 3 <= model.n_iter_ < 10**6


# ------------------------------------------------------------------ rank="adaptive" rounds
def _blobs(n=1_500, n_labelled=200):
    """Six classes in 10-d: rank="adaptive" grows the rank from 1 (to 5)."""
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n, n_features=10, centers=6, random_state=0)
    labels = np.full(n, -1)
    idx = np.random.default_rng(0).choice(n, n_labelled, replace=False)
    labels[idx] = y[idx]
    return X, pl.PairwiseConstraints.from_labels(labels, random_state=0)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_escalation_keeps_the_round_it_grows(monkeypatch):
    """A Ctrl-C in the line search along the new columns keeps the round's iterate."""
    from psdlearn.npkl import escalation

    X, C = _blobs()
    interrupter = Interrupter()
    monkeypatch.setattr(escalation, "minimize_scalar", interrupter.wrap(
        escalation.minimize_scalar))
    model = pl.NPKL(loss="square", rank="adaptive", rank_init=1, random_state=0)
    with pytest.warns(FitInterruptedWarning, match="in the duality certificate or rank "
                      "escalation"):
        latency, error = interrupter.run(lambda: model.fit(X, C))
    assert error is None and latency < LATENCY
    assert model.embedding_.shape == (1_500, 1) and model.converged_ is False
    assert model.objective() == pytest.approx(model.objective_history_[-1], rel=1e-9)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_interrupt_in_a_later_round_keeps_its_last_sweep(monkeypatch):
    """The signal lands in the sweeps of the round after an escalation: the fit keeps
    that round's last sweep, at the grown rank."""
    from dataclasses import replace

    from psdlearn.npkl import bcd
    from psdlearn.npkl.solvers import NPKL_SOLVERS

    X, C = _blobs()
    spec, rounds = NPKL_SOLVERS["bcd"], []
    interrupter = Interrupter(after=2)  # the second sweep of the second round

    def solve(problem, E0, options):
        rounds.append(E0 is not None and E0.shape[1])
        return spec.solve(problem, E0, options)

    def sweep(*args, **kwargs):
        if rounds[-1] > 1:  # a round after an escalation
            interrupter.tick()
        return run_sweep(*args, **kwargs)

    run_sweep = bcd.BlockedPass.constrained
    monkeypatch.setattr(bcd.BlockedPass, "constrained", sweep)
    monkeypatch.setitem(NPKL_SOLVERS._specs, "bcd", replace(spec, solve=solve))
    model = pl.NPKL(loss="square", rank="adaptive", rank_init=1, tol=1e-12, max_iter=10**5,
                    random_state=0, solver_options={"multilevel": False})
    with pytest.warns(FitInterruptedWarning, match="in the bcd solver"):
        latency, error = interrupter.run(lambda: model.fit(X, C))
    assert error is None and latency < LATENCY
    assert len(rounds) >= 2 and model.embedding_.shape[1] > 1 and model.converged_ is False
    assert model.objective() == pytest.approx(model.objective_history_[-1], rel=1e-9)


# ------------------------------------------------------------------ PSDBoost, KML
def test_psdboost_column_generation_master_lp(monkeypatch):
    """The signal lands during a simplex run of the master LP (HiGHS): HiGHS stops at its
    next iteration (user interrupt) and the fit keeps the last complete master solve."""
    import highspy

    from psdlearn.psdboost import _master

    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 20))
    T = pl.triplets_from_labels(X, rng.integers(0, 3, 300), n_triplets=2_000, random_state=0)
    interrupter = Interrupter(after=300)  # HiGHS calls back at every simplex iteration
    Master = _master.RestrictedMaster
    monkeypatch.setattr(Master, "_on_callback", interrupter.wrap(Master._on_callback))
    statuses, solve_lp = [], Master._solve_lp

    def recorded(self):
        try:
            return solve_lp(self)
        finally:
            statuses.append(self.h.getModelStatus())

    monkeypatch.setattr(Master, "_solve_lp", recorded)
    model = pl.PSDBoost(solver="column-generation", tol=1e-12, max_iter=10**4,
                        random_state=0)
    with pytest.warns(FitInterruptedWarning, match=r"in the column-generation solver after "
                      r"\d+ complete master solves"):
        latency, error = interrupter.run(lambda: model.fit(X, pl.Triplets(T)))
    assert error is None and latency < LATENCY
    assert statuses[-1] == highspy.HighsModelStatus.kInterrupt  # stopped inside the LP
    assert model.converged_ is False and model.n_iter_ >= 1
    assert np.all(np.linalg.eigvalsh(model.metric_) > -1e-10)


def test_kernel_metric_learner_reweighting(monkeypatch):
    """The signal lands in a later repetition: the fit keeps the last complete one."""
    from psdlearn.kml import estimator

    X, labels, _ = _gaussians(3_000, 300)
    interrupter = Interrupter(after=3)  # the first block of the second repetition (of two)
    interrupter.on_progress(monkeypatch, estimator)
    model = pl.KernelMetricLearner(kernel_gamma=0.1, n_landmarks=500, n_iter=1_000,
                                   random_state=0)
    with pytest.warns(FitInterruptedWarning, match=r"in the reweighting and landmark weights "
                      r"after \d+ complete repetitions"):
        latency, error = interrupter.run(lambda: model.fit(X, labels))
    assert error is None and latency < LATENCY
    assert 1 <= model.n_iter_ < 1_000 and model.converged_ is False
    assert len(model.objective_history_) == model.n_iter_
    assert np.all(np.isfinite(model.embedding_))


def test_kernel_metric_learner_dense_eigen_solve_in_a_worker(monkeypatch):
    """The dense eigendecomposition (rank=None) is one LAPACK call: it runs in a worker
    thread, so Ctrl-C acts while it runs. Here a compiled loop that never looks at signals
    stands in for it (it would hold the main thread for seconds)."""
    from numba import njit

    @njit(nogil=True, cache=False)
    def spin(stop, limit):
        count = 0
        while stop[0] == 0 and count < limit:
            count += 1
        return count

    stop = np.zeros(1, dtype=np.int64)
    spin(np.ones(1, dtype=np.int64), 1)  # compiled before the fit
    interrupter = Interrupter()
    eigh = np.linalg.eigh

    def slow_eigh(K):
        interrupter.tick()
        spin(stop, 10**10)  # seconds: a long LAPACK call
        return eigh(K)

    X, labels, _ = _gaussians(300, 100)
    monkeypatch.setattr(np.linalg, "eigh", slow_eigh)
    model = pl.KernelMetricLearner(kernel_gamma=0.1, rank=None)
    fresh = copy.deepcopy(model)
    try:
        latency, error = interrupter.run(lambda: model.fit(X, labels))
    finally:
        stop[0] = 1  # end the stand-in left running in the worker
    assert error is not None and latency < LATENCY
    assert "KernelMetricLearner.fit interrupted in the kernel eigen-solve" in str(error)
    _assert_unchanged(model, fresh)
