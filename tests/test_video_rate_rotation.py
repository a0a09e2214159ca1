"""Video files' own frame rate and orientation: a variable-frame-rate file is read at its average
rate, and the videos written carry the input's display matrix (a phone's 90-degree turn)."""

from __future__ import annotations

import json
import logging
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from helpers import SHARED_SAMPLES
from helpers import run_cli as run_main

from motiondetect.outputs.writer import VideoWriter
from motiondetect.sources.video import ConcatSource, VideoHandler, stream_rates, variable_rate

av = pytest.importorskip("av")
ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.usefixtures("restored_logging")

#: A phone held upright: its frames stored turned, players turning them back 90 degrees
#: (FFmpeg's layout, 16.16 fixed point; ``VideoFrame.rotation`` reads 90).
TURN_90 = (0, -65536, 0, 65536, 0, 0, 0, 0, 1 << 30)


def vfr_times_ms() -> list[int]:
    """90 timestamps (ms) of a camera on a 50 fps clock that drops its rate: 30 frames 20 ms
    apart, then 60 frames 100 or 120 ms apart (108 on average), the last at 7.06 s."""
    times, t = [20 * i for i in range(30)], 580
    for k in range(60):
        t += 120 if k % 5 in (1, 3) else 100
        times.append(t)
    return times


#: Frames 60-75 of the test videos hold a moving square; frame 60 is at 3.92 s in vfr_times_ms.
MOVING = range(60, 76)


def scene(count: int, size=(64, 48)) -> list[np.ndarray]:
    width, height = size
    frames = []
    for i in range(count):
        image = np.full((height, width, 3), 90, np.uint8)
        if i in MOVING:
            x = 4 + 2 * (i - MOVING.start)
            image[10:30, x : x + 16] = 230
        frames.append(image)
    return frames


