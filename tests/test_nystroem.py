"""Generalized Nystrom (Lan et al. 2017): closed forms, monotone solvers, limits, conventions."""

import warnings

import numpy as np
import pytest
from _nystroem_problems import (
    chain_must_links,
    multiple_problem,
    one_hot,
    partial_labels,
    small_problem,
    two_blobs,
)
from scipy.linalg import pinvh
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.utils.estimator_checks import parametrize_with_checks

import psdlearn as pl
from psdlearn.metrics import centered_alignment
from psdlearn.nystroem import (
    GeneralizedNystroem,
    QuadraticData,
    closed_form_start,
    mean_squared_distance,
    psd_projection,
    solve_dictionary,
)
from psdlearn.nystroem import estimator as estimator_module
from psdlearn.nystroem._beta import heuristic_beta, iterative_beta
from psdlearn.nystroem._multi import multiple_objective, prior_mixture, solve_multiple
from psdlearn.nystroem.dictionary import gradient, objective
from psdlearn.nystroem.estimator import _data_term


@parametrize_with_checks([GeneralizedNystroem(max_iter=20),
                          GeneralizedNystroem(max_iter=20, kernel_gammas=[0.5, 2.0])])
def test_sklearn_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


def test_data_term_equals_frobenius_form():
    E_l, Y, _, data = small_problem()
    rng = np.random.default_rng(1)
    S = rng.normal(size=(8, 8))
    S = S + S.T
    direct = np.sum((E_l @ S @ E_l.T - Y @ Y.T) ** 2)
    assert data.value(S) == pytest.approx(direct, rel=1e-12)


def test_group_data_term_equals_masked_form():
    rng = np.random.default_rng(2)
    E_g = rng.uniform(size=(10, 6))
    groups = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 3])
    Y = one_hot(groups)
    data = _data_term(E_g, Y, "groups")
    S = rng.normal(size=(6, 6))
    S = S + S.T
    M = Y @ Y.T  # the mask T of section 3.3: the within-group pairs
    assert data.value(S) == pytest.approx(np.sum((M * (E_g @ S @ E_g.T) - M) ** 2),
                                          rel=1e-12)


def test_gradient_matches_finite_differences():
    _, _, prior, data = small_problem()
    rng = np.random.default_rng(3)
    S = rng.normal(size=(8, 8))
    S = S + S.T
    D = rng.normal(size=(8, 8))
    D = D + D.T
    h = 1e-6
    fd = (objective(S + h * D, prior, 0.3, data) - objective(S - h * D, prior, 0.3, data)) / (
        2 * h)
    assert np.sum(gradient(S, prior, 0.3, data) * D) == pytest.approx(fd, rel=1e-6)


@pytest.mark.parametrize("lam", [1e-4, 1.0, 1e4])
def test_closed_form_solves_eq_12(lam):
    _, _, prior, data = small_problem()
    S = closed_form_start(prior, lam, data)
    A = data.blocks[0]
    residual = lam * S + A @ S @ A - lam * prior - data.B
    scale = np.linalg.norm(lam * prior + data.B)
    assert np.linalg.norm(residual) <= 1e-12 * scale
    assert np.allclose(S, S.T, atol=1e-12 * np.abs(S).max())
    # the unconstrained minimizer: the gradient vanishes there
    assert np.linalg.norm(gradient(S, prior, lam, data)) <= 1e-11 * scale


def test_closed_form_several_blocks_by_cg():
    rng = np.random.default_rng(4)
    E = rng.uniform(size=(9, 5))
    data = _data_term(E, one_hot([0, 0, 1, 1, 1, 2, 2, 3, 3]), "groups")
    prior = np.eye(5)
    S = closed_form_start(prior, 0.1, data)
    residual = 0.1 * S + data.apply(S) - 0.1 * prior - data.B
    assert np.linalg.norm(residual) <= 1e-9 * np.linalg.norm(0.1 * prior + data.B)


