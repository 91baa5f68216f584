"""Reading a text file a person or a run wrote, whole, with one sentence naming the file when it
cannot be: a directory, a pipe or device (never opened, so a FIFO cannot hang the reader), a file
that cannot be read, or bytes that are not UTF-8."""

from __future__ import annotations

from pathlib import Path

__all__ = ["TextFileError", "read_text_file"]


class TextFileError(ValueError):
    """The file cannot be read as text; the message quotes its path and says why."""


def read_text_file(path: Path) -> str:
    """The file's text, or TextFileError naming it."""
    if path.is_dir():
        raise TextFileError(f'"{path}" is a directory, not a file.')
    if path.exists() and not path.is_file():
        raise TextFileError(f'"{path}" is not a regular file (a pipe, socket or device), so it was not read.')
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TextFileError(f'"{path}" could not be read: {exc.strerror or exc}.') from exc
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TextFileError(f'"{path}" is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}).') from exc
