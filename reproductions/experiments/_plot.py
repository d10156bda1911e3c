"""Figures of the reproductions (matplotlib, the ``plot`` extra); skipped without it."""

from __future__ import annotations

__all__ = ["plot_lines"]


def plot_lines(path, series, *, xlabel, ylabel, title=None, loglog=False, hlines=None,
               semilogy=False):
    """Save a line plot of ``{label: (x, y)}`` to ``path``; return False without matplotlib.

    Parameters
    ----------
    path : path-like
    series : dict of label -> (x, y)
    xlabel, ylabel, title : str
    loglog, semilogy : bool
        Axis scales.
    hlines : dict of label -> float, optional
        Dashed horizontal reference lines (e.g. the SDP optimum).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(5, 3.6))
    for label, (x, y) in series.items():
        ax.plot(x, y, marker="o" if len(x) < 30 else None, ms=3, label=label)
    for label, value in (hlines or {}).items():
        ax.axhline(value, ls="--", color="k", lw=1, label=label)
    if loglog:
        ax.set_xscale("log")
        ax.set_yscale("log")
    elif semilogy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True