@pytest.mark.parametrize("accelerated", [False, True])
def test_projected_gradient_monotone_and_psd(accelerated):
    _, _, prior, data = small_problem(m=10, n_lab=15, seed=5)
    lam = 1e-3  # small lambda: the closed form is indefinite, the projection is active
    assert np.linalg.eigvalsh(closed_form_start(prior, lam, data))[0] < 0
    res = solve_dictionary(prior, lam, data, max_iter=3000, tol=0.0, accelerated=accelerated)
    hist = np.array(res.objective_history)
    assert len(hist) > 2
    assert np.all(np.diff(hist) <= 1e-12 * np.abs(hist[:-1]))
    assert np.linalg.eigvalsh(res.S)[0] >= -1e-10 * np.abs(res.S).max()
    # fixed point of the projected gradient map (first-order optimality over S >= 0)
    L = 2 * (lam + data.curvature_bound())
    G = gradient(res.S, prior, lam, data)
    mapped = psd_projection(res.S - G / L)
    assert np.linalg.norm(mapped - res.S) <= 1e-3 * np.linalg.norm(res.S)


def test_path_solve_in_the_eigenbasis_with_a_warm_step_reaches_the_same_optimum():
    """The cross-validation's fold solves: from the previous lambda's solution, in the
    eigenbasis of A, with the Armijo search started at half the previous step. Solved to a
    tight tolerance, the optimum is that of a cold solve in the original basis (the
    problem is strictly convex), S~ = U^T S U, and the factor read off the last projection
    reproduces S (an SVM on E F sees the kernel E S E^T)."""
    _, _, prior, data = small_problem(m=10, n_lab=15, seed=7)
    _, U = data.eigensystem()
    first = solve_dictionary(prior, 1.0, data, max_iter=5000, tol=1e-13, eigenbasis=True)
    warm = solve_dictionary(prior, 1e-2, data, S_init=first.S, a_init=first.step / 2,
                            max_iter=5000, tol=1e-13, eigenbasis=True)
    cold = solve_dictionary(prior, 1e-2, data, max_iter=5000, tol=1e-13)
    np.testing.assert_allclose(U @ warm.S @ U.T, cold.S, atol=1e-4 * np.abs(cold.S).max())
    assert abs(warm.objective_history[-1] - cold.objective_history[-1]) <= (
        1e-9 * cold.objective_history[-1])
    for res, basis in ((warm, U), (cold, np.eye(10))):
        F = basis @ res.factor
        np.testing.assert_allclose(F @ F.T, basis @ res.S @ basis.T,
                                   atol=1e-10 * np.abs(res.S).max())
    with pytest.raises(ValueError, match="one block"):
        half = QuadraticData([data.blocks[0], data.blocks[0]], data.B, data.c)
        solve_dictionary(prior, 1.0, half, eigenbasis=True)


@pytest.mark.sdp
def test_agrees_with_cvxpy():
    cp = pytest.importorskip("cvxpy")
    E_l, Y, prior, data = small_problem(m=5, n_lab=8, n_classes=2, seed=6)
    lam = 1e-2
    S = cp.Variable((5, 5), PSD=True)
    cost = lam * cp.sum_squares(S - prior) + cp.sum_squares(E_l @ S @ E_l.T - Y @ Y.T)
    problem = cp.Problem(cp.Minimize(cost))
    problem.solve()
    res = solve_dictionary(prior, lam, data, max_iter=5000, tol=1e-14)
    ref = problem.value
    assert res.objective_history[-1] <= ref * (1 + 1e-5) + 1e-8


def test_lambda_to_infinity_gives_prior():
    X, y = two_blobs()
    g = GeneralizedNystroem(n_landmarks=15, lambdas=[1e12], random_state=0)
    g.fit(X, partial_labels(y))
    assert np.linalg.norm(g.dictionary_ - g.prior_) <= 1e-6 * np.linalg.norm(g.prior_)
    W = rbf_kernel(g.landmarks_, gamma=g.kernel_gamma_)
    W_pinv = pinvh(W, rtol=1e-10)
    assert np.allclose(g.prior_, g.beta_ * W_pinv, rtol=1e-10,
                       atol=1e-12 * np.abs(W_pinv).max() * g.beta_)


