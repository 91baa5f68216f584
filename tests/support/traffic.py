"""Light traffic for drills that test something other than the model's work.

The bundled mix sends 15% documents of about 2,500 characters (up to 20,000), each a second or more
of CPU on the reference server's quality node: in a drill that tests a fault, a recovery or the
harness itself, they are most of the CPU it costs, and they take it from the tests beside it on a
two-core machine. `short_texts` writes a traffic model of the bundled priorities and modes with
chat-sized texts only, at a constant rate.
"""

from __future__ import annotations

from pathlib import Path

import yaml

__all__ = ["short_texts"]

SHORT = {"fraction": 1.0, "chars": {"median": 90, "sigma": 0.7, "min": 5, "max": 800}}


def short_texts(folder: Path, rps: float, *, name: str = "short-texts.yaml") -> Path:
    """A traffic model file in `folder`: `rps` requests a second, every one a chat-sized text."""
    path = folder / name
    path.write_text(yaml.safe_dump({
        "description": "a constant rate of chat-sized texts (no documents)",
        "base_rps": rps, "curve": "flat", "mix": {"kinds": {"short": SHORT}},
    }))
    return path
