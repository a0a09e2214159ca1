"""The command line, in process (motiondetect.apps.cli.main) and as a real subprocess."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import offline_events, one_line_error, square_frames, video_grey
from helpers import run_cli as run_main

import motiondetect
from motiondetect.apps.cli import main
from motiondetect.filters import REGISTRY
from motiondetect.gpu.platform import cuda_device_error
from motiondetect.outputs.writer import VideoWriter

ROOT = Path(__file__).resolve().parent.parent
#: The case study's pipeline, which independent_mask() below reproduces with OpenCV.
SEED_YAML = ROOT / "configs" / "seed.yaml"
REPORT_KEYS = {"input", "fps", "frame_count", "backend", "config", "events", "complete"}
EVENT_KEYS = {
    "index",
    "start_frame",
    "end_frame",
    "start_timecode",
    "end_timecode",
    "start_time",
    "end_time",
    "duration",
    "motion_start_frame",
    "motion_end_frame",
    "peak_motion",
    "mean_motion",
    "bbox",
}


#: main() rebinds the root logger to the (captured) stderr: every test here has it restored.
pytestmark = pytest.mark.usefixtures("restored_logging")


# -- independent helpers -------------------------------------------------------------------


def integer_luma(bgr: np.ndarray) -> np.ndarray:
    b, g, r = (bgr[..., i].astype(np.uint32) for i in range(3))
    return ((b * 7471 + g * 38470 + r * 19595 + 32768) >> 16).astype(np.uint8)


def grey_mask(previous, current, threshold=25):
    """The case study's chain on two grey images: absdiff, threshold, 3x3 erosion."""
    diff = cv2.absdiff(current, previous)
    return cv2.erode(cv2.threshold(diff, threshold, 255, cv2.THRESH_BINARY)[1], np.ones((3, 3), np.uint8))


def independent_mask(previous, current, threshold=25):
    return grey_mask(integer_luma(previous), integer_luma(current), threshold)


def decode(path, upto=None):
    cap = cv2.VideoCapture(str(path))
    assert cap.isOpened(), path
    fps = cap.get(cv2.CAP_PROP_FPS)
    frames = []
    while upto is None or len(frames) <= upto:
        ok, image = cap.read()
        if not ok:
            break
        frames.append(image)
    cap.release()
    return frames, fps


# -- the bundled clip, end to end (run once for the module) --------------------------------


@pytest.fixture(scope="module")
def clip_run(sample_clip, tmp_path_factory):
    folder = tmp_path_factory.mktemp("clip_run")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        rc = main([str(sample_clip), "--backend", "cpu", "-c", str(SEED_YAML)])
    return folder, rc


@pytest.fixture(scope="module")
def clip_truth(sample_clip):
    """Per-frame motion fractions computed without the package, and the busiest frame (its BGR
    decode, for the colour checks)."""
    greys = video_grey(sample_clip)
    cap = cv2.VideoCapture(str(sample_clip))
    fractions, best = [0.0], (-1.0, None, None, None)
    ok, frame = cap.read()
    for index in range(1, len(greys)):
        ok, frame = cap.read()
        assert ok
        mask = grey_mask(greys[index - 1], greys[index])
        fraction = np.count_nonzero(mask) / mask.size
        fractions.append(fraction)
        if fraction > best[0]:
            best = (fraction, index, frame, mask)
    cap.release()
    return fractions, best


def test_clip_exit_code_and_default_names(clip_run):
    folder, rc = clip_run
    assert rc == 0
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["highway_traffic_320x240_motion.json", "highway_traffic_320x240_motion.mp4"]


def test_clip_output_video(clip_run):
    folder, _ = clip_run
    frames, fps = decode(folder / "highway_traffic_320x240_motion.mp4")
    assert len(frames) == 748
    assert frames[0].shape == (240, 320, 3)
    assert fps == pytest.approx(25.0)


