"""The report as a browser draws it: headless Chromium screenshots of a crafted drill's report.

Skipped when no Chromium is installed (`apt-get install -y chromium`); the same check runs by
hand with `python -m benchmarks.screenshot_report` (docs/report.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from benchmarks.screenshot_report import find_browser, shoot
from benchmarks.synth_drill import make_drill_results

pytestmark = pytest.mark.skipif(find_browser() is None,
                                reason="Chromium is not installed (apt-get install -y chromium), "
                                       "so the report cannot be checked in a browser")


@pytest.mark.slow
def test_screenshot_report_draws_findings_and_charts(tmp_path: Path) -> None:
    run = make_drill_results(tmp_path / "crafted-overlap", "overlap")
    top, full = shoot(run, tmp_path / "shots")
    with Image.open(top) as image:
        assert image.size == (1100, 1800)
        pixels = np.asarray(image.convert("RGB"))
    # The FAIL banner (#c62828) is drawn near the top, so the page rendered with its styles.
    red = (np.abs(pixels.astype(int) - (0xC6, 0x28, 0x28)).sum(axis=2) < 30)
    assert red[:300].sum() > 5000
    with Image.open(full) as image:
        assert image.size[1] > 4000  # every chart below the tables was drawn
