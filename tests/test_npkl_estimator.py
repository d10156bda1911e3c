"""The NPKL estimator: conventions, input handling, agreement with the exact SDP."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

import psdlearn as pl
from psdlearn.constraints import as_constraints
from psdlearn.npkl.estimator import auto_rank

LOSSES = ["hinge", "squared_hinge", "square", "linear"]


def _blobs(n=90, n_classes=3, d=3, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=2.5, size=(n_classes, d))
    y = np.arange(n) % n_classes
    return centers[y] + rng.normal(size=(n, d)), y


def test_auto_rank_rule():
    for m in [1, 2, 3, 5, 6, 10, 180, 1000, 12345]:
        r = auto_rank(m)
        assert r * (r + 1) // 2 <= m < (r + 1) * (r + 2) // 2


def test_rank_rule_counts_the_constraints_of_each_paper():
    """From the loss table: the unordered pairs for the margin losses (Hu & Kwok 2015), the
    ordered set ``T`` for pcp (Hu & Kwok 2013: both orders of every pair plus the ``n``
    diagonal pairs)."""
    from psdlearn.npkl.problem import LOSSES as ALL_LOSSES
    from psdlearn.npkl.problem import rank_rule_count

    rng = np.random.default_rng(0)
    n = 50
    for m in (0, 1, 7, 30):
        pairs = np.sort(rng.choice(n, size=(m, 2), replace=True), axis=1)
        signs = rng.choice([-1.0, 1.0], size=m)
        for loss in ALL_LOSSES:
            expected = 2 * m + n if loss == "pcp" else m
            assert rank_rule_count(loss, pairs, signs, n) == expected


def test_get_params_roundtrip_and_clone():
    model = pl.NPKL(loss="square", rank=4, gamma=0.5, max_iter=7, random_state=3)
    params = model.get_params()
    assert params["loss"] == "square" and params["rank"] == 4 and params["max_iter"] == 7
    assert clone(model).get_params() == params


def test_parameter_names_are_those_of_each_class_signature():
    # the names are cached per class (psdlearn._compat.BaseEstimator): a subclass with its
    # own __init__ has its own names, and every estimator's match its signature
    import inspect

    for cls in (pl.NPKL, pl.PSDBoost, pl.RCA, pl.KernelMetricLearner,
                pl.GeneralizedNystroem, pl.ConstrainedClustering, pl.PairsClassifier):
        names = sorted(p for p in inspect.signature(cls.__init__).parameters if p != "self")
        assert cls._get_param_names() == names

    class Wider(pl.NPKL):
        def __init__(self, extra=1, **kwargs):
            super().__init__(**kwargs)
            self.extra = extra

    assert Wider._get_param_names() == ["extra"]
    assert "extra" not in pl.NPKL().get_params()
    assert clone(Wider(extra=5)).extra == 5


@pytest.mark.parametrize(
    "kwargs,match",
    [({"loss": "huber"}, "loss"), ({"solver": "newton"}, "solver"), ({"gamma": -1.0}, "gamma"),
     ({"rank": 0}, "rank"), ({"delta": 0.0}, "delta")],
)
def test_invalid_parameters_raise(kwargs, match):
    X, y = _blobs()
    with pytest.raises(ValueError, match=match):
        pl.NPKL(**kwargs).fit(X, pl.PairwiseConstraints.from_labels(y, random_state=0))


def test_bad_inputs_raise():
    X, y = _blobs()
    C = pl.PairwiseConstraints.from_labels(y, random_state=0)
    with pytest.raises(ValueError, match="exceeds"):
        pl.NPKL(rank=1000).fit(X, C)
    with pytest.raises(ValueError, match="no constraint"):
        pl.NPKL().fit(X, np.full(len(X), -1))
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError):
        pl.NPKL().fit(Xn, C)
    with pytest.raises(ValueError, match="refers to"):
        pl.NPKL().fit(X[:10], C)
    with pytest.raises(ValueError, match="shape"):
        pl.NPKL().fit(X, np.zeros((3, 4)))


def test_side_info_forms_agree():
    X, y = _blobs()
    y_partial = np.full(len(y), -1)
    y_partial[:12] = y[:12]
    C = as_constraints(y_partial, len(y))
    assert C.n_pairs == 12 * 11 // 2
    assert np.array_equal(C.signs == 1, y[C.pairs[:, 0]] == y[C.pairs[:, 1]])
    a = pl.NPKL(loss="square", random_state=0, max_iter=30).fit(X, C)
    b = pl.NPKL(loss="square", random_state=0, max_iter=30).fit(X, C.to_array())
    # labels count fewer pairs in rank="auto" (the smallest set implying them): same
    # problem at the same rank
    c = pl.NPKL(loss="square", random_state=0, max_iter=30).fit(X, y_partial)
    assert c.rank_ < a.rank_
    c.set_params(rank=a.rank_).fit(X, y_partial)
    assert np.array_equal(a.embedding_, b.embedding_)
    assert np.array_equal(a.embedding_, c.embedding_)


def test_precomputed_graph_matches_knn_and_input_untouched():
    X, y = _blobs()
    X0 = X.copy()
    C = pl.PairwiseConstraints.from_labels(y, random_state=1)
    # the kNN fit starts from points ordered by their values, the precomputed one in input
    # order: the same problem (same L, same gamma), the same kernel at the optimum (square
    # loss: unique)
    a = pl.NPKL(loss="square", random_state=0, tol=1e-10, max_iter=2000).fit(X, C)
    L = pl.graph.knn_laplacian(X, n_neighbors=5)
    b = pl.NPKL(loss="square", graph="precomputed", random_state=0, tol=1e-10,
                max_iter=2000).fit(L, C)
    assert (a.laplacian_ != b.laplacian_).nnz == 0
    assert a.gamma_ == pytest.approx(b.gamma_, rel=1e-12)
    K_a, K_b = a.embedding_ @ a.embedding_.T, b.embedding_ @ b.embedding_.T
    assert np.abs(K_a - K_b).max() <= 1e-6 * np.abs(K_a).max()
    assert np.array_equal(X, X0)
    with pytest.raises(ValueError, match="precomputed"):
        b.transform(X[:3])


@pytest.mark.parametrize("loss", LOSSES)
def test_fit_attributes_monotone_and_deterministic(loss):
    X, y = _blobs(seed=2)
    C = pl.PairwiseConstraints.from_labels(y, random_state=2)
    # Theorem 1 is about Algorithm 1 itself: no smoothing stages for the hinge here
    m1 = pl.NPKL(loss=loss, random_state=4, solver_options={"hinge_smoothing": None}).fit(X, C)
    m2 = pl.NPKL(loss=loss, random_state=4, solver_options={"hinge_smoothing": None}).fit(X, C)
    assert m1.embedding_.shape == (len(X), auto_rank(C.n_pairs)) == (len(X), m1.rank_)
    assert np.array_equal(m1.embedding_, m2.embedding_)
    hist = np.asarray(m1.objective_history_)
    assert len(hist) == m1.n_iter_ + 1
    assert np.all(np.diff(hist) <= 1e-10 * np.abs(hist[:-1]).max())
    assert m1.objective() == pytest.approx(hist[-1], rel=1e-10)
    if loss == "linear":
        assert np.linalg.norm(m1.embedding_, axis=1).max() <= m1.b + 1e-12


def test_convergence_warning_at_max_iter():
    X, y = _blobs()
    C = pl.PairwiseConstraints.from_labels(y, random_state=0)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        pl.NPKL(max_iter=2, tol=0.0, random_state=0).fit(X, C)


def test_learned_kernel_improves_clustering_on_blobs():
    X, y = _blobs(n=120, d=2, seed=5)
    C = pl.PairwiseConstraints.from_labels(y, random_state=0)
    model = pl.NPKL(loss="squared_hinge", random_state=0).fit(X, C)
    labels = pl.kernel_kmeans(model.embedding_, 3, random_state=0)
    assert pl.metrics.pairwise_accuracy(y, labels) > 0.9


def test_out_of_sample_accuracy_rises_with_constraints():
    """Seed 000 section IV-E on iris: half in-sample (constraints), half out-of-sample."""
    X, y = pl.datasets.load("iris")
    n = len(y)
    scores = {0.05: [], 1.5: []}
    for rep in range(4):
        rng = np.random.default_rng(rep)
        perm = rng.permutation(n)
        tr, te = perm[: n // 2], perm[n // 2:]
        for frac in scores:
            count = max(1, round(frac * n / 2))
            C = pl.PairwiseConstraints.from_labels(y[tr], n_must=count, n_cannot=count,
                                                   random_state=rep)
            model = pl.NPKL(loss="square", random_state=rep).fit(X[tr], C)
            E_new = model.transform(X[te])
            assert E_new.shape == (len(te), model.rank_)
            labels = pl.kernel_kmeans(E_new, 3, random_state=rep)
            scores[frac].append(pl.metrics.pairwise_accuracy(y[te], labels))
    assert np.mean(scores[1.5]) > np.mean(scores[0.05])


def test_transform_joint_stationarity():
    """Joint out-of-sample rows minimize tr([E_I; E_O]^T L [E_I; E_O]) over E_O."""
    X, y = _blobs(n=80, seed=7)
    C = pl.PairwiseConstraints.from_labels(y, random_state=0)
    model = pl.NPKL(loss="square", random_state=0).fit(X[:60], C.__class__.from_labels(
        y[:60], random_state=0))
    Xn = X[60:]
    E_new = model.transform_joint(Xn)
    L = pl.graph.knn_laplacian(np.vstack([X[:60], Xn]), sigma=model.sigma_).toarray()
    E = np.vstack([model.embedding_, E_new])
    grad = (L @ E)[60:]
    assert np.abs(grad).max() < 1e-8 * max(1.0, np.abs(E).max())
    # and any perturbation of E_O increases the smoothness term
    P = np.random.default_rng(0).normal(size=E_new.shape) * 1e-3
    E2 = np.vstack([model.embedding_, E_new + P])
    assert np.sum(E2 * (L @ E2)) > np.sum(E * (L @ E))


@pytest.mark.sdp
@pytest.mark.parametrize("loss", LOSSES)
def test_bcd_within_one_percent_of_sdp(loss):
    pytest.importorskip("cvxpy")
    X, y = _blobs(n=60, seed=11)
    C = pl.PairwiseConstraints.from_labels(y, random_state=3)
    sdp = pl.NPKL(loss=loss, solver="sdp").fit(X, C)
    K = sdp.embedding_ @ sdp.embedding_.T
    assert np.linalg.eigvalsh(K).min() >= -1e-7 * np.abs(K).max()
    best = np.inf
    for seed in range(3):
        bcd = pl.NPKL(loss=loss, solver="bcd", random_state=seed, tol=1e-7,
                      max_iter=3000).fit(X, C)
        f = bcd.objective_history_[-1]
        # no low-rank point is below the global optimum (beyond solver tolerance)
        assert f >= sdp.objective_history_[-1] - 1e-5 * max(1.0, abs(sdp.objective_history_[-1]))
        best = min(best, f)
    f_sdp = sdp.objective_history_[-1]
    assert abs(best - f_sdp) <= 0.01 * abs(f_sdp)


def test_hinge_smoothing_stages_and_final_exact_stage_monotone():
    X, y = _blobs(seed=2)
    C = pl.PairwiseConstraints.from_labels(y, random_state=2)
    plain = pl.NPKL(loss="hinge", random_state=4,
                    solver_options={"hinge_smoothing": None}).fit(X, C)
    smooth = pl.NPKL(loss="hinge", random_state=4).fit(X, C)
    mus = [mu for mu, _ in smooth.smoothing_stages_]
    assert mus == [0.1, 0.01, 0.001, 0.0001, 0.0]
    assert sum(k for _, k in smooth.smoothing_stages_) == smooth.n_iter_
    assert len(smooth.objective_history_) == smooth.n_iter_ + 1
    last = smooth.smoothing_stages_[-1][1]
    tail = np.asarray(smooth.objective_history_[-(last + 1):])
    assert np.all(np.diff(tail) <= 1e-10 * np.abs(tail).max())
    # the smoothed continuation escapes the non-stationary stall of plain row-wise BCD
    assert smooth.objective_history_[-1] < plain.objective_history_[-1]


def test_omega_auto_rule():
    """Young's SOR factor from the Jacobi radius bound 1 / (1 + delta) (seed 000 Prop. 1)."""
    X, y = _blobs()
    C = pl.PairwiseConstraints.from_labels(y, random_state=0)
    m = pl.NPKL(loss="square", delta=0.01, random_state=0).fit(X, C)
    rho = 1 / 1.01
    assert m.omega_ == pytest.approx(2 / (1 + np.sqrt(1 - rho**2)))
    # a precomputed Laplacian with a non-constant diagonal: Lanczos estimate of rho
    L = pl.graph.knn_laplacian(X) + 0.3 * sp.diags(np.linspace(0, 1, len(X)))
    m2 = pl.NPKL(loss="square", graph="precomputed", random_state=0).fit(L, C)
    D = L.diagonal()
    A = (np.diag(D) - L.toarray()) / np.sqrt(np.outer(D, D))
    rho2 = np.abs(np.linalg.eigvalsh(A)).max()
    assert m2.omega_ == pytest.approx(2 / (1 + np.sqrt(1 - rho2**2)), rel=1e-3)
    fixed = pl.NPKL(loss="square", solver_options={"omega": 1.0}, random_state=0).fit(X, C)
    assert fixed.omega_ == 1.0
