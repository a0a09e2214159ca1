"""The data passed between the stages: a frame's detection result and a bounding box."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from motiondetect.core.picture import Picture

#: A bounding box (x, y, w, h) in pixels, (x, y) its top-left corner.
Box = tuple[int, int, int, int]


@dataclass(frozen=True)
class FrameResult:
    """What the detector returns for one frame.

    Attributes:
        mask: (H, W) uint8 motion mask at the input's size, values 0 or 255 (0 outside the ROI);
            ``None`` when the detector was made with ``masks=False``.
        frame: (H, W, 3) uint8 BGR annotated frame (the red blend), or a
            :class:`~motiondetect.core.picture.Picture` when the input was one; the input (a copy)
            when the pipeline has no BGR-producing filter, or the input itself when the detector
            was made with ``annotate=False``.
        motion_fraction: share of the pixels that can move (the ROI's, else the frame's) that
            are set in the mask, in [0, 1]; counted at the processing size when downscaled.
        bbox: bounding box of the mask's set pixels as (x, y, w, h) in input pixels (x, y the
            top-left corner), or ``None`` when no pixel is set.
    """

    mask: np.ndarray | None
    frame: np.ndarray | Picture
    motion_fraction: float
    bbox: Box | None = None


@dataclass(frozen=True)
class Frame:
    """One decoded frame.

    Attributes:
        index: 0-based position in the stream.
        time: timestamp in seconds from the input's first frame: index / fps, except in a
            variable-frame-rate video file read at its average rate, whose frames keep their
            own timestamps (:attr:`~motiondetect.sources.video.VideoHandler.timestamped`).
        image: (H, W, 3) uint8 BGR (image sequences, cameras, URLs), or the decoded
            :class:`~motiondetect.core.picture.Picture` (video files).
    """

    index: int
    time: float
    image: np.ndarray | Picture
