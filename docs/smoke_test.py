"""Smoke test of the built documentation in a real headless browser.

Serves ``docs/_build/html`` on localhost, opens the home page, one gallery example and
the search page with a query in Debian's chromium (driven by playwright), and checks
that every image on those pages loaded, that the search returns at least one hit and
that the browser logged no console error and no failed request.

Usage (from the repository root, after building the site)::

    python docs/smoke_test.py [--html docs/_build/html] [--chromium /usr/bin/chromium]

Exits 0 when every check passes, 1 otherwise (each failure is printed).
"""

import argparse
import functools
import http.server
import sys
import threading
from pathlib import Path

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass


def _serve(root):
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _example_page(root):
    pages = sorted((root / "auto_examples").glob("plot_*.html"))
    if not pages:
        raise SystemExit(f"no gallery example under {root / 'auto_examples'}: build the docs first")
    return "auto_examples/" + pages[0].name


def _check_page(page, url, failures, *, search=False):
    errors = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    page.on("requestfailed", lambda req: errors.append(f"request failed: {req.url}"))
    page.on("response",
            lambda r: errors.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    response = page.goto(url, wait_until="networkidle")
    if response is None or not response.ok:
        failures.append(f"{url}: HTTP {response.status if response else 'no response'}")
        return
    if search:
        # Sphinx's search script fills the results list once its index has loaded.
        try:
            page.wait_for_selector("#search-results ul.search li", timeout=20_000)
        except Exception:
            pass
        hits = page.locator("#search-results ul.search li").count()
        print(f"  search hits: {hits}")
        if hits < 1:
            failures.append(f"{url}: the search returned no hit")
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")  # lazy images, if any
    page.wait_for_load_state("networkidle")
    images = page.evaluate(
        "Array.from(document.images).map(i => [i.currentSrc || i.src, i.complete, i.naturalWidth])"
    )
    broken = [src for src, complete, width in images if not complete or width == 0]
    print(f"  images: {len(images)}, broken: {len(broken)}")
    failures.extend(f"{url}: image did not load: {src}" for src in broken)
    print(f"  console errors: {len(errors)}")
    failures.extend(f"{url}: {err}" for err in errors)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", default="docs/_build/html", help="the built site")
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="browser executable")
    parser.add_argument("--query", default="NPKL", help="search query")
    args = parser.parse_args(argv)

    from playwright.sync_api import sync_playwright

    root = Path(args.html).resolve()
    if not (root / "index.html").exists():
        raise SystemExit(f"{root / 'index.html'} not found: build the docs first")
    server = _serve(root)
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    pages = [
        ("index.html", False),
        (_example_page(root), False),
        (f"search.html?q={args.query}", True),
    ]
    failures = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
            for path, search in pages:
                print(f"{path}")
                page = browser.new_page()
                _check_page(page, base + path, failures, search=search)
                page.close()
            browser.close()
    finally:
        server.shutdown()
    for failure in failures:
        print("FAIL:", failure)
    print("smoke test:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
