"""Files written whole: a temporary file in the target's folder renamed over it, so a reader
never sees half a report or picture and an existing one is only replaced whole."""

from __future__ import annotations

import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator


def temporary_beside(path: Path, suffix: str = ".tmp") -> tuple[int, Path]:
    """A new empty file ``.<name>.XXXXXXXX<suffix>`` in ``path``'s folder, so that renaming it
    onto ``path`` stays on one file system, with the mode a new file gets (mkstemp makes 0600;
    outputs are as readable as any file the user writes): its open descriptor and its path.

    Raises:
        OSError: the folder is missing or not writable.
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)
    return fd, Path(tmp)


@contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8", newline: str | None = None) -> Iterator[IO]:
    """Open ``path`` for writing through a temporary file that replaces it on success.

    A target that exists and is not a regular file (``/dev/null``, a FIFO, a terminal) is
    written in place: renaming over it would replace the device with a file.

    Args:
        path: the file to write.
        mode: ``"w"`` (text, with ``encoding`` and ``newline``) or ``"wb"``.

    Raises:
        OSError: the folder is not writable or the disk is full (the temporary file is removed,
            the target left as it was).
    """
    path = Path(path)
    if "b" in mode:
        encoding = newline = None  # binary files take neither
    try:
        special = not stat.S_ISREG(path.stat().st_mode)
    except FileNotFoundError:
        special = False
    if special:
        with open(path, mode, encoding=encoding, newline=newline) as handle:
            yield handle
        return
    fd, tmp = temporary_beside(path)
    try:
        with os.fdopen(fd, mode, encoding=encoding, newline=newline) as handle:
            yield handle
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
