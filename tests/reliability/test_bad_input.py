"""The bad-input corpus: each case gives a one-line error naming the problem with exit code 2
(usage, config) or 1 (run time) and no traceback, or, where the input can be used, a run whose
outputs say what happened. Cases that could print native noise run as real processes."""

from __future__ import annotations

import errno
import os
import socket
import sys
import threading
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
from conftest import (
    SAMPLE_ANNOUNCED,
    avi_chunks,
    count_frames,
    error_line,
    only_line,
    report,
    run_main,
    run_process,
    small_frames,
)

import motiondetect.sources.video as video_module
from motiondetect.core.picture import Picture
from motiondetect.outputs.writer import VideoWriter
from motiondetect.sources.video import VideoHandler

CPU = ("--backend", "cpu")


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# -- inputs that cannot be used --------------------------------------------------------------


def test_missing_file(tmp_path, monkeypatch, capsys):
    rc, err = run_main(monkeypatch, capsys, tmp_path, tmp_path / "gone.mp4", *CPU)
    assert rc == 1
    assert "input not found" in only_line(err) and "gone.mp4" in err
    assert names(tmp_path) == []


def test_a_missing_input_among_several_stops_the_run_before_any(tmp_path, monkeypatch, capsys):
    """Before, the inputs before the missing one were scanned and the ones after it not: a typo
    in a batch of files is refused before any work, naming it."""
    frames = tmp_path / "frames"
    frames.mkdir()
    for i, frame in enumerate(small_frames()):
        cv2.imwrite(str(frames / f"in{i:06d}.png"), frame)
    args = ("--no-video", "--events", "{stem}.json", *CPU)
    rc, err = run_main(monkeypatch, capsys, tmp_path, frames, tmp_path / "gone.mp4", tmp_path / "gone2.mp4", *args)
    assert rc == 1 and "input not found" in only_line(err) and "gone.mp4' (and 1 more)" in err
    assert names(tmp_path) == ["frames"]  # the first input was not scanned either


@pytest.mark.parametrize("content", [[], ["notes.txt"]], ids=["empty", "no-images"])
def test_directory_without_images(tmp_path, monkeypatch, capsys, content):
    folder = tmp_path / "footage"
    folder.mkdir()
    for name in content:
        (folder / name).write_text("x")
    rc, err = run_main(monkeypatch, capsys, tmp_path, folder, *CPU)
    assert rc == 1 and "no images found" in only_line(err) and "footage" in err
    assert names(tmp_path) == ["footage"]


def test_empty_file(tmp_path, monkeypatch, capsys):
    (tmp_path / "empty.mp4").write_bytes(b"")
    rc, err = run_main(monkeypatch, capsys, tmp_path, tmp_path / "empty.mp4", *CPU)
    assert rc == 1 and "empty file" in only_line(err) and "empty.mp4" in err
    assert names(tmp_path) == ["empty.mp4"]


def test_non_video_renamed_mp4(tmp_path):
    (tmp_path / "holiday.mp4").write_bytes(b"%PDF-1.4\n" + bytes(range(256)) * 40)
    proc = run_process(tmp_path, "holiday.mp4", *CPU)  # FFmpeg would print "moov atom not found"
    assert proc.returncode == 1
    assert "not a video" in only_line(proc.stderr) and "holiday.mp4" in proc.stderr
    assert names(tmp_path) == ["holiday.mp4"]


@pytest.mark.parametrize("backend", [CPU, ()], ids=["cpu", "auto"])
def test_video_with_zero_decodable_frames(tmp_path, damaged, backend):
    # With the default backend the first frame is decoded by the decoder chosen (NVDEC may be),
    # not when the file is opened: the refusal must still come before any output.
    def zero_every_frame(data):
        for offset, size in avi_chunks(data):
            data[offset + 8 : offset + 8 + size] = bytes(size)

    path = damaged("blank.avi", zero_every_frame)
    assert count_frames(path) == 0  # an independent reader decodes nothing either
    proc = run_process(tmp_path, path, *backend)
    assert proc.returncode == 1
    # Without a GPU, auto says first that it uses the CPU backend; the error is one line after it.
    error = only_line(proc.stderr) if backend else proc.stderr.strip().splitlines()[-1]
    assert "Traceback" not in proc.stderr
    assert "no frames could be decoded" in error and "blank.avi" in error
    assert names(tmp_path) == ["blank.avi"]  # refused before any output existed


