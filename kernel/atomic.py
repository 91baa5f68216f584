"""Result files written whole or not at all, and never through a link.

A harness killed while writing `requests.parquet` or a JSON record must leave either the old
file or none, never half of one that a later `rushhour report` would read as the truth. And a
results folder may come from elsewhere (downloaded, unpacked, shared): a `report.md` planted as a
symbolic link to a file of the user's must not get that file overwritten. So every results file
is written to a temporary file created exclusively (`O_EXCL`, `O_NOFOLLOW`, a random name) in the
same directory, flushed to disk, then renamed over the destination; a destination that is a link
is refused with `LinkedOutputError`, naming it. Kept in the bottom layer so the drill and the
reports write results the same way.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Protocol

__all__ = ["LinkedOutputError", "ParquetFrame", "atomic_output", "open_streamed", "refuse_linked_outputs",
           "write_bytes_atomic", "write_json_atomic", "write_parquet_atomic", "write_text_atomic"]

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class ParquetFrame(Protocol):
    """A table that writes itself as parquet (a pandas DataFrame): the kernel names what it needs
    of one and imports no pandas, so a load generator's process can use this module."""

    def to_parquet(self, path: IO[bytes], *, index: bool) -> object: ...


class LinkedOutputError(ValueError):
    """A results file to be written is a symbolic link (or not a plain file)."""


def _refuse_link(path: Path) -> None:
    if path.is_symlink():
        raise LinkedOutputError(f'Refusing to write "{path}": it is a symbolic link (to "{os.readlink(path)}"). '
                                "A results folder's files must be plain files; remove the link and run again.")
    if path.exists() and not path.is_file():
        raise LinkedOutputError(f'Refusing to write "{path}": it exists and is not a plain file.')


def refuse_linked_outputs(folder: Path, names: list[str] | tuple[str, ...]) -> None:
    """LinkedOutputError naming the first of `names` in `folder` that is a link or not a plain file."""
    for name in names:
        _refuse_link(folder / name)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot sync a directory; the rename has happened all the same
    finally:
        os.close(fd)


@contextmanager
def atomic_output(path: Path, *, sync: bool = True, mode: int = 0o666) -> Iterator[IO[bytes]]:
    """A binary file to write `path` through: a fresh temporary file beside it, synced and renamed
    over `path` when the block ends normally, removed when it raises. For writers that stream
    (a ParquetWriter fed chunk by chunk); LinkedOutputError when `path` is a link. `sync=False`
    skips the two fsyncs, for control markers that matter only while the drill runs (the write is
    still exclusive, never through a link, and whole or absent to a reader). `mode`: the file's
    permissions from its creation on (0o600 for a secret), less the umask."""
    path = Path(path)
    _refuse_link(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, _FLAGS, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            if sync:
                os.fsync(handle.fileno())
        _refuse_link(path)
        os.replace(tmp, path)  # a rename replaces a link put there meanwhile; it never writes through one
    finally:
        tmp.unlink(missing_ok=True)
    if sync:
        _fsync_dir(path.parent)


def _write(path: Path, fill: Callable[[IO[bytes]], object], *, sync: bool = True) -> None:
    """`fill` writes the whole of `path` through `atomic_output`."""
    with atomic_output(path, sync=sync) as handle:
        fill(handle)


def write_bytes_atomic(data: bytes, path: Path, *, sync: bool = True, mode: int = 0o666) -> None:
    """`data` to `path`, atomically, never through a link (`sync`, `mode`: as for `atomic_output`)."""
    with atomic_output(path, sync=sync, mode=mode) as handle:
        handle.write(data)


def write_text_atomic(text: str, path: Path, *, sync: bool = True, mode: int = 0o666) -> None:
    """`text` to `path` as UTF-8, atomically, never through a link (`sync`, `mode`: as for
    `atomic_output`). A lone surrogate (from a name or an answer decoded with surrogateescape) is
    written as its escape, `\\ud800`, rather than failing the whole file."""
    write_bytes_atomic(text.encode("utf-8", errors="backslashreplace"), path, sync=sync, mode=mode)


def open_streamed(path: Path, *, append: bool = False) -> IO[bytes]:
    """`path` opened for a log written as it goes (a child process's output): truncated, or appended
    to with `append`, and never through a link; LinkedOutputError when it is one, even one planted
    between the check and the open."""
    _refuse_link(path)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LinkedOutputError(f'Refusing to write "{path}": it is a symbolic link. A results folder\'s '
                                    "files must be plain files; remove the link and run again.") from None
        raise
    return os.fdopen(fd, "ab" if append else "wb")


def write_parquet_atomic(frame: ParquetFrame, path: Path) -> None:
    """`frame` to `path` as parquet, atomically, never through a link."""
    _write(path, lambda handle: frame.to_parquet(handle, index=False))


def write_json_atomic(data: Any, path: Path) -> None:
    """`data` to `path` as indented JSON, atomically, never through a link."""
    write_text_atomic(json.dumps(data, indent=2, default=str) + "\n", path)
