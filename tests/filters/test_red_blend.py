"""RedBlend against the per-pixel float64 formula and integer identities."""

from __future__ import annotations

import math

import numpy as np
import pytest

from motiondetect.filters import RedBlend


def float_blend(frame: np.ndarray, mask: np.ndarray, alpha: float) -> np.ndarray:
    """R' = floor((1 - a) R + a 255 + 0.5) where mask != 0; everything else copied."""
    out = frame.copy()
    red = frame[..., 2].astype(np.float64)
    blended = np.floor((1.0 - alpha) * red + alpha * 255.0 + 0.5).astype(np.uint8)
    out[..., 2] = np.where(mask != 0, blended, frame[..., 2])
    return out


def random_case(rng, shape):
    frame = rng.integers(0, 256, (*shape, 3), dtype=np.uint8)
    mask = np.where(rng.random(shape) < 0.5, 255, 0).astype(np.uint8)
    return frame, mask


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.5, 1.0, 0.77])
@pytest.mark.parametrize("shape", [(1, 1), (2, 9), (7, 13), (31, 17)])
def test_matches_float64_formula(rng, alpha, shape):
    frame, mask = random_case(rng, shape)
    out = RedBlend(alpha=alpha).reference(mask, frame)
    assert out.shape == (*shape, 3) and out.dtype == np.uint8
    np.testing.assert_array_equal(out, float_blend(frame, mask, alpha))


def test_every_red_level_scalar_formula():
    # Per pixel with Python floats and math.floor, no NumPy vectorisation involved.
    frame = np.zeros((1, 256, 3), np.uint8)
    frame[0, :, 2] = np.arange(256)
    mask = np.full((1, 256), 255, np.uint8)
    for alpha in (0.0, 0.3, 0.5, 1.0):
        out = RedBlend(alpha=alpha).reference(mask, frame)
        expected = [math.floor((1 - alpha) * r + alpha * 255 + 0.5) for r in range(256)]
        assert out[0, :, 2].tolist() == expected