def test_clip_events_json(clip_run, sample_clip, clip_truth):
    folder, _ = clip_run
    report = json.loads((folder / "highway_traffic_320x240_motion.json").read_text(encoding="utf-8"))
    assert REPORT_KEYS <= set(report)
    assert report["input"] == str(sample_clip)
    assert report["fps"] == 25.0
    assert report["frame_count"] == 748
    assert report["backend"] == "cpu"
    assert report["complete"] is True
    assert report["config"]["pipeline"] == motiondetect.load_config(SEED_YAML)["pipeline"]
    assert report["output_video"] == str(folder / "highway_traffic_320x240_motion.mp4")
    events = report["events"]
    assert events, "the highway clip has traffic"
    for e in events:
        assert set(e) == EVENT_KEYS
        assert 0 <= e["start_frame"] <= e["motion_start_frame"] <= e["motion_end_frame"] <= e["end_frame"] < 748
        assert e["start_time"] == pytest.approx(e["start_frame"] / 25.0, abs=1e-3)
        assert e["end_time"] == pytest.approx(e["end_frame"] / 25.0, abs=1e-3)
        assert e["duration"] == pytest.approx((e["end_frame"] - e["start_frame"] + 1) / 25.0, abs=1e-3)
        assert 0.001 <= e["peak_motion"] <= 1
    # Against events derived offline from the independent OpenCV chain over all 748 frames,
    # with the default settings in frames at 25 fps: 0.1 s -> 3, 2.0 s -> 50, 1.5 s -> 38.
    fractions, _ = clip_truth
    assert len(fractions) == 748
    expected = offline_events(fractions, 0.001, 1.0, min_frames=3, gap=50, before=38, after=50)
    got = [(e["start_frame"], e["end_frame"], e["motion_start_frame"], e["motion_end_frame"]) for e in events]
    assert got == [w[:4] for w in expected]
    assert [e["peak_motion"] for e in events] == pytest.approx([w[4] for w in expected], abs=1e-6)
    assert [e["mean_motion"] for e in events] == pytest.approx([w[5] for w in expected], abs=1e-6)


def test_clip_red_where_motion(clip_run, clip_truth):
    folder, _ = clip_run
    _, (fraction, index, frame, mask) = clip_truth
    assert fraction > 0.005 and index > 0
    frames, _ = decode(folder / "highway_traffic_320x240_motion.mp4", upto=index)
    out = frames[index].astype(np.float64)
    src = frame.astype(np.float64)
    inside = mask != 0
    # alpha 0.5 raises red by (255 - R) / 2 inside the mask; H.264 blurs edges and chroma, so
    # compare means over the mask region.
    expected_gain = ((255 - src[..., 2][inside]) / 2).mean()
    gain = (out[..., 2][inside] - src[..., 2][inside]).mean()
    assert expected_gain > 30
    assert gain > 0.6 * expected_gain
    # Outside the mask (away from its edges) the frame is the input, up to coding loss.
    far = cv2.dilate(mask, np.ones((9, 9), np.uint8)) == 0
    assert abs((out[..., 2][far] - src[..., 2][far]).mean()) < 4
    # The first frame has no predecessor: passed through, no red.
    first, _ = decode(folder / "highway_traffic_320x240_motion.mp4", upto=0)
    cap = cv2.VideoCapture(str(ROOT / "samples" / "highway_traffic_320x240.avi"))
    ok, input0 = cap.read()
    cap.release()
    assert ok and np.abs(first[0].astype(np.int16) - input0).mean() < 4


# -- small inputs --------------------------------------------------------------------------


@pytest.fixture
def sequence(tmp_path) -> Path:
    folder = tmp_path / "seq"
    folder.mkdir()
    for i, f in enumerate(square_frames()):
        cv2.imwrite(str(folder / f"in{i + 100:06d}.png"), f)
    return folder


@pytest.fixture
def small_video(tmp_path) -> Path:
    path = tmp_path / "small.mp4"
    with VideoWriter(path, 25, (64, 48)) as writer:
        for f in square_frames():
            writer.write(f)
    return path


