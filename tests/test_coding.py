"""The background model's values for how its source was coded: an inter-coded video's
``still_frames_inter`` (``motiondetect.pipeline.coding``, ``VideoHandler.inter_coded``)."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest
from helpers import run_cli as run_main

import motiondetect.apps.evaluate as evaluate_module
from motiondetect.outputs.writer import VideoWriter
from motiondetect.pipeline.coding import for_coding
from motiondetect.pipeline.config import build_filters, default_config
from motiondetect.pipeline.detector import MotionDetector
from motiondetect.pipeline.frame_rate import for_source
from motiondetect.sources.video import ConcatSource, VideoHandler, _fourcc_codec, is_inter_coded

#: The scene of :func:`stopping_square`: the square moves in from frame MOVES and rests from STOP on.
MOVES, STOP, FRAMES = 30, 40, 90


def model(config: dict) -> dict:
    """The gaussian_background entry of a config's pipeline."""
    (entry,) = [e for e in config["pipeline"] if e["filter"] == "gaussian_background"]
    return entry


def stopping_square() -> list[np.ndarray]:
    """FRAMES BGR frames 96x64 (uint8): a textured beige wall; a 24-pixel dark red square slides
    in from the left over frames MOVES..STOP - 1 and rests from STOP on."""
    rng = np.random.default_rng(7)
    texture = cv2.GaussianBlur(rng.integers(70, 130, (64, 96), dtype=np.uint8), (5, 5), 0).astype(np.float64)
    wall = np.clip(texture[..., None] * (0.9, 1.0, 1.1), 0, 255).astype(np.uint8)
    frames = []
    for i in range(FRAMES):
        frame = wall.copy()
        if i >= MOVES:
            x = 4 * (min(i, STOP) - MOVES) + 8
            frame[20:44, x : x + 24] = (40, 40, 210)
        frames.append(frame)
    return frames


def write_sequence(folder, frames) -> None:
    folder.mkdir(parents=True)
    for i, frame in enumerate(frames):
        cv2.imwrite(str(folder / f"in{i:06d}.png"), frame)


def write_mjpeg(path, frames) -> None:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 25, (frames[0].shape[1], frames[0].shape[0]))
    assert writer.isOpened()
    for frame in frames:
        writer.write(frame)
    writer.release()


def write_h264(path, frames) -> None:
    with VideoWriter(path, 25, (frames[0].shape[1], frames[0].shape[0])) as writer:
        for frame in frames:
            writer.write(frame)


@pytest.mark.parametrize(
    "codec, inter",
    [("h264", True), ("hevc", True), ("mpeg4", True), ("mpeg2video", True), ("vp9", True), ("av1", True)]
    + [("mjpeg", False), ("prores", False), ("ffv1", False), ("png", False), ("rawvideo", False), ("no such codec", False)],
)
def test_inter_coded_codecs_are_lossy_ones_that_predict_frames(codec, inter):
    assert is_inter_coded(codec) is inter


@pytest.mark.parametrize(
    "fourcc, codec, inter",
    [("avc1", "h264", True), ("H264", "h264", True), ("hev1", "hevc", True), ("MJPG", "mjpeg", False), ("YUYV", "rawvideo", False)],
)
def test_a_cameras_or_streams_fourcc_names_its_codec(fourcc, codec, inter):
    """OpenCV's captures (cameras, URLs) report a FourCC, not FFmpeg's decoder name."""

    class Capture:
        def get(self, prop):
            assert prop == cv2.CAP_PROP_FOURCC
            return float(cv2.VideoWriter_fourcc(*fourcc))

    assert _fourcc_codec(Capture()) == codec and is_inter_coded(codec) is inter


@pytest.mark.parametrize("reported", [0.0, -1.0])
def test_a_capture_without_a_fourcc_is_no_inter_coded_video(reported):
    class Capture:
        def get(self, prop):
            return reported

    assert _fourcc_codec(Capture()) == "" and not is_inter_coded("")


def test_video_handlers_know_how_their_source_was_coded(tmp_path):
    frames = stopping_square()[:5]
    write_sequence(tmp_path / "seq", frames)
    write_mjpeg(tmp_path / "clip.avi", frames)
    write_h264(tmp_path / "clip.mp4", frames)
    with (
        VideoHandler(str(tmp_path / "seq")) as seq,
        VideoHandler(str(tmp_path / "clip.avi")) as mjpeg,
        VideoHandler(str(tmp_path / "clip.mp4")) as h264,
    ):
        assert (seq.inter_coded, mjpeg.inter_coded, h264.inter_coded) == (False, False, True)
        assert ConcatSource([mjpeg, h264]).inter_coded and not ConcatSource([mjpeg]).inter_coded


