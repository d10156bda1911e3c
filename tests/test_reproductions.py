"""The reproductions live outside the installed package and keep running from a checkout.

The library (``src/psdlearn``) must not import the repository's own packages, and the
reproductions and benchmarks use psdlearn through its public modules only (a private
module, ``psdlearn._x`` or ``psdlearn.<pkg>._x``, may change without notice).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import reproductions
from reproductions.__main__ import main
from reproductions.experiments import REPRODUCTIONS, reproduce

ROOT = Path(__file__).resolve().parent.parent


def _imports(path):
    """Every module named by an import statement of ``path`` (``from a import b``: ``a.b``
    as well as ``a``, so that ``from psdlearn.npkl import _kernels`` is seen)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
            names += [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def _python_files(*dirs):
    files = [p for d in dirs for p in sorted((ROOT / d).rglob("*.py"))]
    assert files, dirs
    return files


def test_library_imports_no_repository_package():
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in _python_files("src/psdlearn")
        for name in _imports(path)
        if name.split(".")[0] in {"reproductions", "benchmarks", "tests", "_common"}
    ]
    assert offenders == []


def test_reproductions_and_benchmarks_import_no_private_psdlearn_module():
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in _python_files("reproductions", "benchmarks")
        for name in _imports(path)
        if name.split(".")[0] == "psdlearn"
        and any(part.startswith("_") for part in name.split(".")[1:])
        and name != "psdlearn.__version__"
    ]
    assert offenders == []


def test_the_private_import_check_can_fail(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from psdlearn.npkl import _admm_kernels\nimport psdlearn._linalg\n")
    names = _imports(bad)
    assert "psdlearn.npkl._admm_kernels" in names and "psdlearn._linalg" in names


def test_nothing_left_in_the_package():
    package = ROOT / "src" / "psdlearn"
    assert not (package / "experiments").exists()
    assert not (package / "baselines").exists()


def test_list_cites_papers_by_author(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "seed 00" not in out and "Hu & Kwok 2015" in out and "Shen et al. 2008" in out
    assert out.count("\n") == len(REPRODUCTIONS)


def test_unknown_name_is_an_error(capsys):
    assert main(["no-such-table"]) == 2
    assert "unknown reproduction 'no-such-table'" in capsys.readouterr().err


def test_results_go_to_the_reproductions_directory_whatever_the_cwd(tmp_path, monkeypatch):
    assert reproductions.RESULTS_DIR == ROOT / "reproductions"
    assert (reproductions.RESULTS_DIR / "README.md").is_file()
    seen = {}

    def fake_run(out, quick=False, log=print):
        seen["out"] = out
        return out

    monkeypatch.chdir(tmp_path)
    module = importlib.import_module("reproductions.experiments.psdboost_synthetic")
    monkeypatch.setattr(module, "run", fake_run)
    reproduce("psdboost-synthetic")
    assert seen["out"] == ROOT / "reproductions"
    assert not (tmp_path / "reproductions").exists()


@pytest.mark.parametrize("name", sorted(REPRODUCTIONS))
def test_every_reproduction_module_imports_and_has_run(name):
    module = importlib.import_module(f"reproductions.experiments.{REPRODUCTIONS[name][0]}")
    assert callable(module.run)