def test_sequence_events_by_hand(tmp_path, sequence, monkeypatch, capsys):
    rc, _, _ = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "--fps", "10")
    assert rc == 0
    report = json.loads((tmp_path / "seq_motion.json").read_text(encoding="utf-8"))
    assert report["frame_count"] == 8 and report["fps"] == 10.0 and report["complete"] is True
    # The square moves on every frame after the first: one event with motion on frames 1..7,
    # padded (1.5 s before, 2 s after) to the whole input, 0..7.
    (event,) = report["events"]
    assert (event["motion_start_frame"], event["motion_end_frame"]) == (1, 7)
    assert (event["start_frame"], event["end_frame"]) == (0, 7)
    assert event["start_time"] == 0.0 and event["end_time"] == 0.7 and event["duration"] == 0.8
    assert event["start_timecode"] == "00:00:00.000" and event["end_timecode"] == "00:00:00.700"
    frames, fps = decode(tmp_path / "seq_motion.mp4")
    assert len(frames) == 8 and frames[0].shape == (48, 64, 3) and fps == pytest.approx(10.0)


def test_refuses_to_overwrite_then_overwrite_works(tmp_path, sequence, monkeypatch, capsys):
    assert run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "-q")[0] == 0
    video, events = tmp_path / "seq_motion.mp4", tmp_path / "seq_motion.json"
    before = (video.read_bytes(), events.read_bytes())
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu")
    assert rc == 2
    assert "--overwrite" in one_line_error(err)
    assert (video.read_bytes(), events.read_bytes()) == before
    # Only the events file in the way (video elsewhere) is refused too.
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "-o", tmp_path / "other.mp4")
    assert rc == 2 and "--overwrite" in one_line_error(err) and not (tmp_path / "other.mp4").exists()
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "--overwrite", "--threshold", "200", "-c", SEED_YAML)
    assert rc == 0
    report = json.loads(events.read_text(encoding="utf-8"))
    assert report["complete"] is True
    assert [e["threshold"] for e in report["config"]["pipeline"] if e["filter"] == "threshold"] == [200]


def test_refuses_output_equal_to_input(tmp_path, small_video, monkeypatch, capsys):
    original = small_video.read_bytes()
    for flag in ("-o", "--events"):
        rc, _, err = run_main(monkeypatch, capsys, tmp_path, small_video, "--backend", "cpu", flag, small_video, "--overwrite")
        assert rc == 2
        assert "input" in one_line_error(err)
        assert small_video.read_bytes() == original
    # The same file under another spelling of the path.
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, small_video, "--backend", "cpu", "-o", "./small.mp4", "--overwrite")
    assert rc == 2 and small_video.read_bytes() == original


def test_events_and_video_must_differ(tmp_path, sequence, monkeypatch, capsys):
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "-o", "x.mp4", "--events", "x.mp4")
    assert rc == 2 and "differ" in one_line_error(err)
    assert not (tmp_path / "x.mp4").exists()


def test_missing_output_folder(tmp_path, sequence, monkeypatch, capsys):
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "-o", tmp_path / "nope" / "x.mp4")
    assert rc == 2 and "does not exist" in one_line_error(err)


def test_small_video_file_input(tmp_path, small_video, monkeypatch, capsys):
    rc, _, _ = run_main(monkeypatch, capsys, tmp_path, small_video, "--backend", "cpu", "-o", "out.mp4", "--events", "ev.json")
    assert rc == 0
    assert len(decode(tmp_path / "out.mp4")[0]) == 8
    assert json.loads((tmp_path / "ev.json").read_text())["frame_count"] == 8


def test_no_video_writes_only_json(tmp_path, sequence, monkeypatch, capsys):
    rc, _, _ = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "--no-video")
    assert rc == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["seq", "seq_motion.json"]
    report = json.loads((tmp_path / "seq_motion.json").read_text(encoding="utf-8"))
    assert report["output_video"] is None and report["frame_count"] == 8


@pytest.mark.parametrize(
    "value, message", [("300", "out of range"), ("-1", "out of range"), ("abc", "expected int"), ("2.5", "expected int")]
)
def test_threshold_argument_checked(tmp_path, sequence, monkeypatch, capsys, value, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main([str(sequence), "--threshold", value])
    assert info.value.code == 2
    assert message in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["seq"]


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("pipeline:\n  - filter: gray\n  - filter: difference\n  - filter: threshold\n    threshold: 300\n", "pipeline[2].threshold"),
        ("bogus: 1\n", "bogus"),
        ("backend: [\n", "not valid YAML at line 2"),
        ("- a list\n", "mapping"),
    ],
)
def test_bad_config_exits_2_with_one_line(tmp_path, sequence, monkeypatch, capsys, text, fragment):
    config = tmp_path / "bad.yaml"
    config.write_text(text, encoding="utf-8")
    rc, out, err = run_main(monkeypatch, capsys, tmp_path, sequence, "-c", config, "--backend", "cpu")
    assert rc == 2
    assert fragment in one_line_error(err)
    assert not (tmp_path / "seq_motion.json").exists()