def test_y_none_is_standard_nystroem():
    X, _ = two_blobs()
    g = GeneralizedNystroem(n_landmarks=20, random_state=0).fit(X)
    Q = g.transform(X)
    E = rbf_kernel(X, g.landmarks_, gamma=g.kernel_gamma_)
    K = E @ pinvh(rbf_kernel(g.landmarks_, gamma=g.kernel_gamma_), rtol=1e-10) @ E.T
    assert np.allclose(Q @ Q.T, K, atol=1e-8 * np.abs(K).max())
    assert g.lambda_ is None and g.side_info_ is None and g.converged_ and g.n_iter_ == 0
    assert g.kernel_gamma_ == pytest.approx(1.0 / mean_squared_distance(X))


@pytest.mark.parametrize("y,what", [
    (np.full(120, -1), "y has no labelled point"),
    (pl.PairwiseConstraints([[0, 1]], [-1], n_samples=120), "y has no must-link pair"),
])
def test_no_side_information_falls_back_to_nystroem_with_a_warning(y, what):
    X, _ = two_blobs()
    plain = GeneralizedNystroem(n_landmarks=20, random_state=0).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the cannot-link one, tested below
        with pytest.warns(UserWarning, match=f"{what}.*standard Nystrom kernel.*y=None"):
            g = GeneralizedNystroem(n_landmarks=20, random_state=0).fit(X, y)
    assert g.lambda_ is None and g.side_info_ is None
    assert np.array_equal(g.transform(X), plain.transform(X))


def test_learned_kernel_aligns_better_than_nystroem():
    X, y = two_blobs(n=200)
    yp = partial_labels(y, per_class=10)
    lab = yp != -1
    # criterion (15) picks lambda for the alignment (the default's CV, for accuracy)
    learned = GeneralizedNystroem(n_landmarks=20, lambda_selection="alignment",
                                  random_state=0).fit(X, yp)
    plain = GeneralizedNystroem(n_landmarks=20, random_state=0).fit(X, None)
    ideal = one_hot(y[lab])
    a_learned = centered_alignment(learned.transform(X[lab]), ideal, factors=True)
    a_plain = centered_alignment(plain.transform(X[lab]), ideal, factors=True)
    assert a_learned > a_plain + 0.03
    # also on the unlabelled points, which took no part in the fit
    ideal_u = one_hot(y[~lab])
    assert (centered_alignment(learned.transform(X[~lab]), ideal_u, factors=True)
            > centered_alignment(plain.transform(X[~lab]), ideal_u, factors=True))


def test_transform_new_points_is_extrapolation_formula():
    X, y = two_blobs()
    g = GeneralizedNystroem(n_landmarks=15, random_state=0).fit(X, partial_labels(y))
    X_new = np.random.default_rng(7).normal(size=(9, X.shape[1]))
    E_new = rbf_kernel(X_new, g.landmarks_, gamma=g.kernel_gamma_)
    E_old = rbf_kernel(X[:5], g.landmarks_, gamma=g.kernel_gamma_)
    K = E_new @ g.dictionary_ @ E_old.T
    Q_new, Q_old = g.transform(X_new), g.transform(X[:5])
    assert np.allclose(Q_new @ Q_old.T, K, atol=1e-10 * np.abs(g.dictionary_).max())
    assert Q_new.shape == (9, g.rank_)


def test_alignment_criterion_picks_its_argmax():
    X, y = two_blobs()
    lambdas = [1e-3, 1e-1, 1e1, 1e3]
    g = GeneralizedNystroem(n_landmarks=15, lambdas=lambdas, lambda_selection="alignment",
                            random_state=0)
    g.fit(X, partial_labels(y))
    assert g.lambda_selection_ == "alignment"
    assert g.lambda_ == lambdas[int(np.argmax(g.lambda_scores_))]
    assert np.all(np.abs(g.lambda_scores_) <= 1 + 1e-12)
    assert np.linalg.eigvalsh(g.dictionary_)[0] >= -1e-10 * np.abs(g.dictionary_).max()


