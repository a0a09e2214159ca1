"""Overlays on the annotated frames: boxes around motion regions, the timecode, the motion fraction.

They are drawn on the host with OpenCV after the detector (the red blend is the pipeline's own
annotation filter), on the frame every video output writes, so both backends draw the same
pixels. Each is switched in the config's ``overlays`` section or with ``--boxes``,
``--timecode``, ``--fraction``.

Boxes surround the connected components (8-connectivity) of the mask whose area is at least
``box_min_area`` of the frame: ``cv2.connectedComponentsWithStats`` labels the whole host mask,
about as costly as one more pipeline pass on the CPU, so it runs only when boxes are on.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import cv2
import numpy as np

from motiondetect.core.picture import Picture
from motiondetect.core.types import Box, Frame, FrameResult
from motiondetect.outputs.events import format_timecode

#: Box colour, BGR: green, which stands out from the red blend.
BOX_COLOUR = (0, 255, 0)
TEXT_COLOUR = (255, 255, 255)
TEXT_BACKGROUND = (0, 0, 0)


def motion_regions(mask: np.ndarray, min_pixels: int) -> list[Box]:
    """Bounding boxes of the mask's connected regions (8-connectivity) of at least ``min_pixels``.

    Args:
        mask: (H, W) uint8 mask, non-zero where moving.
        min_pixels: smallest region area, pixels (>= 1).

    Returns:
        (x, y, w, h) boxes, in label order (top to bottom by first pixel).
    """
    count, _, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    return [
        tuple(int(v) for v in stats[label, :4])
        for label in range(1, count)  # label 0 is the background
        if stats[label, cv2.CC_STAT_AREA] >= min_pixels
    ]


class Overlay:
    """Draws the switched-on overlays on a result's frame.

    Args:
        boxes: draw boxes around motion regions.
        timecode: draw ``HH:MM:SS.mmm #frame`` in the top-left corner.
        fraction: draw the motion fraction (``motion 1.23 %``) below it.
        box_min_area: smallest region that gets a box, as a fraction of the frame's pixels.
    """

    def __init__(self, boxes: bool = False, timecode: bool = False, fraction: bool = False, box_min_area: float = 0.0005) -> None:
        self.boxes, self.timecode, self.fraction = boxes, timecode, fraction
        self.box_min_area = box_min_area

    @classmethod
    def from_config(cls, overlays: dict[str, Any]) -> Overlay | None:
        """The overlay for a validated ``overlays`` section, or ``None`` when nothing is drawn
        (its ``blend`` switch belongs to the detector: the pipeline's red blend)."""
        overlay = cls(**{k: v for k, v in overlays.items() if k != "blend"})
        return overlay if overlay.active else None

    @property
    def active(self) -> bool:
        """Whether anything is drawn."""
        return self.boxes or self.timecode or self.fraction

    def draw(self, frame: Frame, result: FrameResult) -> FrameResult:
        """Return ``result`` with the overlays drawn on (a copy of, when it is the input) its frame.

        A :class:`~motiondetect.core.picture.Picture` is drawn on in Y'CbCr: each shape on the luma
        plane and, at half the coordinates, on the chroma planes, in the colour's BT.601 values.
        """
        image = result.frame
        if image is frame.image:
            image = image.copy()
        canvas = _Canvas(image)
        height, width = image.shape[:2]
        if self.boxes:
            thickness = max(1, round(height / 360))
            for x, y, w, h in motion_regions(result.mask, max(1, math.ceil(self.box_min_area * width * height))):
                canvas.rectangle((x, y), (x + w - 1, y + h - 1), BOX_COLOUR, thickness)
        lines = []
        if self.timecode:
            lines.append(f"{format_timecode(frame.time)} #{frame.index}")
        if self.fraction:
            lines.append(f"motion {100 * result.motion_fraction:.2f} %")
        if lines:
            _draw_text(canvas, height, lines)
        return dataclasses.replace(result, frame=image)


class _Canvas:
    """Draws OpenCV shapes on a BGR frame, or on a picture's three planes (chroma at half scale)."""

    def __init__(self, image: np.ndarray | Picture) -> None:
        self.image = image

    def _planes(self, colour):
        if not isinstance(self.image, Picture):
            yield self.image, colour, 1
            return
        b, g, r = colour
        luma = 0.299 * r + 0.587 * g + 0.114 * b  # BT.601
        cb, cr = (b - luma) / 1.772, (r - luma) / 1.402
        luma, chroma = (luma, 1.0) if self.image.full_range else (16 + luma * 219 / 255, 224 / 255)
        yield self.image.y, round(luma), 1
        yield self.image.u, round(128 + cb * chroma), 2
        yield self.image.v, round(128 + cr * chroma), 2

    def rectangle(self, top_left, bottom_right, colour, thickness) -> None:
        for plane, value, scale in self._planes(colour):
            cv2.rectangle(
                plane,
                _scaled(top_left, scale),
                _scaled(bottom_right, scale),
                value,
                thickness if thickness < 0 else max(1, thickness // scale),
            )

    def text(self, line, origin, font, scale, colour, thickness) -> None:
        for plane, value, step in self._planes(colour):
            cv2.putText(plane, line, _scaled(origin, step), font, scale / step, value, max(1, thickness // step), cv2.LINE_AA)


def _scaled(point, scale):
    return (point[0] // scale, point[1] // scale)


def _draw_text(canvas: _Canvas, height: int, lines: list[str]) -> None:
    """White lines on a black band in the top-left corner, sized to the frame's height."""
    scale = max(0.35, height / 720)
    thickness = max(1, round(scale * 1.5))
    font = cv2.FONT_HERSHEY_SIMPLEX
    margin = max(2, round(4 * scale))
    y = margin
    for line in lines:
        (w, h), baseline = cv2.getTextSize(line, font, scale, thickness)
        canvas.rectangle((0, y - margin // 2), (w + 2 * margin, y + h + baseline + margin // 2), TEXT_BACKGROUND, -1)
        canvas.text(line, (margin, y + h), font, scale, TEXT_COLOUR, thickness)
        y += h + baseline + margin
