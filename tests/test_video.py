"""VideoHandler (clip, image sequences, errors) and VideoWriter (H.264 through PyAV)."""

from __future__ import annotations

import logging
from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import SHARED_SAMPLES, recording_with_dropped_frames, x264_options

from motiondetect.core.errors import VideoOpenFailure
from motiondetect.core.picture import Picture, as_bgr
from motiondetect.outputs.writer import VideoWriter
from motiondetect.sources.video import DEFAULT_SEQUENCE_FPS, ConcatSource, Position, VideoHandler, window

ROOT = Path(__file__).resolve().parent.parent
CDNET_HIGHWAY = SHARED_SAMPLES / "cdnet_highway" / "input"


def decode_all(path) -> tuple[list[np.ndarray], float]:
    """Decode a video with plain OpenCV: (frames, fps)."""
    cap = cv2.VideoCapture(str(path))
    assert cap.isOpened(), path
    fps = cap.get(cv2.CAP_PROP_FPS)
    frames = []
    while True:
        ok, image = cap.read()
        if not ok:
            break
        frames.append(image)
    cap.release()
    return frames, fps


def numbered_frame(number: int, shape=(24, 32)) -> np.ndarray:
    """A frame whose content encodes `number` (survives PNG exactly)."""
    frame = np.zeros((*shape, 3), np.uint8)
    frame[..., 0] = number % 256
    frame[..., 1] = number // 256
    frame[..., 2] = 7
    return frame


def frame_number(image: np.ndarray) -> int:
    assert np.all(image[..., 0] == image[0, 0, 0]) and np.all(image[..., 1] == image[0, 0, 1])
    return int(image[0, 0, 0]) + 256 * int(image[0, 0, 1])


# -- the bundled clip ----------------------------------------------------------------------


def test_sample_clip_properties_and_frames(sample_clip):
    with VideoHandler(sample_clip) as video:
        assert video.size == (320, 240)
        assert video.fps == 25.0
        assert video.name == "highway_traffic_320x240"
        assert video.is_live is False
        count = 0
        for frame in video:
            assert frame.index == count
            assert frame.time == count / 25.0
            assert isinstance(frame.image, Picture) and frame.image.shape == (240, 320, 3)
            assert frame.image.y.shape == (240, 320) and frame.image.u.shape == frame.image.v.shape == (120, 160)
            count += 1
    assert count == 748


def decode_planes(path, count=None) -> list[list[np.ndarray]]:
    """The Y', Cb, Cr planes of a video's frames decoded by plain PyAV, without threads."""
    av = pytest.importorskip("av")
    planes = []
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            planes.append([np.frombuffer(p, np.uint8).reshape(p.height, p.line_size)[:, : p.width].copy() for p in frame.planes])
            if len(planes) == count:
                break
    return planes


def test_sample_clip_content_matches_pyav(sample_clip):
    # The pictures are the decoder's planes, untouched (threaded decoding changes nothing).
    theirs = decode_planes(sample_clip, 5)
    with VideoHandler(sample_clip) as video:
        ours = [f.image for _, f in zip(range(5), video)]
    for a, b in zip(ours, theirs):
        for plane, want in zip((a.y, a.u, a.v), b):
            np.testing.assert_array_equal(plane, want)
        assert a.full_range is False
    assert not np.array_equal(ours[0].y, ours[4].y)  # the clip moves
    # Colour for outputs: within the rounding of the two BT.601 conversions of OpenCV's decoder.
    cap = cv2.VideoCapture(str(sample_clip))
    ok, opencv_bgr = cap.read()
    cap.release()
    assert ok and np.abs(ours[0].to_bgr().astype(int) - opencv_bgr).max() <= 6


def test_fps_override_on_a_file(sample_clip):
    with VideoHandler(str(sample_clip), fps=10) as video:
        assert video.fps == 10
        frames = [f for _, f in zip(range(4), video)]
    assert [f.time for f in frames] == [0.0, 0.1, 0.2, 0.3]


