"""copy_clips: event clips cut by stream copy, checked against a plain PyAV decode of the input.

The bundled clip (MPEG-4 Part 2 with packed B-frames in AVI, a layout FFmpeg only half
supports for copying) is first re-encoded to H.264 in MP4 with a keyframe exactly every 25
frames (1 s at 25 fps), once without and once with B-frames, and once with an AAC track.
"""

from __future__ import annotations

import os
from fractions import Fraction
from itertools import pairwise
from pathlib import Path

import av
import numpy as np
import pytest

from motiondetect.core.errors import VideoOpenFailure
from motiondetect.outputs import stream_copy
from motiondetect.outputs.stream_copy import copy_clips

FPS = 25
GOP = 25
FRAMES = 300  # 12 s of the clip: enough for several groups, quick to encode
AUDIO_RATE = 48_000


def encode(source: Path, path: Path, b_frames: int, audio: bool = False) -> Path:
    """Re-encode the first FRAMES frames of ``source`` to H.264 (libx264, a keyframe every GOP
    frames and nowhere else), with a 440 Hz AAC tone as long as the video when ``audio``."""
    with av.open(str(source)) as inp, av.open(str(path), "w") as out:
        options = {"g": str(GOP), "keyint_min": str(GOP), "sc_threshold": "0", "bf": str(b_frames), "preset": "veryfast"}
        video = out.add_stream("libx264", rate=FPS, options=options)
        video.width, video.height, video.pix_fmt = 320, 240, "yuv420p"
        tone = None
        if audio:
            tone = out.add_stream("aac", rate=AUDIO_RATE)
            tone.layout = "mono"
        count = 0
        for frame in inp.decode(video=0):
            frame = frame.reformat(format="yuv420p")
            frame.pts, frame.time_base = count, Fraction(1, FPS)
            out.mux(video.encode(frame))
            count += 1
            if count == FRAMES:
                break
        out.mux(video.encode())
        if tone is not None:
            samples = FRAMES * AUDIO_RATE // FPS
            for first in range(0, samples, 1024):
                t = np.arange(first, min(first + 1024, samples)) / AUDIO_RATE
                chunk = av.AudioFrame.from_ndarray(
                    (0.2 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)[None], format="fltp", layout="mono"
                )
                chunk.sample_rate, chunk.pts = AUDIO_RATE, first
                out.mux(tone.encode(chunk))
            out.mux(tone.encode())
    assert count == FRAMES
    return path


def decode(path: Path) -> list[tuple[float, bool, np.ndarray]]:
    """Every picture of the video stream in display order: (seconds from the stream's first
    frame, whether it is a keyframe, its yuv420p planes as one array)."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frames = [(frame.pts, frame.key_frame, frame.to_ndarray(format="yuv420p")) for frame in container.decode(stream)]
        origin = frames[0][0]
        return [(float((pts - origin) * stream.time_base), bool(key), image) for pts, key, image in frames]


@pytest.fixture(scope="module")
def h264(sample_clip, tmp_path_factory) -> Path:
    return encode(sample_clip, tmp_path_factory.mktemp("input") / "plain.mp4", b_frames=0)


@pytest.fixture(scope="module")
def h264_b_frames(sample_clip, tmp_path_factory) -> Path:
    return encode(sample_clip, tmp_path_factory.mktemp("input") / "b_frames.mp4", b_frames=3)


@pytest.fixture(scope="module")
def h264_aac(sample_clip, tmp_path_factory) -> Path:
    return encode(sample_clip, tmp_path_factory.mktemp("input") / "with_audio.mp4", b_frames=3, audio=True)


@pytest.fixture(scope="module")
def reference(h264):
    return decode(h264)


def expected_range(frames, start: float, end: float) -> tuple[int, int]:
    """Indices of the keyframe at or before ``start`` and of the last frame at or before ``end``."""
    start_index = round(start * FPS)
    keyframe = max(i for i, (_, key, _) in enumerate(frames[: start_index + 1]) if key)
    last = max(i for i, (seconds, _, _) in enumerate(frames) if seconds <= end + 1e-9)
    return keyframe, last


def assert_clip_is(path: Path, frames, first: int, last: int) -> None:
    """The clip decodes to exactly input frames first..last, bit for bit, starting at time 0."""
    clip = decode_with_times(path)
    assert len(clip) == last - first + 1, f"{path.name}: {len(clip)} frames, want {last - first + 1}"
    assert clip[0][0] == 0.0
    for k, (seconds, image) in enumerate(clip):
        assert np.array_equal(image, frames[first + k][2]), f"{path.name}: frame {k} differs from input frame {first + k}"
        assert seconds == pytest.approx(frames[first + k][0] - frames[first][0], abs=1e-3)


def decode_with_times(path: Path) -> list[tuple[float, np.ndarray]]:
    """The clip's pictures with their own timestamps in seconds (not moved to its first frame)."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return [(float(frame.pts * stream.time_base), frame.to_ndarray(format="yuv420p")) for frame in container.decode(stream)]


