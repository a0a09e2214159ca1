"""Helpers shared by several test modules: independent references (no package code in them), the
in-process command runner, synthetic camera jitter, and the CPU/GPU detector comparison."""

from __future__ import annotations

import os
import re
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _shared_samples() -> Path:
    given = os.environ.get("MOTIONDETECT_SAMPLES")
    if given:
        return Path(given)
    beside, inside = ROOT.parent / "shared" / "samples", ROOT / "shared" / "samples"
    return next((p for p in (beside, inside) if p.is_dir()), beside)


#: The team's samples (CDnet clips, videos/): MOTIONDETECT_SAMPLES, else ../shared/samples beside
#: the checkout or shared/samples inside it; tests that need a clip skip when it is absent.
SHARED_SAMPLES = _shared_samples()
#: Its real videos (H.264 and others), or None where the folder is absent.
SHARED_VIDEOS = SHARED_SAMPLES / "videos" if (SHARED_SAMPLES / "videos").is_dir() else None


def benchmark_module(name: str):
    """Import ``benchmarks/<name>.py`` as a module (the scripts are not a package)."""
    import importlib
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def square_frames(count=8, height=48, width=64, step=6) -> list[np.ndarray]:
    """``count`` BGR frames (height, width, 3), uint8: a 16-pixel green square on grey 40 that
    moves ``step`` pixels right each frame. At the default 6 the strips a step changes are wider
    than half the default 9x9 median's window, so the vote keeps them from the first moved frame."""
    frames = []
    for i in range(count):
        f = np.full((height, width, 3), 40, np.uint8)
        f[10:26, 4 + step * i : 20 + step * i] = (60, 200, 90)
        frames.append(f)
    return frames


def video_grey(path) -> list[np.ndarray]:
    """The grey frames of a video file by the luma-first definition, without package code: the
    Y' planes as plain PyAV decodes them (no threads), limited range expanded to full by
    BT.601's inverse, round((Y' - 16) * 255 / 219) clipped to 0..255 (never a tie: 219 = 3 * 73)."""
    import av

    greys = []
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            plane = frame.planes[0]
            y = np.frombuffer(plane, np.uint8).reshape(plane.height, plane.line_size)[:, : plane.width].astype(np.float64)
            greys.append(np.clip(np.rint((y - 16) * 255 / 219), 0, 255).astype(np.uint8))
    return greys


def offline_events(fractions, trigger, max_area, min_frames, gap, before, after):
    """Motion events by the README's rules, as whole-array operations (not a stream).

    Finds the runs of moving frames first, then groups runs whose pauses are at most
    max(gap, after) frames, keeping groups that begin with a run of at least min_frames; pads
    last. Durations are in frames; fractions index frames from 0.

    Returns:
        (start, end, motion_start, motion_end, peak, mean) per event.
    """
    f = np.asarray(fractions, float)
    moving = (f > 0) & (f >= trigger) & (f <= max_area)
    edges = np.diff(np.concatenate([[0], moving.astype(int), [0]]))
    runs = list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1))
    groups, current = [], None
    for s, e in runs:
        if current is not None and s - current[1] - 1 <= max(gap, after):
            current[1] = e
            continue
        if current is not None:
            groups.append(current)
            current = None
        if e - s + 1 >= min_frames:
            current = [s, e]
    if current is not None:
        groups.append(current)
    out, previous_end = [], -1
    for s, e in groups:
        start, end = max(0, s - before, previous_end + 1), min(len(f) - 1, e + after)
        span = f[s : e + 1]
        counted = span[span <= max_area]
        peak = span[moving[s : e + 1]].max()
        out.append((start, end, s, e, peak, counted.mean()))
        previous_end = end
    return out


def x264_options(path) -> dict[str, str]:
    """The settings libx264 wrote into an H.264 file (its first SEI message, ``options: cabac=1
    ref=1 ... threads=3 ... sliced_threads=0 ...``), read from the file's bytes: what the encoder
    did, not what it was asked."""
    match = re.search(rb"x264 - core [^\x00]*? options: ([ -~]+)", Path(path).read_bytes())
    assert match, f"no libx264 settings in {path}"
    return dict(item.split("=", 1) for item in match.group(1).decode().split() if "=" in item)