def test_first_frame_decoded_on_demand(sample_clip):
    """decode_first=False (a run that may decode on NVDEC) reads the same frames, numbers and
    times; the size is the header's until check_decodable decodes the first frame."""
    with VideoHandler(str(sample_clip)) as eager:
        expected = [(f.index, f.time, f.image.y.copy()) for _, f in zip(range(5), eager)]
    for check in (False, True):
        with VideoHandler(str(sample_clip), decode_first=False) as lazy:
            assert lazy._pending is None and lazy.size == (320, 240)
            if check:
                lazy.check_decodable()
                assert lazy._pending is not None
                lazy.check_decodable()  # once only
            got = [(f.index, f.time, f.image.y) for _, f in zip(range(5), lazy)]
        assert [g[:2] for g in got] == [e[:2] for e in expected]
        assert all(np.array_equal(g[2], e[2]) for g, e in zip(got, expected))


def test_check_decodable_refuses_a_header_that_disagrees(sample_clip):
    with VideoHandler(str(sample_clip), decode_first=False) as lazy:
        lazy.size = (640, 480)  # what a header that lies would have announced
        with pytest.raises(VideoOpenFailure) as caught:
            lazy.check_decodable()
    assert_one_line(caught.value, "first frame is 320x240", "header says 640x480", "--decoder cpu")


def test_close_is_idempotent(sample_clip):
    video = VideoHandler(sample_clip)
    video.close()
    video.close()
    assert list(video) == []


# -- image sequences ----------------------------------------------------------------------


@pytest.fixture
def png_sequence(tmp_path) -> Path:
    """in000470.png .. in000481.png in a folder, written out of order, plus distractors."""
    folder = tmp_path / "input"
    folder.mkdir()
    for n in [475, 470, 481, 472, 471, 473, 480, 474, 479, 476, 478, 477]:
        assert cv2.imwrite(str(folder / f"in{n:06d}.png"), numbered_frame(n))
    (folder / "notes.txt").write_text("not an image")
    return folder


def test_sequence_folder_in_numeric_order(png_sequence):
    with VideoHandler(png_sequence) as video:
        assert video.size == (32, 24)
        assert video.fps == DEFAULT_SEQUENCE_FPS == 25.0
        assert video.frame_count == 12
        assert video.name == "input"
        frames = list(video)
    assert [frame_number(f.image) for f in frames] == list(range(470, 482))
    assert [f.index for f in frames] == list(range(12))
    assert [f.time for f in frames] == [i / 25.0 for i in range(12)]


def test_sequence_pattern_from_non_zero_start(png_sequence):
    # A file that does not match the pattern's width is ignored.
    cv2.imwrite(str(png_sequence / "in00099.png"), numbered_frame(99))
    with VideoHandler(str(png_sequence / "in%06d.png"), fps=12.5) as video:
        assert video.fps == 12.5
        assert video.frame_count == 12
        assert video.name == "in"
        frames = list(video)
    assert [frame_number(f.image) for f in frames] == list(range(470, 482))
    assert frames[2].time == 2 / 12.5


def test_sequence_folder_natural_order(tmp_path):
    # Unpadded numbers: lexicographic order would put 10 before 8.
    for n in [8, 9, 10, 11, 100]:
        cv2.imwrite(str(tmp_path / f"f{n}.png"), numbered_frame(n))
    with VideoHandler(tmp_path) as video:
        assert [frame_number(f.image) for f in video] == [8, 9, 10, 11, 100]
    with VideoHandler(str(tmp_path / "f%d.png")) as video:
        assert [frame_number(f.image) for f in video] == [8, 9, 10, 11, 100]


def test_a_glob_over_folders_keeps_each_folders_frames_together(tmp_path):
    """Before, files were sorted by name alone, so 'cam*/f*.png' read cam10/f1, cam2/f1, cam10/f2..."""
    for folder, first in (("cam10", 20), ("cam2", 0)):  # natural order: cam2 first
        (tmp_path / folder).mkdir()
        for n in range(1, 4):
            cv2.imwrite(str(tmp_path / folder / f"f{n}.png"), numbered_frame(first + n))
    with VideoHandler(str(tmp_path / "cam*" / "f*.png")) as video:
        assert [frame_number(f.image) for f in video] == [1, 2, 3, 21, 22, 23]