def test_half_blend_integer_identity(rng):
    # alpha = 0.5: (R + 255) / 2 rounded half up is exactly (R + 256) // 2.
    frame, mask = random_case(rng, (31, 17))
    out = RedBlend(alpha=0.5).reference(mask, frame)
    red = frame[..., 2].astype(np.int32)
    expected_red = np.where(mask != 0, (red + 256) // 2, red)
    np.testing.assert_array_equal(out[..., 2], expected_red)
    np.testing.assert_array_equal(out[..., :2], frame[..., :2])


def test_alpha_one_gives_full_red_and_alpha_zero_changes_nothing(rng):
    frame, mask = random_case(rng, (7, 13))
    full = RedBlend(alpha=1.0).reference(mask, frame)
    assert np.all(full[..., 2][mask != 0] == 255)
    np.testing.assert_array_equal(full[..., 2][mask == 0], frame[..., 2][mask == 0])
    np.testing.assert_array_equal(full[..., :2], frame[..., :2])
    np.testing.assert_array_equal(RedBlend(alpha=0.0).reference(mask, frame), frame)


def test_unmasked_pixels_and_blue_green_untouched(rng):
    frame, mask = random_case(rng, (31, 17))
    out = RedBlend(alpha=0.3).reference(mask, frame)
    np.testing.assert_array_equal(out[mask == 0], frame[mask == 0])
    np.testing.assert_array_equal(out[..., 0], frame[..., 0])
    np.testing.assert_array_equal(out[..., 1], frame[..., 1])
    # Red never decreases where the mask is set.
    assert np.all(out[..., 2][mask != 0] >= frame[..., 2][mask != 0])


def test_any_nonzero_mask_value_counts(rng):
    frame = rng.integers(0, 200, (4, 4, 3), dtype=np.uint8)
    mask = np.array([[0, 1, 2, 128], [255, 0, 7, 0], [0, 0, 0, 0], [9, 9, 9, 9]], np.uint8)
    np.testing.assert_array_equal(RedBlend(alpha=0.5).reference(mask, frame), float_blend(frame, mask, 0.5))


@pytest.mark.parametrize("box", [(3, 4, 1, 1), (0, 0, 2, 5), (10, 2, 7, 9), (16, 0, 1, 11), (0, 10, 17, 1), (1, 1, 15, 9), (0, 0, 17, 10)])
def test_mask_inside_a_box(rng, box):
    # Only the mask's bounding box is processed: pixels around it, at the frame's edges or not,
    # keep their values, and the ones inside follow the formula; for boxes under half the
    # frame and over it (two ways of computing it).
    frame = rng.integers(0, 256, (11, 17, 3), dtype=np.uint8)
    x, y, w, h = box
    mask = np.zeros((11, 17), np.uint8)
    mask[y : y + h, x : x + w] = np.where(rng.random((h, w)) < 0.6, 255, 0)
    mask[y, x] = mask[y + h - 1, x + w - 1] = 255  # the box is exactly (x, y, w, h)
    np.testing.assert_array_equal(RedBlend(alpha=0.3).reference(mask, frame), float_blend(frame, mask, 0.3))


def test_empty_and_full_masks(rng):
    frame = rng.integers(0, 256, (5, 6, 3), dtype=np.uint8)
    np.testing.assert_array_equal(RedBlend().reference(np.zeros((5, 6), np.uint8), frame), frame)
    out = RedBlend().reference(np.full((5, 6), 255, np.uint8), frame)
    np.testing.assert_array_equal(out, float_blend(frame, np.ones((5, 6)), 0.5))


def test_returns_a_new_frame_and_leaves_inputs_alone(rng):
    frame, mask = random_case(rng, (7, 13))
    frame0, mask0 = frame.copy(), mask.copy()
    out = RedBlend(alpha=1.0).reference(mask, frame)
    assert out is not frame and not np.shares_memory(out, frame)
    np.testing.assert_array_equal(frame, frame0)
    np.testing.assert_array_equal(mask, mask0)


def yuv_blend_per_pixel(mask, picture, lut):
    """The Y'CbCr blend's definition, evaluated over the whole frame in int64 (no box, no tables)."""
    from motiondetect.core.picture import YUV_Q16, Picture, chroma_shape

    offset, r_y, r_cr, dy_dr, du_dr, dv_dr = YUV_Q16[picture.full_range]
    height, width = picture.y.shape
    ch, cw = chroma_shape(height, width)
    y = picture.y.astype(np.int64)
    cr = np.repeat(np.repeat(picture.v.astype(np.int64), 2, 0), 2, 1)[:height, :width]
    red = np.clip((r_y * (y - offset) + r_cr * (cr - 128) + 32768) >> 16, 0, 255)
    delta = np.where(mask != 0, lut[red].astype(np.int64) - red, 0)
    new_y = np.clip(y + ((dy_dr * delta + 32768) >> 16), 0, 255).astype(np.uint8)
    sums = np.zeros((ch, cw), np.int64)
    count = np.zeros((ch, cw), np.int64)
    np.add.at(sums, (np.arange(height)[:, None] // 2, np.arange(width)[None, :] // 2), delta)
    np.add.at(count, (np.arange(height)[:, None] // 2, np.arange(width)[None, :] // 2), 1)
    new_u, new_v = (
        np.clip(plane + (d * sums + count * 32768) // (count * 65536), 0, 255).astype(np.uint8)
        for plane, d in ((picture.u, du_dr), (picture.v, dv_dr))
    )
    return Picture(new_y, new_u, new_v, picture.full_range)


@pytest.mark.parametrize("full_range", [False, True], ids=["limited", "full"])
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (9, 14), (16, 11), (33, 47), (120, 160)])
def test_yuv_blend_matches_the_per_pixel_definition(rng, shape, full_range, bands):
    """blend_red_yuv (box-limited, table-driven) and RedBlend.reference_yuv (the same over row
    bands of chroma blocks) equal the definition evaluated per pixel, for masks whose bounding box
    starts and ends at odd and even rows and columns, touches the picture's (odd) edges, covers it
    all, or is empty."""
    from motiondetect.core.picture import Picture, blend_red_yuv, chroma_shape

    height, width = shape
    ch, cw = chroma_shape(height, width)
    boxes = [(0, 0, height, width), (0, 0, 0, 0)]
    for _ in range(12):
        (top, bottom), (left, right) = (sorted(rng.integers(0, n + 1, 2)) for n in (height, width))
        boxes.append((top, left, bottom, right))
    boxes.append((height - 1, width - 1, height, width))  # the last pixel alone
    for alpha in (0.5, 1.0, 0.2):
        lut = RedBlend(alpha=alpha).lut
        for top, left, bottom, right in boxes:
            picture = Picture(*(rng.integers(0, 256, s, dtype=np.uint8) for s in ((height, width), (ch, cw), (ch, cw))), full_range)
            mask = np.zeros(shape, np.uint8)
            mask[top:bottom, left:right] = np.where(rng.random((bottom - top, right - left)) < 0.7, 255, 0)
            want = yuv_blend_per_pixel(mask, picture, lut)
            for got in (blend_red_yuv(mask, picture, lut), RedBlend(alpha=alpha).reference_yuv(mask, picture)):
                for plane in ("y", "u", "v"):
                    np.testing.assert_array_equal(
                        getattr(got, plane), getattr(want, plane), err_msg=f"{plane} box {top, left, bottom, right}"
                    )
