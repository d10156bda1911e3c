"""The private scikit-learn names the package uses, imported in one place.

scikit-learn does not promise these across releases; the lowest supported version
(``scikit-learn>=1.6`` in ``pyproject.toml``) is tested as ``.ci/run_min_versions``. Every
module imports them from here, so that a rename upstream is fixed once.

- ``_fit_context``: the decorator of ``fit`` that validates ``_parameter_constraints``.
- ``BaseEstimator``: scikit-learn's, with its private ``_get_param_names`` read once per
  class (below).
- ``Interval``, ``StrOptions``, ``Options``, ``RealNotInt``: the constraint types of
  ``_parameter_constraints``; ``Hidden`` keeps a constraint (the ``"deprecated"`` default
  of a renamed parameter) out of the error messages.

Behaviour that differs between supported versions of an optional dependency is settled
here too: :func:`hnsw_build_threads` and :func:`visited_array` (faiss-cpu).
"""

import functools
from contextlib import contextmanager

import sklearn.base
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Hidden, Interval, Options, RealNotInt, StrOptions

__all__ = ["BaseEstimator", "Hidden", "Interval", "Options", "RealNotInt", "StrOptions",
           "_fit_context", "hnsw_build_threads", "visited_array"]


class BaseEstimator(sklearn.base.BaseEstimator):
    """scikit-learn's ``BaseEstimator`` with the constructor's parameter names read once
    per class.

    scikit-learn reads them from the signature of ``__init__`` on every ``get_params``
    (parameter validation, ``clone``, ``repr``), several times per ``fit``, which shows
    in fits of a few hundred points. A class's signature does not change, so its names
    are cached per class (a subclass gets its own entry).
    """

    @classmethod
    def _get_param_names(cls):
        return list(_param_names(cls))


@functools.cache
def _param_names(cls):
    return tuple(super(BaseEstimator, cls)._get_param_names())


#: First faiss-cpu release whose multi-threaded HNSW ``add`` builds the same graph on
#: nearly every run (measured: 1.8.0 to 1.15.0 do not, faiss documents their insertion
#: order as unspecified; 1.15.1 differed once, in a test run under load; a one-thread
#: build is reproducible in all of them).
FAISS_REPRODUCIBLE_THREADED_ADD = (1, 15, 1)


def hnsw_build_threads(faiss, n_threads):
    """Threads for building a faiss HNSW graph reproducibly: ``n_threads``, or 1 before
    :data:`FAISS_REPRODUCIBLE_THREADED_ADD`.

    Parameters
    ----------
    faiss : module
        The imported ``faiss`` package.
    n_threads : int

    Returns
    -------
    int
    """
    version = tuple(int(part) for part in faiss.__version__.split(".")[:3] if part.isdigit())
    return n_threads if version >= FAISS_REPRODUCIBLE_THREADED_ADD else 1


@contextmanager
def visited_array(faiss):
    """Within the block, faiss's HNSW marks visited nodes in an array of one byte per
    node, at every index size.

    faiss switches to a hash set from ``faiss.cvar.visited_table_hashset_threshold``
    nodes (10^7 in faiss-cpu 1.15.1, 500,000 in some earlier releases): it saves the
    ``n`` bytes per thread but hashes every visit, which makes the build and the
    all-points search of a graph at that size several times slower per point. The bytes
    are small beside the index. The global setting is restored on exit; a faiss without
    it is left as it is.
    """
    cvar = getattr(faiss, "cvar", None)
    if cvar is None or not hasattr(cvar, "visited_table_hashset_threshold"):
        yield
        return
    saved = cvar.visited_table_hashset_threshold
    cvar.visited_table_hashset_threshold = 2**62
    try:
        yield
    finally:
        cvar.visited_table_hashset_threshold = saved
