"""The wheel holds the library only: no reproductions, benchmarks or tests.

The wheel is built from a copy of the files the build reads (so that no earlier build
directory of the checkout leaks into it), without build isolation: it needs ``build``
and setuptools 77 or later in the test environment (both in the ``test`` extra).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import psdlearn

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = ("experiments/", "baselines/", "reproductions/", "benchmarks/", "tests/")


def _setuptools_supports_pep639():
    from importlib.metadata import PackageNotFoundError, version

    try:
        return int(version("setuptools").split(".")[0]) >= 77
    except (PackageNotFoundError, ValueError):
        return False


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    pytest.importorskip("build")
    if not _setuptools_supports_pep639():
        pytest.skip("setuptools >= 77 is needed to build the wheel (the test extra has it)")
    src = tmp_path_factory.mktemp("checkout")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "src", src / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc"))
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation",
                    "--outdir", str(out), str(src)], check=True, capture_output=True)
    (path,) = out.glob("psdlearn-*.whl")
    return path


def test_wheel_holds_only_the_library(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    version = psdlearn.__version__
    assert wheel.name.startswith(f"psdlearn-{version}-")
    dist_info = f"psdlearn-{version}.dist-info/"
    assert {n.split("/")[0] + "/" for n in names} == {"psdlearn/", dist_info}
    assert [n for n in names if any(part in n for part in FORBIDDEN)] == []
    assert "psdlearn/__init__.py" in names and "psdlearn/cli.py" in names
    assert any(n.startswith("psdlearn/datasets/data/") and n.endswith(".gz") for n in names)
    assert f"{dist_info}licenses/LICENSE" in names


def test_wheel_metadata(wheel):
    with zipfile.ZipFile(wheel) as zf:
        meta = zf.read(f"psdlearn-{psdlearn.__version__}.dist-info/METADATA").decode()
        entry = zf.read(f"psdlearn-{psdlearn.__version__}.dist-info/entry_points.txt").decode()
    assert f"Version: {psdlearn.__version__}\n" in meta
    assert "License-Expression: BSD-3-Clause\n" in meta
    assert "Project-URL: Changelog, https://github.com/psdlearn/psdlearn/" in meta
    assert "psdlearn = psdlearn.cli:main" in entry
