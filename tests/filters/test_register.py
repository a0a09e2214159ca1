"""The register filter (camera jitter) on the CPU: the shifts phase correlation finds on real
footage against the translations applied and against OpenCV's own phase correlation, the
border rules against OpenCV's warps, and the whole pipeline on a jittered real clip against the
steady run."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import square_frames

from motiondetect.core.picture import as_bgr
from motiondetect.filters import Register
from motiondetect.filters import register as register_module
from motiondetect.filters.register import (
    block_sums,
    candidates,
    matched_levels,
    peak_shift,
    refine_shift,
    tile_sads,
    translate,
    tukey_window,
)
from motiondetect.pipeline.config import build_filters, default_config, load_config
from motiondetect.pipeline.detector import MotionDetector, pipeline_problems
from motiondetect.scaleout.chunks import warmup_frames
from motiondetect.sources.video import VideoHandler

ROOT = Path(__file__).resolve().parents[2]
STEADY = ROOT / "configs" / "steady.yaml"
#: Pixels cropped from every side of a jittered frame, so no replicated border enters.
MARGIN = 8


def moved(image: np.ndarray, dx: int, dy: int) -> np.ndarray:
    """``image`` (H, W) or (H, W, 3) with its scene moved by (dx, dy) pixels (OpenCV warp)."""
    height, width = image.shape[:2]
    matrix = np.float32([[1, 0, dx], [0, 1, dy]])
    return cv2.warpAffine(image, matrix, (width, height), flags=cv2.INTER_NEAREST, borderMode=cv2.BORDER_REPLICATE)


@pytest.fixture(scope="module")
def clip_frames(sample_clip) -> list[np.ndarray]:
    with VideoHandler(sample_clip) as video:
        return [as_bgr(f.image) for _, f in zip(range(200), video)]


def test_finds_the_translation_of_a_real_frame(sample_frames):
    """Shifts within max_shift are found exactly, and agree with cv2.phaseCorrelate, rounded."""
    grey = cv2.cvtColor(sample_frames[30], cv2.COLOR_BGR2GRAY)
    flt = Register(max_shift=8)
    flt.reference(grey)  # the anchor
    assert flt.shift == (0, 0)
    window = cv2.createHanningWindow(grey.shape[::-1], cv2.CV_32F)
    for dx, dy in [(3, -2), (-5, 4), (0, 7), (8, -8), (-1, 0), (6, 6), (1, 1), (0, -1), (-7, 3)]:
        frame = moved(grey, dx, dy)
        out = flt.reference(frame)
        assert flt.shift == (dx, dy)
        (cx, cy), _ = cv2.phaseCorrelate(grey.astype(np.float32), frame.astype(np.float32), window)
        assert (round(cx), round(cy)) == (dx, dy)
        inner = (slice(8, -8), slice(8, -8))
        np.testing.assert_array_equal(out[inner], grey[inner])  # back onto the anchor


def test_search_stays_within_max_shift(sample_frames):
    grey = cv2.cvtColor(sample_frames[30], cv2.COLOR_BGR2GRAY)
    flt = Register(max_shift=3)
    flt.reference(grey)
    flt.reference(moved(grey, 9, 0))
    assert max(abs(flt.shift[0]), abs(flt.shift[1])) <= 3


def test_translate_borders_match_opencv(rng):
    image = rng.integers(0, 256, (23, 31), dtype=np.uint8)
    for dx, dy in [(2, -3), (-4, 5), (0, 0), (7, 1)]:
        shifted = np.float32([[1, 0, -dx], [0, 1, -dy]])  # out(x) = in(x + d)
        want_replicate = cv2.warpAffine(image, shifted, (31, 23), flags=cv2.INTER_NEAREST, borderMode=cv2.BORDER_REPLICATE)
        want_zero = cv2.warpAffine(
            image, np.float32([[1, 0, dx], [0, 1, dy]]), (31, 23), flags=cv2.INTER_NEAREST, borderMode=cv2.BORDER_CONSTANT
        )
        np.testing.assert_array_equal(translate(image, dx, dy, 1, True), want_replicate)
        np.testing.assert_array_equal(translate(image, dx, dy, -1, False), want_zero)


def test_block_sums_are_the_2x2_block_sums(rng):
    """Even sizes: the sum of each 2 x 2 block; odd sizes: the last row and column repeated."""
    for height, width in [(6, 8), (7, 9), (1, 5), (2, 1)]:
        image = rng.integers(0, 256, (height, width), dtype=np.uint8)
        padded = np.pad(image.astype(np.int64), ((0, height % 2), (0, width % 2)), mode="edge")
        want = padded.reshape(padded.shape[0] // 2, 2, padded.shape[1] // 2, 2).sum(axis=(1, 3))
        got = block_sums(image)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, want)


def test_tile_sads_equal_a_direct_sum(rng):
    """Per-tile sums against the frame moved by ``translate`` and summed tile by tile in Python
    integers; an image smaller than the tiles leaves empty tiles at 0."""
    for height, width in [(23, 31), (3, 2)]:
        frame = rng.integers(0, 256, (height, width), dtype=np.uint8)
        anchor = rng.integers(0, 256, (height, width), dtype=np.uint8)
        shifts = [(2, -3), (0, 0), (-1, 1)]
        got = tile_sads(frame, anchor, shifts)
        for n, (dx, dy) in enumerate(shifts):
            diff = np.abs(translate(frame, dx, dy, 1, True).astype(np.int64) - anchor)
            for i in range(register_module.TILES):
                for j in range(register_module.TILES):
                    rows = slice(i * height // 4, (i + 1) * height // 4)
                    cols = slice(j * width // 4, (j + 1) * width // 4)
                    assert got[n, i, j] == int(diff[rows, cols].sum())


def test_candidates_surround_twice_the_coarse_shift():
    assert candidates((0, 0), 8)[:9] == [(a, b) for b in (-1, 0, 1) for a in (-1, 0, 1)]
    assert candidates((2, -1), 8)[4] == (4, -2)
    assert candidates((4, 4), 8)[8] == (8, 8)  # 9 clamped to the reach
    assert candidates((3, 0), 8)[-1] == (0, 0)  # the consensus check's reference


def test_refinement_of_a_flat_frame_gives_no_shift():
    flat = np.full((40, 60), 90, np.uint8)
    assert refine_shift(flat, flat, (2, 1), 8) == (0, 0)


def test_refinement_follows_its_definition(rng):
    """refine_shift against its docstring written out with per-pixel integer sums: the 3 x 3
    candidate with the lowest whole-frame SAD (ties to the centre, then the first), kept when
    MIN_VOTES tiles are lower with it than without; on textured frames moved by known shifts,
    with noise, and on unrelated frames."""
    height, width = 45, 64
    base = cv2.GaussianBlur(rng.integers(0, 256, (height + 20, width + 20), dtype=np.uint8), (5, 5), 0)
    anchor = base[10 : 10 + height, 10 : 10 + width]

    def defined(frame, coarse, reach):
        shifts = candidates(coarse, reach)
        sads = [np.abs(translate(frame, dx, dy, 1, True).astype(np.int64) - anchor) for dx, dy in shifts]
        totals = [int(d.sum()) for d in sads[:9]]
        best = 4 if totals[4] == min(totals) else totals.index(min(totals))
        if shifts[best] == (0, 0):
            return 0, 0
        tiles = [
            [
                int(d[i * height // 4 : (i + 1) * height // 4, j * width // 4 : (j + 1) * width // 4].sum())
                for i in range(4)
                for j in range(4)
            ]
            for d in (sads[best], sads[9])
        ]
        votes = sum(a < b for a, b in zip(*tiles))
        return shifts[best] if votes >= register_module.MIN_VOTES else (0, 0)

    cases = 0
    for dx, dy in [(0, 0), (3, -2), (-5, 4), (1, 1), (7, 0)]:
        moved = base[10 - dy : 10 - dy + height, 10 - dx : 10 - dx + width]
        noisy = cv2.add(moved, rng.integers(0, 12, moved.shape, dtype=np.uint8))
        for frame in (moved, noisy, rng.integers(0, 256, moved.shape, dtype=np.uint8)):
            for coarse in [(0, 0), (dx // 2, dy // 2), (2, -1), (-3, 3)]:
                for reach in (2, 8):
                    assert refine_shift(frame, anchor, coarse, reach) == defined(frame, coarse, reach), (dx, dy, coarse, reach)
                    cases += 1
    assert refine_shift(base[12 : 12 + height, 7 : 7 + width], anchor, (1, -1), 8) == (3, -2)  # found, not only agreed
    assert cases == 120


def test_matched_levels_follow_their_definition():
    """Level v -> round(v * frame / anchor), halves up, at most 255, written with exact fractions;
    None (no table: the anchor as it is) within 2 % of the anchor's brightness (the bound itself
    included) and for a black anchor."""
    from fractions import Fraction

    for frame, anchor in [(400, 1000), (1000, 400), (979, 1000), (1021, 1000), (3, 7), (0, 500), (10**12 + 7, 3 * 10**11)]:
        want = [min(255, int(Fraction(v * frame, anchor) + Fraction(1, 2))) for v in range(256)]
        got = matched_levels(frame, anchor)
        assert got is not None and got.dtype == np.uint8 and got.shape == (256,)
        assert got.tolist() == want, (frame, anchor)
    for frame, anchor in [(980, 1000), (1020, 1000), (1000, 1000), (5000, 0), (0, 0)]:
        assert matched_levels(frame, anchor) is None, (frame, anchor)
    assert matched_levels(1, 2)[1] == 1  # 0.5 rounds up


@pytest.mark.parametrize("gain, unmatched_wrong", [(0.4, 30), (0.6, 1), (1.3, 0)])
def test_a_light_change_leaves_the_shifts_alone(clip_frames, monkeypatch, gain, unmatched_wrong):
    """The bundled clip jittered by up to 4 px, its levels times ``gain`` from frame 100 on (a
    light dimmed or raised, ``cv2.convertScaleAbs``): each frame gets the shift it gets with its
    own levels (which are the applied shifts on all but frame 194, whose coarse peak misses). With
    the anchor compared at its own levels instead (``GAIN_DIVISOR`` 0), a dimmed frame's sums of
    absolute differences favour the shift that reads brighter pixels: at 0.4, 111 of the 200
    frames of a 300-frame run moved by a pixel or two that did not (at least ``unmatched_wrong``
    of these 100 frames here)."""
    from helpers import jitter

    frames, applied = jitter(clip_frames, 4, 7, MARGIN)
    greys = [cv2.cvtColor(f, cv2.COLOR_BGR2GRAY) for f in frames]
    changed = [g if i < 100 else cv2.convertScaleAbs(g, alpha=gain) for i, g in enumerate(greys)]

    def shifts(images):
        flt = Register()
        return [(flt.reference(g), flt.shift)[1] for g in images]

    own = shifts(greys)
    assert [i for i, (a, b) in enumerate(zip(own, applied)) if a != b] == [194]
    assert shifts(changed) == own
    monkeypatch.setattr(register_module, "GAIN_DIVISOR", 0)
    wrong = sum(a != b for a, b in zip(shifts(changed), own))
    assert wrong >= unmatched_wrong, wrong


@pytest.mark.parametrize("gain", [0.4, 0.6, 1.3])
def test_a_scene_lit_from_one_side_keeps_its_shift_under_a_gain(rng, monkeypatch, gain):
    """A textured scene on a ramp of light (40 to 215 grey levels across, a little down), moved
    by known shifts and its levels times ``gain``: found exactly. The anchor compared at its own
    levels finds none of them: a dimmed frame matches best where it reads the brighter side, a
    brightened one the darker. (The limit: the frame's brightness also moves with the shift on
    such a ramp, 1.9 grey levels for (2, 1), so a texture that changes less than that a pixel,
    Gaussian noise of 20 levels blurred 7 x 7, loses 31 of 150 such cases over 10 seeds; noise of
    30 blurred 5 x 5, used here, loses none.)"""
    height, width = 120, 160
    rows, cols = np.mgrid[0 : height + 40, 0 : width + 40]
    texture = cv2.GaussianBlur(rng.normal(0.0, 30.0, rows.shape), (5, 5), 0)
    scene = np.clip(40 + 0.8 * cols + 0.3 * rows + texture, 0, 255).astype(np.uint8)
    anchor = scene[20 : 20 + height, 20 : 20 + width]
    cases = [(0, 0), (1, -1), (-1, 0), (2, 1), (3, -2)]

    def found():
        out = []
        for dx, dy in cases:
            flt = Register()
            flt.reference(anchor)
            flt.reference(cv2.convertScaleAbs(translate(scene, dx, dy, 1, True)[20 : 20 + height, 20 : 20 + width], alpha=gain))
            out.append(flt.shift)
        return out

    assert found() == [(-dx, -dy) for dx, dy in cases]  # the frame shows the scene moved by -(dx, dy)
    monkeypatch.setattr(register_module, "GAIN_DIVISOR", 0)
    assert all(a != (-dx, -dy) for a, (dx, dy) in zip(found(), cases))


def test_peak_ties_and_missing_values():
    # A flat or empty surface has no peak above the floor: nothing to register.
    assert peak_shift(np.zeros((16, 16), np.float32), 4) is None
    assert peak_shift(np.full((16, 16), np.nan, np.float32), 4) is None
    surface = np.zeros((16, 16), np.float32)
    surface[2, 15] = surface[14, 3] = 1.0  # (dx, dy) = (-1, 2) and (3, -2): the first row-major (dy, dx) wins
    assert peak_shift(surface, 4) == (3, -2)
    surface[2, 15] = 2.0
    assert peak_shift(surface, 4) == (-1, 2)
    surface[0, 0] = 2.0  # a tie with no shift goes to no shift
    assert peak_shift(surface, 4) == (0, 0)


def test_peak_floor_and_ratio():
    surface = np.zeros((16, 16), np.float32)
    surface[0, 0], surface[2, 3] = 1.0, 10.0  # (dx, dy) = (3, 2), ten times the no-shift value
    assert peak_shift(surface, 4, ratio=3.0, floor=9.0) == (3, 2)
    assert peak_shift(surface, 4, ratio=3.0, floor=10.0) is None  # nothing above the floor
    assert peak_shift(surface, 4, ratio=10.0, floor=0.0) == (0, 0)  # not above ratio times (0, 0)


def test_peak_prefers_near_shifts():
    """A peak beyond half the reach (here 8: the near window is +-4) wins only at far_ratio times
    the near window's largest value; the floor is the whole window's, the ratio to no shift the
    chosen peak's."""
    surface = np.zeros((40, 40), np.float32)
    surface[1, 2] = 1.0  # (dx, dy) = (2, 1): near
    surface[-6, 7] = 1.5  # (7, -6): far, 1.5 times the near peak
    assert peak_shift(surface, 8) == (7, -6)  # far_ratio 1: the plain peak
    assert peak_shift(surface, 8, far_ratio=1.5) == (7, -6)  # at least 1.5 times: taken
    assert peak_shift(surface, 8, far_ratio=2.0) == (2, 1)
    assert peak_shift(surface, 4, far_ratio=2.0) == (2, 1)  # (7, -6) is outside a reach of 4
    surface[-6, 7] = 2.5
    assert peak_shift(surface, 8, far_ratio=2.0) == (7, -6)
    surface[-6, 7] = 1.5
    assert peak_shift(surface, 8, floor=1.2, far_ratio=2.0) == (2, 1)  # the far peak clears the floor
    assert peak_shift(surface, 8, floor=1.5, far_ratio=2.0) is None
    surface[0, 0] = 0.5
    assert peak_shift(surface, 8, ratio=3.0, far_ratio=2.0) == (0, 0)  # the near peak is only 2x no shift
    assert peak_shift(surface, 8, ratio=3.0, far_ratio=1.0) == (0, 0)  # the far one 3x: not more
    assert peak_shift(surface, 8, ratio=2.5, far_ratio=1.0) == (7, -6)


