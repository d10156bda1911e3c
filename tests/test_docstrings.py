"""The public API's docstrings match the code (issue 23, item 7).

numpydoc's validator parses every public class, method and function, and the checks that
catch drift between a docstring and its signature must pass: a docstring exists (GL08), it
documents every parameter (PR01) and no parameter that is not there (PR02). Beyond
numpydoc, every ``default=...`` written in a Parameters section must equal the signature's
default, so that a changed default cannot leave its documentation behind.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re

import numpy as np
import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")  # in the test extra
docscrape = pytest.importorskip("numpydoc.docscrape")

#: The public modules: every name in their ``__all__`` is checked.
PUBLIC_MODULES = (
    "psdlearn",
    "psdlearn.active",
    "psdlearn.cluster",
    "psdlearn.constraints",
    "psdlearn.datasets",
    "psdlearn.graph",
    "psdlearn.kml",
    "psdlearn.metrics",
    "psdlearn.model_selection",
    "psdlearn.npkl",
    "psdlearn.pairs",
    "psdlearn.nystroem",
    "psdlearn.psdboost",
)
#: numpydoc codes that signal a docstring out of step with its signature.
ENFORCED = {"GL08", "PR01", "PR02"}


def _public_objects():
    seen = {}
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for attr in module.__all__:
            obj = getattr(module, attr)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            path = f"{obj.__module__}.{obj.__qualname__}"
            seen[path] = obj
            if inspect.isclass(obj):
                for key, value in vars(obj).items():
                    if key.startswith("_"):
                        continue
                    if inspect.isfunction(value) or isinstance(value, property):
                        seen[f"{path}.{key}"] = value
    return dict(sorted(seen.items()))


#: import path -> object
PUBLIC = _public_objects()


def test_public_api_is_found():
    # the collection itself can fail silently: it must see the estimators and their fit
    assert "psdlearn.npkl.estimator.NPKL.fit" in PUBLIC
    assert "psdlearn.psdboost.estimator.PSDBoost" in PUBLIC
    assert len(PUBLIC) > 60


@pytest.mark.parametrize("path", PUBLIC)
def test_numpydoc(path):
    result = numpydoc_validate.validate(path)
    # a dataclass documents its fields as Attributes (checked below), not as Parameters
    skip = {"PR01", "PR02"} if dataclasses.is_dataclass(PUBLIC[path]) else set()
    errors = [f"{code}: {msg}" for code, msg in result["errors"]
              if code in ENFORCED - skip]
    assert not errors, f"{path}:\n" + "\n".join(errors)


@pytest.mark.parametrize("path", [p for p, obj in PUBLIC.items()
                                  if dataclasses.is_dataclass(obj)])
def test_dataclass_fields_documented(path):
    obj = PUBLIC[path]
    doc = docscrape.ClassDoc(obj, config={"show_class_members": False})
    documented = {name.strip() for item in doc["Attributes"] + doc["Parameters"]
                  for name in item.name.split(",")}
    fields = {f.name for f in dataclasses.fields(obj)}
    members = {name for name, value in vars(obj).items() if isinstance(value, property)}
    assert fields <= documented, f"undocumented fields {sorted(fields - documented)}"
    assert documented <= fields | members, (
        f"documented but absent {sorted(documented - fields - members)}")


def _default_text(type_text):
    """The text after ``default=`` in a numpydoc type line, or None."""
    marker = "default="
    if marker not in type_text:
        return None
    return type_text.split(marker, 1)[1].strip()


def _literal(text):
    """The Python literal ``text`` spells, or of its parenthesized value (``NAME (0.01)``);
    raises ValueError when there is none."""
    candidates = [text]
    if text.endswith(")") and " (" in text:
        candidates.append(text[text.index(" (") + 2:-1])
    for candidate in candidates:
        try:
            return ast.literal_eval(candidate)
        except (ValueError, SyntaxError):
            continue
    raise ValueError(text)


def _numpy_name(text):
    """The numpy object a default spelled ``np.NAME`` names (``np.float64``), or None."""
    if text.startswith("np.") and text[3:].isidentifier():
        return getattr(np, text[3:], None)
    return None


def _same(documented, actual):
    """Whether a documented default equals the signature's; ``(a, b, ..., z)`` stands for a
    sequence that starts with ``a, b`` and ends with ``z``."""
    if isinstance(documented, tuple) and Ellipsis in documented:
        k = documented.index(Ellipsis)
        head, tail = documented[:k], documented[k + 1:]
        actual = tuple(actual)
        return (len(actual) >= len(head) + len(tail) and actual[:len(head)] == head
                and actual[len(actual) - len(tail):] == tail)
    if isinstance(actual, bool) or isinstance(documented, bool):
        return documented is actual
    return documented == actual


def _documented_defaults(obj):
    doc = (docscrape.ClassDoc(obj, config={"show_class_members": False})
           if inspect.isclass(obj) else docscrape.FunctionDoc(obj))
    for param in doc["Parameters"]:
        text = _default_text(param.type)
        if text is None:
            continue
        for name in param.name.split(","):
            yield name.strip(), text


def _signature(obj):
    target = obj.__init__ if inspect.isclass(obj) else obj
    return inspect.signature(target).parameters


@pytest.mark.parametrize("path", [p for p, obj in PUBLIC.items()
                                  if not isinstance(obj, property)])
def test_documented_defaults_match_signature(path):
    obj = PUBLIC[path]
    params = _signature(obj)
    wrong = []
    for name, text in _documented_defaults(obj):
        if name not in params or params[name].default is inspect.Parameter.empty:
            continue  # PR02 reports unknown names; keyword-only without default: no claim
        actual = params[name].default
        try:
            documented = _literal(text)
        except ValueError:
            # not a literal (``default=np.inf``): compare the spelling
            if text.replace('"', "'") != repr(actual) and _numpy_name(text) is not actual:
                wrong.append(f"{name}: documented {text!r}, signature {actual!r}")
            continue
        if not _same(documented, actual):
            wrong.append(f"{name}: documented {text!r}, signature {actual!r}")
    assert not wrong, f"{path}:\n" + "\n".join(wrong)


def _installed_docstrings():
    """Every docstring a user of the wheel can reach: modules, classes, functions, methods.

    Private names (a leading underscore anywhere in the dotted path) are skipped: their
    docstrings are notes for contributors.
    """
    import pkgutil

    import psdlearn

    found = {"psdlearn": psdlearn.__doc__}
    for info in pkgutil.walk_packages(psdlearn.__path__, "psdlearn."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        found[info.name] = module.__doc__
        for attr, obj in vars(module).items():
            if attr.startswith("_") or getattr(obj, "__module__", None) != info.name:
                continue
            if inspect.isclass(obj) or inspect.isfunction(obj):
                found[f"{info.name}.{attr}"] = obj.__doc__
            if inspect.isclass(obj):
                for key, value in vars(obj).items():
                    if not key.startswith("_"):
                        found[f"{info.name}.{attr}.{key}"] = getattr(value, "__doc__", None)
    return {k: v for k, v in found.items() if isinstance(v, str)}


#: what a user's docstring must not say: paths into the repository (not in the wheel)
#: and the seed numbering of the papers' experiment folders
_LAB_NOTES = re.compile(r"\b(?:benchmarks|reproductions)/|\bseeds? 0\d\d\b")


def test_public_docstrings_hold_no_repository_paths_or_paper_seeds():
    docs = _installed_docstrings()
    assert "psdlearn.npkl.estimator.NPKL.fit" in docs  # the walk reaches methods
    offenders = {name: _LAB_NOTES.findall(doc) for name, doc in docs.items()
                 if _LAB_NOTES.search(doc)}
    assert not offenders, offenders


def test_lab_notes_pattern_catches_what_it_should():
    # the guard itself must be able to fail
    assert _LAB_NOTES.search("see benchmarks/results/x.md")
    assert _LAB_NOTES.search("as in reproductions/bcd_tables.md")
    assert _LAB_NOTES.search("seeds 000 and 001")
    assert not _LAB_NOTES.search("random_state=0 (seed 0)")
