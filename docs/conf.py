"""Sphinx configuration of the psdlearn documentation.

Build from the repository root with::

    sphinx-build -W --keep-going -b html docs docs/_build/html

The build needs no network. Set ``PSDLEARN_DOCS_INTERSPHINX=1`` to link to the NumPy,
SciPy and scikit-learn documentation (fetches their inventories). Set
``PSDLEARN_DOCS_GALLERY=0`` to skip running the gallery examples (quick local builds).
"""

import os
import re
import sys
import warnings
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# Document the tree being built, not whatever psdlearn is installed.
sys.path.insert(0, str(ROOT / "src"))

import psdlearn  # noqa: E402

project = "psdlearn"
author = "The psdlearn developers"
copyright = "The psdlearn developers"
release = psdlearn.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "smoke_test.py"]
templates_path = ["_templates"]

# -- API reference -------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"inherited-members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_show_inherited_class_members = False
numpydoc_xref_param_type = False
numpydoc_validation_checks = set()

# -- Markdown ------------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
# Pages copied from the repository (README-style links to files that are not pages).
suppress_warnings = ["myst.xref_missing"]

# -- Links to other projects (off by default: the CI build has no network) ----------------
intersphinx_mapping = {}
if os.environ.get("PSDLEARN_DOCS_INTERSPHINX", "0") == "1":
    extensions.append("sphinx.ext.intersphinx")
    intersphinx_mapping = {
        "python": ("https://docs.python.org/3", None),
        "numpy": ("https://numpy.org/doc/stable", None),
        "scipy": ("https://docs.scipy.org/doc/scipy", None),
        "sklearn": ("https://scikit-learn.org/stable", None),
        "dask": ("https://docs.dask.org/en/stable", None),
    }

# -- Gallery -------------------------------------------------------------------------------
# The examples use the tree being built too (sphinx-gallery runs them in this process).
run_gallery = os.environ.get("PSDLEARN_DOCS_GALLERY", "1") != "0"
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "plot_gallery": "True" if run_gallery else "False",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
    "show_memory": False,
    "min_reported_time": 0,
    "abort_on_example_error": False,
    "capture_repr": ("_repr_html_", "__repr__"),
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib", "seaborn"),
    "doc_module": ("psdlearn",),
    "backreferences_dir": "generated/backreferences",
}
# Examples run headless.
os.environ.setdefault("MPLBACKEND", "Agg")
warnings.filterwarnings(
    "ignore", category=UserWarning,
    message="Matplotlib is currently using agg, which is a non-GUI backend",
)

# -- HTML ----------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"psdlearn {release}"
html_static_path = ["_static"]
html_favicon = "_static/favicon.png"
html_theme_options = {
    "github_url": "https://github.com/psdlearn/psdlearn",
    "navbar_end": ["theme-switcher", "navbar-icon-links"],
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_context = {"default_mode": "light"}
html_show_sourcelink = False


# -- Pages that include files other work creates (CHANGELOG.md, LICENSE, CITATION.cff) ----
_INCLUDE = re.compile(r"```\{(?:literal)?include\} \.\./(\S+)\n(?:[^`]*?\n)?```\n", re.S)


def _drop_missing_includes(app, docname, source):
    """Replace an include of a repository file that does not exist with a sentence."""
    if docname != "changelog":
        return

    def repl(match):
        name = match.group(1)
        if (ROOT / name).exists():
            return match.group(0)
        return f"*{name} is not part of this checkout.*\n"

    source[0] = _INCLUDE.sub(repl, source[0])


def _notes_without_pages(app, docname, source):
    """The "Method notes" toctree globs docs/notes/*.md; with no note yet, drop it."""
    if docname == "notes/index" and not any(
        p.name != "index.md" for p in (DOCS / "notes").glob("*.md")
    ):
        source[0] = re.sub(r"```\{toctree\}.*?```\n", "*No notes yet.*\n", source[0], flags=re.S)


# -- Docstrings: ``rank_`` written without backticks is a reST reference ------------------
_LITERAL = re.compile(r"(``.+?``|:[\w:]+:`[^`]*`|`[^`]*`_{0,2})")
_TRAILING_UNDERSCORE = re.compile(r"(?<=[A-Za-z0-9])_(?=[\s,.;:)\]}]|$)")


def _escape_trailing_underscores(app, what, name, obj, options, lines):
    """Escape ``name_`` outside literals so that reST does not read it as a link target.

    scikit-learn's fitted-attribute names (``embedding_``, ``rank_``) appear in shapes such
    as ``(n_samples, rank_)``; written bare, docutils takes them for references.
    """
    literal_indent = None
    for k, line in enumerate(lines):
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if literal_indent is not None:
            if stripped and indent <= literal_indent:
                literal_indent = None
            else:
                continue
        if stripped.startswith((">>>", "...")):
            continue
        parts = _LITERAL.split(line)
        for i in range(0, len(parts), 2):
            parts[i] = _TRAILING_UNDERSCORE.sub(r"\\_", parts[i])
        lines[k] = "".join(parts)
        if stripped.endswith("::") or stripped.startswith(".. math::"):
            literal_indent = indent


def _skip_metadata_requests(app, what, name, obj, skip, options):
    """Leave out scikit-learn's generated ``set_*_request`` methods (metadata routing).

    scikit-learn writes them onto every estimator class; their docstrings refer to
    scikit-learn's own user guide and glossary, which this site does not have.
    """
    if re.fullmatch(r"set_\w+_request", name):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_requests)
    app.connect("source-read", _drop_missing_includes)
    app.connect("source-read", _notes_without_pages)
    app.connect("autodoc-process-docstring", _escape_trailing_underscores)
