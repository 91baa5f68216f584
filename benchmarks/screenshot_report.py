"""Screenshot report.html in headless Chromium, to check what a reader really sees.

    python -m benchmarks.screenshot_report [RESULTS_DIR ...] [--out DIR]

With no RESULTS_DIR it builds the crafted promo-day results (benchmarks/synth_drill.py: the
overlap, generator-bound and clean-pass cases) and shoots those. Each report gives two PNGs:
the top of the page (verdict, findings, SLOs) and the whole page. Needs Debian's `chromium`
(`apt-get install -y chromium`); exits 2 naming the package when it is absent.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

from benchmarks.synth_drill import FAULTS, make_drill_results
from rushhour.reports.build import build_reports

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
WIDTH = 1100
TOP_HEIGHT = 1800
FULL_HEIGHT = 12000
TIMEOUT_S = 60


def find_browser() -> str | None:
    """The first headless-capable Chromium on PATH, or None."""
    return next((path for path in map(shutil.which, BROWSERS) if path), None)


def screenshot(html: Path, png: Path, *, height: int = TOP_HEIGHT, browser: str | None = None) -> Path:
    """Write a WIDTH x `height` PNG of `html` as Chromium draws it; raise RuntimeError if it cannot."""
    binary = browser or find_browser()
    if binary is None:
        raise RuntimeError("No Chromium found on PATH; install it with `apt-get install -y chromium`.")
    command = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               f"--window-size={WIDTH},{height}", f"--screenshot={png}", html.resolve().as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    if done.returncode != 0 or not png.exists():
        raise RuntimeError(f'Chromium could not screenshot "{html}": {done.stderr.strip()[-500:]}')
    return png


def trim(png: Path) -> Path:
    """Cut the blank page below the content off a full-page shot."""
    image = Image.open(png).convert("L")
    rows = np.flatnonzero((np.asarray(image) < 250).any(axis=1))
    if rows.size:
        image.close()
        Image.open(png).crop((0, 0, WIDTH, min(int(rows[-1]) + 40, FULL_HEIGHT))).save(png)
    return png


def shoot(results: Path, out: Path) -> list[Path]:
    """(Re)build one run's report and screenshot its top and its whole page."""
    build_reports(results)
    out.mkdir(parents=True, exist_ok=True)
    html = results / "report.html"
    top = screenshot(html, out / f"{results.name}-top.png")
    full = trim(screenshot(html, out / f"{results.name}-full.png", height=FULL_HEIGHT))
    return [top, full]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="*", type=Path, help="results directories (default: crafted runs)")
    parser.add_argument("--out", type=Path, default=Path("screenshots"), help="where the PNGs go")
    args = parser.parse_args(argv)
    if find_browser() is None:
        print("screenshot_report: no Chromium on PATH; install it with `apt-get install -y chromium`.",
              file=sys.stderr)
        return 2
    runs = list(args.results)
    if not runs:
        scratch = Path(tempfile.mkdtemp(prefix="rushhour-shots-"))
        runs = [make_drill_results(scratch / f"crafted-{case}", case) for case in FAULTS]
    for run in runs:
        for png in shoot(run, args.out):
            print(png)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