def encode(path: Path, times_ms: list[int], rate=None, matrix=None, size=(64, 48)) -> Path:
    """Encode ``scene`` frames with PyAV (libx264) at these timestamps, in milliseconds;
    ``rate``: the stream's declared rate (Matroska writes it as the frames' default duration);
    ``matrix``: a display matrix for the container."""
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=rate) if rate else container.add_stream("libx264")
        stream.width, stream.height, stream.pix_fmt = *size, "yuv420p"
        stream.codec_context.time_base = Fraction(1, 1000)
        if matrix is not None:
            stream.set_display_matrix(list(matrix))
        for t, image in zip(times_ms, scene(len(times_ms), size)):
            frame = av.VideoFrame.from_ndarray(image, format="bgr24")
            frame.pts, frame.time_base = t, Fraction(1, 1000)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def probe(path: Path) -> tuple[float, float, int, list[int] | None, tuple[int, int]]:
    """(guessed rate, duration in s, frames decoded, the first frame's display matrix, size)."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frames = list(container.decode(stream))
        side = frames[0].side_data.get("DISPLAYMATRIX")
        matrix = list(np.frombuffer(bytes(side), np.int32)) if side is not None else None
        return float(stream.guessed_rate), container.duration / 1e6, len(frames), matrix, (frames[0].width, frames[0].height)


def vfr_notices(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "variable frame rate" in r.getMessage()]


# -- the rate a file is read at ------------------------------------------------------------


@pytest.mark.parametrize(
    "guessed, average, frames, expected",
    [
        (50, 1440000 / 110747, 90, 1440000 / 110747),  # the MP4 below: 13.0 fps, not 50
        (30, 20, 600, 20),  # a camera that dropped from 30 to 20 fps at night
        (25, 1000 / 41, 1000, 1000 / 41),  # 2.5 %: a recording that dropped 25 frames of 1025
        (25, 160000 / 6403, 90, None),  # constant rate; libx264's last frame 27/16000 s long
        (30000 / 1001, 1440000 / 48187, 90, None),  # NTSC with millisecond timestamps: 0.3 % off
        (30000 / 1001, 29.97, 107892, None),  # an hour at 29.97 read as 30000/1001: 0.001 %
        (30, 29.97, 107892, None),  # the same hour where the guess is 30 fps: 0.1 %
        (25, 25, 750, None),  # the bundled AVI
        (25, 80000 / 3227, 5, None),  # a 5-frame clip: its last frame's length is 0.8 %
        (25, 5 / 0.16, 5, None),  # a 5-frame clip whose last frame has no length: one frame short
        (25, 20, 0, None),  # no frame count (Matroska, MPEG-TS): unknown
        (25, 0, 250, None),  # no average: unknown
        (0, 25, 250, None),  # no guess: the caller's fallbacks, as before
    ],
)
def test_variable_rate_only_where_the_average_disagrees_clearly(guessed, average, frames, expected):
    got = variable_rate(guessed, average, frames)
    assert got == (None if expected is None else pytest.approx(expected))


@pytest.mark.parametrize("suffix", [".mp4", ".mov"])
def test_variable_frame_rate_file_is_read_at_its_average_rate(tmp_path, caplog, suffix):
    path = encode(tmp_path / f"phone{suffix}", vfr_times_ms())
    guessed, seconds, count, _, _ = probe(path)
    assert (guessed, count) == (50.0, 90)  # what the file was read at before: 90 frames in 1.8 s
    with caplog.at_level(logging.INFO, logger="motiondetect"):
        with VideoHandler(path) as video:
            assert video.fps == pytest.approx(90 / seconds) and video.fps == pytest.approx(13.0, abs=0.05)
            frames = list(video)
    # Each frame is at its own timestamp (the last at 7.06 s; 89 / fps put it at 6.85 s, and
    # 89 / 50 at 1.78 s before the average rate was read).
    assert len(frames) == 90 and video.timestamped
    assert [f.time for f in frames] == [t / 1000 for t in vfr_times_ms()]
    (notice,) = vfr_notices(caplog)
    assert f"phone{suffix}" in notice and "50 fps" in notice and "13 fps" in notice and "--fps" in notice


def test_fps_overrides_the_average_rate(tmp_path, caplog):
    path = encode(tmp_path / "phone.mp4", vfr_times_ms())
    with caplog.at_level(logging.INFO, logger="motiondetect"):
        with VideoHandler(path, fps=50) as video:
            assert video.fps == 50
    assert not vfr_notices(caplog)


def test_matroska_stores_no_frame_count_so_its_guess_stays(tmp_path, caplog):
    # Matroska counts no frames in its header: the average is unknown without reading the
    # whole file, and the rate stays FFmpeg's guess, as before (docs/usage.md says so).
    path = encode(tmp_path / "phone.mkv", vfr_times_ms(), rate=50)
    with av.open(str(path)) as container:
        assert container.streams.video[0].frames == 0
    with caplog.at_level(logging.INFO, logger="motiondetect"):
        with VideoHandler(path) as video:
            assert video.fps == 50.0
    assert not vfr_notices(caplog)


def test_a_variable_rate_matroska_file_reports_no_lost_frames(tmp_path):
    """Its first 8 frames are steady (50 fps), then 100-120 ms apart: those gaps are the rate
    falling, not frames lost, and Matroska counts no frames to tell (264 were reported)."""
    with VideoHandler(encode(tmp_path / "phone.mkv", vfr_times_ms(), rate=50)) as video:
        assert sum(1 for _ in video) == 90
        assert video.decode_errors == 0


def test_frames_lost_from_a_steady_matroska_file_are_still_counted(tmp_path):
    """Frames 30..39 and 60 never stored (a damaged recording): its steps stay whole frames."""
    times = [40 * i for i in range(90) if not (30 <= i < 40 or i == 60)]
    with VideoHandler(encode(tmp_path / "damaged.mkv", times, rate=25)) as video:
        assert sum(1 for _ in video) == 79
        assert video.decode_errors == 11


@pytest.mark.parametrize(
    "name, times, rate",
    [
        ("cfr.mp4", [40 * i for i in range(90)], None),
        ("ntsc_ms.mp4", [round(i * 1001 / 30) for i in range(90)], None),  # 29.97 with ms timestamps
        ("short.mp4", [40 * i for i in range(5)], None),
        ("cfr.mkv", [40 * i for i in range(90)], 25),
        ("cfr.mov", [40 * i for i in range(90)], None),
    ],
)
def test_constant_rate_files_keep_the_guessed_rate_exactly(tmp_path, caplog, name, times, rate):
    path = encode(tmp_path / name, times, rate=rate)
    with caplog.at_level(logging.INFO, logger="motiondetect"):
        with VideoHandler(path) as video:
            assert video.fps == probe(path)[0]
    assert not vfr_notices(caplog)


def test_an_edit_list_that_hides_frames_is_not_a_variable_rate(tmp_path, caplog):
    # A stream-copied cut keeps the frames before its start for the decoder, hidden by an edit
    # list: 90 frames counted, 1.2 s of them hidden, so the count over the shown duration is
    # 37.5 fps. FFmpeg's average comes from the sample table: 25.
    path = encode(tmp_path / "cut.mp4", [40 * i - 1200 for i in range(90)])
    with caplog.at_level(logging.INFO, logger="motiondetect"):
        with VideoHandler(path) as video:
            assert video.fps == 25.0
    assert not vfr_notices(caplog)


def test_a_truncated_avi_is_not_a_variable_rate(tmp_path, sample_clip, caplog):
    # Its header announces 750 frames, its index holds 15 s of them: 50 fps were they taken
    # for a count and a duration. An AVI stores one rate (a dropped frame is an empty chunk).
    path = tmp_path / "cut.avi"
    data = sample_clip.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with caplog.at_level(logging.INFO, logger="motiondetect"):
        with VideoHandler(path) as video:
            assert video.fps == 25.0
    assert not vfr_notices(caplog)


def test_ntsc_written_by_the_writer_keeps_30000_over_1001(tmp_path):
    with VideoWriter(tmp_path / "ntsc.mp4", 30000 / 1001, (32, 24)) as writer:
        for i in range(60):
            writer.write(np.full((24, 32, 3), i, np.uint8))
    with VideoHandler(tmp_path / "ntsc.mp4") as video:
        assert video.fps == 30000 / 1001


SAMPLE_VIDEOS = sorted(
    p for folder in (ROOT / "samples", SHARED_SAMPLES) if folder.is_dir() for p in folder.rglob("*") if p.suffix.lower() in {".avi", ".mp4"}
)


@pytest.mark.parametrize("path", SAMPLE_VIDEOS, ids=lambda p: p.name)
def test_sample_videos_keep_the_rate_they_had(path):
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        before = float(stream.guessed_rate or stream.average_rate or stream.base_rate)
        assert stream_rates(stream) == (before, before)
    with VideoHandler(path) as video:
        assert video.fps == before


def test_cli_times_a_variable_frame_rate_file_at_its_average(tmp_path, monkeypatch, capsys):
    path = encode(tmp_path / "phone.mp4", vfr_times_ms())
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, path, "--backend", "cpu", "--clips", "clips")
    assert rc == 0 and "variable frame rate" in err
    report = json.loads((tmp_path / "phone_motion.json").read_text(encoding="utf-8"))
    assert report["fps"] == pytest.approx(13.0, abs=0.05)
    (event,) = report["events"]
    assert (event["motion_start_frame"], event["motion_end_frame"]) == (MOVING.start, MOVING.stop - 1)
    # Frame 60's own timestamp is 3.92 s and frame 75's 5.54 s; read at 50 fps they were put
    # at 1.2 and 1.5 s, at the average rate within 0.8 s of them (the rate changed inside the
    # file: the first 30 frames are 50 fps, the rest 9.3). The event's times are its first and
    # last frame's own.
    times = vfr_times_ms()
    for frame in (event["motion_start_frame"], event["motion_end_frame"]):
        assert abs(frame / report["fps"] - times[frame] / 1000) < 0.8
    assert (event["start_time"], event["end_time"]) == (times[event["start_frame"]] / 1000, times[event["end_frame"]] / 1000)
    # The annotated video and the clip last as long as the input (1.8 s at 50 fps before).
    _, seconds, _, _, _ = probe(path)
    _, annotated, count, _, _ = probe(tmp_path / "phone_motion.mp4")
    assert count == 90 and annotated == pytest.approx(seconds, abs=0.1)
    # The clip keeps its frames' own times: it spans them, not clip_frames / fps.
    _, clip, clip_frames, _, _ = probe(tmp_path / "clips" / "phone_event0001.mp4")
    first, last = event["start_frame"], event["end_frame"]
    assert clip_frames == last - first + 1
    assert clip == pytest.approx((times[last] - times[first] + times[last] - times[last - 1]) / 1000, abs=0.1)


# -- orientation ---------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".mp4", ".mov", ".mkv"])
def test_writer_carries_a_display_matrix(tmp_path, suffix):
    path = tmp_path / f"turned{suffix}"
    with VideoWriter(path, 25, (64, 48), display_matrix=TURN_90) as writer:
        for image in scene(5):
            writer.write(image)
    _, _, count, matrix, size = probe(path)
    assert count == 5 and size == (64, 48)  # the frames as stored
    assert matrix == list(TURN_90)
    with av.open(str(path)) as container:
        assert next(container.decode(video=0)).rotation == 90


def test_writer_without_a_display_matrix_writes_none(tmp_path):
    with VideoWriter(tmp_path / "plain.mp4", 25, (64, 48)) as writer:
        writer.write(scene(1)[0])
    assert probe(tmp_path / "plain.mp4")[3] is None


def test_opencv_fallback_says_the_video_is_in_the_stored_orientation(tmp_path, monkeypatch, caplog):
    import motiondetect.outputs.writer as writer_module

    monkeypatch.setattr(writer_module, "h264_encoder", lambda: None)
    writer_module._notice_stored_orientation.cache_clear()
    with caplog.at_level(logging.INFO, logger="motiondetect"):
        for name in ("a.mp4", "b.mp4"):
            with VideoWriter(tmp_path / name, 25, (32, 24), display_matrix=TURN_90) as writer:
                writer.write(np.zeros((24, 32, 3), np.uint8))
    notices = [r.getMessage() for r in caplog.records if "stored orientation" in r.getMessage()]
    assert len(notices) == 1 and "OpenCV" in notices[0]  # once, not once a clip
    writer_module._notice_stored_orientation.cache_clear()


@pytest.mark.parametrize(
    "matrix",
    [TURN_90, (0, 65536, 0, -65536, 0, 0, 0, 0, 1 << 30), (-65536, 0, 0, 0, 65536, 0, 0, 0, 1 << 30)],
    ids=["90", "270", "mirrored"],
)
@pytest.mark.parametrize("decode_first", [True, False])
def test_handler_reads_the_display_matrix(tmp_path, matrix, decode_first):
    path = encode(tmp_path / "turned.mp4", [40 * i for i in range(10)], matrix=matrix)
    with VideoHandler(path, decode_first=decode_first) as video:
        assert video.display_matrix == matrix  # decode_first=False: from a frame of a second opening
        assert video.size == (64, 48)
        frames = list(video)
    assert len(frames) == 10 and frames[0].image.shape[:2] == (48, 64)  # as stored, not turned


def test_handler_without_a_display_matrix(tmp_path, sample_clip):
    identity = (65536, 0, 0, 0, 65536, 0, 0, 0, 1 << 30)
    path = encode(tmp_path / "identity.mp4", [40 * i for i in range(5)], matrix=identity)
    for source in (path, sample_clip):
        with VideoHandler(source) as video:
            assert video.display_matrix is None


def test_concat_takes_the_first_inputs_display_matrix(tmp_path):
    turned = encode(tmp_path / "turned.mp4", [40 * i for i in range(5)], matrix=TURN_90)
    plain = encode(tmp_path / "plain.mp4", [40 * i for i in range(5)])
    with VideoHandler(turned) as a, VideoHandler(plain) as b:
        assert ConcatSource([a, b]).display_matrix == TURN_90
        assert ConcatSource([b, a]).display_matrix is None


def test_cli_outputs_play_turned_as_the_input(tmp_path, monkeypatch, capsys):
    path = encode(tmp_path / "upright.mp4", [40 * i for i in range(90)], matrix=TURN_90)
    rc, _, err = run_main(
        monkeypatch, capsys, tmp_path, path, "--backend", "cpu", "--clips", "clips", "--mask-out", "mask.mp4", "--masks", "masks"
    )
    assert rc == 0, err
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, path, "--backend", "cpu", "--only-motion", "-o", "only.mp4", "--overwrite")
    assert rc == 0, err
    written = [tmp_path / "upright_motion.mp4", tmp_path / "clips" / "upright_event0001.mp4", tmp_path / "mask.mp4"]
    for video in written + [tmp_path / "only.mp4"]:
        _, _, _, matrix, size = probe(video)
        assert matrix == list(TURN_90) and size == (64, 48), video
    # Stream-copied clips keep it too (the input's own stream parameters).
    rc, _, err = run_main(
        monkeypatch, capsys, tmp_path, path, "--backend", "cpu", "--no-video", "--clips", "copied", "--clip-mode", "copy", "--overwrite"
    )
    assert rc == 0, err
    assert probe(tmp_path / "copied" / "upright_event0001.mp4")[3] == list(TURN_90)
