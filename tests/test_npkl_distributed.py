"""NPKL on a Dask LocalCluster (2 worker processes): the distributed solvers against the
single-machine ones, the block Gauss-Seidel monotonicity, data placement, failure."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import psdlearn as pl
from psdlearn.npkl.distributed.layout import Layout, block_colors

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

# delta = 1 keeps the Laplacian part well conditioned, so both solvers converge in tens of
# sweeps (hundreds of ADMM iterations) and the tests stay short
SETUP = dict(delta=1.0, gamma=1.0, random_state=0)


#: Seconds after which the scheduler fails a task that no live worker may run (a task
#: pinned to a lost worker), instead of waiting for that worker.
NO_WORKERS_TIMEOUT = 2.0


@pytest.fixture(scope="module")
def client():
    import dask

    with dask.config.set({"distributed.scheduler.no-workers-timeout":
                          f"{NO_WORKERS_TIMEOUT}s"}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                           processes=True, dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture(scope="module")
def data():
    X, y = pl.datasets.make_two_gaussians(300, n_features=5, random_state=0)
    C = pl.PairwiseConstraints.from_labels(y, n_must=100, n_cannot=100, random_state=0)
    return X, C, da.from_array(X, chunks=110)


def _relative(a, b):
    return abs(a - b) / abs(b)


def test_admm_pcp_objective_equals_single_machine(client, data):
    X, C, Xd = data
    kw = dict(loss="pcp", solver="admm", tol=1e-5, max_iter=1000, **SETUP)
    single = pl.NPKL(**kw).fit(X, C)
    dist = pl.NPKL(**kw).fit(Xd, C)
    assert single.converged_ and dist.converged_
    assert _relative(dist.objective_history_[-1], single.objective_history_[-1]) < 1e-6
    # the blockwise graph is the single-machine graph, and the reduced objective is exact:
    # the single-machine objective of the gathered embedding is the reported one
    E = dist.embedding_.compute()
    assert _relative(single.objective(E), dist.objective_history_[-1]) < 1e-12
    rec = dist.comm_history_[-1]
    assert rec["halo_bytes"] == rec["halo_rows"] * dist.rank_ * 8 > 0
    assert len(dist.comm_history_) == dist.n_iter_
    # one block per worker: every halo piece crosses workers, and Dask's own transfer logs
    # count the bytes the plan says
    planned = sum(r["halo_bytes"] for r in dist.comm_history_)
    measured = sum(r["halo_bytes_measured"] for r in dist.comm_history_)
    assert measured == pytest.approx(planned, rel=0.01)


def test_admm_iterates_do_not_depend_on_the_number_of_blocks(client, data):
    from psdlearn.npkl.distributed import fit_dask

    X, C, Xd = data
    runs = [fit_dask(pl.NPKL(loss="square", solver="admm", max_iter=15, tol=0.0, **SETUP),
                     Xd, C, n_blocks=b) for b in (1, 3)]
    h1, h3 = (np.asarray(r.objective_history_) for r in runs)
    # the same ADMM iteration, row-partitioned: equal up to the summation order
    np.testing.assert_allclose(h3, h1, rtol=1e-10)
    assert runs[1].partition_info_["n_blocks"] == 3


def test_bcd_square_objective_equals_single_machine_and_is_monotone(client, data,
                                                                    monkeypatch):
    from psdlearn.npkl.distributed import bcd as dbcd

    X, C, Xd = data
    monkeypatch.setattr(dbcd._bcd, "REFRESH", 1)  # every history entry an exact objective
    kw = dict(loss="square", solver="bcd", tol=1e-8, max_iter=500, **SETUP)
    single = pl.NPKL(**kw).fit(X, C)
    dist = pl.NPKL(**kw).fit(Xd, C)
    assert single.converged_ and dist.converged_
    assert _relative(dist.objective_history_[-1], single.objective_history_[-1]) < 1e-6
    h = np.asarray(dist.objective_history_)
    assert np.all(np.diff(h) <= 1e-12 * abs(h[0]))
    assert h[-1] < h[0]
    E = dist.embedding_.compute()
    assert _relative(single.objective(E), h[-1]) < 1e-12
    # slabs of one colour share no edge: the Gauss-Seidel order is a valid one
    info = dist.partition_info_
    assert sorted(b for c in info["colors"] for b in c) == list(range(info["n_blocks"]))


HINGE = dict(loss="hinge", solver="bcd", delta=1.0, gamma=30.0, rank=5)


@pytest.fixture(scope="module")
def hinge_data():
    """Few pairs among 200 points: the hinge kernel is not zero at gamma = 30 (at 3, each
    of the 20 pairs pays its full hinge, objective 60, K = 0)."""
    X, y = pl.datasets.make_two_gaussians(200, n_features=5, random_state=0)
    C = pl.PairwiseConstraints.from_labels(y, n_must=10, n_cannot=10, random_state=0)
    return X, C, da.from_array(X, chunks=70)


def test_bcd_hinge_exact_stage_is_monotone_and_reports_the_exact_objective(client,
                                                                           hinge_data,
                                                                           monkeypatch):
    """Algorithm 1 on the hinge (the per-row dual QPs on the coordinator): block
    Gauss-Seidel never increases the hinge objective, which is the exact objective (10)
    of the gathered embedding."""
    from psdlearn.npkl.distributed import bcd as dbcd

    X, C, Xd = hinge_data
    monkeypatch.setattr(dbcd._bcd, "REFRESH", 1)
    dist = pl.NPKL(solver_options={"hinge_smoothing": None}, max_iter=40, tol=0.0, random_state=0,
                   **HINGE).fit(Xd, C)
    h = np.asarray(dist.objective_history_)
    assert len(h) == 41 and dist.smoothing_stages_ == [(0.0, 40)]
    assert np.all(np.diff(h) <= 1e-12 * abs(h[0]))
    single = pl.NPKL(solver_options={"hinge_smoothing": None}, max_iter=1,
                     random_state=0, **HINGE).fit(X, C)
    E = dist.embedding_.compute()
    assert _relative(single.objective(E), h[-1]) < 1e-12
    # K = 0 scores gamma per pair: the fit is well below it
    assert h[-1] < 0.8 * HINGE["gamma"] * C.n_pairs


@pytest.mark.slow
def test_bcd_hinge_objective_equals_single_machine(client, hinge_data):
    """With the smoothing stages (``hinge_smoothing="auto"``), distributed and
    single-machine hinge BCD reach the same optimum to 1e-6 relative (measured: about 850
    sweeps; Algorithm 1 alone stops at order-dependent points 1e-3 to 1e-1 apart)."""
    X, C, Xd = hinge_data
    kw = dict(solver_options={"hinge_smoothing": "auto"},
              tol=1e-7, max_iter=5000, random_state=0, **HINGE)
    single = pl.NPKL(**kw).fit(X, C)
    dist = pl.NPKL(**kw).fit(Xd, C)
    assert single.converged_ and dist.converged_
    assert [mu for mu, _ in dist.smoothing_stages_] == [0.1, 0.01, 1e-3, 1e-4, 0.0]
    assert _relative(dist.objective_history_[-1], single.objective_history_[-1]) < 1e-6
    assert sum(r["halo_bytes"] for r in dist.comm_history_) > 0
    assert [r["iteration"] for r in dist.comm_history_] == list(range(1, dist.n_iter_ + 1))


def test_both_workers_execute_and_embedding_keeps_row_chunks(client, data):
    X, C, Xd = data
    with distributed.get_task_stream(client) as ts:
        model = pl.NPKL(loss="square", solver="bcd", max_iter=5, tol=0.0,
                        **SETUP).fit(Xd, C)
    workers = {rec["worker"] for rec in ts.data}
    assert workers == set(client.nthreads())
    assert len(set(model.partition_info_["workers"])) == 2
    assert isinstance(model.embedding_, da.Array)
    assert model.embedding_.chunks == (Xd.chunks[0], (model.rank_,))


def test_transform_of_a_dask_array_is_the_weighted_neighbour_average(client, data):
    """out_of_sample="weighted_mean" on the blocks; the default normalized row needs the
    training degrees, which the distributed fit does not keep: it warns and gives the same."""
    from sklearn.neighbors import NearestNeighbors

    X, C, Xd = data
    model = pl.NPKL(loss="square", solver="bcd", max_iter=5, tol=0.0,
                    out_of_sample="weighted_mean", **SETUP).fit(Xd, C)
    X_new = np.random.default_rng(1).normal(size=(40, X.shape[1]))
    Z = model.transform(da.from_array(X_new, chunks=15))
    assert isinstance(Z, da.Array) and Z.chunks[0] == (15, 15, 10)
    # per point: Gaussian-weighted mean of the k nearest training rows
    E = model.embedding_.compute()
    dist, ind = NearestNeighbors(n_neighbors=model.n_neighbors_).fit(X).kneighbors(X_new)
    s = np.exp(-dist**2 / (2 * model.sigma_**2))
    expected = np.einsum("bk,bkr->br", s / s.sum(1, keepdims=True), E[ind])
    np.testing.assert_allclose(Z.compute(), expected, rtol=1e-10, atol=1e-12)
    model.set_params(out_of_sample="normalized")
    with pytest.warns(UserWarning, match="keeps no training degrees"):
        Z = model.transform(da.from_array(X_new, chunks=15))
    np.testing.assert_allclose(Z.compute(), expected, rtol=1e-10, atol=1e-12)


def test_gamma_auto_on_dask(client, data):
    """pcp: 100 max L_ii = 100 (1 + delta), as in memory; a margin loss: gamma_0 is not
    computed blockwise, so 1 with a warning."""
    X, C, Xd = data
    kw = dict(delta=1.0, random_state=0, max_iter=3, tol=0.0)
    pcp = pl.NPKL(loss="pcp", solver="admm", **kw).fit(Xd, C)
    local = pl.NPKL(loss="pcp", solver="admm", **kw).fit(X, C)
    assert pcp.gamma_ == local.gamma_ == pytest.approx(200.0)
    with pytest.warns(UserWarning, match="gamma = 1 is used"):
        square = pl.NPKL(loss="square", solver="bcd", **kw).fit(Xd, C)
    assert square.gamma_ == 1.0


def test_unsupported_settings_are_rejected(client, data):
    X, C, Xd = data
    with pytest.raises(ValueError, match="dask array"):
        pl.NPKL(loss="hinge", solver="admm").fit(Xd, C)
    with pytest.raises(ValueError, match="dask array"):
        pl.NPKL(loss="square", solver="sdp").fit(Xd, C)
    with pytest.raises(ValueError, match="graph='knn'"):
        pl.NPKL(loss="square", graph="precomputed").fit(Xd, C)


def _kill_a_worker(client, victim=None):
    victim = victim or sorted(client.nthreads())[-1]
    os.kill(client.run(os.getpid, workers=[victim])[victim], signal.SIGKILL)


def test_a_worker_killed_mid_fit_raises(client, data):
    from psdlearn.npkl.distributed import WorkerLostError

    X, C, Xd = data
    outcome = {}

    def run():
        try:
            pl.NPKL(loss="pcp", solver="admm", max_iter=100_000, tol=0.0,
                    **SETUP).fit(Xd, C)
            outcome["result"] = "finished"
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            outcome["result"] = exc

    def half_steps(dask_scheduler):
        return {str(k) for k in dask_scheduler.tasks if str(k).startswith("_half_step")}

    # the models of earlier tests keep their ADMM tasks alive: wait for this fit's own
    stale = client.run_on_scheduler(half_steps)
    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 120
    while (not client.run_on_scheduler(half_steps) - stale
           and time.monotonic() < deadline):
        time.sleep(0.2)
    _kill_a_worker(client)
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert isinstance(outcome["result"], WorkerLostError)
    assert "left the cluster" in str(outcome["result"])
    client.wait_for_workers(2, timeout=60)  # the nanny restarts it, for the next tests


def test_an_embedding_whose_worker_died_after_the_fit_fails_to_compute(client, data):
    """The fit returns once the embedding is on the workers; a worker lost afterwards takes
    its chunks, which only tasks pinned to it could recompute: with the scheduler's
    ``no-workers-timeout`` set, computing the embedding raises instead of waiting."""
    from distributed.scheduler import NoValidWorkerError

    X, C, Xd = data
    model = pl.NPKL(loss="square", solver="bcd", max_iter=3, tol=0.0, **SETUP).fit(Xd, C)
    # every chunk is already in worker memory when fit returns
    futures = distributed.futures_of(model.embedding_)
    assert len(futures) == Xd.numblocks[0]
    assert all(f.status == "finished" for f in futures)
    holder = client.who_has(futures[0])[futures[0].key][0]
    _kill_a_worker(client, holder)
    with pytest.raises(NoValidWorkerError):  # a wait beyond the timeout fails the test
        client.compute(model.embedding_).result(timeout=NO_WORKERS_TIMEOUT + 30)
    client.wait_for_workers(2, timeout=60)


def test_layout_owner_and_local_positions():
    layout = Layout(np.array([0, 4, 10]), np.array([1, 5, 6]))
    assert layout.n_blocks == 3
    g = np.arange(10)
    owner = layout.owner(g)
    np.testing.assert_array_equal(owner, [0, 2, 0, 0, 1, 2, 2, 1, 1, 1])
    for b in range(3):
        rows = layout.rows(b)
        np.testing.assert_array_equal(rows, g[owner == b])
        np.testing.assert_array_equal(layout.local(rows, b), np.arange(len(rows)))


def test_inverse_sqrt_degree_of_rows_with_and_without_edges():
    from psdlearn.npkl.distributed._build import _inv_sqrt_degree

    # rows 1 and 3 have no edge (all weights underflowed); row 3 is the last one
    sym = (np.array([0, 2, 2, 3, 3]), np.array([1, 2, 0]), np.array([1.0, 3.0, 0.25]))
    np.testing.assert_allclose(_inv_sqrt_degree(sym), [0.5, 0.0, 2.0, 0.0])
    assert np.array_equal(_inv_sqrt_degree((np.zeros(3, dtype=np.int64),
                                            np.empty(0, dtype=np.int64), np.empty(0))),
                          np.zeros(2))


def test_new_ids_map_old_ids_to_slab_positions():
    from psdlearn.npkl.distributed._build import _new_ids

    block = (np.zeros((3, 2)), np.array([7, 3, 9]))     # old ids in the slab's order
    np.testing.assert_array_equal(_new_ids(block, 10, np.array([3, 5, 7, 9, 11])),
                                  [11, -1, 10, 12, -1])


def test_block_colors_separate_adjacent_blocks():
    adjacent = {(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)}
    colors = block_colors(adjacent, 4)
    color_of = {b: k for k, c in enumerate(colors) for b in c}
    assert all(color_of[a] != color_of[b] for a, b in adjacent)
    assert sorted(color_of) == [0, 1, 2, 3]


def test_time_model_scales_compute_and_keeps_the_slab_halo():
    from psdlearn.npkl.distributed.timemodel import Measured, model_time

    meas = Measured(row_s=1e-6, boundary_rows=1000.0, n0=10**6, dim=3.0, task_s=1e-3,
                    tasks_per_block=4, exchanges=2, rank=50)
    t = {P: model_time(P, 10**8, meas) for P in (1, 2, 4, 64)}
    assert t[1]["halo"] == t[1]["reduction"] == t[1]["halo_bytes"] == 0.0
    assert t[2]["compute"] == pytest.approx(t[1]["compute"] / 2)
    assert t[64]["compute"] == pytest.approx(t[1]["compute"] / 64)
    # a slab boundary is a cross-section of the cloud: n^(2/3) rows in 3-d, whatever P
    rows = 1000.0 * 100.0 ** (2.0 / 3.0)
    assert t[4]["halo_bytes"] == t[64]["halo_bytes"] == pytest.approx(2 * 2 * rows * 8 * 50)
    assert t[64]["scheduler"] == pytest.approx(64 * 4 * 1e-3)
    for parts in t.values():
        assert parts["total"] == pytest.approx(parts["compute"] + parts["halo"]
                                               + parts["reduction"] + parts["scheduler"])


@pytest.mark.parametrize("solver,loss", [("admm", "pcp"), ("bcd", "square")])
def test_callback_returning_true_stops_the_distributed_solver(client, data, monkeypatch,
                                                               solver, loss):
    """The distributed solvers honour the stop signal: stopped at iteration 2, interrupted."""
    from psdlearn.npkl.distributed import admm, bcd

    module = admm if solver == "admm" else bcd
    name = f"solve_{solver}_distributed"
    original, results = getattr(module, name), []

    def stopping(*args, callback=None, **kw):
        res = original(*args, callback=lambda it, _, objective: it == 2, **kw)
        results.append(res)
        return res

    monkeypatch.setattr(module, name, stopping)
    _, C, Xd = data
    pl.NPKL(loss=loss, solver=solver, tol=0.0, max_iter=50, **SETUP).fit(Xd, C)
    (res,) = results
    assert res.n_iter == 2 and res.interrupted and not res.converged
    assert len(res.objective_history) == 3