def test_the_near_window_stops_at_four_coarse_pixels_whatever_the_reach():
    """With a reach of 16 (32 pixels at the filter's size) the near window is +-4, as with a reach
    of 8, not +-8: a peak 6 off must still beat the near one by far_ratio, and one 12 off can."""
    surface = np.zeros((48, 48), np.float32)
    surface[1, 2] = 1.0  # (2, 1): near
    surface[0, 6] = 1.5  # (6, 0): inside half a reach of 16, outside NEAR_MAX
    assert peak_shift(surface, 16, far_ratio=2.0) == (2, 1)
    assert peak_shift(surface, 16, far_ratio=1.5) == (6, 0)
    surface[0, 6] = 0.0
    surface[-12, -12] = 2.5  # (-12, -12): beyond a reach of 8, found with 16
    assert peak_shift(surface, 8, far_ratio=2.0) == (2, 1)
    assert peak_shift(surface, 16, far_ratio=2.0) == (-12, -12)
    assert peak_shift(surface, 3, far_ratio=2.0) == (2, 1)  # a small reach keeps ceil(3 / 2) = 2


def test_a_lone_moving_object_does_not_move_the_frame(monkeypatch):
    """A square moving on a plain background is all the structure there is, so phase correlation
    peaks at its motion (6 px on the first moved frame at 320x240); the tiles it does not cover do not
    agree, and the frame stays where it is, so the square's motion is found. The vote needs the
    object's old and new places to cover fewer than MIN_VOTES of the 16 tiles, so the reach stops
    at one tile (12 px on this 64x48 frame): 18 px from its start the square covers 9 tiles and,
    searched that far, moves frame 3 by (18, 0)."""
    greys = [cv2.cvtColor(f, cv2.COLOR_BGR2GRAY) for f in square_frames()]
    sads = tile_sads(greys[1], greys[0], [(6, 0), (0, 0)])
    assert 0 < np.sum(sads[0] < sads[1]) < register_module.MIN_VOTES  # the square's tiles only
    assert np.sum(np.subtract(*tile_sads(greys[3], greys[0], [(18, 0), (0, 0)])) < 0) == 9
    flt = Register()
    assert flt._reach(48, 64) == 12 and flt._reach(240, 320) == 32
    assert [(flt.reference(g), flt.shift)[1] for g in greys] == [(0, 0)] * len(greys)
    larger = [cv2.cvtColor(f, cv2.COLOR_BGR2GRAY) for f in square_frames(count=12, height=240, width=320)]
    flt = Register()
    assert [(flt.reference(g), flt.shift)[1] for g in larger] == [(0, 0)] * len(larger)
    monkeypatch.setattr(register_module, "MIN_VOTES", 0)  # without the consensus check
    unchecked = Register()
    assert [(unchecked.reference(g), unchecked.shift)[1] for g in larger[:3]] == [(0, 0), (6, 0), (12, 0)]


