"""NPKL(dtype=np.float32): single-precision embedding and graph values in the BCD sweeps,
float64 arithmetic; the solvers that compute in float64 refuse it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from psdlearn.constraints import PairwiseConstraints
from psdlearn.datasets import make_two_gaussians
from psdlearn.graph import knn_laplacian
from psdlearn.npkl import _kernels as K
from psdlearn.npkl import _multilevel as ML
from psdlearn.npkl.bcd import initial_embedding, solve_bcd
from psdlearn.npkl.estimator import NPKL
from psdlearn.npkl.losses import ROW_SQUARE
from psdlearn.npkl.problem import NPKLProblem

#: Relative agreement of the float32 and float64 objectives (both evaluated on ``L`` in
#: float64) after fits to ``tol = 1e-7``: at a minimizer the rounding of ``E`` moves the
#: objective to second order, and that of ``L`` by at most ``kappa(L) 2**-24`` relative
#: (``kappa <= (2 + delta) / delta``); measured 4e-14 to 5e-9 on these problems.
OBJECTIVE_RTOL = 1e-6
BCD_LOSSES = ("hinge", "squared_hinge", "square", "linear")


@pytest.fixture(scope="module")
def gaussians():
    X, y = make_two_gaussians(300, n_features=4, random_state=0)
    C = PairwiseConstraints.from_labels(y, n_must=30, n_cannot=30, random_state=0)
    return X, C


def _fit(X, C, dtype, **params):
    kwargs = dict(rank=6, n_neighbors=8, tol=1e-7, max_iter=5000, certificate_tol=1e-3,
                  random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # converged and certified
        return NPKL(dtype=dtype, **{**kwargs, **params}).fit(X, C)


@pytest.mark.parametrize("loss", BCD_LOSSES)
def test_float32_fit_agrees_with_float64_and_stays_psd(gaussians, loss):
    X, C = gaussians
    f64 = _fit(X, C, np.float64, loss=loss)
    f32 = _fit(X, C, np.float32, loss=loss)
    E = f32.embedding_
    assert E.dtype == np.float32 and f64.embedding_.dtype == np.float64
    assert np.all(np.isfinite(E))
    K32 = E.astype(np.float64) @ E.T.astype(np.float64)
    assert np.linalg.eigvalsh(K32).min() >= -1e-6 * np.trace(K32)
    assert f32.certificate_.certified  # the float64 bound of the float32 solution
    o32, o64 = f32.objective(), f64.objective()
    if loss == "hinge":  # a kinked loss: both within their certified gaps of the optimum
        assert abs(o32 - o64) <= f32.certificate_.gap_bound + f64.certificate_.gap_bound
    else:
        assert abs(o32 - o64) <= OBJECTIVE_RTOL * abs(o64)
    # the history is the objective of L rounded to float32: close to the float64 one
    assert abs(f32.objective_history_[-1] - o32) <= 1e-5 * abs(o32)


def test_float32_objective_accumulates_in_float64():
    # the same float32 values read as float32 or widened first give the same sum: the
    # products and sums are float64 either way (a float32 sum of 3e5 terms would be off
    # by about 1e-5 relative)
    X, y = make_two_gaussians(4000, n_features=3, random_state=1)
    L = knn_laplacian(X, n_neighbors=10).tocsr()
    E = np.random.default_rng(0).standard_normal((4000, 40)).astype(np.float32)
    Lp, Li = L.indptr.astype(np.int64), L.indices.astype(np.int64)
    Lx = L.data.astype(np.float32)
    pairs = np.array([[0, 1], [2, 3]], dtype=np.int64)
    signs = np.array([1.0, -1.0])
    f32 = K.objective(E, Lp, Li, Lx, pairs, signs, ROW_SQUARE, 1.0)
    f64 = K.objective(E.astype(np.float64), Lp, Li, Lx.astype(np.float64), pairs, signs,
                      ROW_SQUARE, 1.0)
    assert abs(f32 - f64) <= 1e-12 * abs(f64)


def test_solve_bcd_in_float32_is_monotone_and_keeps_its_type():
    X, y = make_two_gaussians(500, n_features=3, random_state=2)
    L = knn_laplacian(X, n_neighbors=8).tocsr()
    C = PairwiseConstraints.from_labels(y, n_must=20, n_cannot=20, random_state=0)
    problem = NPKLProblem(L, C.pairs, C.signs.astype(np.float64), "squared_hinge", 5.0)
    E0 = initial_embedding(500, 5, 0)
    res = solve_bcd(problem, E0, max_iter=60, tol=0.0, random_state=0, omega=1.7,
                    dtype=np.float32)
    assert res.embedding.dtype == np.float32
    h = np.asarray(res.objective_history)
    assert np.all(np.diff(h) <= 1e-6 * abs(h[0]))
    ref = solve_bcd(problem, E0, max_iter=60, tol=0.0, random_state=0, omega=1.7)
    assert abs(problem.objective(res.embedding) - problem.objective(ref.embedding)) <= (
        1e-5 * abs(problem.objective(ref.embedding)))


def test_transform_partial_fit_and_warm_start_keep_float32(gaussians):
    X, C = gaussians
    model = NPKL(loss="square", rank=4, dtype=np.float32, certificate_tol=None,
                 random_state=0).fit(X, C)
    T = model.transform(X)
    assert T.dtype == np.float32
    np.testing.assert_array_equal(T, model.embedding_)
    new = model.transform(X[:5] + 0.01)
    assert new.dtype == np.float32 and np.all(np.isfinite(new))
    assert model.transform_joint(X[:5] + 0.01).dtype == np.float32
    extra = PairwiseConstraints(np.array([[0, 1], [2, 3]]), np.array([1, -1]),
                                n_samples=len(X))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # merged pairs
        model.partial_fit(X, extra)
    assert model.embedding_.dtype == np.float32
    model.set_params(warm_start=True).fit(X, C)
    assert model.embedding_.dtype == np.float32


def test_adaptive_rank_and_multilevel_in_float32(monkeypatch):
    X, y = make_two_gaussians(1200, n_features=4, random_state=3)
    C = PairwiseConstraints.from_labels(y, n_must=40, n_cannot=40, random_state=0)
    monkeypatch.setattr(ML, "COARSEST", 150)
    multi = NPKL(loss="square", rank=4, dtype=np.float32, random_state=0, tol=1e-6,
                 solver_options={"multilevel": True}).fit(X, C)
    assert len(multi.multilevel_levels_) >= 1
    assert multi.embedding_.dtype == np.float32 and multi.certificate_.certified
    # the escalation's columns come back in float64: the next round rounds them
    a32, a64 = (NPKL(loss="square", rank="adaptive", rank_init=1, dtype=dtype,
                     random_state=0).fit(X, C) for dtype in (np.float32, np.float64))
    assert a32.embedding_.dtype == np.float32 and a32.certificate_.certified
    assert a32.rank_ == a64.rank_ > 1
    assert [r for r, _ in a32.rank_path_] == [r for r, _ in a64.rank_path_]


def test_memory_estimate_halves_the_embedding():
    e64 = NPKL(rank=50).memory_estimate(10**6, 10, n_pairs=2000)
    e32 = NPKL(rank=50, dtype=np.float32).memory_estimate(10**6, 10, n_pairs=2000)
    assert e32.config["dtype"] == "float32"
    assert 2 * e32.breakdown["embedding"] == e64.breakdown["embedding"]
    # no certificate: the solve phase is the float32 saving, less the values' copy
    s64 = NPKL(rank=50, certificate_tol=None).memory_estimate(10**6, 10, n_pairs=2000)
    s32 = NPKL(rank=50, certificate_tol=None, dtype=np.float32).memory_estimate(
        10**6, 10, n_pairs=2000)
    assert s64.phase == s32.phase == "solve"
    # the extrapolation's two saved copies of the embedding (on at 10^6 samples) halve too
    extrapolation = [e.breakdown["extrapolation arrays"] for e in (s64, s32)]
    assert extrapolation == [2 * 8 * 10**6 * 50, 2 * 4 * 10**6 * 50]
    # BCD holds one embedding (renumbered and swept in place)
    coarse = [e.breakdown["coarse level"] for e in (s64, s32)]  # its embedding halves
    saved = (4 * 10**6 * 50 + extrapolation[0] - extrapolation[1] + coarse[0] - coarse[1]
             - s32.breakdown["float32 Laplacian values"])
    assert s64.peak_bytes - s32.peak_bytes == saved > 0


@pytest.mark.parametrize("solver, loss", [("admm", "square"), ("simplenpkl", "square"),
                                          ("sdp", "square"), ("mfpc", "square")])
def test_solvers_in_float64_refuse_float32(gaussians, solver, loss):
    X, C = gaussians
    with pytest.raises(ValueError, match=r"dtype=np\.float32 is not available with "
                       rf"solver='{solver}'.*\['bcd'\]"):
        NPKL(solver=solver, loss=loss, dtype=np.float32).fit(X, C)


@pytest.mark.parametrize("dtype", ["float32", np.float16, np.int32])
def test_dtype_must_be_a_float_type(gaussians, dtype):
    X, C = gaussians
    with pytest.raises(ValueError, match="'dtype' parameter"):
        NPKL(dtype=dtype).fit(X, C)


def test_dask_fit_refuses_float32():
    da = pytest.importorskip("dask.array")
    X, y = make_two_gaussians(100, n_features=3, random_state=0)
    C = PairwiseConstraints.from_labels(y, n_must=5, n_cannot=5, random_state=0)
    with pytest.raises(ValueError, match="dask array"):
        NPKL(dtype=np.float32).fit(da.from_array(X, chunks=50), C)


def test_precomputed_float32_laplacian_input_is_accepted(gaussians):
    # a Laplacian given in float32 is read as float64 (the problem), the sweeps round it
    X, C = gaussians
    L = sp.csr_matrix(knn_laplacian(X, n_neighbors=8), dtype=np.float32)
    model = NPKL(graph="precomputed", loss="square", rank=4, dtype=np.float32,
                 certificate_tol=None, random_state=0).fit(L, C)
    assert model.laplacian_.dtype == np.float64
    assert model.embedding_.dtype == np.float32


def test_npklcv_passes_dtype_to_its_fits(gaussians):
    from psdlearn.model_selection import NPKLCV

    X, C = gaussians
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # loose fold fits
        cv = NPKLCV(loss="square", rank=3, gammas=[0.5, 5.0], cv=2, dtype=np.float32,
                    certificate_tol=None, random_state=0).fit(X, C)
    assert cv.embedding_.dtype == np.float32
    with pytest.raises(ValueError, match="dtype"):
        NPKLCV(solver="admm", loss="square", dtype=np.float32, gammas=[1.0], cv=2).fit(X, C)
