"""Every public name of psdlearn appears in the API reference (docs/api.rst)."""

import re
from pathlib import Path

import pytest

import psdlearn

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api.rst"


def _autosummary_entries(text):
    """Names listed in the ``.. autosummary::`` directives of an reST file."""
    names = set()
    for block in re.finditer(r"^\.\. autosummary::\n((?:[ \t]+.*\n|\n)+)", text, re.M):
        for line in block.group(1).splitlines():
            entry = line.strip()
            if entry and not entry.startswith(":"):
                names.add(entry.lstrip("~").rsplit(".", 1)[-1])
    return names


def _documented_modules(text):
    return set(re.findall(r"^\.\. automodule:: psdlearn\.(\w+)", text, re.M))


@pytest.mark.parametrize("name", sorted(set(psdlearn.__all__) - {"__version__"}))
def test_public_name_in_api_reference(name):
    text = API.read_text(encoding="utf-8")
    obj = getattr(psdlearn, name)
    if type(obj).__name__ == "module":
        assert name in _documented_modules(text), f"module psdlearn.{name} not in docs/api.rst"
        public = set(getattr(obj, "__all__", ()))
        listed = _autosummary_entries(text) | set(psdlearn.__all__)
        missing = sorted(n for n in public - listed if not n.isupper())
        assert not missing, f"psdlearn.{name}: {missing} not in docs/api.rst"
    else:
        assert name in _autosummary_entries(text), f"psdlearn.{name} not in docs/api.rst"