def test_default_selects_lambda_by_cross_validation_where_it_applies():
    """lambda_selection="auto": 3-fold CV on the labelled points when every class has 3 of
    them (benchmarks/results/defaults_nystroem.md), criterion (15) otherwise."""
    X, y = two_blobs()
    yp = partial_labels(y)
    g = GeneralizedNystroem(n_landmarks=15, random_state=0)
    assert g.get_params()["lambda_selection"] == "auto"
    g.fit(X, yp)
    assert g.lambda_selection_ == "cv"
    ref = clone(g).set_params(lambda_selection="cv").fit(X, yp)
    assert np.array_equal(g.lambda_scores_, ref.lambda_scores_) and g.lambda_ == ref.lambda_
    # the scores are held-out accuracies; a tie goes to the larger lambda
    assert np.all((g.lambda_scores_ >= 0) & (g.lambda_scores_ <= 1))
    lambdas = np.asarray(g.lambdas)
    assert g.lambda_ == lambdas[g.lambda_scores_ == g.lambda_scores_.max()].max()
    must = np.array([[0, 2, 1], [2, 4, 1], [1, 3, 1], [3, 5, 1]])
    for y_fit in (partial_labels(y, per_class=2), must):
        assert clone(g).fit(X, y_fit).lambda_selection_ == "alignment"
    assert clone(g).fit(X).lambda_selection_ is None


def test_cv_score_is_the_mean_over_repeated_folds(monkeypatch):
    """lambda_scores_ of "cv" is the held-out accuracy averaged over CV_REPEATS draws x 3
    folds, recomputed here from the recorded splits; the splits (hence lambda_) depend
    only on random_state."""
    from sklearn import model_selection
    from sklearn.svm import LinearSVC

    from psdlearn._linalg import psd_factor

    splits, data = [], []

    class Recording(model_selection.RepeatedStratifiedKFold):
        def split(self, X, y=None, groups=None):
            data.append((X, y))  # the labelled points' kernel rows, in value order
            for train, test in super().split(X, y, groups):
                splits.append((train, test))
                yield train, test

    monkeypatch.setattr(model_selection, "RepeatedStratifiedKFold", Recording)
    X, y = two_blobs()
    yp = partial_labels(y)
    lambdas = (1e-2, 1e2)
    g = GeneralizedNystroem(n_landmarks=15, lambdas=lambdas, lambda_selection="cv",
                            random_state=0).fit(X, yp)
    first = list(splits)
    repeats = estimator_module.CV_REPEATS
    assert repeats > 1 and len(first) == 3 * repeats
    lab = np.flatnonzero(yp != -1)
    draws = [np.sort(np.concatenate([t for _, t in first[3 * r:3 * r + 3]]))
             for r in range(repeats)]
    for tests in draws:  # every draw partitions the labelled points into its 3 folds
        assert np.array_equal(tests, np.arange(lab.size))
    assert any(not np.array_equal(first[0][1], first[3 * r][1]) for r in range(1, repeats))

    E, codes = data[0]
    # the split rows are the labelled points' kernel rows (in the order they were split)
    E_lab = rbf_kernel(X[lab], g.landmarks_, gamma=g.kernel_gamma_)
    assert np.allclose(np.sort(E, axis=0), np.sort(E_lab, axis=0), rtol=0, atol=1e-12)
    Y = estimator_module._one_hot(codes)[1]
    for score, lam in zip(g.lambda_scores_, lambdas, strict=True):
        accuracy = []
        for train, test in first:
            S = solve_dictionary(g.prior_, lam, _data_term(E[train], Y[train], "labels"),
                                 max_iter=g.max_iter, tol=g.tol).S
            F = psd_factor(S)
            clf = LinearSVC(C=1.0).fit(E[train] @ F, codes[train])
            accuracy.append(clf.score(E[test] @ F, codes[test]))
        assert score == pytest.approx(np.mean(accuracy), abs=1e-12)

    splits.clear()
    again = clone(g).fit(X, yp)
    assert all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
               for a, b in zip(first, splits, strict=True))
    assert np.array_equal(again.lambda_scores_, g.lambda_scores_) and again.lambda_ == g.lambda_