def test_cdnet_highway_pattern():
    folder = CDNET_HIGHWAY
    if not folder.is_dir():
        pytest.skip("shared/samples/cdnet_highway/input is not present")
    with VideoHandler(str(folder / "in%06d.jpg")) as video:
        assert video.size == (320, 240)
        assert video.frame_count == 300
        assert video.fps == 25.0
        frames = list(video)
    assert len(frames) == 300
    # In numeric order: compare with the files read directly.
    for i in (0, 1, 150, 299):
        expected = cv2.imread(str(folder / f"in{470 + i:06d}.jpg"), cv2.IMREAD_COLOR)
        np.testing.assert_array_equal(frames[i].image, expected)
    assert frames[-1].time == 299 / 25.0


def cdnet_folder(root: Path, count: int = 4) -> Path:
    """A CDnet-style folder: input/ (numbered frames, PNG to keep them exact), groundtruth/,
    ROI.bmp, ROI.jpg, temporalROI.txt."""
    folder = root / "highway"
    (folder / "input").mkdir(parents=True)
    (folder / "groundtruth").mkdir()
    for n in range(1, count + 1):
        assert cv2.imwrite(str(folder / "input" / f"in{n:06d}.png"), numbered_frame(n, (48, 64)))
        assert cv2.imwrite(str(folder / "groundtruth" / f"gt{n:06d}.png"), np.zeros((48, 64), np.uint8))
    for name in ("ROI.bmp", "ROI.jpg"):
        assert cv2.imwrite(str(folder / name), np.full((48, 64), 255, np.uint8))
    (folder / "temporalROI.txt").write_text(f"1 {count}\n")
    return folder


def test_cdnet_folder_reads_its_input_frames(tmp_path, caplog):
    # Not the 2-frame "sequence" ROI.bmp, ROI.jpg at its top.
    folder = cdnet_folder(tmp_path)
    with caplog.at_level(logging.INFO, logger="motiondetect"), VideoHandler(folder) as video:
        assert video.frame_count == 4 and video.size == (64, 48) and video.name == "highway"
        assert [frame_number(f.image) for f in video] == [1, 2, 3, 4]
    assert "CDnet folder" in caplog.text and str(folder / "input") in caplog.text
    assert video.decode_errors == 0


def test_folder_with_input_but_no_groundtruth_reads_its_own_images(tmp_path):
    folder = cdnet_folder(tmp_path)
    for path in (folder / "groundtruth").iterdir():
        path.unlink()
    (folder / "groundtruth").rmdir()
    with VideoHandler(folder) as video:  # unchanged: the folder's own images
        assert video.frame_count == 2


def test_folder_of_images_of_two_sizes_fails_at_the_odd_one(tmp_path):
    cv2.imwrite(str(tmp_path / "a.png"), numbered_frame(1))
    cv2.imwrite(str(tmp_path / "b.png"), numbered_frame(2, (48, 64)))
    with VideoHandler(tmp_path) as video, pytest.raises(VideoOpenFailure, match="b.png.*64x48.*32x24") as caught:
        list(video)
    assert_one_line(caught.value)


def test_undecodable_image_in_sequence(png_sequence, caplog):
    # A damaged image is skipped and counted; the others keep their frame numbers (issue 7).
    (png_sequence / "in000482.png").write_bytes(b"not a png")
    with caplog.at_level(logging.WARNING, logger="motiondetect"), VideoHandler(png_sequence) as video:
        indices = [f.index for f in video]
    assert 12 not in indices and indices == [i for i in range(video.frame_count) if i != 12]
    assert video.decode_errors == 1
    assert "in000482.png" in caplog.text


# -- errors --------------------------------------------------------------------------------


def assert_one_line(exc: BaseException, *parts: str):
    message = str(exc)
    assert message and "\n" not in message
    for part in parts:
        assert part in message, (part, message)


def test_missing_file(tmp_path):
    with pytest.raises(VideoOpenFailure) as info:
        VideoHandler(tmp_path / "nope.mp4")
    assert_one_line(info.value, "not found", "nope.mp4")


def test_empty_file(tmp_path):
    (tmp_path / "empty.mp4").write_bytes(b"")
    with pytest.raises(VideoOpenFailure) as info:
        VideoHandler(tmp_path / "empty.mp4")
    assert_one_line(info.value, "empty", "empty.mp4")