def test_reference_has_keyframes_every_gop(reference):
    assert len(reference) == FRAMES
    assert [i for i, (_, key, _) in enumerate(reference) if key] == list(range(0, FRAMES, GOP))


def test_clips_start_at_the_keyframe_before_and_hold_the_input_frames(h264, reference, tmp_path):
    spans = [(1.6, 2.4), (3.0, 3.0), (4.96, 5.0), (7.5, 10.52), (10.5, 10.5), (0.0, 0.0)]
    paths = [tmp_path / f"clip{i}.mp4" for i in range(len(spans))]
    covered = copy_clips(h264, spans, paths)
    assert len(covered) == len(spans)
    for (start, end), (got_start, got_end), path in zip(spans, covered, paths):
        first, last = expected_range(reference, start, end)
        assert got_start == pytest.approx(first / FPS) and got_end == pytest.approx(last / FPS)
        assert got_start <= start and got_end <= end  # no B-frames: the end is exact
        assert_clip_is(path, reference, first, last)
    assert covered[1] == pytest.approx((3.0, 3.0))  # a span starting on a keyframe starts there
    assert covered[4] == pytest.approx((10.0, 10.48))  # 10.5 s falls between frames: the one before


def test_overlapping_spans_each_get_their_packets(h264, reference, tmp_path):
    spans = [(1.2, 3.4), (2.1, 4.0), (2.2, 2.3)]  # the second and third start in the first's range
    paths = [tmp_path / f"overlap{i}.mp4" for i in range(len(spans))]
    covered = copy_clips(h264, spans, paths)
    assert covered == [pytest.approx((1.0, 3.4)), pytest.approx((2.0, 4.0)), pytest.approx((2.0, 2.28))]
    for (start, end), path in zip(spans, paths):
        assert_clip_is(path, reference, *expected_range(reference, start, end))


def test_results_follow_the_order_of_the_spans(h264, reference, tmp_path):
    spans = [(6.3, 6.5), (0.5, 1.5)]
    paths = [tmp_path / "later.mp4", tmp_path / "earlier.mp4"]
    assert copy_clips(h264, spans, paths) == [pytest.approx((6.0, 6.48)), pytest.approx((0.0, 1.48))]
    assert_clip_is(paths[0], reference, 150, 162)
    assert_clip_is(paths[1], reference, 0, 37)


def test_span_past_the_end_is_cut_at_the_last_frame(h264, reference, tmp_path):
    path = tmp_path / "tail.mp4"
    assert copy_clips(h264, [(11.5, 60.0)], [path]) == [pytest.approx((11.0, (FRAMES - 1) / FPS))]
    assert_clip_is(path, reference, 275, FRAMES - 1)


def test_matroska_by_suffix(h264, reference, tmp_path):
    path = tmp_path / "clip.mkv"
    copy_clips(h264, [(2.5, 3.5)], [path])
    with av.open(str(path)) as container:
        assert container.format.name.startswith("matroska")
    assert_clip_is(path, reference, 50, 87)