def test_default_beats_the_standard_nystroem_kernel_where_alignment_does_not():
    """Few labels on a problem where criterion (15) fits the labelled points at the
    expense of the others: the cross-validated default keeps the unlabelled accuracy of
    the standard Nystrom kernel (linear SVM, C = 1, as in the benchmark)."""
    from sklearn.svm import LinearSVC

    X, y = two_blobs(n=300, d=5, seed=1)
    yp = partial_labels(y, per_class=6, seed=1)
    lab = yp != -1

    def accuracy(y_fit, **params):
        model = GeneralizedNystroem(n_landmarks=30, random_state=0, **params)
        Q = model.fit(X, y_fit).transform(X)
        return LinearSVC(C=1.0).fit(Q[lab], y[lab]).score(Q[~lab], y[~lab])

    default = accuracy(yp)
    alignment = accuracy(yp, lambda_selection="alignment")
    plain = accuracy(None)
    # measured: 0.990, 0.951 and 0.931
    assert default >= plain > alignment


def test_heuristic_beta_eq_8():
    E_l, Y, _, _ = small_problem(m=6, n_lab=10)
    W_pinv = np.diag(np.arange(1.0, 7.0))
    target = np.linalg.pinv(E_l) @ Y @ Y.T @ np.linalg.pinv(E_l).T
    expected = np.linalg.norm(target) / np.linalg.norm(W_pinv)
    assert heuristic_beta(E_l, Y, W_pinv) == pytest.approx(expected, rel=1e-10)


def test_iterative_beta_lowers_joint_objective():
    _, _, prior, data = small_problem(m=8, n_lab=12, seed=8)
    W_pinv = prior
    lam = 0.05
    beta0 = 3.0
    heur = solve_dictionary(beta0 * W_pinv, lam, data)
    beta, res = iterative_beta(W_pinv, lam, data, beta0)
    assert beta != beta0
    assert (objective(res.S, beta * W_pinv, lam, data)
            <= objective(heur.S, beta0 * W_pinv, lam, data) * (1 + 1e-12))
    # beta is optimal for the final S: the derivative in beta vanishes
    assert np.sum((res.S - beta * W_pinv) * W_pinv) == pytest.approx(0.0, abs=1e-6 * np.sum(
        res.S * W_pinv))


def test_multiple_kernels_monotone_and_features():
    X, y = two_blobs(n=150)
    yp = partial_labels(y, per_class=8)
    factors = 2.0 ** np.arange(-2, 3)
    g = GeneralizedNystroem(n_landmarks=30, kernel_gammas=factors, lambdas=[1e-2, 1.0],
                            max_iter=50, random_state=0).fit(X, yp)
    assert np.allclose(g.kernel_gammas_, factors * g.kernel_gamma_)
    hist = np.array(g.objective_history_)
    assert np.all(np.diff(hist) <= 1e-10 * np.abs(hist[:-1]))
    assert g.kernel_weights_.shape == (5,) and np.all(g.kernel_weights_ >= 0)
    m = g.landmarks_.shape[0]
    assert m == round(30 * 3.0 / 5)
    Q = g.transform(X[:7])
    K = sum(rbf_kernel(X[:7], g.landmarks_, gamma=b)
            @ g.dictionary_[j * m:(j + 1) * m, j * m:(j + 1) * m]
            @ rbf_kernel(X[:7], g.landmarks_, gamma=b).T
            for j, b in enumerate(g.kernel_gammas_))
    assert np.allclose(Q @ Q.T, K, atol=1e-9 * np.abs(K).max())