def test_config_file_applies_and_threshold_flag_wins(tmp_path, sequence, monkeypatch, capsys):
    config = tmp_path / "my.yaml"
    config.write_text(
        "backend: cpu\nevents:\n  min_area: 0.5\npipeline:\n  - filter: gray\n  - filter: difference\n  - filter: threshold\n    threshold: 9\n",
        encoding="utf-8",
    )
    rc, _, _ = run_main(monkeypatch, capsys, tmp_path, sequence, "-c", config, "--threshold", "11", "--no-video")
    assert rc == 0
    report = json.loads((tmp_path / "seq_motion.json").read_text(encoding="utf-8"))
    assert report["backend"] == "cpu"
    assert report["config"]["pipeline"] == [{"filter": "gray"}, {"filter": "difference"}, {"filter": "threshold", "threshold": 11}]
    # min_area 0.5: the square covers far less than half of the frame, so no events.
    assert report["config"]["events"]["min_area"] == 0.5 and report["events"] == []


def test_threshold_flag_without_threshold_filter(tmp_path, sequence, monkeypatch, capsys):
    config = tmp_path / "nothr.yaml"
    config.write_text("pipeline:\n  - filter: gray\n  - filter: difference\n  - filter: threshold\n", encoding="utf-8")
    assert run_main(monkeypatch, capsys, tmp_path, sequence, "-c", config, "--threshold", "5", "--backend", "cpu", "--no-video")[0] == 0


def test_missing_input_exits_1(tmp_path, monkeypatch, capsys):
    rc, out, err = run_main(monkeypatch, capsys, tmp_path, tmp_path / "missing.avi", "--backend", "cpu")
    assert rc == 1
    assert "missing.avi" in one_line_error(err)
    assert list(tmp_path.iterdir()) == []


def test_unreadable_input_exits_1(tmp_path, monkeypatch, capsys):
    fake = tmp_path / "fake.mp4"
    fake.write_text("not a video")
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, fake, "--backend", "cpu")
    assert rc == 1 and "fake.mp4" in one_line_error(err)


def test_no_input_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2
    assert "input" in capsys.readouterr().err


def test_cuda_backend_without_cuda(tmp_path, sequence, monkeypatch, capsys):
    if cuda_device_error() is None:
        pytest.skip("a CUDA device is present")
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cuda")
    assert rc == 1
    assert "CUDA" in one_line_error(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["seq"]


def test_auto_backend_falls_back_to_cpu(tmp_path, sequence, monkeypatch, capsys):
    if cuda_device_error() is None:
        pytest.skip("a CUDA device is present")
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "auto", "--no-video")
    assert rc == 0
    assert "CUDA unavailable" in err
    assert json.loads((tmp_path / "seq_motion.json").read_text())["backend"] == "cpu"


def test_cublas_engine_with_cpu_backend(tmp_path, sequence, monkeypatch, capsys):
    from motiondetect.apps.cli import build_parser

    if "--engine" not in build_parser().format_help():
        pytest.skip("this version has no --engine")
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "--engine", "cublas")
    assert rc == 2 and "cuBLAS" in one_line_error(err)