def test_truncated_video_processes_what_is_there(tmp_path, damaged):
    path = damaged("cut.avi", lambda data: data.__delitem__(slice(len(data) // 2, None)))
    decodable = count_frames(path)
    assert 300 < decodable < 500
    proc = run_process(tmp_path, path, *CPU)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr and all(line.startswith("motiondetect: ") for line in lines)
    # One warning naming the problem, then the summary with the count.
    missing = SAMPLE_ANNOUNCED - decodable
    assert f"{missing} frames could not be decoded" in lines[0] and "truncated" in lines[0]
    assert f"{decodable} frames" in lines[-1] and f"{missing} frames could not be decoded" in lines[-1]
    events = report(tmp_path / "cut_motion.json")
    assert events["frame_count"] == decodable and events["decode_errors"] == missing and events["complete"] is True
    assert count_frames(tmp_path / "cut_motion.mp4") == decodable


# -- frame shapes and channel layouts --------------------------------------------------------


@pytest.mark.parametrize("height, width", [(1, 1), (1, 9), (7, 1), (17, 33), (31, 2)])
def test_tiny_and_odd_sized_frames(tmp_path, monkeypatch, capsys, height, width):
    folder = tmp_path / "seq"
    folder.mkdir()
    rng = np.random.default_rng(height * 100 + width)
    for i in range(5):
        cv2.imwrite(str(folder / f"f{i}.png"), rng.integers(0, 256, (height, width, 3), np.uint8))
    rc, err = run_main(monkeypatch, capsys, tmp_path, folder, *CPU, "--masks", "m")
    assert rc == 0, err
    assert report(tmp_path / "seq_motion.json")["frame_count"] == 5
    cap = cv2.VideoCapture(str(tmp_path / "seq_motion.mp4"))
    ok, first = cap.read()
    assert ok and first.shape == (height, width, 3)
    assert count_frames(tmp_path / "seq_motion.mp4") == 5
    assert all(cv2.imread(str(p), cv2.IMREAD_UNCHANGED).shape == (height, width) for p in (tmp_path / "m").iterdir())


@pytest.mark.parametrize("layout", ["gray", "gray16", "bgra"])
def test_grey_16_bit_and_four_channel_sources_match_bgr(tmp_path, monkeypatch, capsys, layout):
    frames = small_frames(channels=1)  # grey frames, so every layout holds the same picture
    as_bgr = [cv2.cvtColor(f, cv2.COLOR_GRAY2BGR) for f in frames]
    convert = {
        "gray": lambda f: f,
        "gray16": lambda f: f.astype(np.uint16) * 257,  # 8-bit value v is 16-bit v * 257
        "bgra": lambda f: np.dstack([f, f, f, np.full_like(f, 77)]),
    }[layout]
    runs = {}
    for name, images in (("bgr", as_bgr), (layout, [convert(f) for f in frames])):
        folder = tmp_path / name
        folder.mkdir()
        for i, image in enumerate(images):
            assert cv2.imwrite(str(folder / f"f{i}.png"), image)
        rc, err = run_main(monkeypatch, capsys, tmp_path, folder, *CPU, "--no-video", "--masks", f"m_{name}")
        assert rc == 0, err
        runs[name] = report(tmp_path / f"{name}_motion.json")
    assert runs[layout]["events"] == runs["bgr"]["events"] and runs["bgr"]["events"]
    for i in range(len(frames)):  # and the masks, pixel for pixel
        mine = cv2.imread(str(tmp_path / f"m_{layout}" / f"{layout}_{i:06d}.png"), cv2.IMREAD_UNCHANGED)
        theirs = cv2.imread(str(tmp_path / "m_bgr" / f"bgr_{i:06d}.png"), cv2.IMREAD_UNCHANGED)
        np.testing.assert_array_equal(mine, theirs)


def test_resolution_change_mid_stream(tmp_path, monkeypatch, capsys, sequence):
    # Decided: a run has one frame size; the image of another size stops it with a run-time
    # error naming that image, after every frame before it is written out.
    odd = sequence / "in000004.png"
    cv2.imwrite(str(odd), np.zeros((30, 40, 3), np.uint8))
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, *CPU)
    assert rc == 1
    line = error_line(err)
    assert "in000004.png" in line and "40x30" in line and "32x24" in line and "after 4 frames" in line
    events = report(tmp_path / "seq_motion.json")
    assert events["complete"] is False and events["frame_count"] == 4
    assert count_frames(tmp_path / "seq_motion.mp4") == 4


def test_resolution_change_in_a_video_file(tmp_path, monkeypatch, capsys):
    # Two videos of different sizes glued as one stream (a camera that changed resolution) are
    # stood in for by a capture that switches size after 3 frames.
    path = tmp_path / "cam.mp4"
    with VideoWriter(path, 25, (32, 24)) as writer:
        for frame in small_frames():
            writer.write(frame)
    real_capture = video_module.PyAVCapture

    class Switching:  # wraps the real capture; its pictures shrink after 3 frames
        reads = 0

        def __init__(self, *args):
            self.capture = real_capture(*args)

        def __getattr__(self, name):
            return getattr(self.capture, name)

        def read(self):
            ok, picture = self.capture.read()
            Switching.reads += 1
            if ok and Switching.reads > 3:
                picture = Picture.from_bgr(cv2.resize(picture.to_bgr(), (16, 12)))
            return ok, picture

    monkeypatch.setattr(video_module, "PyAVCapture", Switching)
    rc, err = run_main(monkeypatch, capsys, tmp_path, path, *CPU)
    assert rc == 1 and "resolution changed" in error_line(err) and "16x12" in err
    assert report(tmp_path / "cam_motion.json")["frame_count"] == 3


# -- outputs that cannot be written -----------------------------------------------------------


def read_only_folder(tmp_path) -> Path:
    """A folder where no file can be created: a chmod'ed one, or for root (whom permissions do
    not stop) /proc, which refuses new files to everyone."""
    if os.geteuid() != 0:
        folder = tmp_path / "locked"
        folder.mkdir(mode=0o500)
        return folder
    if not Path("/proc/self").is_dir():
        pytest.skip("running as root without /proc: no folder refuses new files")
    return Path("/proc")


@pytest.mark.parametrize(
    "flag, name", [("-o", "x.mp4"), ("--events", "x.json"), ("--mask-out", "m.mp4"), ("--clips", "clips"), ("--masks", "masks")]
)
def test_unwritable_output_folder(tmp_path, monkeypatch, capsys, sequence, flag, name):
    target = read_only_folder(tmp_path) / name
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, *CPU, flag, target)
    assert rc == 2
    line = only_line(err)
    assert "not writable" in line or "cannot be made" in line
    assert not list(tmp_path.glob("seq_motion.*"))  # refused before any frame


@pytest.mark.parametrize("flag", ["-o", "--events", "--mask-out", "--record"])
def test_output_equal_to_input(tmp_path, monkeypatch, capsys, sample_clip, flag):
    clip = tmp_path / "clip.avi"
    clip.write_bytes(sample_clip.read_bytes())
    link = tmp_path / "link.avi"
    link.symlink_to(clip)
    for given in (clip, "./clip.avi", link):  # the same file by any name
        rc, err = run_main(monkeypatch, capsys, tmp_path, clip, *CPU, flag, given, "--overwrite")
        assert rc == 2 and "is the input" in only_line(err)
    assert clip.read_bytes() == sample_clip.read_bytes()
    assert names(tmp_path) == ["clip.avi", "link.avi"]


def test_disk_full_on_the_video(tmp_path, sample_clip):
    # /dev/full fails every write with ENOSPC, as a full disk does; the output name links to it.
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    (tmp_path / "out.mp4").symlink_to("/dev/full")
    proc = run_process(tmp_path, sample_clip, *CPU, "-o", "out.mp4", "--overwrite", "--events", "out.json")
    assert proc.returncode == 1
    line = error_line(proc.stderr)
    assert "No space left on device" in line and "out.mp4" in line
    events = report(tmp_path / "out.json")  # the report, on another disk, is whole
    assert events["complete"] is False and 0 < events["frame_count"] < 748
    assert f"after {events['frame_count']} frames" in line


def test_disk_full_on_the_report_keeps_the_old_one(tmp_path, monkeypatch, capsys, sequence):
    old = tmp_path / "seq_motion.json"
    old.write_text('{"old": true}\n')
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, handle):
            self.handle = handle

        def write(self, text):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

    monkeypatch.setattr("motiondetect.core.files.os.fdopen", lambda *a, **k: Full(real_fdopen(*a, **k)))
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, *CPU, "--overwrite")
    assert rc == 1
    line = error_line(err)
    assert "No space left on device" in line and "seq_motion.json" in line
    assert old.read_text() == '{"old": true}\n'  # replaced whole or not at all
    assert names(tmp_path) == ["seq", "seq_motion.json", "seq_motion.mp4"]  # no temporary file left
    assert count_frames(tmp_path / "seq_motion.mp4") == 6  # the video is finished all the same