def test_alpha_step_is_eq_19():
    F, Y, priors, cross, s, c = multiple_problem()
    res = solve_multiple(priors, 0.1, cross, s, c, max_iter=5)
    for T, P, a in zip(res.T, priors, res.alpha, strict=True):
        assert a == pytest.approx(max(np.sum(P * T) / np.sum(P * P), 0.0), rel=1e-12)
    # the objective (17) written through the l x l kernel agrees with the m x m form
    K = sum(Fj @ Tj @ Fj.T for Fj, Tj in zip(F, res.T, strict=True))
    direct = 0.1 * sum(np.sum((T - a * P) ** 2) for T, P, a in zip(res.T, priors, res.alpha,
                                                                   strict=True))
    direct += np.sum((K - Y @ Y.T) ** 2)
    assert multiple_objective(res.T, res.alpha, priors, 0.1, cross, s, c) == pytest.approx(
        direct, rel=1e-10)


def test_prior_mixture_is_kkt_point_of_the_ray_problem():
    # min_{alpha >= 0} ||sum_j alpha_j F_j P_j F_j^T - Y Y^T||_F^2, written with l x l
    # matrices: the gradient must vanish where alpha_j > 0 and be >= 0 where alpha_j = 0
    rng = np.random.default_rng(11)
    F = [rng.uniform(size=(12, 5)) ** (j + 1) for j in range(4)]
    Y = one_hot(np.arange(12) % 3)
    priors = []
    for j in range(4):
        A = rng.normal(size=(5, 5))
        priors.append(A @ A.T * 10.0 ** (2 * j - 3))  # scales spread as beta_j of eq. (8)
    cross = [[a.T @ b for b in F] for a in F]
    s = [a.T @ Y for a in F]
    alpha = prior_mixture(priors, cross, s)
    G = [Fj @ P @ Fj.T for Fj, P in zip(F, priors, strict=True)]
    R = sum(a * Gj for a, Gj in zip(alpha, G, strict=True)) - Y @ Y.T
    grad = np.array([2.0 * np.sum(Gj * R) for Gj in G])
    scale = max(np.sqrt(np.sum(Gj**2)) for Gj in G) * np.sqrt(np.sum((Y @ Y.T) ** 2))
    assert np.all(alpha >= 0)
    assert np.all(grad >= -1e-8 * scale)
    assert np.all(np.abs(grad[alpha > 0]) <= 1e-8 * scale)
    # it is the start of the alternation, whose objective (17) then never increases
    c = float(np.sum(Y.sum(0) ** 2))
    res = solve_multiple(priors, 0.1, cross, s, c, max_iter=5)
    equal = multiple_objective([P / 4 for P in priors], np.full(4, 0.25), priors, 0.1, cross,
                               s, c)
    assert res.objective_history[0] <= equal
    assert res.objective_history[0] == pytest.approx(np.sum(R**2), rel=1e-9)


def test_mean_squared_distance_is_exact():
    X = np.random.default_rng(10).normal(size=(40, 3))
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    assert mean_squared_distance(X) == pytest.approx(d2.sum() / (40 * 39), rel=1e-12)


def test_must_links_are_groups_fitted_on_within_group_pairs():
    X, y = two_blobs(n=100)
    groups = np.full(len(y), -1)
    groups[:6] = 0
    groups[6:10] = 1
    C = chain_must_links(groups, len(y))
    g = GeneralizedNystroem(n_landmarks=15, lambdas=[1e-2], random_state=0).fit(X, C)
    assert isinstance(g.side_info_, pl.PairwiseConstraints) and g.side_info_.n_cannot == 0
    # the groups are the connected components: the closure (every within-group pair) and
    # the same pairs as an (m, 3) array give the same fit
    for other in (C.closure(), C.to_array()):
        h = GeneralizedNystroem(n_landmarks=15, lambdas=[1e-2], random_state=0).fit(X, other)
        assert np.allclose(h.dictionary_, g.dictionary_, rtol=1e-10,
                           atol=1e-12 * np.abs(g.dictionary_).max())
    E = rbf_kernel(X[:10], g.landmarks_, gamma=g.kernel_gamma_)
    M = one_hot(groups[:10])
    M = M @ M.T

    def masked_loss(S):
        return np.sum((M * (E @ S @ E.T) - M) ** 2)

    # J(S) <= J(S_0) and the prior term vanishes at S_0, so the data term cannot be worse
    assert masked_loss(g.dictionary_) < masked_loss(g.prior_)
    assert masked_loss(g.dictionary_) + 1e-2 * np.sum((g.dictionary_ - g.prior_) ** 2) == (
        pytest.approx(g.objective_history_[-1], rel=1e-8))


