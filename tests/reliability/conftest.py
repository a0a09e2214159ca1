"""Helpers for the reliability tests: the command in process and as a real process, checks of its
one-line errors, and damaged copies of the bundled clip made with byte edits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
#: The bundled clip's AVI header announces 750 frames; its packets decode to 748 (by OpenCV and
#: by PyAV alike).
SAMPLE_ANNOUNCED, SAMPLE_DECODED = 750, 748


@pytest.fixture(autouse=True)
def _restore_logging(restored_logging):
    """main() rebinds the root logger to the (captured) stderr: restored after each test."""


def error_line(err: str) -> str:
    """Check that ``err`` ends with exactly one ``motiondetect: error:`` line, that every other
    line is one of motiondetect's own (no traceback, no OpenCV or FFmpeg noise); return it."""
    lines = err.strip().splitlines()
    assert lines, "nothing on stderr"
    assert "Traceback" not in err, err
    assert all(line.startswith("motiondetect: ") for line in lines), err
    errors = [line for line in lines if line.startswith("motiondetect: error: ")]
    assert errors == [lines[-1]], err
    return lines[-1]


def only_line(err: str) -> str:
    """The single line of ``err``, which must be an error (refused before any frame)."""
    assert len(err.strip().splitlines()) == 1, err
    return error_line(err)


def run_main(monkeypatch, capsys, cwd, *argv) -> tuple[int, str]:
    """``motiondetect ARGV`` in this process, in ``cwd``; returns (exit code, stderr)."""
    rc, _, err = run_cli(monkeypatch, capsys, cwd, *argv)
    return rc, err


def process_env(**extra: str) -> dict[str, str]:
    """The environment for ``python -m motiondetect``: this checkout's package first."""
    env = {k: v for k, v in os.environ.items() if k not in ("MOTIONDETECT_DEBUG", "OPENCV_FFMPEG_LOGLEVEL", "OPENCV_LOG_LEVEL")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.update(extra)
    return env


def run_process(cwd, *argv, timeout=120) -> subprocess.CompletedProcess:
    """``python -m motiondetect ARGV`` as a real process in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "motiondetect", *map(os.fsdecode, argv)],
        cwd=cwd,
        env=process_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def report(path) -> dict:
    """A JSON events report (it must parse)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def count_frames(path) -> int:
    """Frames in a video as an independent reader (OpenCV's capture) decodes them."""
    text = str(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # OpenCV crashes on such names: read it through a link
        with tempfile.TemporaryDirectory() as folder:
            link = Path(folder) / "video.mp4"
            link.symlink_to(Path(path).resolve())
            return count_frames(link)
    cap = cv2.VideoCapture(text)
    assert cap.isOpened(), path
    count = 0
    while cap.read()[0]:
        count += 1
    cap.release()
    return count


def avi_chunks(data: bytes) -> list[tuple[int, int]]:
    """(offset, payload size) of each stream chunk (``00dc``...) in an AVI's ``movi`` list."""
    pos, chunks = data.find(b"movi") + 4, []
    while pos + 8 <= len(data):
        tag, size = data[pos : pos + 4], int.from_bytes(data[pos + 4 : pos + 8], "little")
        if tag[2:] not in (b"dc", b"db", b"wb"):
            break
        chunks.append((pos, size))
        pos += 8 + size + (size & 1)
    return chunks


@pytest.fixture
def damaged(sample_clip, tmp_path):
    """Make damaged copies of the bundled clip: ``damaged(name, edit)`` applies ``edit`` to a
    bytearray of the file and writes it as ``tmp_path/name``."""

    def make(name: str, edit) -> Path:
        data = bytearray(sample_clip.read_bytes())
        edit(data)
        path = tmp_path / name
        path.write_bytes(bytes(data))
        return path

    return make


def small_frames(count=6, height=24, width=32, channels=3):
    """Frames with a square moving 3 px right per frame, on a flat background."""
    frames = []
    for i in range(count):
        frame = np.full((height, width, channels), 40, np.uint8)
        frame[4:12, 2 + 3 * i : 10 + 3 * i] = 200
        frames.append(frame[..., 0] if channels == 1 else frame)
    return frames


@pytest.fixture
def sequence(tmp_path) -> Path:
    """A folder of six 32x24 PNG images with a moving square."""
    folder = tmp_path / "seq"
    folder.mkdir()
    for i, frame in enumerate(small_frames()):
        cv2.imwrite(str(folder / f"in{i:06d}.png"), frame)
    return folder
