"""The rounds of an NPKL fit: solve, certify, escalate the rank; the fitted attributes.

:func:`solve_rounds` runs one registered solver (:mod:`psdlearn.npkl.solvers`) for
:class:`psdlearn.npkl.NPKL` and sets the attributes every solver shares; the
estimator validates the input and builds the problem.
"""

from __future__ import annotations

import sys
import time
import warnings
from dataclasses import replace

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from psdlearn._order import permute_rows
from psdlearn._progress import progress_bar, warn_interrupted
from psdlearn._solver import SolveOptions
from psdlearn.npkl.losses import get_loss
from psdlearn.npkl.solvers import RESTART, WARM, map_rows


def solve_rounds(est, spec, problem, rank, rng, start=None, order=None, renumbered=None,
                 owns_start=False):
    """Run the solver ``spec`` and set the fitted attributes, for every solver alike.

    The start (random, or ``embedding_`` with ``warm_start``) for the solvers that take
    one; the samples renumbered once for those that want it (``spec.renumber``, see
    :class:`psdlearn.npkl.solvers.NPKLSolverSpec`); then rounds of solve, certificate
    and rank escalation (:func:`_certify`) where ``spec.certificate``, their histories
    joined (a round starts where the previous one
    ended; the certificate's seconds count in the last time), and the ``info`` keys of
    ``spec.attributes`` copied (histories and lists joined over the rounds).

    With ``rank="adaptive"`` every round's ``options.state`` is a
    :class:`psdlearn.npkl.certificate.AdaptiveRound`: intermediate (loose, cheap bound)
    from the start and after every escalation; when an intermediate round's columns buy
    no decrease, a final round continues at that rank to ``tol`` and is certified
    (:mod:`psdlearn.npkl.certificate`, "Rounds").

    ``start``, when given, is ``(E0, state)``: the solver's start and its
    ``options.state``, used instead of the random or ``warm_start`` one
    (:mod:`psdlearn.npkl._partial`); ``owns_start=True`` gives its array away (it is
    renumbered in place and the solver sweeps in it, as in a fresh fit).

    ``order``, when given: sample ``k`` of ``problem`` is the caller's sample ``order[k]``
    (:func:`psdlearn.npkl._fit_graph.in_order`). The random start is drawn in the order of
    ``problem``, a warm start is mapped into it, and ``embedding_`` comes back in the
    caller's order.

    ``renumbered``, when given (with ``spec.renumber``): ``problem`` is already
    renumbered, its sample ``k`` sample ``renumbered[k]`` of the problem before (the
    ``perm`` of :meth:`NPKLProblem.renumbered <psdlearn.npkl.problem.NPKLProblem.
    renumbered>`), so that the caller need not hold that problem's Laplacian through the
    solve; ``order`` is then the order of the problem before.
    """
    from psdlearn.npkl.certificate import AdaptiveRound, escalation_levels

    E0, state, inverse = None, None, None
    # the random or warm_start start is this function's own array (partial_fit's when it
    # gives it away): it is renumbered in place and handed to the solver
    # (SolveOptions.owns_start)
    owned = start is None or owns_start
    if start is not None:  # NPKL.partial_fit: ``(E0, state)``, a point near the optimum
        E0, state = start
    elif spec.warm_start:
        E0, warm = _start(est, problem.n_samples, rank, rng,
                               max_norm=est.b if get_loss(est.loss).bounded else None)
        if warm:
            name, kept = getattr(est, "_warm_state", None) or (None, None)
            state = kept if name == spec.name and kept is not None else WARM
        if warm and order is not None:
            E0, state = E0[order], map_rows(state, order)
    if getattr(spec, "renumber", False):
        if renumbered is None:
            renumbered, _, problem = problem.renumbered()
        perm = renumbered
        if E0 is not None:
            E0 = permute_rows(E0, perm) if owned else E0[perm]
        state = map_rows(state, perm)
        order = perm if order is None else order[perm]
    if order is not None:
        inverse = np.empty_like(order)
        inverse[order] = np.arange(len(order))
    bar = progress_bar(est.verbose, total=est.max_iter, desc=f"NPKL {spec.name}",
                       unit=spec.unit)

    def callback(it, E, objective):
        bar.update(1)
        if est.verbose:  # silent: the count alone (a Ctrl-C message reads it)
            bar.set_postfix(objective=f"{objective:.6g}", refresh=False)

    options = SolveOptions(max_iter=est.max_iter, tol=est.tol, random_state=rng,
                           callback=callback, verbose=est.verbose,
                           params={**{k: getattr(est, k) for k in est._get_param_names()},
                                   **est.solver_options_,
                                   "rank": rank, "gamma": est.gamma_},
                           state=state, owns_start=owned and E0 is not None)
    adaptive = est.rank == "adaptive" and spec.certificate
    if adaptive:
        levels = escalation_levels(problem)
        options = replace(options, state=AdaptiveRound(
            start="random" if state is None else "warm", warm=state,
            **({"smoothing": levels[0]} if levels else {})))
    est._stopped_in_certificate = False
    est._laplacian_min_eig = None  # of a precomputed graph, once per fit
    if spec.certificate:
        est.rank_path_, est.certificate_time_ = [], 0.0
    history, times, kept, n_iter, carried, res = [], [], {}, 0, None, None
    with bar:
        while True:
            try:
                cpu = time.process_time()
                res = spec.solve(problem, E0, options)
                cpu = time.process_time() - cpu
                # a later round starts from an array the rounds still read
                options = replace(options, owns_start=False)
            except KeyboardInterrupt:
                if res is None:  # nothing complete to keep
                    raise
                # before a later round's first step: keep the previous round's iterate
                res = replace(res, interrupted=True, converged=False)
                break
            offset = times[-1] if times else 0.0
            history += list(res.objective_history[1 if history else 0:])
            times += [offset + t for t in res.time_history[1 if times else 0:]]
            n_iter += res.n_iter
            for key in spec.attributes:
                value = res.info[key]
                if key.endswith("_history") or isinstance(value, list):
                    kept.setdefault(key, []).extend(value)
                else:
                    kept[key] = value
            if not spec.certificate:
                break
            start = time.perf_counter()
            round_ = options.state if adaptive else None
            # a final round's dual candidates include those of the intermediate round
            # it continues (the hinge: its smoothed stages at this rank)
            candidates = res.multipliers
            if (adaptive and round_.start == "continue" and isinstance(carried, list)
                    and isinstance(candidates, list)):
                candidates = carried + candidates
            E0 = _certify(est, problem, res, round_, candidates, solve_cpu=cpu)
            times[-1] += time.perf_counter() - start
            est.certificate_time_ += time.perf_counter() - start
            if not adaptive or est._stopped_in_certificate:
                if E0 is None:
                    break
                options = replace(options, state=RESTART)
                continue
            # no escalation: the next level, or solve this rank to tol and certify it
            following = round_.after(E0 is not None, levels, res.info.get("state"))
            if following is None:
                break
            if E0 is None:
                E0, carried = res.embedding, res.multipliers
            options = replace(options, state=following)
    E = res.embedding
    kept_state = res.info.get("state")
    if inverse is not None:
        # the solver's own array, unless a warm state shares it: reordered in place
        shared = any(isinstance(a, np.ndarray) and np.may_share_memory(a, E)
                     for a in (kept_state if isinstance(kept_state, tuple) else ()))
        E = permute_rows(E, inverse) if owned and not shared and E.flags.writeable \
            and E.flags.c_contiguous else E[inverse]
    est.embedding_ = E
    est.objective_history_ = history
    est.time_history_ = times
    est.n_iter_ = n_iter
    est.rank_ = E.shape[1]
    for key, value in kept.items():
        setattr(est, key + "_", value)
    est._warm_state = ((spec.name, map_rows(kept_state, inverse))
                        if est.warm_start and kept_state is not None else None)
    est.converged_ = bool(res.converged) and not est._stopped_in_certificate
    est._interrupted_in = None  # the phase a Ctrl-C stopped, read by NPKLCV
    if res.interrupted or est._stopped_in_certificate:
        where = est._interrupted_in = (f"the {spec.name} solver" if res.interrupted
                                       else "the duality certificate or rank escalation")
        warn_interrupted(f"NPKL(solver={spec.name!r})", n_iter, spec.unit, stacklevel=5,
                         phase=where)
    elif not res.converged and res.n_iter >= est.max_iter:
        warnings.warn(
            f"NPKL(solver={spec.name!r}) stopped at max_iter={est.max_iter} {spec.unit} "
            f"before {spec.stop_rule.format(tol=est.tol)}; {spec.hint}.",
            ConvergenceWarning, stacklevel=4)


