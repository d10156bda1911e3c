"""NPKL's solver-only knobs live in ``solver_options``; the old top-level names keep working
for one release (FutureWarning, identical results); ``side_info_`` replaces ``constraints_``."""

import warnings

import numpy as np
import pytest

import psdlearn as pl
from psdlearn.model_selection import NPKLCV


def _blobs(n=60, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(3), n // 3)
    X = rng.normal(size=(n, 4)) * 0.6 + 3.0 * np.eye(3, 4)[y]
    return X, pl.PairwiseConstraints.from_labels(y, n_must=15, n_cannot=15, random_state=0)


# (old name, value, its solver_options key, solver, loss): a non-default value of each
CASES = [
    ("unconstrained", "block", "unconstrained", "bcd", "square"),
    ("omega", 1.0, "omega", "bcd", "square"),
    ("hinge_smoothing", None, "hinge_smoothing", "bcd", "hinge"),
    ("rho", 10.0, "rho", "admm", "pcp"),
    ("init", "bcd", "init", "admm", "square"),
    ("B", 1e3, "B", "simplenpkl", "square"),
]


@pytest.mark.parametrize("old, value, key, solver, loss", CASES)
def test_deprecated_name_warns_and_fits_identically(old, value, key, solver, loss):
    X, C = _blobs()
    kw = dict(solver=solver, loss=loss, max_iter=300, random_state=0)
    new = pl.NPKL(solver_options={key: value}, **kw).fit(X, C)
    with pytest.warns(FutureWarning, match=rf"solver_options=\{{'{key}': {value!r}\}}"):
        legacy = pl.NPKL(**{old: value}, **kw).fit(X, C)
    np.testing.assert_array_equal(legacy.embedding_, new.embedding_)
    assert legacy.solver_options_ == new.solver_options_
    assert new.solver_options_[key] == value
    default = pl.NPKL(**kw).fit(X, C)
    assert not np.array_equal(default.embedding_, new.embedding_)  # the option acts


def test_deprecated_sdp_names():
    pytest.importorskip("cvxpy")
    X, C = _blobs(24)
    with pytest.raises(ValueError, match="max_samples=10"):
        pl.NPKL(solver="sdp", solver_options={"max_samples": 10}).fit(X, C)
    with pytest.warns(FutureWarning, match=r"solver_options=\{'max_samples': 10\}"):
        with pytest.raises(ValueError, match="max_samples=10"):
            pl.NPKL(solver="sdp", sdp_max_samples=10).fit(X, C)
    new = pl.NPKL(solver="sdp", loss="square",
                  solver_options={"max_samples": 10, "force": True}).fit(X, C)
    with pytest.warns(FutureWarning, match=r"solver_options=\{'force': True\}"):
        legacy = pl.NPKL(solver="sdp", loss="square", sdp_max_samples=10,
                         sdp_force=True).fit(X, C)
    np.testing.assert_allclose(legacy.embedding_ @ legacy.embedding_.T,
                               new.embedding_ @ new.embedding_.T, rtol=0, atol=1e-9)


def test_deprecated_name_of_another_solver_is_ignored_as_before():
    X, C = _blobs()
    ref = pl.NPKL(loss="square", max_iter=100, random_state=0).fit(X, C)
    with pytest.warns(FutureWarning, match="read by solver='admm'"):
        legacy = pl.NPKL(loss="square", rho=5.0, max_iter=100, random_state=0).fit(X, C)
    np.testing.assert_array_equal(legacy.embedding_, ref.embedding_)
    assert "rho" not in legacy.solver_options_


def test_solver_options_validated_against_the_solver():
    X, C = _blobs(30)
    with pytest.raises(ValueError, match=r"keys \['rho', 'typo'\] that solver='bcd' does "
                                         r"not read; it accepts: 'omega', 'unconstrained'"):
        pl.NPKL(solver_options={"rho": 1.0, "typo": 1, "omega": 1.0}).fit(X, C)
    with pytest.raises(ValueError, match=r"solver_options\['omega'\] must be"):
        pl.NPKL(solver_options={"omega": 2.5}).fit(X, C)
    with pytest.raises(ValueError, match="solver_options"):
        pl.NPKL(solver_options=[("omega", 1.0)]).fit(X, C)
    with pytest.raises(ValueError, match="solver='mfpc' does not read; it accepts: none"):
        pl.NPKL(solver="mfpc", loss="pcp", solver_options={"omega": 1.0}).fit(X, C)
    options = {"omega": 1.0}
    model = pl.NPKL(loss="square", solver_options=options, max_iter=20).fit(X, C)
    assert options == {"omega": 1.0}  # not modified
    assert model.solver_options_ == {"omega": 1.0, "unconstrained": "sequential",
                                     "hinge_smoothing": "auto", "multilevel": "auto",
                                     "extrapolation": "auto"}
    assert model.omega_ == 1.0


def test_side_info_and_deprecated_constraints_attribute():
    X, C = _blobs(30)
    model = pl.NPKL(loss="square", max_iter=20).fit(X, C)
    assert isinstance(model.side_info_, pl.PairwiseConstraints)
    np.testing.assert_array_equal(model.side_info_.pairs, C.pairs)
    with pytest.warns(FutureWarning, match="use side_info_"):
        assert model.constraints_ is model.side_info_
    assert not hasattr(pl.NPKL(), "side_info_")


def test_npklcv_takes_solver_options_and_old_names():
    X, C = _blobs()
    kw = dict(loss="square", gammas=[1.0, 10.0], cv=2, random_state=0)
    cv = NPKLCV(solver_options={"omega": 1.0}, **kw).fit(X, C)
    assert cv.omega_ == 1.0 and cv.solver_options_["omega"] == 1.0
    assert cv.get_params()["solver_options"] == {"omega": 1.0}
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        cv.side_info_  # noqa: B018
    with pytest.warns(FutureWarning, match=r"solver_options=\{'omega': 1.0\}"):
        legacy = NPKLCV(omega=1.0, **kw).fit(X, C)
    np.testing.assert_array_equal(legacy.embedding_, cv.embedding_)
    np.testing.assert_array_equal(legacy.scores_, cv.scores_)