def test_b_frames_clip_ends_at_its_group_and_decodes_to_the_input_frames(h264_b_frames, tmp_path):
    frames = decode(h264_b_frames)
    spans = [(1.3, 2.45), (3.5, 3.52), (5.0, 6.0)]
    paths = [tmp_path / f"b{i}.mp4" for i in range(len(spans))]
    covered = copy_clips(h264_b_frames, spans, paths)
    for (start, end), (got_start, got_end), path in zip(spans, covered, paths):
        first, last = expected_range(frames, start, end)
        assert got_start == pytest.approx(first / FPS)
        # With B-frames the cut may run on to the end of the group holding the last frame.
        assert last / FPS - 1e-9 <= got_end < end + 5 / FPS
        assert_clip_is(path, frames, first, round(got_end * FPS))


def test_audio_is_copied_for_the_clip_time_range(h264_aac, tmp_path):
    path = tmp_path / "sound.mp4"
    ((start, end),) = copy_clips(h264_aac, [(4.2, 6.0)], [path])
    assert start == pytest.approx(4.0)
    assert_clip_is(path, decode(h264_aac), 100, round(end * FPS))
    video_end = end - start + 1 / FPS  # where the last frame stops showing
    with av.open(str(path)) as container:
        assert len(container.streams.audio) == 1
        audio = container.streams.audio[0]
        packets = [p for p in container.demux(audio) if p.pts is not None]
        times = [(float(p.pts * audio.time_base), float((p.pts + p.duration) * audio.time_base)) for p in packets]
        assert sum(frame.samples for frame in audio_frames(path)) > 0.9 * video_end * AUDIO_RATE
    packet_s = 1024 / AUDIO_RATE
    assert 0 <= times[0][0] < packet_s  # first packet starting at or after the keyframe
    assert video_end - packet_s <= times[-1][0] < video_end  # last one starting before the video ends
    assert all(b[0] > a[0] for a, b in pairwise(times))


def audio_frames(path: Path):
    with av.open(str(path)) as container:
        return list(container.decode(audio=0))


def test_existing_file_is_replaced_whole_and_no_temporary_file_stays(h264, reference, tmp_path):
    path = tmp_path / "clip.mp4"
    path.write_bytes(b"old contents, longer than nothing")
    copy_clips(h264, [(1.0, 1.2)], [path])
    assert_clip_is(path, reference, 25, 30)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.mp4"]


def test_interrupted_run_leaves_finished_clips_and_no_partial_one(h264, reference, tmp_path, monkeypatch):
    mux = stream_copy._Clip._mux
    calls = {"count": 0}

    def mux_then_interrupt(self, record, stream, shift):
        calls["count"] += 1
        if calls["count"] == 60:  # the first clip (6 frames) is complete by then; the second is half written
            raise KeyboardInterrupt
        mux(self, record, stream, shift)

    monkeypatch.setattr(stream_copy._Clip, "_mux", mux_then_interrupt)
    paths = [tmp_path / "done.mp4", tmp_path / "half.mp4"]
    with pytest.raises(KeyboardInterrupt):
        copy_clips(h264, [(0.0, 0.2), (1.0, 5.0)], paths)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["done.mp4"]
    monkeypatch.undo()
    assert_clip_is(paths[0], reference, 0, 5)


def test_unwritable_clip_raises_and_removes_the_unfinished(h264, tmp_path):
    paths = [tmp_path / "fine.mp4", tmp_path / "no_such_folder" / "clip.mp4"]
    with pytest.raises(VideoOpenFailure, match="cannot write clip"):
        copy_clips(h264, [(0.0, 3.0), (1.0, 2.0)], paths)
    assert list(tmp_path.iterdir()) == []  # the first was still open when the second failed


