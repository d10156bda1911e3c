"""Partial runs of the reproductions: per-draw records merged under a lock, rows replaced.

Long tables are run in pieces (one set, or one draw, per job) so that a shared machine's
job slots turn over between them. Two helpers make the pieces add up to one table:

- :func:`merge_saved` re-reads a table's JSON under an exclusive file lock and merges the
  piece's per-draw records into it by seed, so pieces may run one after another or at the
  same time without losing each other's draws;
- :func:`replace_rows` reruns nothing itself: it replaces the rows of some sets in a
  written table (markdown and JSON) and keeps every other row and the table's notes as
  they stand in the markdown (which may carry notes added after the run), adding a note
  that names the replaced rows and why.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import time
from pathlib import Path

from reproductions.experiments.report import write_results

__all__ = ["add_run", "locked", "merge_by_seed", "merge_saved", "read_table", "replace_rows",
           "runs_note", "table_extra"]


@contextlib.contextmanager
def locked(path):
    """Hold an exclusive lock on ``<path>.lock`` (created if absent) for the block."""
    lock = Path(f"{path}.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def merge_by_seed(saved, new):
    """Records of both lists, one per seed (``new`` wins a tie), ordered by seed.

    A record without a ``"seed"`` key has the seed of its position (the protocols draw
    seeds ``0 .. reps - 1`` in order).
    """
    out = {}
    for recs in (saved, new):
        for i, rec in enumerate(recs):
            out[int(rec.get("seed", i))] = {**rec, "seed": int(rec.get("seed", i))}
    return [out[s] for s in sorted(out)]


def merge_saved(path, raw, key_fn=None):
    """Merge ``raw`` (``{key: [record, ...]}``) into the ``"raw"`` field saved at ``path``.

    Call it inside :func:`locked` on the same ``path``, then write the result. ``key_fn``
    selects the saved JSON to merge with (``None``: merge with any); a saved file it rejects
    is ignored. Records are merged per key by seed (:func:`merge_by_seed`); keys only in the
    file are kept.
    """
    path = Path(path)
    saved = {}
    if path.exists():
        payload = json.loads(path.read_text())
        if key_fn is None or key_fn(payload):
            saved = payload.get("raw", {})
    merged = dict(saved)
    for key, recs in raw.items():
        merged[key] = merge_by_seed(saved.get(key, []), recs)
    return merged


def read_table(out_dir, name):
    """``(title, columns, rows, notes, payload)`` of a table written by ``write_results``.

    Rows and columns come from the JSON, the title and the notes from the markdown (bullet
    lines after the table, continuation lines joined).
    """
    out_dir = Path(out_dir)
    payload = json.loads((out_dir / f"{name}.json").read_text())
    lines = (out_dir / f"{name}.md").read_text().splitlines()
    title = lines[0].removeprefix("# ").strip()
    notes, in_notes = [], False
    for line in lines[1:]:
        if line.startswith("|"):
            continue
        if line.startswith("Machine:"):
            break
        if line.startswith("- "):
            notes.append(line[2:])
            in_notes = True
        elif line.strip() and in_notes:
            notes[-1] += " " + line.strip()
    return title, payload["columns"], payload["rows"], notes, payload


def table_extra(payload):
    """The fields of a saved table beyond those ``write_results`` writes itself (``raw``,
    ``runs``, ...), to pass back as its ``extra`` when the table is rewritten."""
    return {k: v for k, v in payload.items()
            if k not in ("name", "environment", "columns", "rows", "notes")}


def replace_rows(out_dir, name, match, new_rows, note, raw=None, show=(), label=()):
    """Replace the rows for which ``match(row)`` holds by ``new_rows``; keep the rest.

    The new rows take the place of the first matched row (the others matched are dropped);
    with no match they go at the end. ``raw`` (a dict) updates the JSON's ``"raw"`` field.
    The markdown's notes are kept and ``note`` is appended, with the date of the run that
    wrote the kept rows. ``show``: columns whose old and new values the note lists, for each
    replaced row paired in order with its new row, named by the columns ``label``. Returns
    the markdown.
    """
    with locked(Path(out_dir) / f"{name}.json"):
        title, columns, rows, notes, payload = read_table(out_dir, name)
        hit = [i for i, r in enumerate(rows) if match(r)]
        at = hit[0] if hit else len(rows)
        kept = [r for i, r in enumerate(rows) if i not in set(hit)]
        at -= sum(i < at for i in hit)
        rows = kept[:at] + list(new_rows) + kept[at:]
        extra = table_extra(payload)
        if raw:
            extra["raw"] = {**extra.get("raw", {}), **raw}
        date = payload.get("environment", {}).get("date", "an earlier run")
        old = [payload["rows"][i] for i in hit]
        changes = "; ".join(
            " ".join(str(b.get(c)) for c in label) + ": "
            + ", ".join(f"{c} {a.get(c)} -> {b.get(c)}" for c in show)
            for a, b in zip(old, new_rows, strict=False)) if show else ""
        notes = [*notes, f"{note}" + (f" Old -> new: {changes}." if changes else "")
                 + f" The other rows are from the run of {date}."]
        return write_results(out_dir, name, columns, rows, notes, title=title, extra=extra)


def add_run(runs, piece):
    """``runs`` with ``piece`` (a dict with ``id``, ``cpu_s``, ``wall_s``, ``draws``,
    ``load_start``, ``load_end``) dated now, replacing an entry with the same ``id``."""
    return [*(r for r in runs if r["id"] != piece["id"]),
            {**piece, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}]


def runs_note(runs, n_draws, earlier_note=""):
    """One note on the runs that wrote a table: count, dates, CPU and wall, load.

    ``n_draws``: draws in the table; those beyond the runs' count are from runs made
    before the JSON kept an account of each run (``earlier_note``: what is known of them).
    """
    if not runs:
        return ""
    cpu, wall = sum(r["cpu_s"] for r in runs), sum(r["wall_s"] for r in runs)
    earlier = n_draws - sum(r["draws"] for r in runs)
    loads = [r[k] for r in runs for k in ("load_start", "load_end") if k in r]
    return (f"Written by {len(runs)} run(s) of this code (the draws of each set by one or "
            f"more runs, merged by seed), {runs[0]['date']} to {runs[-1]['date']}: "
            f"{sum(r['draws'] for r in runs)} draws, {cpu:.0f} CPU s in {wall:.0f} wall s "
            f"(CPU / wall {cpu / max(wall, 1e-9):.2f}); machine load (5-minute average) "
            f"{min(loads):.1f} to {max(loads):.1f} at their starts and ends, on 2 cores shared "
            "with other engineers' jobs (wall times are inflated; CPU times less so)."
            + (f" The other {earlier} draws are from earlier runs{earlier_note}."
               if earlier > 0 else ""))
