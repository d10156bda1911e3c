"""The README's promises: its first commands, and a quickstart that runs as written.

The quickstart must run after a plain ``pip install psdlearn``: it is run in a fresh
interpreter in which the optional extras (cvxpy, faiss, dask, matplotlib) cannot be
imported, with the tree under test first on ``PYTHONPATH``.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import psdlearn

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)

# Run before the quickstart: any import of an optional extra fails, as after a plain install.
BLOCK_EXTRAS = """
import importlib.abc
import sys

class _NoExtras(importlib.abc.MetaPathFinder):
    blocked = ("cvxpy", "clarabel", "scs", "faiss", "dask", "distributed", "matplotlib")

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.blocked:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: not a dependency)")
        return None

sys.meta_path.insert(0, _NoExtras())
"""


def _section(title):
    """Text of the README section under the level-2 heading ``title``."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.S | re.M)
    assert match is not None, f"README.md has no '## {title}' section"
    return match.group(1)


def test_first_block_holds_the_two_commands():
    lang, body = FENCE.search(README).groups()
    assert lang == "bash"
    lines = [line.strip() for line in body.strip().splitlines()]
    assert lines == [
        "pip install -e . && psdlearn demo",
        'pip install -e ".[test]" && pytest',
    ]


def test_quickstart_is_short():
    blocks = [body for lang, body in FENCE.findall(_section("Quickstart")) if lang == "python"]
    assert len(blocks) == 1
    assert len(blocks[0].strip().splitlines()) <= 15


def test_quickstart_runs_without_extras(tmp_path):
    (code,) = [body for lang, body in FENCE.findall(_section("Quickstart")) if lang == "python"]
    script = tmp_path / "quickstart.py"
    script.write_text(BLOCK_EXTRAS + "\n" + code, encoding="utf-8")
    tree = str(Path(psdlearn.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([tree, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    result = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # The quickstart prints both Rand indices; NPKL's must beat k-means' on iris.
    found = re.search(r"NPKL (\d\.\d+), k-means (\d\.\d+)", result.stdout)
    assert found is not None, result.stdout
    npkl, kmeans = map(float, found.groups())
    assert npkl > kmeans


def test_readme_links_stay_inside_the_repository():
    for target in re.findall(r"\]\(([^)]+)\)", README):
        if target.startswith(("http://", "https://", "#")):
            continue
        assert not target.startswith(("..", "/")), target
        assert (ROOT / target).exists() or target == "CITATION.cff", target