def test_disk_full_on_the_masks(tmp_path, monkeypatch, capsys, sequence):
    def full(path, image, params=None):
        if path.name.endswith("000003.png"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real(path, image, params)

    import motiondetect.outputs.masks as masks

    real = masks.write_image
    monkeypatch.setattr(masks, "write_image", full)
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, *CPU, "--masks", "m")
    assert rc == 1 and "No space left on device" in error_line(err) and "seq_000003.png" in err
    # Frames 0-2 reached every output; frame 3 reached the video (fed before the masks) too.
    assert report(tmp_path / "seq_motion.json")["frame_count"] == 3
    assert count_frames(tmp_path / "seq_motion.mp4") == 4


def test_an_image_cut_short_by_a_full_disk_is_removed(tmp_path, monkeypatch):
    """Before, the mask image being written when the disk filled stayed under its name, cut
    short (one more file than the summary's count of masks)."""
    import io

    import motiondetect.core.safety as safety

    class Short(io.FileIO):
        def write(self, data):
            super().write(bytes(data)[:10])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(safety, "open", lambda path, mode: Short(path, "w"), raising=False)
    with pytest.raises(OSError, match="No space left on device"):
        safety.write_image(tmp_path / "m.png", np.zeros((8, 8), np.uint8))
    assert names(tmp_path) == []