def test_params_clone_and_errors():
    g = GeneralizedNystroem(n_landmarks=12, lambdas=[1.0, 2.0], random_state=3)
    params = g.get_params()
    assert params["n_landmarks"] == 12 and list(params["lambdas"]) == [1.0, 2.0]
    assert clone(g).get_params()["random_state"] == 3
    X, y = two_blobs()
    with pytest.raises(NotFittedError):
        g.transform(X)
    with pytest.raises(ValueError, match="n_landmarks"):
        GeneralizedNystroem(n_landmarks=1000).fit(X, y)
    with pytest.raises(ValueError, match="n_landmarks"):
        GeneralizedNystroem(n_landmarks=1.5).fit(X, y)
    with pytest.raises(ValueError, match="lambdas"):
        GeneralizedNystroem(lambdas=[-1.0]).fit(X, y)
    with pytest.raises(ValueError, match="length 119 but X has 120"):
        GeneralizedNystroem(n_landmarks=10).fit(X, y[:-1])
    with pytest.raises(ValueError, match="does not take Triplets"):
        GeneralizedNystroem(n_landmarks=10).fit(X, pl.Triplets([[0, 1, 2]], n_samples=120))
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError):
        GeneralizedNystroem(n_landmarks=10).fit(Xn, y)
    with pytest.raises(ValueError, match="kernel_gammas needs kernel='rbf'"):
        GeneralizedNystroem(n_landmarks=10, kernel="linear", kernel_gammas=[1.0]).fit(X, y)
    with pytest.raises(ValueError, match="kernel_gammas needs class labels"):
        GeneralizedNystroem(n_landmarks=10, kernel_gammas=[1.0]).fit(
            X, chain_must_links(np.r_[0, 0, 0, np.full(117, -1)], 120))
    with pytest.raises(ValueError, match="kernel_gammas must be"):
        GeneralizedNystroem(n_landmarks=10, kernel_gammas=[0.0]).fit(X, y)
    with pytest.raises(ValueError, match="kernel_gamma='auto' is undefined"):
        GeneralizedNystroem(n_landmarks=2).fit(np.ones((5, 3)), None)


def test_same_seed_same_result_and_random_landmarks():
    X, y = two_blobs()
    yp = partial_labels(y)
    a = GeneralizedNystroem(n_landmarks=10, landmarks="random", random_state=4).fit(X, yp)
    b = GeneralizedNystroem(n_landmarks=10, landmarks="random", random_state=4).fit(X, yp)
    assert np.array_equal(a.landmarks_, b.landmarks_)
    assert np.array_equal(a.transform(X), b.transform(X))
    assert all(any(np.array_equal(z, x) for x in X) for z in a.landmarks_)


def test_other_kernel_and_public_export():
    X, y = two_blobs()
    g = pl.GeneralizedNystroem(n_landmarks=10, kernel="polynomial",
                               kernel_params={"degree": 2}, random_state=0)
    Q = g.fit(X, partial_labels(y)).transform(X)
    assert Q.shape[0] == len(X) and g.kernel_gamma_ is None


