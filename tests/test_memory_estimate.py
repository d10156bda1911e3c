"""NPKL.memory_estimate and the memory guard of NPKL.fit."""

import re
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import psdlearn as pl
import psdlearn._memory as memory
from psdlearn._progress import memory_in_use
from psdlearn.npkl import estimator as npkl_estimator


@pytest.fixture
def data():
    X, y = pl.datasets.make_two_gaussians(400, n_features=4, random_state=0)
    return X, pl.PairwiseConstraints.from_labels(y, n_must=30, n_cannot=30, random_state=0)


def test_estimate_grows_with_the_arrays_it_models():
    base = pl.NPKL(loss="square", rank=20, n_neighbors=10, knn_method="exact")
    est = base.memory_estimate(10**6, 10, n_pairs=1000)
    assert est.peak_bytes == sum(est.breakdown.values())
    assert est.phase in ("graph", "solve", "certificate")
    # the embedding alone is n r float64 in every phase that holds it
    assert est.peak_bytes > 10**6 * 20 * 8
    bigger = base.set_params(rank=80).memory_estimate(10**6, 10, n_pairs=1000)
    assert bigger.peak_bytes - est.peak_bytes >= 10**6 * 60 * 8
    more_k = pl.NPKL(loss="square", rank=20, n_neighbors=40,
                     knn_method="exact").memory_estimate(10**6, 10, n_pairs=1000)
    assert more_k.peak_bytes > est.peak_bytes
    # the HNSW index stores float32 vectors and links, the exact index a float64 copy
    hnsw = pl.NPKL(loss="square", rank=20, n_neighbors=10,
                   knn_method="approximate").memory_estimate(10**6, 100, n_pairs=1000)
    exact = pl.NPKL(loss="square", rank=20, n_neighbors=10,
                    knn_method="exact").memory_estimate(10**6, 100, n_pairs=1000)
    assert hnsw.breakdown["index"] < exact.breakdown["index"]


def test_auto_rank_follows_the_rule_of_the_pairs():
    est = pl.NPKL(loss="hinge", rank="auto").memory_estimate(10**5, 10, n_pairs=210)
    assert est.config["rank"] == 20  # 20 * 21 / 2 = 210 margin constraints
    est = pl.NPKL(loss="square", rank="auto").memory_estimate(10**5, 10, n_pairs=105)
    assert est.config["rank"] == 14  # 14 * 15 / 2 = 105
    est = pl.NPKL(loss="pcp", rank="auto").memory_estimate(100, 10, n_pairs=5)
    assert est.config["rank"] == 14  # pcp: both orders of each pair and the n diagonal terms


def test_available_memory_reads_the_system():
    avail = memory.available_memory()
    assert avail is None or avail > 0


def test_guard_raises_before_allocating_and_names_a_fix_that_fits(monkeypatch, data):
    X, C = data
    model = pl.NPKL(loss="square", rank=200, n_neighbors=10, knn_method="exact")
    need = model.memory_estimate(*X.shape, n_pairs=C.n_pairs)
    small = pl.NPKL(loss="square", rank=25, n_neighbors=10, knn_method="exact")
    limit = small.memory_estimate(*X.shape, n_pairs=C.n_pairs).required_bytes + 1
    assert limit < need.peak_bytes
    monkeypatch.setattr(memory, "available_memory", lambda: limit)

    def no_graph(*args, **kwargs):
        raise AssertionError("the graph was built before the memory check")

    monkeypatch.setattr(npkl_estimator, "build_laplacian", no_graph)
    with pytest.raises(MemoryError) as info:
        model.fit(X, C)
    message = str(info.value)
    assert f"{need.peak_bytes / 1e9:.2f} GB" in message and "nothing was allocated" in message
    # the guard asks for the model's margin on top of the prediction
    assert f"{need.required_bytes / 1e9:.2f} GB" in message
    arrays = need.peak_bytes - need.breakdown["baseline"]
    assert need.required_bytes == int(need.peak_bytes + memory.MEMORY_MARGIN * arrays)
    assert "dask" in message.lower()
    rank = int(re.search(r"rank=(\d+)", message).group(1))
    assert rank < 200
    fixed = model.set_params(rank=rank).memory_estimate(*X.shape, n_pairs=C.n_pairs)
    # the fit at that rank runs: the certificate gives way where only it does not fit
    bare = memory.npkl_memory_estimate(**{**fixed.config, "certificate": False})
    assert bare.required_bytes <= limit
    assert not hasattr(model, "embedding_")


def test_guard_names_the_approximate_search_when_it_fits(monkeypatch):
    config = memory.npkl_memory_estimate(10**6, 200, rank=2, n_neighbors=5,
                                         knn_method="exact").config
    approx = memory.npkl_memory_estimate(**{**config, "knn_method": "approximate"})
    fixes = memory.memory_fixes(config, approx.required_bytes + 1)
    assert "knn_method='approximate'" in fixes
    assert memory.memory_fixes(config, approx.required_bytes + 1, float32=True)[-1].startswith(
        "X as a row-chunked dask.array")