# -- configuration ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, fragments",
    [
        ("backend: [cpu\n", ["not valid YAML", "line 2"]),  # malformed
        ("events:\n  min_area: 0.01\n  min_arae: 0.02\n", ["events", "unknown key 'min_arae'"]),
        ("colour: red\n", ["unknown key 'colour'"]),
        ("events:\n  min_area: lots\n", ["events.min_area", "expected number", "'lots'"]),
        ("scan:\n  downscale: 2.5\n", ["scan.downscale", "expected integer"]),
        ("overlays:\n  boxes: maybe\n", ["overlays.boxes", "expected boolean"]),
        ("events:\n  min_area: 1.5\n", ["events.min_area", "out of range", "0.0..1.0"]),
        ("scan:\n  frame_skip: -1\n", ["scan.frame_skip", "out of range"]),
        (
            "pipeline:\n  - filter: gray\n  - filter: difference\n  - filter: threshold\n    threshold: 256\n",
            ["pipeline[2].threshold", "out of range"],
        ),
        ("- backend: cpu\n", ["expected a mapping", "list"]),
        ("42\n", ["expected a mapping", "int"]),
        ("just words\n", ["expected a mapping", "str"]),
    ],
    ids=[
        "malformed",
        "unknown-nested",
        "unknown-top",
        "wrong-type-number",
        "wrong-type-int",
        "wrong-type-bool",
        "range-fraction",
        "range-negative",
        "range-threshold",
        "list",
        "scalar",
        "string",
    ],
)
def test_bad_config(tmp_path, monkeypatch, capsys, sequence, text, fragments):
    (tmp_path / "c.yaml").write_text(text, encoding="utf-8")
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, *CPU, "-c", "c.yaml")
    assert rc == 2
    line = only_line(err)
    for fragment in fragments:
        assert fragment in line
    assert names(tmp_path) == ["c.yaml", "seq"]