@pytest.mark.parametrize("spans", [[(2.0, 1.0)], [(1.0, 2.0), (3.0, 2.99)], [(float("nan"), 1.0)], [(1.0, float("inf"))]])
def test_span_ending_before_it_starts_raises(h264, tmp_path, spans):
    with pytest.raises(ValueError, match="ends before it starts|not finite"):
        copy_clips(h264, spans, [tmp_path / f"c{i}.mp4" for i in range(len(spans))])
    assert list(tmp_path.iterdir()) == []


def test_one_path_per_span(h264, tmp_path):
    with pytest.raises(ValueError, match="one path per span"):
        copy_clips(h264, [(0.0, 1.0)], [])


def test_no_spans_writes_nothing(h264, tmp_path):
    assert copy_clips(h264, [], []) == []
    assert list(tmp_path.iterdir()) == []


def test_missing_input_raises(tmp_path):
    with pytest.raises(VideoOpenFailure, match="input not found"):
        copy_clips(tmp_path / "missing.mp4", [(0.0, 1.0)], [tmp_path / "c.mp4"])
    assert list(tmp_path.iterdir()) == []


def test_input_that_is_not_a_video_raises(tmp_path):
    junk = tmp_path / "notes.mp4"
    junk.write_text("not a video\n" * 100)
    with pytest.raises(VideoOpenFailure, match="cannot open"):
        copy_clips(junk, [(0.0, 1.0)], [tmp_path / "c.mp4"])


