"""The attack of the link tests: a victim's file, and a symbolic link to it planted at the name a
writer would use. A writer that follows the link overwrites the victim's text."""

from __future__ import annotations

from pathlib import Path

VICTIM_TEXT = "the user's own file\n"
"""What the victim's file holds, and must still hold after every writer has run."""


def victim_file(folder: Path) -> Path:
    """The victim's file in `folder`, holding VICTIM_TEXT."""
    victim = folder / "victim.txt"
    victim.write_text(VICTIM_TEXT, encoding="utf-8")
    return victim


def plant(link: Path, victim: Path) -> None:
    """A symbolic link at `link` (its folder made) pointing at `victim`."""
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(victim)