def test_version(capsys):
    assert main(["--version"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"motiondetect {motiondetect.__version__}"
    features = "\n".join(lines[1:])
    for feature in ("CUDA:", "H.264 encoder:", "OpenCV:"):
        assert feature in features
    assert f"OpenCV: {cv2.__version__}" in features


def test_help_lists_every_filter(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for name, cls in REGISTRY.items():
        assert f"  {name}: " in out, name
        for p in cls.PARAMS:
            assert f"{p.name}={p.default}" in out
    assert "min_area=0.001" in out


def test_each_setting_flags_help_is_a_whole_clause():
    """A setting's flag shows the first clause of its text (up to the first ';'); a clause cut
    inside a parenthesis (as --batch's was) reads as a broken sentence in --help."""
    from motiondetect.apps.cli import build_parser

    for action in build_parser()._actions:
        text = (action.help or "").split(" [setting: ")[0]
        assert text.count("(") == text.count(")"), f"{action.option_strings}: {text!r}"


def test_quiet_prints_nothing(tmp_path, sequence, monkeypatch, capsys):
    rc, out, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "-q")
    assert rc == 0
    assert out == "" and err == ""


def test_normal_run_prints_a_summary(tmp_path, sequence, monkeypatch, capsys):
    rc, out, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu")
    assert rc == 0 and out == ""
    assert "8 frames" in err and "1 event," in err


@pytest.mark.parametrize("verbose", [False, True])
def test_library_chatter_only_with_verbose(tmp_path, sequence, monkeypatch, capsys, verbose):
    # PyNvVideoCodec 2.2 sets its logger to INFO on import and logs "Using NVENC 13.0 version":
    # a library that does so mid-run, here on the first frame.

    from motiondetect.pipeline.detector import MotionDetector

    real = MotionDetector.process

    def chatty(self, frame, *args, **kwargs):
        library = logging.getLogger("PyNvVideoCodec")
        library.setLevel(logging.INFO)
        library.info("Using NVENC 13.0 version")
        library.warning("a library warning")
        monkeypatch.setattr(MotionDetector, "process", real)
        return real(self, frame, *args, **kwargs)

    monkeypatch.setattr(MotionDetector, "process", chatty)
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", *(["-v"] if verbose else []))
    assert rc == 0 and "8 frames" in err  # the command's own INFO summary either way
    assert "a library warning" in err
    assert ("Using NVENC" in err) == verbose


def test_interrupt_keeps_partial_outputs(tmp_path, sequence, monkeypatch, capsys):
    from motiondetect.pipeline.detector import MotionDetector

    real = MotionDetector.process
    calls = []

    def process(self, frame):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(self, frame)

    monkeypatch.setattr(MotionDetector, "process", process)
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu")
    assert rc == 130
    report = json.loads((tmp_path / "seq_motion.json").read_text(encoding="utf-8"))
    assert report["complete"] is False and report["frame_count"] == 3
    assert len(decode(tmp_path / "seq_motion.mp4")[0]) == 3


def test_failure_mid_run_keeps_partial_outputs(tmp_path, sequence, monkeypatch, capsys):
    # A fifth image of another size: the detector refuses it after four frames.
    cv2.imwrite(str(sequence / "in000104.png"), np.zeros((30, 30, 3), np.uint8))
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu")
    assert rc == 1
    assert "stopped after 4 frames" in one_line_error(err.splitlines()[-1] + "\n")
    report = json.loads((tmp_path / "seq_motion.json").read_text(encoding="utf-8"))
    assert report["complete"] is False and report["frame_count"] == 4
    assert len(decode(tmp_path / "seq_motion.mp4")[0]) == 4


# -- regressions: bugs found in review, each fixed ----------------------------------------


def test_unhashable_filter_in_config_is_a_clean_error(tmp_path, sequence, monkeypatch, capsys):
    config = tmp_path / "bad.yaml"
    config.write_text("pipeline:\n  - filter: [gray]\n", encoding="utf-8")
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, sequence, "-c", config)
    assert rc == 2 and "pipeline[0]" in one_line_error(err)


def test_output_path_that_is_a_folder(tmp_path, sequence, monkeypatch, capsys):
    (tmp_path / "out.mp4").mkdir()
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "-o", "out.mp4", "--overwrite")
    # Refused before any frame is read: a usage error, nothing written.
    assert rc == 2 and "is a folder" in one_line_error(err)
    assert not (tmp_path / "seq_motion.json").exists()


def test_negative_fps_is_a_usage_error(tmp_path, sequence, monkeypatch, capsys):
    try:
        rc = main([str(sequence), "--backend", "cpu", "--no-video", "--fps", "-5", "--events", str(tmp_path / "e.json")])
    except SystemExit as exc:
        rc = exc.code
    assert rc == 2