def test_input_without_video_stream_raises(tmp_path):
    sound = tmp_path / "sound.m4a"
    with av.open(str(sound), "w") as out:
        stream = out.add_stream("aac", rate=AUDIO_RATE)
        stream.layout = "mono"
        for first in range(0, AUDIO_RATE, 1024):
            chunk = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
            chunk.sample_rate, chunk.pts = AUDIO_RATE, first
            out.mux(stream.encode(chunk))
        out.mux(stream.encode())
    with pytest.raises(VideoOpenFailure, match="no video stream"):
        copy_clips(sound, [(0.0, 0.5)], [tmp_path / "c.mp4"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sound.m4a"]


def test_clip_files_get_the_usual_permissions(h264, tmp_path):
    path = tmp_path / "clip.mp4"
    copy_clips(h264, [(0.0, 0.1)], [path])
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


# AVI input: no presentation times (FFmpeg numbers the chunks in decode order) and empty
# placeholder chunks flagged as keyframes. The bundled clip is MPEG-4 Part 2 with two B-frames
# and two 1-byte placeholders after its first keyframe.


def decoded_frames(path: Path) -> tuple[list[np.ndarray], list[int]]:
    """Every frame of the video in the decoder's output order (the reader's frame numbers), as
    yuv420p arrays, and the numbers of the keyframes."""
    with av.open(str(path)) as container:
        frames = list(container.decode(video=0))
    return [frame.to_ndarray(format="yuv420p") for frame in frames], [n for n, frame in enumerate(frames) if frame.key_frame]


def assert_copied_clips_hold_input_frames(source: Path, frame_spans, fps: float, tmp_path: Path, max_run_on: int) -> None:
    """Cut clips for spans given in frame numbers and check each: it starts at the input's
    keyframe at or before the span's start, reaches the span's end (up to ``max_run_on`` frames
    past it, the B-frames' reference), and decodes to the input's frames bit for bit."""
    frames, keyframes = decoded_frames(source)
    spans = [(start / fps, end / fps) for start, end in frame_spans]
    paths = [tmp_path / f"clip{i}.mp4" for i in range(len(spans))]
    covered = copy_clips(source, spans, paths)
    for (start, end), (got_start, got_end), path in zip(frame_spans, covered, paths):
        keyframe = max(k for k in keyframes if k <= start)
        last = round(got_end * fps)
        assert round(got_start * fps) == keyframe and got_start == pytest.approx(keyframe / fps)
        assert end <= last <= min(end + max_run_on, len(frames) - 1), f"{path.name}: ends at frame {last}, span ends at {end}"
        with av.open(str(path)) as container:
            first_packet = next(p for p in container.demux(video=0) if p.size)
            assert first_packet.is_keyframe and first_packet.size > 100  # a picture, not a placeholder
        clip, _ = decoded_frames(path)
        assert len(clip) == last - keyframe + 1, f"{path.name}: {len(clip)} frames, want {keyframe}..{last}"
        for k, image in enumerate(clip):
            assert np.array_equal(image, frames[keyframe + k]), f"{path.name}: frame {k} differs from input frame {keyframe + k}"


def test_avi_sample_clips_start_at_a_real_keyframe_and_hold_the_input_frames(sample_clip, tmp_path):
    # The events of the sample at --min-area 0.05 with 0.5 s padding, and spans at and around its
    # keyframes (frames 0, 300 and 600; 1-byte placeholders flagged as keyframes follow frame 0).
    spans = [(0, 25), (38, 113), (324, 358), (654, 747), (299, 305), (300, 300), (2, 3)]
    assert_copied_clips_hold_input_frames(sample_clip, spans, FPS, tmp_path, max_run_on=2)


def test_avi_sample_event_clip_lengths(sample_clip, tmp_path):
    paths = [tmp_path / "a.mp4", tmp_path / "b.mp4"]
    covered = copy_clips(sample_clip, [(0.0, 1.0), (13.0, 14.32)], paths)
    # 0..25 runs on to frame 27, the P-frame that the B-frames 25 and 26 refer to; 324..358 starts at 300.
    assert covered == [pytest.approx((0.0, 27 / FPS)), pytest.approx((12.0, 359 / FPS))]
    assert [len(decode(path)) for path in paths] == [28, 60]


@pytest.fixture(scope="module")
def h264_avi(sample_clip, tmp_path_factory) -> Path:
    """The first 100 frames of the bundled clip as H.264 with 3 B-frames in AVI, a keyframe every 25."""
    path = tmp_path_factory.mktemp("input") / "b_frames.avi"
    with av.open(str(sample_clip)) as inp, av.open(str(path), "w") as out:
        options = {"g": str(GOP), "keyint_min": str(GOP), "sc_threshold": "0", "bf": "3", "preset": "veryfast"}
        video = out.add_stream("libx264", rate=FPS, options=options)
        video.width, video.height, video.pix_fmt = 320, 240, "yuv420p"
        for count, frame in zip(range(100), inp.decode(video=0)):
            frame = frame.reformat(format="yuv420p")
            frame.pts, frame.time_base = count, Fraction(1, FPS)
            out.mux(video.encode(frame))
        out.mux(video.encode())
    return path


def test_h264_avi_with_b_frames_clips_hold_the_input_frames(h264_avi, tmp_path):
    spans = [(0, 11), (20, 45), (26, 30), (75, 99), (50, 50)]
    assert_copied_clips_hold_input_frames(h264_avi, spans, FPS, tmp_path, max_run_on=3)


def test_unmatched_avi_packets_fall_back_to_re_encoding(sample_clip, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(stream_copy, "_decode_timeline", lambda source: None)
    paths = [tmp_path / "a.mp4", tmp_path / "b.mp4"]
    with caplog.at_level("WARNING", logger="motiondetect"):
        covered = copy_clips(sample_clip, [(1.0, 1.4), (13.0, 14.32)], paths)
    assert "re-encoded" in caplog.text
    assert covered == [pytest.approx((1.0, 1.4)), pytest.approx((13.0, 14.32))]
    frames, _ = decoded_frames(sample_clip)
    for path, (first, last) in zip(paths, [(25, 35), (325, 358)]):
        clip, _ = decoded_frames(path)
        assert len(clip) == last - first + 1
        for k, image in enumerate(clip):  # lossy, but the same pictures
            assert np.abs(image.astype(int) - frames[first + k]).mean() < 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.mp4", "b.mp4"]