def test_a_frame_unlike_the_anchor_does_not_move(sample_frames, rng, monkeypatch):
    """Frames that share nothing with the anchor (noise after a real frame) give a surface of low
    random peaks, which ``min_peak`` refuses even where they beat no shift by ``peak_ratio``; without
    the floor (and the tiles' vote) the filter takes them."""
    monkeypatch.setattr(register_module, "MIN_VOTES", 0)  # the floor alone
    grey = cv2.cvtColor(sample_frames[30], cv2.COLOR_BGR2GRAY)
    noise = [rng.integers(0, 256, grey.shape, dtype=np.uint8) for _ in range(8)]
    floored, plain = Register(), Register(min_peak=0.0)
    floored.reference(grey)
    plain.reference(grey)
    floored_shifts = [(floored.reference(n), floored.shift)[1] for n in noise]
    plain_shifts = [(plain.reference(n), plain.shift)[1] for n in noise]
    assert floored_shifts == [(0, 0)] * len(noise)
    assert any(s != (0, 0) for s in plain_shifts)  # the ratio alone takes a random peak


def test_tukey_window_is_scipys_tukey():
    from scipy.signal import windows

    for taper in (0.25, 0.5, 1.0):
        for height, width in [(9, 14), (60, 80), (1, 7), (2, 3)]:
            want = np.outer(windows.tukey(height, taper), windows.tukey(width, taper))
            np.testing.assert_allclose(tukey_window(height, width, taper), want, atol=1e-7)
    np.testing.assert_array_equal(tukey_window(5, 4, 0.0), np.ones((5, 4)))  # no window
    # A taper of 1 is the Hann window, whose square root is OpenCV's (cv2.phaseCorrelate's)
    np.testing.assert_allclose(np.sqrt(tukey_window(9, 14, 1.0)), cv2.createHanningWindow((14, 9), cv2.CV_32F), atol=1e-6)