def test_for_coding_swaps_in_the_inter_coded_count():
    config = default_config()
    assert for_coding(config, False) is config
    swapped = for_coding(config, True)
    assert (model(swapped)["still_frames"], model(config)["still_frames"]) == (17, 7)  # the input is not changed
    model(config).pop("still_frames_inter")  # left out: its default
    assert model(for_coding(config, True))["still_frames"] == 17
    model(config)["still_frames_inter"] = 7  # the same value: nothing to change
    assert for_coding(config, True) is config
    model(config)["still_frames_inter"] = 0  # off for inter-coded video only
    assert model(for_coding(config, True))["still_frames"] == 0


def test_for_source_swaps_before_it_rescales_to_the_frame_rate():
    config = default_config()
    assert model(for_source(config, 25.0, inter_coded=True))["still_frames"] == 17
    assert model(for_source(config, 10.0, inter_coded=True))["still_frames"] == 7  # 17 / 2.5 = 6.8
    assert model(for_source(config, 10.0))["still_frames"] == 3  # 7 / 2.5 = 2.8
    assert for_source(config, 25.0) is config


def frames_shown_at_rest(path) -> int:
    """Frames after STOP on which the pipeline built as the command builds it still flags the
    resting square."""
    with VideoHandler(str(path)) as video:
        detector = MotionDetector(build_filters(for_source(default_config(), video.fps, inter_coded=video.inter_coded)), annotate=False)
        fractions = [detector.process(frame.image).motion_fraction for frame in video]
    assert all(f > 0 for f in fractions[MOVES + 2 : STOP]), fractions  # the moving square is found
    return next(i for i in range(STOP, FRAMES) if fractions[i] == 0) - STOP


def test_a_resting_object_stays_longer_in_an_inter_coded_video(tmp_path):
    """The square at rest repeats its pixels exactly in all three files (H.264 skips its blocks):
    an image sequence and Motion JPEG take it into the background after still_frames (7), H.264
    after still_frames_inter (17), about ten frames later (a frame either way: the codecs'
    first frames at rest differ a little from the last moving ones)."""
    frames = stopping_square()
    write_sequence(tmp_path / "seq", frames)
    write_mjpeg(tmp_path / "clip.avi", frames)
    write_h264(tmp_path / "clip.mp4", frames)
    shown = {name: frames_shown_at_rest(tmp_path / name) for name in ("seq", "clip.avi", "clip.mp4")}
    assert abs(shown["seq"] - shown["clip.avi"]) <= 1, shown
    assert 7 <= min(shown["seq"], shown["clip.avi"]) and max(shown["seq"], shown["clip.avi"]) <= 12, shown
    assert 9 <= shown["clip.mp4"] - max(shown["seq"], shown["clip.avi"]) <= 12, shown


def test_the_command_reports_an_inter_coded_files_values(tmp_path, monkeypatch, capsys):
    frames = stopping_square()[:20]
    write_h264(tmp_path / "clip.mp4", frames)
    write_mjpeg(tmp_path / "clip.avi", frames)
    for name in ("clip.mp4", "clip.avi"):
        rc, _, err = run_main(monkeypatch, capsys, tmp_path, tmp_path / name, "--backend", "cpu", "--no-video", "--overwrite")
        assert rc == 0, err
    assert json.loads((tmp_path / "clip_motion.json").read_text(encoding="utf-8"))["rescaled"] is None  # the .avi, written last
    write_h264(tmp_path / "other.mp4", frames)
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, tmp_path / "other.mp4", "--backend", "cpu", "--no-video")
    assert rc == 0, err
    assert json.loads((tmp_path / "other_motion.json").read_text(encoding="utf-8"))["rescaled"]["gaussian_background.still_frames"] == 17


def test_evaluate_inter_coded_scores_with_the_inter_coded_count(tmp_path, capsys):
    """The CDnet-layout copy of the resting square, labelled foreground throughout: with
    --inter-coded the model keeps it ten frames longer, so recall rises."""
    folder = tmp_path / "clip"
    frames = stopping_square()
    write_sequence(folder / "input", frames)
    (folder / "groundtruth").mkdir()
    for i, frame in enumerate(frames):
        label = np.where(np.any(frame != stopping_square()[0], axis=2), 255, 0).astype(np.uint8)
        cv2.imwrite(str(folder / "groundtruth" / f"gt{i:06d}.png"), label)
    recalls = []
    for extra in ([], ["--inter-coded"]):
        assert (
            evaluate_module.main(
                [str(folder), "--backend", "cpu", "--skip", str(MOVES), "-q", "--json", str(tmp_path / "s.json"), "--overwrite", *extra]
            )
            == 0
        )
        recalls.append(json.loads((tmp_path / "s.json").read_text())["evaluations"][0]["methods"][0]["pixel"]["recall"])
    assert recalls[1] > recalls[0] + 0.05, recalls
    capsys.readouterr()