def test_mp4_cut_off_before_its_index_says_so(tmp_path):
    """A camera that lost power writes its frames (mdat) but never the index (moov) that an MP4
    keeps last: FFmpeg says only "Invalid data found", as for any file that is no video."""
    import av

    whole = tmp_path / "whole.mp4"
    with av.open(str(whole), "w") as out:  # as a camera writes it: the index last (no faststart)
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        for value in range(0, 250, 10):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), value, np.uint8), format="bgr24")
            for packet in stream.encode(frame.reformat(format="yuv420p")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    data = whole.read_bytes()
    assert data.index(b"moov") > data.index(b"mdat")
    (tmp_path / "cut.mp4").write_bytes(data[: data.index(b"moov") - 4])
    with pytest.raises(VideoOpenFailure) as info:
        VideoHandler(tmp_path / "cut.mp4")
    assert_one_line(info.value, "cut.mp4", "without its index", "cut off")
    (tmp_path / "text.mp4").write_text("not a video")
    with pytest.raises(VideoOpenFailure) as info:
        VideoHandler(tmp_path / "text.mp4")
    assert_one_line(info.value, "not a video FFmpeg can decode")
    with VideoHandler(whole) as video:
        assert sum(1 for _ in video) == 25


def test_directory_without_images(tmp_path):
    (tmp_path / "readme.txt").write_text("hi")
    with pytest.raises(VideoOpenFailure) as info:
        VideoHandler(tmp_path)
    assert_one_line(info.value, "no images")


def test_pattern_without_matches(tmp_path):
    with pytest.raises(VideoOpenFailure) as info:
        VideoHandler(str(tmp_path / "in%06d.jpg"))
    assert_one_line(info.value, "no images")


def test_text_file_renamed_mp4(tmp_path):
    fake = tmp_path / "fake.mp4"
    fake.write_text("this is not a video\n" * 20)
    with pytest.raises(VideoOpenFailure) as info:
        VideoHandler(fake)
    assert_one_line(info.value, "fake.mp4")


def test_unopenable_camera_and_stream():
    if Path("/dev/video7").exists():
        pytest.skip("a camera 7 exists here")
    with pytest.raises(VideoOpenFailure) as info:
        VideoHandler("7")
    assert_one_line(info.value, "camera")
    with pytest.raises(VideoOpenFailure) as info:
        VideoHandler("rtsp://127.0.0.1:1/none")
    assert_one_line(info.value, "stream")


# -- VideoWriter ---------------------------------------------------------------------------


def smooth_frame(height, width, shift=0):
    """Gentle gradients (at most 2 levels per pixel, no wrap-around), moving with `shift`."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    blue = 30 + x * min(2.0, 180 / max(width - 1, 1))
    green = 40 + y * min(2.0, 150 / max(height - 1, 1))
    red = 60 + (x + y) * min(1.0, 100 / (width + height)) + shift
    return np.stack([blue, green, red], axis=-1).round().astype(np.uint8)


@pytest.mark.parametrize("size", [(13, 7), (14, 8), (320, 240)], ids=["odd-13x7", "even-14x8", "320x240"])
def test_writer_round_trip(tmp_path, size):
    width, height = size
    path = tmp_path / "out.mp4"
    frames = [smooth_frame(height, width, shift=i) for i in range(6)]
    with VideoWriter(path, 12.0, size) as writer:
        for f in frames:
            writer.write(f)
        assert writer.frames_written == 6
    decoded, fps = decode_all(path)
    assert len(decoded) == 6
    assert all(f.shape == (height, width, 3) for f in decoded)
    assert fps == pytest.approx(12.0)
    # H.264 at CRF 20 is lossy. Measured mean absolute error per frame on these gradients:
    # 1.3-2.1 (13x7, yuv444p), 1.7-2.4 (14x8) and 1.9-2.3 (320x240, yuv420p; most of it the
    # brightness bias since fixed, see test_writer_even_size_has_no_brightness_bias). A wrong
    # channel order or size would be > 20.
    for ours, theirs in zip(frames, decoded):
        assert np.abs(ours.astype(np.int16) - theirs).mean() < 4.0


def test_writer_uses_libx264_with_pyav(tmp_path):
    pytest.importorskip("av")
    with VideoWriter(tmp_path / "a.mp4", 25, (16, 16)) as writer:
        assert writer.encoder == "libx264"
        writer.write(np.zeros((16, 16, 3), np.uint8))
    import av

    with av.open(str(tmp_path / "a.mp4")) as container:
        assert container.streams.video[0].codec_context.name == "h264"


def test_writer_runs_libx264_on_frame_threads(tmp_path):
    """PyAV opens encoders with slice threads; the writer asks for frame threads, which ran
    libx264 1.7-1.8x faster on 16 cores (docs/performance.md). Four threads asked for, so the
    encoder cannot fall back to one thread, where slices and frames are the same."""
    pytest.importorskip("av")
    with VideoWriter(tmp_path / "a.mp4", 25, (320, 240), threads=4) as writer:
        for i in range(3):
            writer.write(smooth_frame(240, 320, i))
    options = x264_options(tmp_path / "a.mp4")
    assert (options["threads"], options["sliced_threads"]) == ("4", "0")


def test_writer_mp4v_fallback(tmp_path, monkeypatch, caplog):
    import motiondetect.outputs.writer as writer_module

    monkeypatch.setattr(writer_module, "h264_encoder", lambda: None)
    with caplog.at_level(logging.WARNING, logger="motiondetect"):
        with VideoWriter(tmp_path / "b.mp4", 20, (32, 24)) as writer:
            assert writer.encoder == "mp4v"
            for i in range(4):
                writer.write(smooth_frame(24, 32, i))
    assert any("mp4v" in r.getMessage() for r in caplog.records)
    decoded, fps = decode_all(tmp_path / "b.mp4")
    assert len(decoded) == 4 and decoded[0].shape == (24, 32, 3)
    assert fps == pytest.approx(20.0)


def test_writer_rejects_wrong_size(tmp_path):
    with VideoWriter(tmp_path / "c.mp4", 25, (16, 8)) as writer:
        with pytest.raises(ValueError, match="16x8"):
            writer.write(np.zeros((16, 8, 3), np.uint8))  # transposed
        writer.write(np.zeros((8, 16, 3), np.uint8))
    assert len(decode_all(tmp_path / "c.mp4")[0]) == 1


def test_handler_writer_has_source_size_and_fps(tmp_path, png_sequence):
    with VideoHandler(png_sequence, fps=10) as video:
        with VideoWriter(tmp_path / "d.mp4", video.fps, video.size) as writer:
            for frame in video:
                writer.write(frame.image)
    decoded, fps = decode_all(tmp_path / "d.mp4")
    assert len(decoded) == 12 and decoded[0].shape == (24, 32, 3) and fps == pytest.approx(10.0)


def test_writer_fractional_fps(tmp_path):
    with VideoWriter(tmp_path / "e.mp4", 30000 / 1001, (16, 16)) as writer:
        for _ in range(3):
            writer.write(np.zeros((16, 16, 3), np.uint8))
    assert decode_all(tmp_path / "e.mp4")[1] == pytest.approx(29.97, abs=0.01)


def test_writer_unwritable_path_fails_at_open(tmp_path):
    with pytest.raises(VideoOpenFailure):
        VideoWriter(tmp_path / "missing" / "x.mp4", 25, (16, 16))


def test_writer_even_size_has_no_brightness_bias(tmp_path, sample_frames):
    # Odd sizes (yuv444p) measure a mean signed error of +0.1; even sizes (yuv420p) -1.9, and
    # a flat white frame comes back as 251.
    path = tmp_path / "bias.mp4"
    with VideoWriter(path, 25, (320, 240)) as writer:
        for f in sample_frames[:5]:
            writer.write(f)
    decoded, _ = decode_all(path)
    bias = np.mean([(d.astype(np.int16) - f).mean() for d, f in zip(decoded, sample_frames[:5])])
    assert abs(bias) < 1.0


# -- seeking, windows, positions, concatenation, globs (footage scanning) --------------------


def test_skip_then_read_matches_decoding_everything(sample_clip):
    frames = [y for y, _, _ in decode_planes(sample_clip)]
    with VideoHandler(sample_clip) as video:
        assert video.skip(100) == 100
        rest = list(video)
    assert [f.index for f in rest[:2]] == [100, 101] and rest[0].time == 4.0
    assert len(rest) == len(frames) - 100
    for frame in (rest[0], rest[250], rest[-1]):
        np.testing.assert_array_equal(frame.image.y, frames[frame.index])


def test_skip_past_the_end(png_sequence, sample_clip):
    with VideoHandler(png_sequence) as video:
        assert video.skip(50) == 12 and list(video) == []
    with VideoHandler(sample_clip) as video:
        assert video.skip(10_000) == 748 and list(video) == []


def test_window_of_a_sequence(png_sequence):
    with VideoHandler(png_sequence) as video:
        frames = list(window(video, 3, 7))
    assert [f.index for f in frames] == [3, 4, 5, 6]
    assert [frame_number(f.image) for f in frames] == [473, 474, 475, 476]
    with VideoHandler(png_sequence) as video:
        assert [f.index for f in window(video, 10)] == [10, 11]
    with VideoHandler(png_sequence) as video:
        assert list(window(video, 20)) == []


def test_window_counts_no_decode_errors_after_its_end(sample_clip):
    # The clip's frames come out with timestamps out of order (1, 4, 6, 5, 7...: DivX packed
    # B-frames): not gaps. Nor are the frames after the window missing.
    for start, stop in [(100, 300), (100, 500), (0, 300), (200, 201)]:
        with VideoHandler(sample_clip) as video:
            assert len(list(window(video, start, stop))) == stop - start
        assert video.decode_errors == 0, (start, stop)


def blank_avi_frames(path: Path, chunks: range) -> bytes:
    """The bytes of the AVI ``path`` with its stream chunks ``chunks`` (numbered from 0) zeroed:
    packets the decoder rejects, whose frames are lost."""
    data = bytearray(path.read_bytes())
    pos, number = data.find(b"movi") + 4, 0
    while pos + 8 <= len(data) and data[pos + 2 : pos + 4] in (b"dc", b"db", b"wb"):
        size = int.from_bytes(data[pos + 4 : pos + 8], "little")
        if number in chunks:
            data[pos + 8 : pos + 8 + size] = bytes(size)
        pos, number = pos + 8 + size + (size & 1), number + 1
    assert number > chunks.stop, "not an AVI with that many chunks"
    return bytes(data)


def test_window_counts_the_frames_lost_inside_it(sample_clip, tmp_path):
    lost = range(300, 340)
    path = tmp_path / "holes.avi"
    path.write_bytes(blank_avi_frames(sample_clip, lost))
    with VideoHandler(path) as video:
        assert len(list(window(video, 100, 500))) == 400
    assert len(lost) <= video.decode_errors <= len(lost) + 2
    with VideoHandler(path) as video:  # the window ends before the damage
        assert len(list(window(video, 100, 250))) == 150
    assert video.decode_errors == 0


def test_window_that_starts_past_damage_gets_its_frames(sample_clip, tmp_path):
    """Before, skipping to the window's start stopped at the first packet the decoder rejected:
    a window from frame 350 of a file damaged at 300..339 read no frame at all."""
    path = tmp_path / "holes.avi"
    path.write_bytes(blank_avi_frames(sample_clip, range(300, 340)))
    with VideoHandler(path) as video:
        whole = [as_bgr(frame.image) for frame in video]
    with VideoHandler(path) as video:
        part = [as_bgr(frame.image) for frame in window(video, 350, 400)]
    assert len(part) == 50 and all(np.array_equal(a, b) for a, b in zip(part, whole[350:400]))
    assert video.decode_errors == 0  # lost before the window: not its errors


def test_window_of_a_recording_with_dropped_frames(tmp_path):
    # Timestamps with holes that the container does not count as frames (a live source that
    # dropped frames): as in a whole run, not decode errors, though the window ends before the
    # end of the file where the header's count would show it.
    path = tmp_path / "live.mp4"
    recording_with_dropped_frames(path)
    with VideoHandler(path) as video:
        assert len(list(window(video, 0, 30))) == 30
    assert video.decode_errors == 0


@pytest.mark.parametrize(
    "text, seconds, frame",
    [
        ("90", 90.0, None),
        ("90.5", 90.5, None),
        ("90.5s", 90.5, None),
        ("01:02:03.250", 3723.25, None),
        ("2:30", 150.0, None),
        ("1234f", None, 1234),
        (" 0f ", None, 0),
        ("0", 0.0, None),
    ],
)
def test_position_parse(text, seconds, frame):
    assert Position.parse(text) == Position(seconds=seconds, frame=frame)


@pytest.mark.parametrize("text", ["", "-1", "abc", "1:2:3:4", "12:", "-5f", "1.5f", "nan", "inf", "1:xx", "0:60", "00:00:75", "1:60:00"])
def test_position_parse_rejects(text):
    with pytest.raises(ValueError, match="HH:MM:SS"):
        Position.parse(text)


def test_position_to_frame():
    assert Position(seconds=4.0).to_frame(25.0) == 100  # frame 100 is at exactly 4 s
    assert Position(seconds=4.01).to_frame(25.0) == 101  # the first frame at or after
    assert Position(seconds=0.1).to_frame(30.0) == 3  # 0.1 * 30 = 3.0000000000000004 in floats
    assert Position(frame=7).to_frame(25.0) == 7


def test_concat_numbers_frames_as_one_stream(png_sequence, tmp_path):
    second = tmp_path / "second"
    second.mkdir()
    for n in range(3):
        cv2.imwrite(str(second / f"b{n}.png"), numbered_frame(900 + n))
    with ConcatSource([VideoHandler(png_sequence, fps=10), VideoHandler(second, fps=10)]) as source:
        assert source.frame_count == 15 and source.size == (32, 24) and source.name == "input"
        frames = list(source)
    assert [f.index for f in frames] == list(range(15))
    assert [frame_number(f.image) for f in frames] == [*range(470, 482), 900, 901, 902]
    assert frames[13].time == 1.3


def test_concat_window_crosses_inputs(png_sequence, tmp_path):
    second = tmp_path / "second"
    second.mkdir()
    for n in range(3):
        cv2.imwrite(str(second / f"b{n}.png"), numbered_frame(900 + n))
    with ConcatSource([VideoHandler(png_sequence), VideoHandler(second)]) as source:
        frames = list(window(source, 11, 14))
    assert [(f.index, frame_number(f.image)) for f in frames] == [(11, 481), (12, 900), (13, 901)]


def test_concat_refuses_other_sizes(png_sequence, tmp_path):
    cv2.imwrite(str(tmp_path / "big.png"), np.zeros((30, 40, 3), np.uint8))
    with pytest.raises(ValueError, match="32x24.*40x30"):
        ConcatSource([VideoHandler(png_sequence), VideoHandler(tmp_path / "big.png")])


def test_glob_of_images_is_one_sequence(png_sequence):
    with VideoHandler(str(png_sequence / "in0004[78]*.png")) as video:
        assert video.frame_count == 12 and video.name == "input"
        assert [frame_number(f.image) for f in video] == list(range(470, 482))


@pytest.mark.parametrize("height", [2, 90, 92])
def test_pictures_keep_every_row_in_the_video(tmp_path, height):
    """Decoded pictures are written as they are (yuv420p): at a height of 2 modulo 4 PyAV's
    from_numpy_buffer took H - 2 rows and the encoder stretched them (a 480x270 video lost its
    bottom 2 rows), and at 2 rows the write failed."""
    width = 64
    bgr = np.full((height, width, 3), 40, np.uint8)
    bgr[-2:] = 230  # the bottom rows, which the stretch lost
    picture = Picture.from_bgr(bgr)
    path = tmp_path / "rows.mp4"
    with VideoWriter(path, 25, (width, height)) as writer:
        for _ in range(3):
            writer.write(picture)
    with VideoHandler(path) as video:
        got = as_bgr(next(iter(video)).image)
    assert got.shape == bgr.shape
    assert np.abs(got.astype(int) - as_bgr(picture).astype(int)).max() <= 12


def test_a_folder_of_videos_points_to_a_glob(tmp_path):
    for name in ("a.mp4", "b.mp4"):
        (tmp_path / name).write_bytes(b"x")
    with pytest.raises(VideoOpenFailure) as info:
        VideoHandler(tmp_path)
    assert_one_line(info.value, "no images", "2 video files", f"'{tmp_path / '*.mp4'}'")
