"""The motion masks as outputs: a mask video (``--mask-out``) for viewing and lossless PNG images
per frame (``--masks DIR``) for tuning and for scoring against ground truth."""

from __future__ import annotations

from pathlib import Path

import cv2

from motiondetect.core.errors import MotionDetectError
from motiondetect.core.safety import write_image
from motiondetect.outputs.sinks import Sink
from motiondetect.outputs.writer import VideoWriter


def mask_name(stem: str, index: int) -> str:
    """File name of frame ``index``'s mask image: ``<stem>_000123.png`` (0-based input frame)."""
    return f"{stem}_{index:06d}.png"


class MaskVideoSink(Sink):
    """Writes the masks (white where moving) as a video, like DVR-Scan's ``--mask-output``.

    H.264 is lossy: use :class:`MaskImagesSink` for exact masks.

    Args:
        writer: an open :class:`~motiondetect.outputs.writer.VideoWriter` of the frames' size.
        timestamps: place each mask at its frame's time, as
            :class:`~motiondetect.outputs.sinks.VideoSink` does.
    """

    def __init__(self, writer: VideoWriter, timestamps: bool = False) -> None:
        self.writer = writer
        self.timestamps = timestamps

    def consume(self, frame, result):
        self.writer.write(cv2.cvtColor(result.mask, cv2.COLOR_GRAY2BGR), time=frame.time if self.timestamps else None)

    def close(self, summary):
        self.writer.close()

    def describe(self):
        return self.writer.path

    @property
    def removed(self):
        return self.writer.removed


class MaskImagesSink(Sink):
    """Writes each frame's mask as an 8-bit greyscale PNG (lossless; 0 or 255) into a folder.

    Args:
        folder: existing folder.
        stem: file-name prefix; frame ``i``'s mask is :func:`mask_name` ``(stem, i)``.

    Raises:
        MotionDetectError: (from :meth:`consume`) an image cannot be written (with the reason:
            a full disk, permissions).
    """

    #: zlib level 1: PNG stays lossless at any level; 1 writes fastest.
    PNG_OPTIONS = [cv2.IMWRITE_PNG_COMPRESSION, 1]

    def __init__(self, folder: str | Path, stem: str) -> None:
        self.folder, self.stem = Path(folder), stem
        self.count = 0

    def consume(self, frame, result):
        path = self.folder / mask_name(self.stem, frame.index)
        try:
            write_image(path, result.mask, self.PNG_OPTIONS)
        except (OSError, ValueError) as exc:
            raise MotionDetectError(f"cannot write mask image {str(path)!r}: {getattr(exc, 'strerror', None) or exc}") from None
        self.count += 1

    def close(self, summary):
        pass

    def describe(self):
        return f"{self.count} mask{'' if self.count == 1 else 's'} in {self.folder}"
