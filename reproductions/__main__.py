"""``python -m reproductions``: list the reproductions or run one from a checkout."""

from __future__ import annotations

import argparse
import sys

from reproductions import RESULTS_DIR
from reproductions.experiments import REPRODUCTIONS, reproduce


def main(argv=None):
    """Run ``python -m reproductions NAME [--quick] [--out DIR]`` (``list`` names them)."""
    parser = argparse.ArgumentParser(
        prog="python -m reproductions",
        description="Reproduce a paper's table or figure; results are written as markdown, "
        "JSON and PNG files.",
        epilog="examples:\n  python -m reproductions list\n"
        "  python -m reproductions bcd-tables --quick",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", help="reproduction name, or 'list' to show them all")
    parser.add_argument("--quick", action="store_true",
                        help="reduced protocol (fewer sets and repetitions); results go to "
                        "OUT/quick")
    parser.add_argument("--out", default=str(RESULTS_DIR),
                        help=f"output directory (default: {RESULTS_DIR})")
    args = parser.parse_args(argv)
    if args.name == "list":
        for name, (_, text) in REPRODUCTIONS.items():
            print(f"{name:<20}{text}")
        return 0
    try:
        reproduce(args.name, out_dir=args.out, quick=args.quick)
    except ValueError as exc:
        print(f"python -m reproductions: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