def found(frames: list[np.ndarray], shifts: list[tuple[int, int]], near, taper: float = register_module.TAPER) -> int:
    """How many of the (H, W) uint8 ``frames`` a fresh register filter (anchored on the first,
    windowed with ``taper``) gives a shift ``near(found, applied)`` to."""
    flt = Register(taper=taper)
    hits = 0
    for frame, shift in zip(frames, shifts):
        flt.reference(frame)
        hits += near(flt.shift, shift)
    return hits


def test_texture_at_the_edges_of_a_plain_scene_registers_it():
    """A plain road whose texture is all in its verges (the outer eighth of each side), with
    dark and bright cars at new places in every frame, shaken by up to 8 pixels: the default
    Tukey window keeps the verges and finds every shift; the Hann window (``taper`` 1) fades them
    and lets the cars win a third of the frames or more (17 of 31 found)."""
    rng = np.random.default_rng(3)
    height, width, margin = 240, 320, MARGIN * 2
    size = (height + 2 * margin, width + 2 * margin)
    road = np.full(size, 110, np.float32) + rng.normal(0, 1.5, size)
    verge = np.ones(size, bool)
    verge[margin + 34 : -margin - 34, margin + 34 : -margin - 34] = False
    road[verge] += cv2.GaussianBlur(rng.normal(0, 60, size).astype(np.float32), (0, 0), 1.5)[verge]
    road = np.clip(road, 0, 255).astype(np.uint8)
    shifts = [(0, 0)] + [tuple(int(v) for v in rng.integers(-8, 9, 2)) for _ in range(30)]
    frames = []
    for dx, dy in shifts:
        scene = road.copy()
        for _ in range(6):
            y, x = rng.integers(margin + 50, height - 50), rng.integers(margin + 50, width - 50)
            scene[y : y + 24, x : x + 16] = rng.choice([20, 235])
        frames.append(translate(scene, dx, dy, -1, True)[margin:-margin, margin:-margin])
    exact = lambda got, applied: got == applied  # noqa: E731
    assert found(frames, shifts, exact) == len(frames)
    assert found(frames, shifts, exact, taper=1.0) < 2 * len(frames) // 3  # the Hann window


