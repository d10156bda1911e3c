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
    model = pl.GeneralizedNystroem(n_landmarks=100, max_iter=10**5, tol=1e-14, verbose=1,
                                   random_state=0)
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
