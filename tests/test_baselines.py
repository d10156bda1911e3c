"""Baselines of Lan et al. (2017): alignment weights (KKT), cluster and spectral kernels."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.metrics.pairwise import rbf_kernel

from psdlearn.graph import knn_graph
from reproductions.baselines import (
    alignment,
    alignment_weights,
    cluster_kernel_features,
    graph_spectrum,
    order_constrained_weights,
    spectral_kernel_features,
)
from reproductions.baselines.alignment import center_kernel, target_kernel


def _kernels(seed=0, n=40):
    X, y = make_blobs(n, centers=2, n_features=5, cluster_std=3.0, random_state=seed)
    return [rbf_kernel(X, gamma=g) for g in (1e-3, 1e-2, 1e-1, 1.0)], y


@pytest.mark.parametrize("centered", [True, False])
def test_alignment_weights_satisfy_the_qp_kkt_conditions(centered):
    Ks, y = _kernels()
    res = alignment_weights(Ks, y, centered=centered)
    # v* = argmin_{v >= 0} v^T M v - 2 a^T v: v >= 0, g = 2 (M v - a) >= 0, v_k g_k = 0
    g = 2.0 * (res.M @ res.v - res.a)
    scale = np.abs(res.a).max()
    assert np.all(res.v >= 0)
    assert np.all(g >= -1e-8 * scale)
    assert np.all(np.abs(res.v * g) <= 1e-8 * scale * res.v.max())
    assert res.weights.sum() == pytest.approx(1.0)


def test_centered_alignment_weights_beat_random_weights():
    Ks, y = _kernels(seed=3)
    res = alignment_weights(Ks, y, centered=True)
    T = target_kernel(y)
    rng = np.random.default_rng(0)
    for mu in rng.dirichlet(np.ones(len(Ks)), size=200):
        K = np.tensordot(mu, np.asarray(Ks), axes=1)
        assert alignment(K, T, centered=True) <= res.alignment + 1e-12


def test_alignment_weights_pick_the_ideal_kernel():
    Ks, y = _kernels()
    T = target_kernel(y)
    res = alignment_weights([*Ks, T], y, centered=True)
    # the target itself is in the family: alignment 1, all weight on it
    assert res.alignment == pytest.approx(1.0)
    np.testing.assert_allclose(res.weights, [0, 0, 0, 0, 1], atol=1e-10)


def test_centering_is_the_projection_H_K_H():
    K = rbf_kernel(np.random.default_rng(0).standard_normal((7, 3)))
    H = np.eye(7) - np.ones((7, 7)) / 7
    np.testing.assert_allclose(center_kernel(K), H @ K @ H, atol=1e-14)


def test_graph_spectrum_is_the_top_of_the_normalized_affinity():
    X, _ = make_blobs(120, centers=3, random_state=0)
    a, Phi = graph_spectrum(X, 8, n_neighbors=10)
    S, _ = knn_graph(X, n_neighbors=10)
    d = np.asarray(S.sum(axis=1)).ravel()
    A = (S.toarray() / np.sqrt(d)[:, None]) / np.sqrt(d)[None, :]
    np.testing.assert_allclose(a, np.linalg.eigvalsh(A)[::-1][:8], atol=1e-8)
    np.testing.assert_allclose(A @ Phi, Phi * a, atol=1e-7)
    assert a[0] == pytest.approx(1.0)  # D^{1/2} 1 is the top eigenvector


@pytest.mark.parametrize("transfer, phi", [("step", lambda a: np.ones_like(a)),
                                           ("linear", lambda a: a),
                                           ("polystep", np.sqrt)])
def test_cluster_kernel_has_the_documented_spectrum(transfer, phi):
    X, _ = make_blobs(100, centers=3, random_state=1)
    a, Phi = graph_spectrum(X, 6)
    G = cluster_kernel_features(a, Phi, transfer, normalize=False)
    np.testing.assert_allclose(G.T @ G, np.diag(phi(a)), atol=1e-10)
    Gn = cluster_kernel_features(a, Phi, transfer)
    np.testing.assert_allclose(np.einsum("ij,ij->i", Gn, Gn), 1.0, atol=1e-12)


def test_step_cluster_kernel_separates_clusters():
    # three far-apart blobs: the top three eigenvectors are the cluster indicators
    # (times D^{1/2}); after normalization K_ij = 1 within a blob and 0 across
    X, y = make_blobs(90, centers=[[0, 0], [50, 0], [0, 50]], cluster_std=1.0, random_state=0)
    a, Phi = graph_spectrum(X, 3)
    G = cluster_kernel_features(a, Phi, "step")
    K = G @ G.T
    np.testing.assert_allclose(K, (y[:, None] == y[None, :]).astype(float), atol=1e-6)


def test_order_constrained_weights_kkt_and_order():
    X, y = make_blobs(150, centers=2, cluster_std=4.0, random_state=2)
    _, Phi = graph_spectrum(X, 12)
    lab = np.random.default_rng(0).choice(150, 30, replace=False)
    mu = order_constrained_weights(Phi[lab], y[lab])
    assert np.all(mu >= 0) and mu.sum() == pytest.approx(1.0)
    assert np.all(np.diff(mu) <= 1e-12)
    # KKT in w (mu = P w, w >= 0) of min ||C w - t||^2 at the scaled optimum w* = c w
    P = np.triu(np.ones((12, 12)))
    w = np.linalg.solve(P, mu)
    Phl = Phi[lab]
    B = np.einsum("ik,jk->ijk", Phl, Phl).reshape(-1, 12)
    C, t = np.cumsum(B, axis=1), target_kernel(y[lab]).ravel()
    c = (C @ w) @ t / np.sum((C @ w) ** 2)  # optimal scale along the direction w
    g = 2 * C.T @ (C @ (c * w) - t)
    assert np.all(g >= -1e-7 * np.abs(C.T @ t).max())
    assert np.all(np.abs(w * g) <= 1e-7 * np.abs(C.T @ t).max())


def test_order_constrained_weights_recover_an_ordered_kernel():
    rng = np.random.default_rng(1)
    Q, _ = np.linalg.qr(rng.standard_normal((60, 5)))
    # labels whose target kernel is exactly rank one along a column of Q: y = sign(q)
    y = np.where(rng.standard_normal(60) > 0, 1, 2)
    s = np.where(y == 1, 1.0, -1.0) / np.sqrt(60)
    Q[:, 0] = s
    Q, _ = np.linalg.qr(Q)
    mu = order_constrained_weights(Q, y)
    np.testing.assert_allclose(mu, [1, 0, 0, 0, 0], atol=1e-10)


def test_spectral_kernel_features_trace_and_weights():
    X, y = make_blobs(100, centers=2, random_state=4)
    _, Phi = graph_spectrum(X, 10)
    yp = np.full(100, -1)
    yp[:20] = y[:20]
    G, mu = spectral_kernel_features(Phi, yp)
    assert np.einsum("ij,ij->", G, G) == pytest.approx(100.0)
    np.testing.assert_allclose(np.sum(G**2, axis=0) / 100.0, mu, atol=1e-12)