def test_a_shaken_highway_is_registered():
    """SBI HighwayII (samples/dev, made by fetch_dev.py), its first 60 frames shaken by up to 12
    pixels: the shift is found on at least 57 (59 when measured; the Hann window 27). The
    footage bobs by a row of its own, so a found dy may exceed the applied one by 1."""
    clip = ROOT / "samples" / "dev" / "sbi_highway_ii"
    if not (clip / "input").is_dir():
        pytest.skip(f"{clip} not materialized (python samples/dev/fetch_dev.py)")
    paths = sorted((clip / "input").glob("*.png"))[:60]
    rng = np.random.default_rng(7)
    shifts = [(0, 0)] + [tuple(int(v) for v in rng.integers(-12, 13, 2)) for _ in paths[1:]]
    margin = 16
    frames = [
        translate(cv2.imread(str(path), cv2.IMREAD_GRAYSCALE), dx, dy, -1, True)[margin:-margin, margin:-margin]
        for path, (dx, dy) in zip(paths, shifts)
    ]
    bob = lambda got, applied: got[0] == applied[0] and got[1] - applied[1] in (0, 1)  # noqa: E731
    assert found(frames, shifts, bob) >= 57
    assert found(frames, shifts, bob, taper=1.0) < 36  # the Hann window


def test_reset_forgets_the_anchor(sample_frames):
    grey = cv2.cvtColor(sample_frames[30], cv2.COLOR_BGR2GRAY)
    flt = Register()
    flt.reference(grey)
    flt.reference(moved(grey, 4, 0))
    assert flt.shift == (4, 0)
    flt.reset()
    flt.reference(moved(grey, 4, 0))  # the new anchor
    assert flt.shift == (0, 0)


