"""The duality certificate computed on first read (npkl._deferred_certificate): after
``partial_fit`` at a fixed rank, and after ``fit`` when ``DEFER_FIT_CERTIFICATE`` is set."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import psdlearn as pl
import psdlearn.npkl._deferred_certificate as deferred_module
import psdlearn.npkl.estimator as estimator_module


@pytest.fixture(scope="module")
def iris():
    X, y = pl.datasets.load("iris")
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    perm = np.random.default_rng(0).permutation(C.n_pairs)
    part = [np.sort(perm[:150]), np.sort(perm[150:])]
    return X, C, *[pl.PairwiseConstraints(C.pairs[p], C.signs[p], C.n_samples) for p in part]


def test_partial_fit_certificate_is_computed_on_first_read(iris, monkeypatch):
    """At a fixed rank partial_fit leaves its certificate to the first read of
    certificate_ (or rank_path_, certificate_time_): the same bound as computed at once,
    its warning at that read, once."""
    X, C, A, B = iris
    kw = dict(loss="hinge", random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        eager, model = pl.NPKL(**kw).fit(X, A), pl.NPKL(**kw).fit(X, A)
        monkeypatch.setattr(deferred_module, "defers", lambda est, spec: False)
        eager.partial_fit(X, B)
    monkeypatch.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # nothing said yet
        model.partial_fit(X, B)
    for name in ("certificate_", "rank_path_", "certificate_time_"):
        assert name not in vars(model)
    np.testing.assert_array_equal(model.embedding_, eager.embedding_)
    restored = pickle.loads(pickle.dumps(model))
    cert = eager.certificate_
    assert not cert.certified  # this seed stops at tol=1e-5 with a gap above 1e-4
    with pytest.warns(ConvergenceWarning, match="not certified: relative duality gap") as rec:
        got = model.certificate_
    assert rec[0].filename == __file__  # it points at the read
    # the same problem, the same candidates, the same Lanczos start: the same bound
    assert got.relative_gap == pytest.approx(cert.relative_gap, rel=1e-9)
    assert got.lambda_min == pytest.approx(cert.lambda_min, rel=1e-6)
    assert model.rank_path_ == [(model.rank_, got.relative_gap)]
    assert model.certificate_time_ > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # once: the value is kept
        assert model.certificate_ is got
    # the pending bound survives a pickle round trip; rank_path_ also triggers it
    with pytest.warns(ConvergenceWarning, match="not certified"):
        assert restored.rank_path_ == [(model.rank_, got.relative_gap)]
    assert restored.certificate_.relative_gap == got.relative_gap


def test_partial_fit_certificate_stays_eager_where_it_decides(iris):
    """rank='adaptive' (the certificate grows the rank) and a verbose fit (it prints the
    certificate) compute it in partial_fit; certificate_tol=None has none."""
    X, C, A, B = iris
    adaptive = pl.NPKL(loss="square", rank="adaptive", random_state=0).fit(X, A)
    adaptive.partial_fit(X, B)
    assert "certificate_" in vars(adaptive) and adaptive.certificate_ is not None
    none = pl.NPKL(loss="square", certificate_tol=None, random_state=0).fit(X, A)
    none.partial_fit(X, B)
    assert none.certificate_ is None and none.rank_path_ == []
    with pytest.raises(AttributeError):
        pl.NPKL().certificate_  # noqa: B018 - unfitted: no certificate, no pending one


def test_fit_can_defer_its_certificate_with_the_same_bound(monkeypatch):
    """With DEFER_FIT_CERTIFICATE the fit's certificate is computed on first read, in the
    solver's sample order (the value order of the points, then Cuthill-McKee): the bound of
    the eager fit, to the last digit, and its warning at the read."""
    X, y = pl.datasets.load("iris")
    rng = np.random.default_rng(3)
    X = X[rng.permutation(len(X))]  # positions unlike the value order the solver uses
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    kw = dict(loss="hinge", random_state=1)
    with pytest.warns(ConvergenceWarning, match="not certified"):
        eager = pl.NPKL(**kw).fit(X, C)
    monkeypatch.setattr(estimator_module, "DEFER_FIT_CERTIFICATE", True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = pl.NPKL(**kw).fit(X, C)
    assert "certificate_" not in vars(model)
    np.testing.assert_array_equal(model.embedding_, eager.embedding_)
    with pytest.warns(ConvergenceWarning, match="not certified"):
        cert = model.certificate_
    assert cert == eager.certificate_
    assert model.rank_path_ == eager.rank_path_
    # NPKLCV keeps its refit's pending certificate
    cv = pl.model_selection.NPKLCV(loss="square", gammas=[1.0, 10.0], cv=2,
                                   random_state=0).fit(X, C)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # certified or not
        assert cv.certificate_.objective == pytest.approx(cv.objective(), rel=1e-12)


def test_reading_a_deferred_certificate_can_be_interrupted(iris, monkeypatch):
    """A Ctrl-C in the read propagates and leaves the certificate pending: the next read
    computes it."""
    from psdlearn.npkl import certificate

    X, C, A, B = iris
    # solved tightly enough that the bound certifies it
    model = pl.NPKL(loss="square", tol=1e-7, max_iter=5000, random_state=0).fit(X, A)
    model.partial_fit(X, B)
    real = certificate.certify

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(certificate, "certify", interrupted)
    with pytest.raises(KeyboardInterrupt):
        model.certificate_  # noqa: B018
    assert "certificate_" not in vars(model)
    monkeypatch.setattr(certificate, "certify", real)
    assert model.certificate_.certified


def test_deferred_certificate_bounds_the_fitted_problem(iris):
    """The read certifies the problem that was solved: the settings of the solve, not
    those given by set_params after it."""
    X, C, A, B = iris
    model = pl.NPKL(loss="square", tol=1e-7, max_iter=5000, random_state=0).fit(X, A)
    model.partial_fit(X, B)
    model.set_params(certificate_tol=0.5, loss="hinge", delta=1.0)
    cert = model.certificate_
    assert cert.tol == 1e-4 and cert.certified
    assert cert.objective == pytest.approx(
        model.set_params(loss="square", delta=0.01).objective(), rel=1e-12)