def test_fit_runs_when_it_fits_and_verbose_prints_the_estimate(monkeypatch, capsys, data):
    X, C = data
    monkeypatch.setattr(memory, "available_memory", lambda: 10**12)
    model = pl.NPKL(loss="square", rank=4, max_iter=200, certificate_tol=None, verbose=1,
                    random_state=0).fit(X, C)
    assert model.embedding_.shape == (400, 4)
    out, err = capsys.readouterr()
    assert out == ""
    assert re.search(r"NPKL: predicted peak memory \d+\.\d\d GB in the \w+", err)
    assert "available 1000.00 GB" in err


def test_unknown_available_memory_skips_the_check(monkeypatch, data):
    X, C = data
    monkeypatch.setattr(memory, "available_memory", lambda: None)
    model = pl.NPKL(loss="square", rank=4, max_iter=200, certificate_tol=None,
                    random_state=0).fit(X, C)
    assert np.all(np.isfinite(model.embedding_))


def test_memory_in_use_sees_an_allocation():
    before = memory_in_use()
    block = np.ones(25_000_000)  # 200 MB, every page touched
    after = memory_in_use()
    assert before is not None and after - before > 150e6
    del block


def test_progress_names_the_phase_and_shows_memory(monkeypatch, capsys, data):
    X, C = data
    monkeypatch.setattr(memory, "available_memory", lambda: 10**12)
    pl.NPKL(loss="square", rank=4, max_iter=200, certificate_tol=None, verbose=1,
            random_state=0).fit(X, C)
    err = capsys.readouterr().err
    # the solve's bar: phase, steps with elapsed<remaining, and the memory in use (in MB,
    # or in GB from 1 GB: the test process's own, which the suite before it can raise)
    assert re.search(r"NPKL bcd: .*\d+/200 \[\d\d:\d\d<\d\d:\d\d.*"
                     r"mem=(\d+MB|\d+\.\d\dGB)", err)


def test_auto_extrapolation_gives_way_when_memory_is_short(monkeypatch, capsys):
    # from 10,000 samples extrapolation="auto" keeps two more arrays the size of the
    # embedding; where only the fit without them fits, the fit runs without them
    X, y = pl.datasets.make_two_gaussians(10_000, n_features=3, random_state=0)
    C = pl.PairwiseConstraints.from_labels(y, n_must=40, n_cannot=40, random_state=0)
    kw = dict(loss="square", rank=30, n_neighbors=5, knn_method="exact", max_iter=20,
              certificate_tol=None, random_state=0)
    auto = pl.NPKL(**kw).memory_estimate(*X.shape, n_pairs=C.n_pairs)
    plain = pl.NPKL(**kw, solver_options={"extrapolation": False}).memory_estimate(
        *X.shape, n_pairs=C.n_pairs)
    assert auto.config["extrapolation"] and not plain.config["extrapolation"]
    assert auto.phase == "solve" and auto.breakdown["extrapolation arrays"] == 2 * 10_000 * 30 * 8
    assert auto.required_bytes > plain.required_bytes
    monkeypatch.setattr(memory, "available_memory", lambda: plain.required_bytes + 1)
    model = pl.NPKL(**kw, verbose=1).fit(X, C)
    assert model.solver_options_["extrapolation"] is False
    assert "solver_options['extrapolation']='auto' is off" in capsys.readouterr().err
    assert model.embedding_.shape == (10_000, 30) and np.all(np.isfinite(model.embedding_))
    # an explicit True is the user's choice: the guard refuses instead
    with pytest.raises(MemoryError):
        pl.NPKL(**kw, solver_options={"extrapolation": True}).fit(X, C)
    # with room for both, "auto" stays on
    monkeypatch.setattr(memory, "available_memory", lambda: auto.required_bytes + 1)
    assert pl.NPKL(**kw).fit(X, C).solver_options_["extrapolation"] == "auto"


def test_the_margin_refuses_a_fit_predicted_just_below_the_memory(monkeypatch, data):
    # predicted to fit, but within the model's measured error of the limit: refused
    X, C = data
    model = pl.NPKL(loss="square", rank=4, max_iter=50, certificate_tol=None)
    need = model.memory_estimate(*X.shape, n_pairs=C.n_pairs)
    monkeypatch.setattr(memory, "available_memory", lambda: need.peak_bytes + 1)
    with pytest.raises(MemoryError, match="margin"):
        model.fit(X, C)


