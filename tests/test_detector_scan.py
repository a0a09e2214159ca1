"""MotionDetector's scanning options on the CPU backend, against independent OpenCV/NumPy
chains: bounding boxes, the region of interest (and the exactness of cropping to it),
downscaling with the mask mapped back, the annotate switch and held results (frame skip)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from helpers import seed_config
from hypothesis import given, settings
from hypothesis import strategies as st

from motiondetect.filters import Difference, Gray, Threshold
from motiondetect.pipeline.config import build_filters
from motiondetect.pipeline.detector import Geometry, MotionDetector, mask_stats_reference


def integer_luma(bgr: np.ndarray) -> np.ndarray:
    b, g, r = (bgr[..., i].astype(np.uint32) for i in range(3))
    return ((b * 7471 + g * 38470 + r * 19595 + 32768) >> 16).astype(np.uint8)


def independent_mask(previous, current, threshold=25, k=3, iterations=1):
    diff = cv2.absdiff(integer_luma(current), integer_luma(previous))
    _, mask = cv2.threshold(diff, threshold, 255, cv2.THRESH_BINARY)
    return cv2.erode(mask, np.ones((k, k), np.uint8), iterations=iterations)


def independent_blend(frame, mask, alpha=0.5):
    out = frame.copy()
    red = frame[..., 2].astype(np.float64)
    out[..., 2] = np.where(mask != 0, np.floor((1 - alpha) * red + alpha * 255 + 0.5), red).astype(np.uint8)
    return out


def numpy_box(mask):
    """(x, y, w, h) of the non-zero pixels from np.nonzero, or None."""
    ys, xs = np.nonzero(mask)
    if xs.size == 0:
        return None
    return (int(xs.min()), int(ys.min()), int(xs.max() - xs.min() + 1), int(ys.max() - ys.min() + 1))


def triangle_roi(shape=(240, 320)):
    roi = np.zeros(shape, np.uint8)
    cv2.fillPoly(roi, [np.array([[60, 70], [250, 90], [150, 200]], np.int32)], 255)
    return roi


def config_with(threshold=25, k=3, iterations=1):
    cfg = seed_config()
    cfg["pipeline"][2]["threshold"] = threshold
    cfg["pipeline"][3].update(kernel_size=k, iterations=iterations)
    return cfg


# -- bounding box --------------------------------------------------------------------------


def test_bbox_on_real_frames(sample_frames):
    detector = MotionDetector(build_filters(seed_config()))
    boxes = 0
    for frame in sample_frames[:30]:
        result = detector.process(frame)
        assert result.bbox == numpy_box(result.mask)
        boxes += result.bbox is not None
    assert boxes > 10


def test_mask_stats_reference_edge_cases(rng):
    assert mask_stats_reference(np.zeros((5, 7), np.uint8)) == (0, None)
    single = np.zeros((5, 7), np.uint8)
    single[4, 6] = 255
    assert mask_stats_reference(single) == (1, (6, 4, 1, 1))
    assert mask_stats_reference(np.full((5, 7), 255, np.uint8)) == (35, (0, 0, 7, 5))
    mask = (rng.random((33, 47)) < 0.01).astype(np.uint8) * 255
    assert mask_stats_reference(mask) == (np.count_nonzero(mask), numpy_box(mask))


def test_first_frame_has_no_box():
    result = MotionDetector(build_filters(seed_config())).process(np.zeros((4, 6, 3), np.uint8))
    assert result.bbox is None and result.motion_fraction == 0.0


# -- region of interest --------------------------------------------------------------------


@pytest.mark.parametrize("k, iterations, threshold", [(3, 1, 25), (5, 2, 8), (1, 1, 25)])
def test_roi_equals_full_frame_chain_masked(sample_frames, k, iterations, threshold):
    roi = triangle_roi()
    detector = MotionDetector(build_filters(config_with(threshold, k, iterations)), roi=roi)
    geo = detector.geometry(sample_frames[0].shape)
    # The frame is cropped to the triangle's box grown by the erosion's reach: less work, ...
    halo = iterations * (k - 1) // 2
    x, y, w, h = cv2.boundingRect(roi)
    assert geo.crop == (x - halo, y - halo, x + w + halo, y + h + halo)
    assert geo.area == np.count_nonzero(roi)
    moving = 0
    previous = None
    for frame in sample_frames[:25]:
        result = detector.process(frame)
        if previous is not None:
            # ... and the result is the full-frame chain's, masked: cropping changed nothing.
            expected = cv2.bitwise_and(independent_mask(previous, frame, threshold, k, iterations), roi)
            np.testing.assert_array_equal(result.mask, expected)
            np.testing.assert_array_equal(result.frame, independent_blend(frame, expected))
            assert result.motion_fraction == np.count_nonzero(expected) / np.count_nonzero(roi)
            assert result.bbox == numpy_box(expected)
            moving += bool(expected.any())
        previous = frame
    assert moving > 5


@pytest.mark.parametrize("inside", [1, 100])
def test_roi_is_non_zero_inside_whatever_the_value(sample_frames, inside):
    """As documented: before, values 1..127 counted as outside (a 0/1 mask covered no pixel)."""
    roi = triangle_roi()
    filters = build_filters(seed_config())
    full, other = (
        MotionDetector(filters, roi=roi),
        MotionDetector(build_filters(seed_config()), roi=np.where(roi > 0, inside, 0).astype(np.uint8)),
    )
    assert other.geometry((240, 320)).area == full.geometry((240, 320)).area == np.count_nonzero(roi)
    for frame in sample_frames[:5]:
        np.testing.assert_array_equal(other.process(frame).mask, full.process(frame).mask)


def test_roi_without_known_halo_is_not_cropped(sample_frames):
    class Opaque(Threshold):  # a filter that declares no neighbourhood
        POINTWISE = False

    roi = triangle_roi()
    detector = MotionDetector([Gray(), Difference(), Opaque()], roi=roi)
    assert detector.geometry((240, 320)).crop == (0, 0, 320, 240)
    detector.process(sample_frames[0])
    result = detector.process(sample_frames[1])
    diff = cv2.absdiff(integer_luma(sample_frames[1]), integer_luma(sample_frames[0]))
    np.testing.assert_array_equal(result.mask, cv2.bitwise_and(np.where(diff > 25, 255, 0).astype(np.uint8), roi))


def test_roi_errors():
    filters = build_filters(seed_config())
    with pytest.raises(ValueError, match="320x240"):
        MotionDetector(filters, roi=triangle_roi()).process(np.zeros((100, 100, 3), np.uint8))
    with pytest.raises(TypeError, match="uint8"):
        MotionDetector(filters, roi=np.ones((4, 4), bool))
    with pytest.raises(ValueError, match=r"\(H, W\)"):
        MotionDetector(filters, roi=np.ones((4, 4, 1), np.uint8))
    tiny = np.zeros((240, 320), np.uint8)
    tiny[5, 5] = 255  # one pixel: gone at 1/4 size
    with pytest.raises(ValueError, match="no pixel"):
        MotionDetector(filters, roi=tiny, downscale=4).geometry((240, 320))
    with pytest.raises(ValueError, match="downscale"):
        MotionDetector(filters, downscale=0)


# -- downscale -----------------------------------------------------------------------------


@pytest.mark.parametrize("factor", [2, 3])
def test_downscale_maps_the_small_mask_back(sample_frames, factor):
    height, width = sample_frames[0].shape[:2]
    small_size = (width // factor, height // factor)
    detector = MotionDetector(build_filters(seed_config()), downscale=factor)
    previous = None
    for frame in sample_frames[:15]:
        result = detector.process(frame)
        assert result.mask.shape == (height, width) and result.frame.shape == frame.shape
        small = cv2.resize(frame, small_size, interpolation=cv2.INTER_AREA)
        if previous is not None:
            small_mask = independent_mask(previous, small)
            expected = cv2.resize(small_mask, (width, height), interpolation=cv2.INTER_NEAREST)
            np.testing.assert_array_equal(result.mask, expected)
            assert result.motion_fraction == np.count_nonzero(small_mask) / small_mask.size
            assert result.bbox == numpy_box(expected)
            np.testing.assert_array_equal(result.frame, independent_blend(frame, expected))  # full-size blend
        previous = small


def test_downscale_with_roi(sample_frames):
    roi = triangle_roi()
    detector = MotionDetector(build_filters(seed_config()), roi=roi, downscale=2)
    geo = detector.geometry((240, 320))
    x0, y0, x1, y1 = geo.crop
    small_roi = np.where(cv2.resize(roi[y0:y1, x0:x1], geo.work_size, interpolation=cv2.INTER_AREA) > 127, 255, 0).astype(np.uint8)
    previous = None
    for frame in sample_frames[:10]:
        result = detector.process(frame)
        small = cv2.resize(frame[y0:y1, x0:x1], geo.work_size, interpolation=cv2.INTER_AREA)
        if previous is not None:
            small_mask = cv2.bitwise_and(independent_mask(previous, small), small_roi)
            expected = np.zeros((240, 320), np.uint8)
            expected[y0:y1, x0:x1] = cv2.resize(small_mask, (x1 - x0, y1 - y0), interpolation=cv2.INTER_NEAREST)
            np.testing.assert_array_equal(result.mask, expected)
            assert result.motion_fraction == np.count_nonzero(small_mask) / np.count_nonzero(small_roi)
            assert result.bbox == numpy_box(expected)
        previous = small


@settings(max_examples=60, deadline=None)
@given(
    height=st.integers(1, 90),
    width=st.integers(1, 90),
    factor=st.integers(1, 7),
    corner=st.tuples(st.integers(0, 89), st.integers(0, 89)),
    seed=st.integers(0, 2**16),
)
def test_geometry_expand_and_box_match_opencv(height, width, factor, corner, seed):
    roi = np.zeros((height, width), np.uint8)
    roi[min(corner[1], height - 1) :, min(corner[0], width - 1) :] = 255
    try:
        geo = Geometry.build((height, width), roi, factor, halo=1)
    except ValueError:
        return  # the ROI vanished at this scale (covered by test_roi_errors)
    w, h = geo.work_size
    mask = (np.random.default_rng(seed).random((h, w)) < 0.05).astype(np.uint8) * 255
    x0, y0, x1, y1 = geo.crop
    expected = np.zeros((height, width), np.uint8)
    expected[y0:y1, x0:x1] = cv2.resize(mask, (x1 - x0, y1 - y0), interpolation=cv2.INTER_NEAREST)
    np.testing.assert_array_equal(geo.expand(mask), expected)
    # The maps the GPU kernel reads: out(y, x) = mask(ymap[y], xmap[x]), 0 where a map is -1.
    padded = np.zeros((h + 1, w + 1), np.uint8)  # index -1 reads the zero row / column
    padded[:h, :w] = mask
    np.testing.assert_array_equal(padded[geo.ymap][:, geo.xmap], expected)
    assert geo.map_box(numpy_box(mask)) == numpy_box(expected)


def run_clip(clip, detector, events):
    from motiondetect.sources.video import VideoHandler

    fractions = []
    with VideoHandler(clip) as video:
        for frame in video:
            result = detector.process(frame.image)
            fractions.append(result.motion_fraction)
            events.update(frame.index, result.motion_fraction, result.bbox)
    return np.array(fractions), [(e.motion_start_frame, e.motion_end_frame) for e in events.finish()]


def test_downscale_against_the_full_size_run(sample_clip):
    """Half size sees the same motion: the per-frame motion fractions follow the full-size ones,
    and every event found at half size is an event at full size. (On this 320x240 clip the
    fractions are lower at half size, about 0.4x: INTER_AREA averages noise away and the 3x3
    erosion reaches twice as far in input pixels; the README says so.)"""
    from motiondetect.outputs.events import EventSegmenter

    settings = dict(min_area=0.004, min_event_length=0.2, merge_gap=0.5, time_before=0, time_after=0.5)
    full, full_events = run_clip(sample_clip, MotionDetector(build_filters(seed_config()), annotate=False), EventSegmenter(25, **settings))
    half, half_events = run_clip(
        sample_clip, MotionDetector(build_filters(seed_config()), downscale=2, annotate=False), EventSegmenter(25, **settings)
    )
    assert np.corrcoef(full, half)[0, 1] > 0.9
    assert 0.2 < half.sum() / full.sum() < 1.0
    assert len(full_events) >= 5 and len(half_events) >= 3
    for start, end in half_events:
        assert any(start <= e and s <= end for s, e in full_events), (start, end)


# -- annotate switch and held results ------------------------------------------------------


def test_annotate_false_returns_the_input_frame(sample_frames):
    detector = MotionDetector(build_filters(seed_config()), annotate=False)
    for frame in sample_frames[:3]:
        result = detector.process(frame)
        assert result.frame is frame
    expected = independent_mask(sample_frames[1], sample_frames[2])
    np.testing.assert_array_equal(result.mask, expected)


def test_repeat_holds_the_mask_and_blends_the_new_frame(sample_frames):
    detector = MotionDetector(build_filters(seed_config()))
    detector.process(sample_frames[0])
    held = detector.process(sample_frames[1])
    repeated = detector.repeat(sample_frames[2], held)
    assert repeated.mask is held.mask
    assert (repeated.motion_fraction, repeated.bbox) == (held.motion_fraction, held.bbox)
    np.testing.assert_array_equal(repeated.frame, independent_blend(sample_frames[2], held.mask))
    # The reference is untouched: the next processed frame is compared with frame 1.
    np.testing.assert_array_equal(detector.process(sample_frames[3]).mask, independent_mask(sample_frames[1], sample_frames[3]))
    plain = MotionDetector(build_filters(seed_config()), annotate=False)
    assert plain.repeat(sample_frames[2], held).frame is sample_frames[2]