# -- real subprocesses ---------------------------------------------------------------------


def run_process(cwd, *argv):
    env = {k: v for k, v in os.environ.items() if k != "MOTIONDETECT_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "motiondetect", *map(str, argv)], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_subprocess_success_quiet(tmp_path, sequence):
    proc = run_process(tmp_path, sequence, "--backend", "cpu", "-q")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""
    report = json.loads((tmp_path / "seq_motion.json").read_text(encoding="utf-8"))
    assert report["complete"] is True and report["frame_count"] == 8
    assert len(decode(tmp_path / "seq_motion.mp4")[0]) == 8


def test_subprocess_bad_config_no_traceback(tmp_path, sequence):
    config = tmp_path / "bad.yaml"
    config.write_text("pipeline:\n  - filter: gray\n  - filter: threshold\n    threshold: 300\n", encoding="utf-8")
    proc = run_process(tmp_path, sequence, "-c", config, "--backend", "cpu")
    assert proc.returncode == 2
    line = one_line_error(proc.stderr)
    assert "pipeline[1].threshold" in line and "frame-pair" in line


def test_subprocess_missing_input_and_cuda(tmp_path):
    proc = run_process(tmp_path, tmp_path / "missing.avi")
    assert proc.returncode == 1 and "missing.avi" in one_line_error(proc.stderr)
    if cuda_device_error() is not None:
        (tmp_path / "in").mkdir()
        cv2.imwrite(str(tmp_path / "in" / "a1.png"), np.zeros((8, 8, 3), np.uint8))
        proc = run_process(tmp_path, tmp_path / "in", "--backend", "cuda")
        assert proc.returncode == 1 and "CUDA" in one_line_error(proc.stderr)


# -- the cuBLAS engine without a GPU (issue 3) ---------------------------------------------


@pytest.mark.skipif(cuda_device_error() is None, reason="this machine has CUDA")
def test_cublas_engine_without_gpu_is_one_clear_line(tmp_path, sequence, monkeypatch, capsys):
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--engine", "cublas", "--no-video")
    assert rc == 1 and "cuBLAS engine needs a CUDA device" in one_line_error(err)
    assert not (tmp_path / "seq_motion.json").exists()  # refused before any frame


def test_cublas_engine_with_cpu_backend_is_a_usage_error(tmp_path, sequence, monkeypatch, capsys):
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--engine", "cublas", "--backend", "cpu", "--no-video")
    assert rc == 2 and "--backend cuda" in one_line_error(err)


def test_cublas_from_config_file_without_gpu(tmp_path, sequence, monkeypatch, capsys):
    if cuda_device_error() is None:
        pytest.skip("this machine has CUDA")
    config = tmp_path / "c.yaml"
    config.write_text("pipeline:\n  - {filter: gray, engine: cublas}\n  - filter: difference\n  - filter: threshold\n")
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, sequence, "-c", config, "--no-video")
    assert rc == 1 and "cuBLAS" in one_line_error(err)


# -- the default pipeline (issue 8) ----------------------------------------------------------


def test_default_run_records_the_default_pipeline(tmp_path, sequence, monkeypatch, capsys):
    rc, _, _ = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "--no-video")
    assert rc == 0
    report = json.loads((tmp_path / "seq_motion.json").read_text(encoding="utf-8"))
    assert report["config"]["pipeline"] == motiondetect.default_config()["pipeline"]
    assert [e["filter"] for e in report["config"]["pipeline"]][:4] == ["gray", "downscale", "register", "gaussian_background"]


def test_threshold_flag_needs_a_threshold_filter(tmp_path, sequence, monkeypatch, capsys):
    # The default pipeline thresholds in standard deviations (gaussian_background), not grey
    # levels: --threshold is refused with a one-line pointer, before any output is written.
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "--threshold", "30")
    line = one_line_error(err)
    assert rc == 2 and "no 'threshold' filter" in line and "gaussian_background.sigmas" in line and "-c high_sensitivity" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["seq"]


@pytest.fixture
def counted_reads(monkeypatch):
    """The number of pictures PyAV has decoded so far, as a list of one item."""
    from motiondetect.sources import video

    count = [0]
    real = video.PyAVCapture.read

    def read(self, *args, **kwargs):
        count[0] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(video.PyAVCapture, "read", read)
    return count