def _start(est, n, rank, rng, max_norm=None):
    """Initial ``E`` and whether it is the previous ``embedding_`` (``warm_start``), of the
    type ``est.dtype``."""
    from psdlearn.npkl.bcd import VANISHED, initial_embedding

    dtype = np.dtype(getattr(est, "dtype", np.float64))
    E0 = initial_embedding(n, rank, rng, max_norm=max_norm)  # same draws either way
    prev = getattr(est, "embedding_", None) if est.warm_start else None
    # a vanished embedding is a fixed point of every row update: never start there
    if (prev is not None and prev.shape == (n, rank)
            and np.einsum("ij,ij->", prev, prev, dtype=np.float64) > VANISHED * n):
        return np.array(prev, dtype=dtype, order="C"), True
    return E0.astype(dtype, copy=False), False


def _certify(est, problem, res, round_=None, multipliers=None, solve_cpu=0.0):
    """Certificate of ``res.embedding`` and, with ``rank="adaptive"``, its growth.

    ``round_``: the :class:`psdlearn.npkl.certificate.AdaptiveRound` that produced
    ``res`` (None for a fixed rank); ``multipliers``: the dual candidates, by default
    ``res.multipliers``. Returns ``E`` with the escalation columns, or None:
    certified, at the ``"auto"`` rank, no descent, or after a Ctrl-C (in the solver or
    in the certificate itself; the fit then returns at once with its last iterate).
    """
    from psdlearn.npkl.certificate import (
        CERTIFICATE_MIN_SECONDS,
        CERTIFICATE_SHARE,
        certify_and_escalate,
        laplacian_lower_bound,
        skipped,
    )

    est.certificate_ = None
    E = res.embedding
    if est.certificate_tol is None or res.interrupted:
        est._stopped_in_certificate = res.interrupted
        return None
    rank = E.shape[1]
    memory_note = getattr(est, "_certificate_memory_note", None)
    if memory_note is not None:  # the fit's memory guard found no room for the bound
        est.certificate_ = skipped(problem.objective(E), est.certificate_tol, memory_note)
        est.rank_path_.append((rank, est.certificate_.relative_gap))
        return None
    n_eig = min(int(est.rank_init), est._rank_cap - rank) if est.rank == "adaptive" else 0
    # the built normalized Laplacian has lambda_min(L) >= delta exactly; a precomputed
    # one gets the Gershgorin bound, computed once per fit (a Lanczos run on L)
    lmin = float(est.delta) if est.graph != "precomputed" else None
    # a fixed rank's certificate costs at most CERTIFICATE_SHARE of the solve's CPU time
    # (or CERTIFICATE_MIN_SECONDS); the adaptive rounds need its eigenvectors to grow the
    # rank. CPU time: other jobs on the machine do not make a certificate skip
    budget = (None if est.rank == "adaptive" else
              max(CERTIFICATE_SHARE * solve_cpu, CERTIFICATE_MIN_SECONDS))
    try:
        if est.graph == "precomputed" and est._laplacian_min_eig is None:
            est._laplacian_min_eig = laplacian_lower_bound(problem.laplacian)
        cert, E_new = certify_and_escalate(
            problem, E, res.multipliers if multipliers is None else multipliers,
            tol=est.certificate_tol,
            laplacian_min_eig=est._laplacian_min_eig if lmin is None else lmin, n_eig=n_eig,
            intermediate=round_ is not None and round_.intermediate, time_budget=budget,
            **({"smoothing": round_.smoothing} if round_ is not None else {}))
    except KeyboardInterrupt:  # solve_rounds warns, naming the certificate
        est._stopped_in_certificate = True
        return None
    est.certificate_ = cert
    est.rank_path_.append((rank, cert.relative_gap))
    if est.verbose:
        print(f"NPKL certificate at rank {rank}: lambda_min(S) = {cert.lambda_min:.3g}, "
              f"gap <= {cert.gap_bound:.3g} (relative {cert.relative_gap:.3g}), "
              f"{'certified' if cert.certified else 'not certified'}", file=sys.stderr)
    return E_new

