"""Guards around the native libraries and the file system: names OpenCV can take, image files
read and written through Python's file handling, a real write test for output folders, and
OpenCV's and FFmpeg's own console messages kept out of the one-line errors.

OpenCV's Python binding converts a file name to UTF-8 before its C++ call; a name holding bytes
that are not UTF-8 (which Python carries as lone surrogates, ``'caf\\udce9.avi'``) crashes the
process there (a segmentation fault, OpenCV 5.0). Every name is therefore checked, or the file
is read and written by Python and only the bytes go through OpenCV.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import cv2
import numpy as np


def is_utf8(text: str) -> bool:
    """Whether ``text`` can be handed to OpenCV (valid UTF-8: no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable_name(text: str) -> str:
    """``text`` with the bytes that are not UTF-8 replaced by U+FFFD, for derived names (output
    stems, window titles) that OpenCV may see."""
    return text if is_utf8(text) else os.fsencode(text).decode("utf-8", "replace")


def read_image(path: str | Path, flags: int = cv2.IMREAD_COLOR) -> np.ndarray | None:
    """``cv2.imread`` that also takes names that are not UTF-8 (read as bytes, ``cv2.imdecode``).

    Args:
        path: image file.
        flags: ``cv2.IMREAD_*`` flags; the default gives (H, W, 3) uint8 BGR for any 8- or
            16-bit, grey, BGR or BGRA file.

    Returns:
        The image, or ``None`` when the file cannot be read or decoded.
    """
    text = str(path)
    if is_utf8(text):
        return cv2.imread(text, flags)
    try:
        data = np.frombuffer(Path(path).read_bytes(), np.uint8)
    except OSError:
        return None
    return cv2.imdecode(data, flags) if data.size else None


def write_image(path: str | Path, image: np.ndarray, params: list[int] | None = None) -> None:
    """Encode ``image`` with OpenCV (format from the suffix) and write it with Python's file
    handling, so any file name works and a full disk raises with its reason.

    Args:
        path: file to write; replaced if it exists.
        image: (H, W) or (H, W, 3) uint8.
        params: ``cv2.IMWRITE_*`` pairs, e.g. ``[cv2.IMWRITE_PNG_COMPRESSION, 1]``.

    Raises:
        ValueError: OpenCV cannot encode the image in that format.
        OSError: the file cannot be written (permissions, disk full); a part written is removed,
            so no truncated image is left under the name.
    """
    ok, data = cv2.imencode(Path(path).suffix or ".png", image, params or [])
    if not ok:
        raise ValueError(f"cannot encode an image of shape {image.shape} as {Path(path).suffix}")
    try:
        with open(path, "wb") as handle:
            handle.write(data.tobytes())
    except OSError:
        if Path(path).is_file():  # not a device or a pipe named as the output
            Path(path).unlink(missing_ok=True)
        raise


def free_name(path: Path) -> Path:
    """``path`` if no file has that name, else the first free ``<stem>_2<suffix>``, ``_3``...

    For files written at the user's request during a run (preview snapshots), which must never
    replace an existing file.
    """
    candidate, number = path, 1
    while candidate.exists():
        number += 1
        candidate = path.with_name(f"{path.stem}_{number}{path.suffix}")
    return candidate


def writable_problem(folder: str | Path) -> str | None:
    """Why no file can be created in ``folder``, or ``None`` when one can.

    Creates and removes a temporary file there: unlike ``os.access`` this also catches read-only
    mounts and folders that refuse new files even to root (``/proc``, ``/sys``).
    """
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


@contextlib.contextmanager
def native_output_silenced(fds: tuple[int, ...] = (1,)) -> Iterator[None]:
    """Send what native code writes meanwhile to the file descriptors ``fds`` (1: standard
    output, 2: standard error) to the null device.

    For C++ libraries that print on their own: bgslibrary's ``+NAME()`` lines and grey-clip
    warnings (they would land in the evaluation table), PyNvVideoCodec's "Seek accuracy may be
    impacted" for every Matroska file. Python's own streams are flushed first, so nothing of
    theirs written before is lost.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    null = os.open(os.devnull, os.O_WRONLY)
    saved = [os.dup(fd) for fd in fds]
    try:
        for fd in fds:
            os.dup2(null, fd)
        yield
    finally:
        for fd, copy in zip(fds, saved):
            os.dup2(copy, fd)
            os.close(copy)
        os.close(null)


def quiet_native_logs(verbose: bool) -> None:
    """Keep OpenCV's and its FFmpeg's own messages, and other libraries' chatter, off the console
    unless ``verbose``.

    Failures are reported by motiondetect in one line each; without this, opening a missing
    camera prints a dozen OpenCV lines and a damaged video prints one FFmpeg line per bad
    block. An ``OPENCV_FFMPEG_LOGLEVEL`` or ``OPENCV_LOG_LEVEL`` set by the user is kept. Must
    run before the first capture is opened (OpenCV reads the FFmpeg level once) and after
    ``logging.basicConfig``: the root handlers then pass other loggers' records only from
    WARNING up. A library may set its own logger's level on import (PyNvVideoCodec 2.2 sets INFO
    and logs "Using NVENC 13.0 version", on GPUs without NVENC too), which the root's level
    cannot hold back.
    """
    if verbose:
        return
    os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")  # AV_LOG_QUIET
    cv_logging = getattr(getattr(cv2, "utils", None), "logging", None)
    if "OPENCV_LOG_LEVEL" not in os.environ and cv_logging is not None:
        cv_logging.setLogLevel(cv_logging.LOG_LEVEL_SILENT)
    for handler in logging.getLogger().handlers:
        handler.addFilter(_own_or_warning)


def _own_or_warning(record: logging.LogRecord) -> bool:
    """motiondetect's own records at any level; other loggers' from WARNING up."""
    return record.levelno >= logging.WARNING or record.name == "motiondetect" or record.name.startswith("motiondetect.")