def test_seek_keeps_the_anchor(sample_frames):
    grey = cv2.cvtColor(sample_frames[30], cv2.COLOR_BGR2GRAY)
    flt = Register()
    flt.reference(grey)
    flt.reference(moved(grey, 4, 0))
    flt.seek()
    assert flt.shift == (0, 0)
    flt.reference(moved(grey, 0, 3))  # still measured against the first anchor
    assert flt.shift == (0, 3)


def test_pipeline_rules_and_chunk_warmup():
    filters = build_filters(default_config())
    assert not pipeline_problems([type(f) for f in filters])
    # The anchor comes from the file's first frame in every chunk: only the model's warm-up counts.
    assert warmup_frames(filters) == warmup_frames([f for f in filters if f.NAME != "register"]) == 500
    from motiondetect.filters import REGISTRY

    wrong = [REGISTRY[n] for n in ("gray", "register", "median", "gaussian_background")]
    problems = pipeline_problems(wrong)
    assert any("'register' must come right before the frame-pair filter" in p for p in problems), problems
    # The default registers right after the downscale, and is otherwise configs/steady.yaml.
    assert [f.NAME for f in filters][1:4] == ["downscale", "register", "gaussian_background"]
    assert [repr(f) for f in filters if f.NAME != "register"] == [repr(f) for f in build_filters(load_config(STEADY))]