def test_guard_names_fewer_neighbours_when_the_graph_is_the_peak():
    # k = 30 at 10^7 points: the graph's assembly is the peak, which no rank lowers
    config = memory.npkl_memory_estimate(10**7, 10, rank=10, n_neighbors=30,
                                         knn_method="approximate").config
    need = memory.npkl_memory_estimate(**config)
    assert need.phase == "graph"
    limit = need.required_bytes // 2
    fixes = memory.memory_fixes(config, limit)
    named = [f for f in fixes if f.startswith("n_neighbors=")]
    assert len(named) == 1 and not any(f.startswith("rank=") for f in fixes)
    k = int(named[0].split("=")[1])
    assert k < 30
    assert memory.npkl_memory_estimate(**{**config, "n_neighbors": k}).fits(limit)


def test_the_certificate_gives_way_when_only_it_does_not_fit(monkeypatch, capsys):
    # at a fixed rank the certificate is a report: where its arrays alone do not fit, the
    # fit runs without it and certificate_ says why (the fit is not refused)
    X, y = pl.datasets.make_two_gaussians(10_000, n_features=3, random_state=0)
    C = pl.PairwiseConstraints.from_labels(y, n_must=40, n_cannot=40, random_state=0)
    kw = dict(loss="square", rank=30, n_neighbors=5, knn_method="exact", max_iter=50,
              random_state=0, solver_options={"extrapolation": False})
    full = pl.NPKL(**kw).memory_estimate(*X.shape, n_pairs=C.n_pairs)
    bare = pl.NPKL(**kw, certificate_tol=None).memory_estimate(*X.shape, n_pairs=C.n_pairs)
    assert full.phase == "certificate" and bare.required_bytes < full.required_bytes
    monkeypatch.setattr(memory, "available_memory", lambda: bare.required_bytes + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # a skipped bound does not warn
        model = pl.NPKL(**kw, verbose=1).fit(X, C)
    cert = model.certificate_
    assert "would not fit in memory" in cert.note and not cert.certified
    assert np.isnan(cert.relative_gap) and np.isnan(cert.lambda_min)
    assert cert.objective == pytest.approx(model.objective(), rel=1e-12)
    assert "the duality certificate is skipped" in capsys.readouterr().err
    assert model.embedding_.shape == (10_000, 30)
    # nor does a partial fit's certificate, computed on its first read, allocate it
    more = pl.PairwiseConstraints.from_labels(y, n_must=5, n_cannot=5, random_state=1)
    model.set_params(verbose=0).partial_fit(X, more)
    assert "would not fit in memory" in model.certificate_.note
    assert model.certificate_.objective == pytest.approx(model.objective(), rel=1e-12)
    # rank="adaptive" grows the rank from the certificate: that fit is refused instead
    adaptive = pl.NPKL(**{**kw, "rank": "adaptive"})
    need = adaptive.memory_estimate(*X.shape, n_pairs=C.n_pairs)
    monkeypatch.setattr(memory, "available_memory", lambda: need.required_bytes - 1)
    with pytest.raises(MemoryError):
        adaptive.fit(X, C)
    # with room for it, the bound is computed
    monkeypatch.setattr(memory, "available_memory", lambda: full.required_bytes + 1)
    assert pl.NPKL(**kw).fit(X, C).certificate_.note == ""


def test_the_plane_search_and_the_certificate_give_way_together(monkeypatch, capsys):
    # neither alone makes room: the fit runs without both ("auto" extrapolation, fixed rank)
    X, y = pl.datasets.make_two_gaussians(10_000, n_features=3, random_state=0)
    C = pl.PairwiseConstraints.from_labels(y, n_must=40, n_cannot=40, random_state=0)
    kw = dict(loss="square", rank=30, n_neighbors=5, knn_method="exact", max_iter=20,
              random_state=0)
    config = pl.NPKL(**kw).memory_estimate(*X.shape, n_pairs=C.n_pairs).config
    assert config["extrapolation"] and config["certificate"]

    def need(plane, certificate):
        return memory.npkl_memory_estimate(**{**config, "extrapolation": plane,
                                              "certificate": certificate}).required_bytes

    limit = need(False, False) + 1
    assert need(True, False) > limit and need(False, True) > limit
    monkeypatch.setattr(memory, "available_memory", lambda: limit)
    model = pl.NPKL(**kw, verbose=1).fit(X, C)
    err = capsys.readouterr().err
    assert "['extrapolation']='auto' is off" in err and "certificate is skipped" in err
    assert model.solver_options_["extrapolation"] is False
    assert "would not fit in memory" in model.certificate_.note
    # with the room of one of them, only the certificate gives way (the plane search
    # stays: it is the first tried alone, and does not make room here)
    monkeypatch.setattr(memory, "available_memory", lambda: need(True, False) + 1)
    model = pl.NPKL(**kw).fit(X, C)
    assert model.solver_options_["extrapolation"] == "auto" and model.certificate_.note
