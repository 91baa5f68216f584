"""A ground-truth target with an exact-match cache: `python cache_target.py PORT DELAY_MS`.

`timed_target.py --remember`: a text it has answered before is answered at once with
`"cached": true`, a new one DELAY_MS after it arrived with `"cached": false` and remembered.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

if __name__ == "__main__":
    sys.argv = [sys.argv[0], *sys.argv[1:3], "--remember"]
    runpy.run_path(str(Path(__file__).with_name("timed_target.py")), run_name="__main__")