def test_steady_footage_is_unchanged(clip_frames):
    """On a steady camera every shift is (0, 0): the masks equal configs/steady.yaml's."""
    plain = MotionDetector(build_filters(load_config(STEADY)))
    registered = MotionDetector(build_filters(default_config()))
    moving = 0
    for frame in clip_frames:
        want, got = plain.process(frame), registered.process(frame)
        np.testing.assert_array_equal(got.mask, want.mask)
        moving += want.motion_fraction > 0.001
    assert moving > 100


def test_jittered_clip_is_detected_as_if_steady(clip_frames):
    """The bundled clip, each frame moved by a random shift of up to 4 pixels and cropped: the
    filter finds every shift but one (frame 194, (-1, 1) for (-2, 1): its coarse peak, 0.29 of
    the frame, is a hair under ``peak_ratio`` times no shift's 0.099), and the masks, in each
    jittered frame's pixels, differ from the steady run's (moved alike) in under 0.2 % of the
    pixels, where configs/steady.yaml's differ in over 1 % (the shaking background flags its
    edges)."""
    rng = np.random.default_rng(7)
    shifts = [(0, 0)] + [tuple(int(v) for v in rng.integers(-4, 5, 2)) for _ in clip_frames[1:]]
    inner = (slice(MARGIN, -MARGIN), slice(MARGIN, -MARGIN))
    steady = MotionDetector(build_filters(load_config(STEADY)))
    plain = MotionDetector(build_filters(load_config(STEADY)))
    registered = MotionDetector(build_filters(default_config()))
    register = next(f for f in registered.filters if isinstance(f, Register))
    found, plain_wrong, registered_wrong = 0, [], []
    for i, (frame, (dx, dy)) in enumerate(zip(clip_frames, shifts)):
        jittered = np.ascontiguousarray(moved(frame, dx, dy)[inner])
        want = moved(steady.process(frame).mask, dx, dy)[inner]
        got_plain, got = plain.process(jittered).mask, registered.process(jittered).mask
        found += register.shift == (dx, dy)
        if i >= 60:  # after the background model's start
            plain_wrong.append(np.mean(got_plain != want))
            registered_wrong.append(np.mean(got != want))
    assert found >= len(clip_frames) - 1
    assert np.mean(registered_wrong) < 0.002
    assert np.mean(plain_wrong) > 0.01
