"""Downscale (block means) and upscale (nearest neighbour) against naive per-pixel loops."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from motiondetect.filters import Downscale, Upscale


def naive_downscale(image: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    """Output (i, j) = rounded mean of the input pixels (y, x) with y*h//H == i and x*w//W == j."""
    height, width = image.shape
    sums = np.zeros((out_h, out_w), np.int64)
    counts = np.zeros((out_h, out_w), np.int64)
    for y in range(height):
        for x in range(width):
            sums[y * out_h // height, x * out_w // width] += int(image[y, x])
            counts[y * out_h // height, x * out_w // width] += 1
    return ((sums + counts // 2) // counts).astype(np.uint8)


def naive_upscale(small: np.ndarray, height: int, width: int) -> np.ndarray:
    h, w = small.shape
    return np.array([[small[y * h // height, x * w // width] for x in range(width)] for y in range(height)], np.uint8).reshape(
        height, width
    )


def make(height_param: int) -> Downscale:
    flt = Downscale()
    flt.params["height"] = height_param  # below the config's minimum of 16, to test tiny frames
    return flt


@pytest.mark.parametrize(
    "shape, target, factor, out_shape",
    [
        ((240, 320), 240, 1, (240, 320)),
        ((480, 720), 240, 2, (240, 360)),
        ((1080, 1920), 240, 4, (270, 480)),
        ((2160, 3840), 240, 9, (240, 426)),
        ((479, 641), 240, 1, (479, 641)),
        ((481, 250), 240, 2, (240, 125)),
        ((100, 3), 16, 6, (16, 1)),
    ],
)
def test_factor_and_output_shape(shape, target, factor, out_shape):
    flt = Downscale(height=target)
    assert flt.factor(shape[0]) == factor
    assert flt.output_shape(shape) == out_shape


@pytest.mark.parametrize(
    "shape, target", [((9, 7), 2), ((1, 1), 1), ((7, 13), 3), ((31, 17), 4), ((24, 30), 5), ((5, 40), 1), ((40, 5), 2)]
)
def test_downscale_matches_naive_and_upscale_undoes_the_partition(rng, shape, target):
    flt = make(target)
    image = rng.integers(0, 256, shape, dtype=np.uint8)
    small = flt.reference(image)
    assert small.shape == flt.output_shape(shape)
    np.testing.assert_array_equal(small, naive_downscale(image, *small.shape))
    frame = np.zeros((*shape, 3), np.uint8)
    up = Upscale().reference(small, frame)
    assert up.shape == shape and up.flags.c_contiguous
    np.testing.assert_array_equal(up, naive_upscale(small, *shape))
    # Downscaling the upscaled image gives the small image back: one partition for both.
    np.testing.assert_array_equal(flt.reference(up), small)


def block_means(image: np.ndarray, f: int) -> np.ndarray:
    """Means of equal f x f blocks (H = f * h, W = f * w), rounded half up, in int64."""
    height, width = image.shape
    sums = image.reshape(height // f, f, width // f, f).astype(np.int64).sum(axis=(1, 3))
    return ((sums + f * f // 2) // (f * f)).astype(np.uint8)


@pytest.mark.parametrize(
    "shape, target, factor",
    [
        ((1080, 1920), 240, 4),  # the default pipeline at 1080p
        ((8, 12), 4, 2),
        ((9, 3), 3, 3),  # odd block area: a division, not a shift
        ((48, 80), 3, 16),  # the largest factor summed in uint16
        ((51, 34), 3, 17),  # beyond it: the summed-area table
        ((16, 1), 1, 16),  # one column
        ((2, 40), 1, 2),
    ],
)
def test_equal_blocks_match_their_means(rng, shape, target, factor):
    flt = make(target)
    assert flt.factor(shape[0]) == factor
    for image in (rng.integers(0, 256, shape, dtype=np.uint8), np.full(shape, 255, np.uint8)):
        small = flt.reference(image)
        if shape[1] % factor == 0:
            np.testing.assert_array_equal(small, block_means(image, factor))
        else:
            np.testing.assert_array_equal(small, naive_downscale(image, *small.shape))
    if factor % 2 == 0 and shape[1] % factor == 0:
        # Ties round up: one pixel of each block holds n / 2 (n = factor**2), so each mean is 0.5.
        image = np.zeros(shape, np.uint8)
        image[::factor, ::factor] = factor * factor // 2
        assert np.all(flt.reference(image) == 1)


def test_exact_multiple_equals_opencv_area_resize_on_block_constant_images(rng):
    # On an image made of 2x2 constant blocks both are exact: the block values come back.
    small = rng.integers(0, 256, (12, 17), dtype=np.uint8)
    image = np.repeat(np.repeat(small, 2, axis=0), 2, axis=1)
    np.testing.assert_array_equal(make(12).reference(image), small)
    np.testing.assert_array_equal(cv2.resize(image, (17, 12), interpolation=cv2.INTER_AREA), small)


def test_block_mean_rounds_half_up():
    image = np.array([[0, 1], [0, 0]], np.uint8)  # mean 0.25 -> 0
    assert make(1).reference(image).tolist() == [[0]]
    image = np.array([[1, 1], [0, 0]], np.uint8)  # mean 0.5 -> 1
    assert make(1).reference(image).tolist() == [[1]]


def test_factor_one_is_the_identity(rng):
    image = rng.integers(0, 256, (50, 60), dtype=np.uint8)
    np.testing.assert_array_equal(Downscale(height=50).reference(image), image)
    np.testing.assert_array_equal(Upscale().reference(image, np.zeros((50, 60, 3), np.uint8)), image)


def test_upscale_needs_the_frame():
    with pytest.raises(ValueError, match="frame"):
        Upscale().output_shape((4, 4))


@pytest.mark.parametrize("full_range", [False, True], ids=["limited", "full"])
def test_chroma_straight_from_420_equals_the_expanded_planes_shrunk(rng, full_range):
    # The shortcut's bits are those of the expanded planes through the downscale's blocks: even
    # factors that divide the picture (whole samples), and from factor 4 up odd factors, factors
    # that leave rows and columns over (blocks of unequal sizes), odd picture sizes (the last
    # samples cut). Factors 1 to 3 otherwise decline.
    from motiondetect.core.picture import Picture, chroma_shape

    for (height, width), rows, factor in (
        ((96, 128), 48, 2),
        ((96, 128), 24, 4),
        ((108, 120), 18, 6),
        ((96, 128), 32, 3),
        ((98, 128), 24, 4),
        ((720, 1280), 240, 3),
        ((2160, 3840), 240, 9),
        ((97, 131), 19, 5),
        ((101, 75), 50, 2),
        ((7, 9), 2, 3),
        ((1440, 2560), 240, 6),
        ((45, 33), 5, 9),
    ):
        planes = ((height, width), chroma_shape(height, width), chroma_shape(height, width))
        picture = Picture(*(rng.integers(0, 256, shape, dtype=np.uint8) for shape in planes), full_range)
        down = Downscale()
        down.params["height"] = rows
        assert down.factor(height) == factor
        fast = down.reference_chroma_420(picture)
        if factor < 4 and (factor % 2 or height % factor or width % factor):
            assert fast is None
        else:
            np.testing.assert_array_equal(fast, down.reference_planes(picture.chroma()))


def test_chroma_sums_in_float64_equal_int32(rng):
    # Planes too large for an int32 summed-area table (beyond 8K pictures) take a float64 one:
    # the same sums, here forced on a small plane.
    from motiondetect.filters.downscale import _Partition, _Partition420

    samples = rng.integers(0, 256, (50, 70), dtype=np.uint8)
    partition = _Partition((99, 140), (11, 15))
    wide = _Partition420(partition, samples.shape)
    wide.depth = cv2.CV_64F
    np.testing.assert_array_equal(wide.sums(samples), _Partition420(partition, samples.shape).sums(samples))
