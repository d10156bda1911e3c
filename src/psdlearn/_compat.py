"""The private scikit-learn names the package uses, imported in one place.

scikit-learn does not promise these across releases; the lowest supported version
(``scikit-learn>=1.6`` in ``pyproject.toml``) is tested as ``.ci/run_min_versions``. Every
module imports them from here, so that a rename upstream is fixed once.

- ``_fit_context``: the decorator of ``fit`` that validates ``_parameter_constraints``.
- ``Interval``, ``StrOptions``, ``RealNotInt``: the constraint types of
  ``_parameter_constraints``.
"""

from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions

__all__ = ["Interval", "RealNotInt", "StrOptions", "_fit_context"]