def backend_opened_after(monkeypatch, reads, settle):
    """Patch the command's ``open_backend`` to record ``reads`` when it is called, after
    ``settle(reads)`` has returned; return the record."""
    from motiondetect.apps import cli

    seen: list[int] = []
    real = cli.open_backend

    def open_backend(*args, **kwargs):
        settle(reads)
        seen.append(reads[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(cli, "open_backend", open_backend)
    return seen


def test_cpu_decoder_starts_before_the_device_set_up(tmp_path, monkeypatch, capsys, counted_reads):
    """With a CPU decoder certain (here the CPU backend), pictures are decoded while the backend
    opens; the masks are those of a run that decodes after it."""
    from motiondetect.apps import cli

    path = tmp_path / "square.mp4"
    with VideoWriter(path, 25, (64, 48)) as writer:
        for f in square_frames(count=40, step=1):
            writer.write(f)

    wanted = [20]  # pictures to wait for (5 s at most) before the backend opens

    def settle(reads):
        deadline = time.monotonic() + (5 if wanted[0] else 0.1)
        while reads[0] < max(1, wanted[0]) and time.monotonic() < deadline:
            time.sleep(0.005)

    seen = backend_opened_after(monkeypatch, counted_reads, settle)
    argv = (path, "--backend", "cpu", "--no-video", "--overwrite")
    rc, _, _ = run_main(monkeypatch, capsys, tmp_path, *argv, "--masks", tmp_path / "ahead")
    assert rc == 0 and seen[0] >= 20
    monkeypatch.setattr(cli, "decodes_on_cpu", lambda *args: False)
    counted_reads[0], wanted[0] = 0, 0
    rc, _, _ = run_main(monkeypatch, capsys, tmp_path, *argv, "--masks", tmp_path / "after")
    assert rc == 0 and seen[1] <= 1  # the first picture, decoded at open to check the file
    ahead, after = sorted((tmp_path / "ahead").iterdir()), sorted((tmp_path / "after").iterdir())
    assert len(ahead) == 40 and [p.name for p in ahead] == [p.name for p in after]
    assert all(np.array_equal(cv2.imread(str(a)), cv2.imread(str(b))) for a, b in zip(ahead, after))
    assert any(cv2.imread(str(a)).any() for a in ahead)  # motion was found


def test_no_decoding_before_the_set_up_where_nvdec_may_decode(tmp_path, monkeypatch, capsys, small_video, counted_reads):
    """--decoder auto with PyNvVideoCodec installed: the decoder is chosen after the set-up, so
    PyAV decodes nothing before it."""
    import importlib.util

    from motiondetect.pipeline import assembly

    real = importlib.util.find_spec
    monkeypatch.setattr(assembly.importlib.util, "find_spec", lambda name, *a: object() if name == "PyNvVideoCodec" else real(name, *a))
    seen = backend_opened_after(monkeypatch, counted_reads, lambda reads: time.sleep(0.2))
    rc, _, _ = run_main(monkeypatch, capsys, tmp_path, small_video, "--no-video")
    assert rc == 0 and seen == [0]


def test_a_set_up_failure_stops_the_decoding_begun_beside_it(tmp_path, monkeypatch, capsys, small_video):
    """The backend fails after the decode thread started: one line, exit 1, and no thread left."""
    from motiondetect.apps import cli
    from motiondetect.core.errors import CudaUnavailable

    def refuse(*args, **kwargs):
        raise CudaUnavailable("CUDA unavailable: no device (a test)")

    monkeypatch.setattr(cli, "open_backend", refuse)
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, small_video, "--backend", "cpu", "--no-video")
    assert rc == 1 and "no device (a test)" in one_line_error(err)
    assert not [t for t in threading.enumerate() if t.name == "motiondetect-decode" and t.is_alive()]


def test_batch_that_cannot_apply_says_so(tmp_path, small_video, monkeypatch, capsys):
    # The CPU backend runs one frame at a time: --batch would otherwise be dropped without a word.
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, small_video, "--backend", "cpu", "--no-video", "--batch", "8")
    assert rc == 0
    assert "notice: scan.batch 8 is not used: this run goes one frame at a time (the CPU backend)" in err
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, small_video, "--backend", "cpu", "--no-video", "--overwrite")
    assert rc == 0 and "scan.batch" not in err


