"""Reproductions of the papers' tables and figures, run from a checkout of the repository.

Not part of the installed ``psdlearn`` package: ``python -m reproductions list`` names
the reproductions, ``python -m reproductions NAME [--quick]`` runs one and writes its
markdown, JSON and figures into this directory (see ``README.md`` here).

- :mod:`reproductions.experiments`: one module per protocol, with the paper's numbers
  beside ours;
- :mod:`reproductions.baselines`: the papers' baselines that the library does not offer
  (graph kernels, alignment-based kernel weights, LIBLINEAR's ``C`` search).
"""

from pathlib import Path

__all__ = ["RESULTS_DIR"]

#: Where the reproductions write their results: this directory, whatever the working one.
RESULTS_DIR = Path(__file__).resolve().parent