def test_eigenbasis_iterations_report_the_objective_of_the_returned_s():
    """The single-block solver iterates in the eigenbasis of ``A`` (on the congruence-scaled
    variable); rotated and scaled back, the returned ``S`` must have the last recorded
    objective (7) and reach the optimum of the generic path (the same data split into two
    halves of one block is solved without rotation or scaling): (7) is strongly convex."""
    E_l, Y, prior, data = small_problem(m=9, n_lab=14, seed=6)
    lam = 0.05
    res = solve_dictionary(prior, lam, data, max_iter=50, tol=0.0, accelerated=False)
    assert objective(res.S, prior, lam, data) == pytest.approx(res.objective_history[-1],
                                                               rel=1e-10)
    a, U = data.eigensystem()
    assert np.allclose(U * a @ U.T, data.blocks[0], atol=1e-10 * a[-1])
    # two blocks A / sqrt(2) give the same data term but take the unrotated path
    half = QuadraticData([data.blocks[0] / np.sqrt(2), data.blocks[0] / np.sqrt(2)], data.B,
                         data.c)
    G = np.random.default_rng(7).normal(size=(9, 9))
    S = G @ G.T
    assert half.value(S) == pytest.approx(data.value(S), rel=1e-12)
    generic = solve_dictionary(prior, lam, half, max_iter=20_000, tol=1e-15)
    scaled = solve_dictionary(prior, lam, data, max_iter=20_000, tol=1e-15)
    assert scaled.n_iter < generic.n_iter
    assert scaled.objective_history[-1] == pytest.approx(generic.objective_history[-1],
                                                         rel=1e-9)
    assert np.allclose(generic.S, scaled.S, atol=1e-5 * np.abs(scaled.S).max())


# ------------------------------------------------------------ side_info_, output API
def test_side_info_is_what_the_fit_used_and_refits_the_same():
    X, y = two_blobs(n=80)
    partial = np.full(len(y), -1)
    partial[::5] = y[::5]
    g = GeneralizedNystroem(n_landmarks=12, lambdas=[1e-2, 1.0], random_state=0).fit(X, partial)
    assert np.array_equal(g.side_info_, partial) and g.side_info_ is not partial
    h = GeneralizedNystroem(n_landmarks=12, lambdas=[1e-2, 1.0], random_state=0).fit(
        X, g.side_info_)
    assert np.array_equal(h.dictionary_, g.dictionary_)
    # pairs: the must-links are kept, the ignored cannot-links are not
    C = pl.PairwiseConstraints([[0, 1], [1, 2], [3, 4], [0, 3]], [1, 1, 1, -1], n_samples=80)
    with pytest.warns(UserWarning, match="ignores the 1 cannot-link"):
        g = GeneralizedNystroem(n_landmarks=12, lambdas=[1e-2], max_iter=500,
                                random_state=0).fit(X, C)
    assert g.side_info_.n_cannot == 0
    assert np.array_equal(g.side_info_.pairs, C.must_link)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        h = GeneralizedNystroem(n_landmarks=12, lambdas=[1e-2], max_iter=500,
                                random_state=0).fit(X, g.side_info_)
    assert not [w for w in caught if "cannot-link" in str(w.message)]
    assert np.array_equal(h.dictionary_, g.dictionary_)


def test_kernel_gamma_defaults_to_auto():
    assert GeneralizedNystroem().get_params()["kernel_gamma"] == "auto"


def test_feature_names_and_pandas_output():
    pd = pytest.importorskip("pandas")
    X, y = two_blobs(n=60)
    g = GeneralizedNystroem(n_landmarks=10, random_state=0).fit(X, y)
    names = [f"generalizednystroem{i}" for i in range(g.rank_)]
    assert list(g.get_feature_names_out()) == names
    out = GeneralizedNystroem(n_landmarks=10, random_state=0).set_output(
        transform="pandas").fit(X, y).transform(X)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == names
    assert np.allclose(out.to_numpy(), g.transform(X))


def test_transform_of_the_training_points_is_the_learned_kernel_per_row():
    # No embedding_ is kept: transform(X_fit) is the fitted kernel E S E^T itself, and
    # each row depends on its own point only
    X, y = two_blobs(n=60)
    g = GeneralizedNystroem(n_landmarks=10, random_state=0).fit(X, y)
    assert not hasattr(g, "embedding_")
    Q = g.transform(X)
    E = rbf_kernel(X, g.landmarks_, gamma=g.kernel_gamma_)
    assert np.allclose(Q @ Q.T, E @ g.dictionary_ @ E.T, atol=1e-10)
    assert np.allclose(g.transform(X[[7]]), Q[[7]], rtol=1e-12, atol=1e-14)
    assert np.allclose(g.transform(X[::-1]), Q[::-1], rtol=1e-12, atol=1e-14)