@pytest.mark.parametrize(
    "flag, text",
    [
        ("-c", "backend: !!python/object/apply:os.system ['touch pwned']\n"),
        ("-c", "events: !!python/object/new:os.system [touch pwned]\n"),
        ("-c", "roi:\n  polygons: !!python/name:os.system\n"),
        ("--roi", "polygons: !!python/object/apply:os.system ['touch pwned']\n"),
    ],
)
def test_yaml_python_tags_are_refused(tmp_path, monkeypatch, capsys, sequence, flag, text):
    (tmp_path / "evil.yaml").write_text(text, encoding="utf-8")
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, *CPU, flag, "evil.yaml")
    assert rc == 2
    line = only_line(err)
    assert "refused YAML tag '!!python/" in line
    assert not (tmp_path / "pwned").exists()


def test_config_that_is_not_utf8(tmp_path, monkeypatch, capsys, sequence):
    (tmp_path / "c.yaml").write_bytes(b"backend: caf\xe9\n")
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, *CPU, "-c", "c.yaml")
    assert rc == 2 and "not UTF-8" in only_line(err) and "0xe9" in err


# -- names that are not UTF-8 -----------------------------------------------------------------

LATIN1 = os.fsdecode(b"caf\xe9")  # 'caf\udce9': how Python carries a Latin-1 byte in a name


@pytest.mark.skipif(sys.platform == "win32", reason="Windows names are always Unicode")
def test_non_utf8_video_name(tmp_path, sample_clip):
    clip = tmp_path / f"{LATIN1}.avi"
    clip.write_bytes(sample_clip.read_bytes())
    proc = run_process(tmp_path, clip, *CPU)  # OpenCV would crash on it: a real process
    assert proc.returncode == 1
    assert "not valid UTF-8" in only_line(proc.stderr)
    assert names(tmp_path) == [clip.name]


@pytest.mark.skipif(sys.platform == "win32", reason="Windows names are always Unicode")
def test_non_utf8_image_folder_and_outputs(tmp_path):
    # Images are read and written through Python, so such names work for them and for outputs.
    folder = tmp_path / LATIN1
    out = tmp_path / f"out_{LATIN1}"
    folder.mkdir()
    out.mkdir()
    for i, frame in enumerate(small_frames()):
        (folder / f"{LATIN1}{i}.png").write_bytes(cv2.imencode(".png", frame)[1].tobytes())
    (tmp_path / f"{LATIN1}.yaml").write_text("events:\n  min_area: 0.01\n")
    proc = run_process(
        tmp_path,
        folder,
        *CPU,
        "-c",
        tmp_path / f"{LATIN1}.yaml",
        "-o",
        out / "v.mp4",
        "--events",
        out / "e.json",
        "--masks",
        out / "m",
        "--mask-out",
        out / "m.mp4",
    )
    assert proc.returncode == 0, proc.stderr
    assert report(out / "e.json")["frame_count"] == 6
    assert count_frames(out / "v.mp4") == 6 and count_frames(out / "m.mp4") == 6
    assert len(list((out / "m").iterdir())) == 6
    # Default names from such a stem get U+FFFD, which every library takes.
    proc = run_process(tmp_path, folder, *CPU, "--no-video")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "caf\ufffd_motion.json").is_file()


# -- cameras and streams ----------------------------------------------------------------------


def test_invalid_camera_index(tmp_path):
    proc = run_process(tmp_path, "--camera", "97", *CPU)  # OpenCV prints a dozen lines here
    assert proc.returncode == 1
    assert "cannot open camera '97'" in only_line(proc.stderr)
    assert names(tmp_path) == []


@pytest.fixture
def silent_server():
    """A TCP port that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


@pytest.mark.parametrize("scheme", ["http", "rtsp"])
def test_url_that_does_not_answer(tmp_path, monkeypatch, capsys, silent_server, scheme):
    monkeypatch.setattr(VideoHandler, "open_timeout_ms", 500)
    started = time.monotonic()
    rc, err = run_main(monkeypatch, capsys, tmp_path, f"{scheme}://127.0.0.1:{silent_server}/cam", *CPU)
    assert rc == 1 and "no answer within 0.5 s" in only_line(err)
    assert time.monotonic() - started < 4  # bounded: the 0.5 s limit, not FFmpeg's default
    assert names(tmp_path) == []


def test_url_refused(tmp_path):
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    proc = run_process(tmp_path, f"http://127.0.0.1:{port}/x.mp4", *CPU, timeout=30)
    assert proc.returncode == 1 and "cannot open stream" in only_line(proc.stderr)
