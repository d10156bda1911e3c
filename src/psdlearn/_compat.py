"""The private scikit-learn names the package uses, imported in one place.

scikit-learn does not promise these across releases; the lowest supported version
(``scikit-learn>=1.6`` in ``pyproject.toml``) is tested as ``.ci/run_min_versions``. Every
module imports them from here, so that a rename upstream is fixed once.

- ``_fit_context``: the decorator of ``fit`` that validates ``_parameter_constraints``.
- ``Interval``, ``StrOptions``, ``Options``, ``RealNotInt``: the constraint types of
  ``_parameter_constraints``; ``Hidden`` keeps a constraint (the ``"deprecated"`` default
  of a renamed parameter) out of the error messages.

Behaviour that differs between supported versions of an optional dependency is settled
here too: :func:`hnsw_build_threads` (faiss-cpu).
"""

from sklearn.base import _fit_context
from sklearn.utils._param_validation import Hidden, Interval, Options, RealNotInt, StrOptions

__all__ = ["Hidden", "Interval", "Options", "RealNotInt", "StrOptions", "_fit_context",
           "hnsw_build_threads"]

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