def recording_with_dropped_frames(path: Path) -> int:
    """Write an MP4 of 38 frames of 32x24 at 25 fps whose timestamps leave holes (frames 12-16,
    40-44 of the clock were never recorded: a live source that dropped them), the container
    counting only the frames stored; returns that count."""
    from motiondetect.outputs.writer import VideoWriter

    slots = [*range(12), *range(17, 40), 45, 46, 47]
    with VideoWriter(path, 25, (32, 24)) as writer:
        for i, slot in enumerate(slots):
            writer.write(np.full((24, 32, 3), 5 * i, np.uint8), time=slot / 25)
    return len(slots)


def one_line_error(err: str) -> str:
    """The single stderr line of a refused command: ``motiondetect: error: ...``, no traceback."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("motiondetect: error: ") and "Traceback" not in err, err
    return lines[0]


def run_cli(monkeypatch, capsys, cwd, *argv) -> tuple[int, str, str]:
    """``motiondetect ARGV`` in this process, in ``cwd``; returns (exit code, stdout, stderr).

    argparse's usage errors (``SystemExit``) come back as their exit code.
    """
    from motiondetect.apps.cli import main

    monkeypatch.chdir(cwd)
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


#: The case study's exact pipeline (gray, difference, threshold 25, 3x3 erosion, red_blend 0.5),
#: which tests compare against an independent chain of OpenCV/NumPy steps.
SEED_YAML = Path(__file__).resolve().parent.parent / "configs" / "seed.yaml"


def seed_config() -> dict:
    """The loaded configs/seed.yaml."""
    from motiondetect.pipeline.config import load_config

    return load_config(SEED_YAML)


def same_image(a, b) -> bool:
    """Whether two result frames hold the same bits: BGR arrays, or pictures plane by plane."""
    from motiondetect.core.picture import Picture

    if isinstance(a, Picture) or isinstance(b, Picture):
        return (
            isinstance(a, Picture)
            and isinstance(b, Picture)
            and a.full_range == b.full_range
            and all(np.array_equal(x, y) for x, y in zip((a.y, a.u, a.v), (b.y, b.u, b.v)))
        )
    return np.array_equal(a, b)


def make_folder(
    root: Path, count=12, first=100, height=36, width=48, temporal=None, roi=None
) -> tuple[Path, list[np.ndarray], list[np.ndarray]]:
    """A grey background with a square moving 3 pixels a frame; labels mark the square 255 and
    its one-pixel outline 170 (PNG frames: lossless, so the difference is exact)."""
    (root / "input").mkdir(parents=True)
    (root / "groundtruth").mkdir()
    frames, labels = [], []
    for i in range(count):
        frame = np.full((height, width, 3), 90, np.uint8)
        label = np.zeros((height, width), np.uint8)
        if i >= 3:
            left = 4 + 3 * (i - 3)
            frame[10:22, left : left + 12] = (30, 200, 240)
            label[9:23, left - 1 : left + 13] = 170
            label[10:22, left : left + 12] = 255
        cv2.imwrite(str(root / "input" / f"in{first + i:06d}.png"), frame)
        cv2.imwrite(str(root / "groundtruth" / f"gt{first + i:06d}.png"), label)
        frames.append(frame)
        labels.append(label)
    if temporal is not None:
        (root / "temporalROI.txt").write_text(f"{temporal[0]} {temporal[1]}")
    if roi is not None:
        cv2.imwrite(str(root / "ROI.bmp"), roi)
    return root, frames, labels


#: GaussianBackground settings that the CPU, emulated-kernel and GPU tests all run through:
#: fast learning (without its warm-up length, which each test sets), every rate at 1 with the
#: widest threshold, every rate at 0 with the narrowest, and the limit's rounding tie
#: (k2 = 64, min_var = 66: (64 * 66 + 128) >> 8 meets 16.5 -> 17).
GAUSSIAN_FAST = {
    "sigmas": 2.0,
    "min_sigma": 1.0,
    "alpha": 0.1,
    "alpha_foreground": 0.05,
    "variance_alpha": 0.2,
    "variance_alpha_foreground": 0.1,
}
GAUSSIAN_SATURATED = {
    "sigmas": 10.0,
    "min_sigma": 64.0,
    "alpha": 1.0,
    "alpha_foreground": 1.0,
    "variance_alpha": 1.0,
    "variance_alpha_foreground": 1.0,
    "warmup": 0,
}
GAUSSIAN_FROZEN = {
    "sigmas": 0.5,
    "min_sigma": 0.5,
    "alpha": 0.0,
    "alpha_foreground": 0.0,
    "variance_alpha": 0.0,
    "variance_alpha_foreground": 0.0,
    "warmup": 0,
}
GAUSSIAN_TIE = {"sigmas": 0.5, "min_sigma": 0.5078125, "variance_alpha": 0.5, "variance_alpha_foreground": 1.0, "warmup": 0}


def with_ghosts(rng, frames: list) -> list:
    """``frames`` (a list of uint8 arrays of one shape) where, after the first frame, a third of
    the pixels jump by 128 grey levels and then hold still (a ghost for a background model started
    on the first frame) and a third do the same with a flicker of one level; changed in place,
    returned. For the still-foreground count of ``gaussian_background``: it grows, resets and
    reaches ``still_frames``."""
    kind = rng.integers(0, 3, frames[0].shape)
    moved = (frames[0].astype(np.int32) + 128) % 256
    for t in range(1, len(frames)):
        frames[t][kind == 1] = moved[kind == 1]
        frames[t][kind == 2] = (np.clip(moved, 1, 254) + t % 2)[kind == 2]
    return frames


def with_night_mode(rng, chromas: list, night: tuple[int, int] = (3, 6)) -> list:
    """``chromas`` ((2, H, W) uint8 Cb and Cr planes of consecutive frames) as a camera that
    switches to night (infrared) mode and back sends them: frames ``night[0]`` to ``night[1] - 1``
    grey (every Cb and Cr within 3 of 128, as an encoder returns them), a quarter of the pixels
    grey in frames 0 and 1 (their
    model starts without colours) and a tenth in each other frame; changed in place, returned.
    For the grey chroma of ``gaussian_background``."""
    size = chromas[0].shape[1:]
    at_start = rng.random(size) < 0.25
    for t, planes in enumerate(chromas):
        grey = np.ones(size, bool) if night[0] <= t < night[1] else (at_start if t < 2 else rng.random(size) < 0.1)
        planes[:, grey] = 128 + rng.integers(-3, 4, (2, int(grey.sum())))
    return chromas


def with_light_switch(frames: list, on: int = 3, off: int = 6, step: int = 90) -> list:
    """``frames`` (uint8 arrays of one shape) brightened by ``step`` grey levels (saturating) from
    frame ``on`` up to frame ``off``, as a light switched on and off again; changed in place,
    returned. For ``gaussian_background.lightswitch``: a brighter switch, then a darker one."""
    for t in range(on, min(off, len(frames))):
        frames[t][...] = np.minimum(frames[t].astype(np.int32) + step, 255)
    return frames


def with_exposure(frames: list, at: int = 7, gain: float = 0.9) -> list:
    """``frames`` (uint8 arrays of one shape) from frame ``at`` on multiplied by ``gain`` (rounded,
    saturating), as a camera's exposure changing; changed in place, returned. For
    ``gaussian_background.exposure``: too small a change for the light switch on most of the frame."""
    for t in range(at, len(frames)):
        frames[t][...] = np.clip(np.rint(frames[t] * gain), 0, 255).astype(np.uint8)
    return frames


#: Still foreground absorbed after two frames in a row, a flicker of one grey level counted as
#: still, and with the chroma, so the ghosts of tests' scenes go in a few frames.
GAUSSIAN_STILL = {"still_frames": 2, "still_tolerance": 1, "warmup": 2}
GAUSSIAN_STILL_CHROMA = {"still_frames": 3, "still_tolerance": 0, "sigmas": 2.0, "min_sigma": 6.0, "chroma_min_sigma": 3.0, "warmup": 2}
#: The bootstrap at pair 4 with the still count and the chroma, and at pair 5 on the grey level
#: alone, the light switch and the exposure off (they would cancel it on the tests' scenes); at
#: pair 6, cancelled by the light switch of with_light_switch.
GAUSSIAN_BOOTSTRAP = {**GAUSSIAN_STILL_CHROMA, "lightswitch": 0.0, "exposure": 0.0, "bootstrap": 4}
GAUSSIAN_BOOTSTRAP_GREY = {
    "min_sigma": 8.0,
    "shadow_floor": 0.0,
    "chroma_min_sigma": 0.0,
    "lightswitch": 0.0,
    "exposure": 0.0,
    "bootstrap": 5,
    "warmup": 2,
}
GAUSSIAN_BOOTSTRAP_CANCELLED = {**GAUSSIAN_STILL_CHROMA, "lightswitch": 0.4, "bootstrap": 6}
#: The light switch, alone (half the frame turned one way restarts the model) and with the
#: still-foreground count and the chroma.
GAUSSIAN_LIGHT = {"lightswitch": 0.5, "still_frames": 0, "warmup": 2}
GAUSSIAN_LIGHT_STILL_CHROMA = {**GAUSSIAN_STILL_CHROMA, "lightswitch": 0.4}
#: The exposure's gain followed at a low margin, alone and with the light switch, still count and
#: chroma, so the noisy scenes of the tests take it.
GAUSSIAN_EXPOSURE = {"exposure": 1.1, "lightswitch": 0.0, "still_frames": 0, "warmup": 2}
GAUSSIAN_EXPOSURE_ALL = {**GAUSSIAN_STILL_CHROMA, "lightswitch": 0.6, "exposure": 1.2}
#: The light field on, the exposure off: the kernel writes the compared means and the light
#: field's launches run after it. On the noisy scenes of the sequence and batch tests the model's
#: mean starts from a ghost frame and gives no evidence, so nothing is cleared there;
#: test_light_field_through_the_model has a scene where the field clears the flood.
GAUSSIAN_LIGHT_FIELD = {**GAUSSIAN_EXPOSURE, "exposure": 0.0, "light_field": 30.0}
#: The darker pixels' floor on, high enough to matter against min_sigma on most grey levels.
GAUSSIAN_SHADOW = {"sigmas": 2.0, "min_sigma": 2.0, "shadow_floor": 0.1, "variance_alpha": 0.2, "warmup": 2}
#: The grey-level model (chroma and the relative floors off, min_sigma 8): the default before chroma,
#: for tests of the grey level's own behaviour.
GAUSSIAN_GREY = {"min_sigma": 8.0, "shadow_floor": 0.0, "relative_floor": 0.0, "chroma_min_sigma": 0.0}
#: The means' foreground learning gated alone (the previous frame kept for it only, every grey
#: level change counts), and not gated (255: every foreground frame, the previous frame not kept).
#: The recent-background gate at a low level and a short warm-up, so the tests' noisy scenes
#: (whose variances pass recent_gate.MIN_SIGMA) reach it; with the bootstrap (its pair resets the
#: recent background), and with the light switch and exposure (a change of light resets it).
GAUSSIAN_RECENT = {**GAUSSIAN_FAST, "recent_gate": 2, "warmup": 2, "still_frames": 0}
GAUSSIAN_RECENT_BOOTSTRAP = {**GAUSSIAN_BOOTSTRAP_GREY, "recent_gate": 3, "bootstrap": 3}
GAUSSIAN_RECENT_LIGHT = {**GAUSSIAN_EXPOSURE_ALL, "recent_gate": 1, "lightswitch": 0.5}
GAUSSIAN_QUIET = {
    **GAUSSIAN_FAST,
    "quiet_tolerance": 0,
    "still_frames": 0,
    "lightswitch": 0.0,
    "exposure": 0.0,
    "bootstrap": 0,
    "warmup": 2,
}
GAUSSIAN_UNGATED = {**GAUSSIAN_FAST, "quiet_tolerance": 255, "still_frames": 0, "lightswitch": 0.0, "exposure": 0.0, "warmup": 2}
#: The chroma's shadow test with a wide tolerance and low floors: with chroma_for's planes (the
#: image and its negative) a darkening to r of the mean predicts Cb and Cr within 128 (1 - r) of
#: the frame's, so the noisy scenes' small darkenings (r >= 15/16) are shadows and larger ones not.
GAUSSIAN_SHADOW_CHROMA = {
    "sigmas": 2.0,
    "min_sigma": 2.0,
    "shadow_floor": 0.0,
    "relative_floor": 0.0,
    "chroma_min_sigma": 3.0,
    "shadow_chroma": 8.0,
    "variance_alpha": 0.2,
    "warmup": 2,
}
#: Chroma on, with a floor low enough that colour noise moves pixels the grey level alone keeps.
GAUSSIAN_CHROMA = {"sigmas": 2.0, "min_sigma": 6.0, "shadow_floor": 0.08, "chroma_min_sigma": 3.0, "variance_alpha": 0.2, "warmup": 2}

#: The weak level (grow_sigmas) with chroma, the shadow floor and the chroma's shadow test: the
#: model writes 128 where the grey level or a coloured pixel's Cb or Cr is off by 1.2 to 2
#: standard deviations, which :func:`gaussian_model` turns on.
GAUSSIAN_GROW = {**GAUSSIAN_CHROMA, "grow_sigmas": 1.2}
#: ... and on the grey level alone, nearly at the motion threshold.
GAUSSIAN_GROW_GREY = {**GAUSSIAN_GREY, "grow_sigmas": 1.9}
#: ... and with the chroma's shadow test, whose shadows may be weak.
GAUSSIAN_GROW_SHADOW = {**GAUSSIAN_SHADOW_CHROMA, "grow_sigmas": 1.0}


def gaussian_model(params: dict):
    """A GaussianBackground of ``params`` that writes the weak level where ``params`` name
    ``grow_sigmas`` (``weak_level``, which a detector sets when a dilation follows the model)."""
    from motiondetect.filters import GaussianBackground

    model = GaussianBackground(**params)
    model.weak_level = "grow_sigmas" in params
    return model


def jitter(frames, amp: int = 4, seed: int = 7, margin: int = 8) -> tuple[list[np.ndarray], list[tuple[int, int]]]:
    """Synthetic camera jitter: each (H, W, 3) BGR frame moved by a random whole-pixel shift
    (dx, dy) of up to ``amp`` pixels each way (the first frame by none; seeded), borders
    replicated, then cropped by ``margin`` on every side; and the shifts."""
    rng = np.random.default_rng(seed)
    out, shifts = [], []
    for frame in frames:
        dx, dy = (0, 0) if not shifts else tuple(int(v) for v in rng.integers(-amp, amp + 1, 2))
        height, width = frame.shape[:2]
        moved = cv2.warpAffine(
            frame, np.float32([[1, 0, dx], [0, 1, dy]]), (width, height), flags=cv2.INTER_NEAREST, borderMode=cv2.BORDER_REPLICATE
        )
        out.append(np.ascontiguousarray(moved[margin:-margin, margin:-margin]))
        shifts.append((dx, dy))
    return out, shifts


def assert_gpu_paths_equal_cpu(cuda, config: dict, images: list, batch: int, min_moving: int = 100) -> None:
    """The CPU detector, the frame-at-a-time GPU detector and the BatchDetector (``batch`` frames
    a batch) give the same masks and motion fractions on ``images`` (BGR frames or pictures),
    and at least ``min_moving`` frames move (>= 0.1 % of the pixels)."""
    from motiondetect.core.types import Frame
    from motiondetect.pipeline.batch import BatchDetector
    from motiondetect.pipeline.config import build_filters
    from motiondetect.pipeline.detector import MotionDetector

    cpu = MotionDetector(build_filters(config))
    one = MotionDetector(build_filters(config), cuda=cuda)
    batched = BatchDetector(build_filters(config), cuda, batch=batch, annotate=False)
    stream = list(batched.stream(Frame(i, i / 25, image) for i, image in enumerate(images)))
    assert len(stream) == len(images)
    moving = 0
    for (frame, got), image in zip(stream, images):
        want = cpu.process(image)
        single = one.process(image)
        assert np.array_equal(single.mask, want.mask), f"frame {frame.index} (one at a time)"
        assert np.array_equal(got.mask, want.mask), f"frame {frame.index} (batch {batch})"
        assert got.motion_fraction == single.motion_fraction == want.motion_fraction
        moving += want.motion_fraction > 0.001
    assert moving > min_moving


def chroma_for(flt, image: np.ndarray) -> np.ndarray | None:
    """Chroma planes to go with a grey image for a filter that compares colour (a Gaussian
    background with ``chroma_min_sigma``): (2, H, W) uint8, the image and its negative (both
    extremes where the image has them); ``None`` for any other filter."""
    if not getattr(flt, "needs_chroma", False):
        return None
    return np.ascontiguousarray(np.stack([image, 255 - image]))


def traffic_scene(seed: int = 3, frames: int = 50, size: tuple[int, int] = (60, 120)):
    """A road of grey 100 whose warm-up (pairs 1..20) is a queue of cars of random greys 20..200
    over its right part, every pixel its own (so the model learns a standard deviation of about
    50 there), then still road; from pair 40 a textured car (greys 120..141, 24 x 32 pixels)
    drives right by 3 pixels a frame over it, and waving leaves (each pixel of a 12 x 16 patch
    100 +- 40 at random, each frame) stand on the left. Returns the grey frames and the car's
    box in the last frame and the leaves' box."""
    rng = np.random.default_rng(seed)
    # Its texture: a ramp of 3 grey levels a column, repeated every 8, so each pixel it covers
    # changes by 9 or more a frame (a car's texture sweeping by) and is never still.
    texture = np.tile((120 + 3 * (np.arange(32) % 8)).astype(np.uint8), (24, 1))
    out, leaves = [], (slice(14, 26), slice(4, 20))
    for t in range(frames):
        f = np.full(size, 100, np.uint8)
        if 1 <= t <= 20:
            f[:, 26:] = rng.integers(20, 201, (size[0], size[1] - 26))
        if t >= 40:
            car = (slice(20, 44), slice(40 + 3 * (t - 40), 72 + 3 * (t - 40)))
            f[car] = texture
            f[leaves] = 100 + 40 * rng.choice([-1, 1], (12, 16))
        out.append(f)
    return out, car, leaves


def darkening_road(seed: int = 1, size: tuple[int, int] = (96, 128)) -> list[np.ndarray]:
    """(H, W) uint8 grey frames where the recent-background gate fires on a change of light that
    the light field explains: a textured scene (grey levels 60..200, texture std about 20) whose
    first 50 frames jump by a standard deviation of 30 (a busy road: the warm-up learns a wide
    variance), then 10 still frames, then 8 frames over which the right half darkens smoothly by
    up to 60 % (the left half keeps its light, so no frame-wide gain follows the change)."""
    rng = np.random.default_rng(seed)
    h, w = size
    ramp = np.linspace(100, 160, w)[None, :].repeat(h, 0)
    scene = np.clip(ramp + rng.normal(0, 20, size), 60, 200).round().astype(np.uint8)
    frames = [scene]
    frames += [np.clip(scene + rng.normal(0, 30, size), 0, 255).round().astype(np.uint8) for _ in range(50)]
    frames += [scene] * 10
    darkening = np.clip(np.linspace(-0.6, 0.6, w), 0, 1)[None, :]
    frames += [np.clip(scene * (1 - darkening * t / 8), 0, 255).round().astype(np.uint8) for t in range(1, 9)]
    return frames
