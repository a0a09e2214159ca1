"""Overlays: motion regions against SciPy's labelling, and what gets drawn where."""

from __future__ import annotations

import numpy as np
import pytest

from motiondetect.core.types import Frame, FrameResult
from motiondetect.outputs.overlay import BOX_COLOUR, Overlay, motion_regions

ndimage = pytest.importorskip("scipy.ndimage", reason="scipy is in the test extra")


def scipy_regions(mask, min_pixels):
    labels, count = ndimage.label(mask > 0, structure=np.ones((3, 3), int))  # 8-connectivity
    boxes = []
    for label, (rows, cols) in enumerate(ndimage.find_objects(labels), start=1):
        if np.count_nonzero(labels[rows, cols] == label) >= min_pixels:
            boxes.append((cols.start, rows.start, cols.stop - cols.start, rows.stop - rows.start))
    return boxes


def test_regions_on_a_hand_made_mask():
    mask = np.zeros((20, 30), np.uint8)
    mask[2:5, 3:7] = 255  # 12 pixels
    mask[10, 10] = mask[11, 11] = 255  # diagonal neighbours: one region of 2 with 8-connectivity
    mask[15:20, 25:30] = 255  # 25 pixels at the corner
    assert sorted(motion_regions(mask, 1)) == [(3, 2, 4, 3), (10, 10, 2, 2), (25, 15, 5, 5)]
    assert sorted(motion_regions(mask, 12)) == [(3, 2, 4, 3), (25, 15, 5, 5)]
    assert motion_regions(mask, 26) == []
    assert motion_regions(np.zeros((5, 5), np.uint8), 1) == []


@pytest.mark.parametrize("min_pixels", [1, 5, 40])
def test_regions_match_scipy_on_real_masks(sample_frames, min_pixels):
    from motiondetect.pipeline.config import build_filters, default_config
    from motiondetect.pipeline.detector import MotionDetector

    detector = MotionDetector(build_filters(default_config()), annotate=False)
    found = 0
    for frame in sample_frames[:20]:
        mask = detector.process(frame).mask
        regions = motion_regions(mask, min_pixels)
        assert sorted(regions) == sorted(scipy_regions(mask, min_pixels))
        found += len(regions)
    assert found > 10


def make(mask, fraction=0.0, index=0, time=0.0):
    image = np.full((*mask.shape, 3), 100, np.uint8)
    return Frame(index, time, image), FrameResult(mask, image.copy(), fraction, None)


def test_boxes_drawn_around_regions_above_the_minimum():
    mask = np.zeros((100, 200), np.uint8)
    mask[20:40, 50:90] = 255  # 800 pixels = 4 % of the frame
    mask[70, 150] = 255  # 1 pixel: below box_min_area 0.0005 (10 pixels)
    frame, result = make(mask)
    out = Overlay(boxes=True).draw(frame, result)
    drawn = np.all(out.frame == BOX_COLOUR, axis=2)
    box = np.zeros_like(drawn)
    box[20, 50:90] = box[39, 50:90] = box[20:40, 50] = box[20:40, 89] = True
    np.testing.assert_array_equal(drawn, box)  # a 1-pixel outline on the region's border, nothing else
    assert out.mask is result.mask and out.motion_fraction == result.motion_fraction


def test_text_overlays_drawn_top_left_and_nothing_else():
    mask = np.zeros((240, 320), np.uint8)
    frame, result = make(mask, fraction=0.0123, index=1557, time=62.28)
    plain = result.frame.copy()
    timecode = Overlay(timecode=True).draw(frame, result).frame
    changed = np.any(timecode != plain, axis=2)
    ys, xs = np.nonzero(changed)
    assert ys.max() < 40 and xs.max() < 200 and changed.sum() > 300  # a text band in the corner
    both = Overlay(timecode=True, fraction=True).draw(frame, make(mask, 0.0123, 1557, 62.28)[1]).frame
    assert np.nonzero(np.any(both != plain, axis=2))[0].max() > ys.max()  # a second line below


def test_text_content(monkeypatch):
    import motiondetect.outputs.overlay as overlay

    drawn = []
    monkeypatch.setattr(overlay, "_draw_text", lambda canvas, height, lines: drawn.append(lines))
    frame, result = make(np.zeros((50, 60), np.uint8), fraction=0.0123, index=1557, time=3725.5)
    Overlay(timecode=True, fraction=True).draw(frame, result)
    assert drawn == [["01:02:05.500 #1557", "motion 1.23 %"]]


def test_input_frame_is_not_drawn_on():
    mask = np.zeros((50, 60), np.uint8)
    mask[10:20, 10:20] = 255
    frame, _ = make(mask)
    before = frame.image.copy()
    result = FrameResult(mask, frame.image, 0.1, None)  # as with annotate=False
    out = Overlay(boxes=True, timecode=True).draw(frame, result)
    np.testing.assert_array_equal(frame.image, before)
    assert out.frame is not frame.image and np.any(out.frame != before)


def test_from_config():
    assert Overlay.from_config({"blend": True, "boxes": False, "timecode": False, "fraction": False, "box_min_area": 0.1}) is None
    overlay = Overlay.from_config({"blend": False, "boxes": True, "timecode": False, "fraction": False, "box_min_area": 0.1})
    assert overlay.boxes and overlay.box_min_area == 0.1