def test_no_output_replaces_an_input_still_to_be_read(tmp_path, small_video, monkeypatch, capsys):
    """``motiondetect '*.mp4' --overwrite`` again in a footage folder: the glob now also holds the
    first run's cam_motion.mp4, which cam.mp4's output would have replaced before it was read."""
    (tmp_path / "cam.mp4").write_bytes(small_video.read_bytes())
    (tmp_path / "cam_motion.mp4").write_bytes(small_video.read_bytes())
    before = (tmp_path / "cam_motion.mp4").read_bytes()
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, "cam.mp4", "cam_motion.mp4", "--backend", "cpu", "--overwrite")
    assert rc == 2
    assert "output video" in one_line_error(err) and "is one of the inputs" in err
    assert (tmp_path / "cam_motion.mp4").read_bytes() == before
    # An input later in the batch is refused too, and the inputs before it are scanned.
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, "cam_motion.mp4", "cam.mp4", "--backend", "cpu", "--overwrite")
    assert rc == 2 and "error: cam.mp4: output video" in err and "is one of the inputs" in err
    assert (tmp_path / "cam_motion.mp4").read_bytes() == before
    assert (tmp_path / "cam_motion_motion.json").is_file()


def test_a_bad_input_of_a_batch_is_reported_and_the_others_are_scanned(tmp_path, small_video, monkeypatch, capsys):
    (tmp_path / "empty.mp4").write_bytes(b"")
    for name in ("s1.mp4", "s2.mp4"):
        (tmp_path / name).write_bytes(small_video.read_bytes())
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, "s1.mp4", "empty.mp4", "s2.mp4", "--backend", "cpu", "--no-video")
    assert rc == 1
    assert "error: empty.mp4: input is an empty file" in err
    assert err.strip().splitlines()[-1] == "motiondetect: error: 1 of 3 inputs failed ('empty.mp4'); the others were scanned"
    assert (tmp_path / "s1_motion.json").is_file() and (tmp_path / "s2_motion.json").is_file()
    assert "Traceback" not in err


def test_two_inputs_of_the_same_name_are_told_apart_from_a_missing_stem(tmp_path, small_video, monkeypatch, capsys):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "cam.mp4").write_bytes(small_video.read_bytes())
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, "a/cam.mp4", "b/cam.mp4", "--backend", "cpu", "--no-video")
    assert rc == 2
    assert "b/cam.mp4: events file" in err and "two inputs have the same name" in err and "--overwrite" not in err


def test_min_area_flag_wins_over_a_configs_min_pixels(tmp_path, small_video, monkeypatch, capsys):
    (tmp_path / "mp.yaml").write_text("events:\n  min_pixels: 1\n")
    rc, _, err = run_main(
        monkeypatch, capsys, tmp_path, small_video, "--backend", "cpu", "--no-video", "-c", "mp.yaml", "--min-area", "0.9"
    )
    assert rc == 0 and "--min-area replaces the config's events.min_pixels (1)" in err
    report = json.loads((tmp_path / "small_motion.json").read_text())
    assert report["config"]["events"]["min_pixels"] is None and report["events"] == []


def test_the_reports_roi_image_path_works_from_another_folder(tmp_path, small_video, monkeypatch, capsys):
    cv2.imwrite(str(tmp_path / "roi.png"), np.full((48, 64), 255, np.uint8))
    rc, _, _ = run_main(monkeypatch, capsys, tmp_path, small_video, "--backend", "cpu", "--no-video", "--roi", "roi.png")
    assert rc == 0
    mask = json.loads((tmp_path / "small_motion.json").read_text())["config"]["roi"]["mask"]
    assert Path(mask).is_absolute() and Path(mask) == tmp_path / "roi.png"


def test_a_folder_named_as_a_preset_is_not_the_preset(tmp_path, small_video, monkeypatch, capsys):
    (tmp_path / "outdoor").mkdir()
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, small_video, "--backend", "cpu", "--no-video", "-c", "outdoor")
    assert rc == 0, err
