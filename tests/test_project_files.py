"""Project files: the license, the citation, the changelog and one version for them all."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import psdlearn

ROOT = Path(__file__).resolve().parent.parent


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_license_file_is_bsd3_and_matches_the_metadata():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("BSD 3-Clause License")
    assert "psdlearn developers" in text
    assert "Neither the name of the copyright holder" in text  # the third clause
    project = _pyproject()["project"]
    assert project["license"] == "BSD-3-Clause"
    assert project["license-files"] == ["LICENSE"]


def test_version_is_set_in_one_place():
    project = _pyproject()
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert (project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
            == "psdlearn._version.__version__")
    literal = re.escape(psdlearn.__version__)
    offenders = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "src" / "psdlearn").rglob("*.py"))
        if path.name != "_version.py"
        and re.search(rf"['\"]{literal}['\"]", path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_citation_names_the_package_version_and_the_papers():
    text = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(r"^cff-version: 1\.2\.0$", text, re.M)
    (version,) = re.findall(r"^version: (\S+)$", text, re.M)
    assert version.strip("\"'") == psdlearn.__version__
    assert re.search(r"^license: BSD-3-Clause$", text, re.M)
    assert "repository-code: \"https://github.com/psdlearn/psdlearn\"" in text
    for year in ("2015", "2013", "2008", "2017", "2007"):
        assert f"year: {year}" in text


def test_changelog_follows_keep_a_changelog():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "keepachangelog.com" in text
    assert "\n## [Unreleased]\n" in text
    sections = re.findall(r"^### (\w+)$", text, re.M)
    assert sections and set(sections) <= {"Added", "Changed", "Deprecated", "Removed",
                                          "Fixed", "Security"}


def test_project_urls():
    urls = _pyproject()["project"]["urls"]
    assert set(urls) >= {"Homepage", "Documentation", "Source", "Changelog", "Issues"}
    assert all(u.startswith("https://github.com/psdlearn/psdlearn") for u in urls.values())
