"""Corrupt frames mid-file: undecodable frames are counted, reported in the summary line and the
events file, and the run goes on to the end of the input."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SAMPLE_ANNOUNCED, SAMPLE_DECODED, avi_chunks, count_frames, report, run_main
from helpers import recording_with_dropped_frames

from motiondetect.sources.video import VideoHandler

CPU = ("--backend", "cpu")


def check_damaged_run(tmp_path, monkeypatch, capsys, path, video=True):
    """Run on ``path``; check the run reached the end and accounted for every announced frame."""
    rc, err = run_main(monkeypatch, capsys, tmp_path, path, *CPU, *([] if video else ["--no-video"]))
    assert rc == 0, err
    assert "Traceback" not in err and "error:" not in err
    events = report(tmp_path / f"{path.stem}_motion.json")
    processed, undecodable = events["frame_count"], events["decode_errors"]
    assert events["complete"] is True and undecodable > 0
    # Every frame the pristine file decodes to is either processed or counted (the header's two
    # extra frames may or may not be counted: they are within the allowed slack).
    assert SAMPLE_DECODED <= processed + undecodable <= SAMPLE_ANNOUNCED
    assert f"{processed} frames" in err and f"{undecodable} frames could not be decoded" in err.splitlines()[-1]
    if video:
        assert count_frames(tmp_path / f"{path.stem}_motion.mp4") == processed
    return processed, undecodable


def test_garbage_bytes_mid_file(tmp_path, monkeypatch, capsys, damaged):
    rng = np.random.default_rng(7)

    def scribble(data):  # 8 stretches of 2 KB of noise between 30 % and 70 % of the file
        for offset in range(300_000, 700_000, 50_000):
            data[offset : offset + 2000] = rng.integers(0, 256, 2000, np.uint8).tobytes()

    path = damaged("noisy.avi", scribble)
    processed, _ = check_damaged_run(tmp_path, monkeypatch, capsys, path)
    assert processed > 700  # the frames after the damage were processed


@pytest.mark.parametrize("packets", [[300], [100, 400, 600], list(range(300, 340))], ids=["one", "three", "forty"])
def test_packets_the_decoder_rejects(tmp_path, monkeypatch, capsys, damaged, packets):
    def blank(data):
        chunks = avi_chunks(data)
        for index in packets:
            offset, size = chunks[index]
            data[offset + 8 : offset + 8 + size] = bytes(size)

    path = damaged("holes.avi", blank)
    # A reader that stops at the first failed read loses everything after the first hole.
    assert count_frames(path) < packets[0]
    processed, undecodable = check_damaged_run(tmp_path, monkeypatch, capsys, path, video=False)
    assert processed >= SAMPLE_DECODED - 2 * len(packets) - 2  # read past every hole
    assert undecodable >= len(packets)


def test_bad_images_in_a_sequence(tmp_path, monkeypatch, capsys, sequence):
    good = (sequence / "in000001.png").read_bytes()
    (sequence / "in000001.png").write_bytes(good[: len(good) // 3])  # truncated PNG
    (sequence / "in000003.png").write_bytes(b"")  # empty
    (sequence / "in000004.png").write_text("not an image")
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, *CPU, "--masks", "m")
    assert rc == 0, err
    lines = err.strip().splitlines()
    assert [name for name in ("in000001.png", "in000003.png", "in000004.png") if any(name in line for line in lines[:-1])] == [
        "in000001.png",
        "in000003.png",
        "in000004.png",
    ]
    assert "3 frames could not be decoded" in lines[-1]
    events = report(tmp_path / "seq_motion.json")
    assert events["frame_count"] == 3 and events["decode_errors"] == 3 and events["complete"] is True
    # Frames keep their input numbers: masks exist for images 0, 2 and 5 only.
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["seq_000000.png", "seq_000002.png", "seq_000005.png"]
    assert count_frames(tmp_path / "seq_motion.mp4") == 3


def test_first_image_unreadable(tmp_path, monkeypatch, capsys, sequence):
    (sequence / "in000000.png").write_bytes(b"\x89PNG broken")
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, *CPU)
    assert rc == 0, err
    events = report(tmp_path / "seq_motion.json")
    assert events["frame_count"] == 5 and events["decode_errors"] == 1 and events["frame_size"] == [32, 24]


def test_many_bad_images_are_reported_once_each_then_counted(tmp_path, monkeypatch, capsys, sequence):
    for i in range(6, 20):
        (sequence / f"in{i:06d}.png").write_text("x")
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, *CPU, "--no-video")
    assert rc == 0
    assert len(err.strip().splitlines()) == 3 + 1  # three named, the rest in the summary's count
    assert "14 frames could not be decoded" in err
    assert report(tmp_path / "seq_motion.json")["decode_errors"] == 14


def test_gaps_of_a_recording_are_not_decode_errors(tmp_path):
    # A recording of a live source that dropped frames (timestamps with holes, the container
    # counting only the frames stored) is whole: nothing is counted.
    path = tmp_path / "live.mp4"
    stored = recording_with_dropped_frames(path)
    with VideoHandler(path) as video:
        assert sum(1 for _ in video) == stored
    assert video.decode_errors == 0


def test_pristine_clip_has_no_decode_errors(sample_clip):
    with VideoHandler(sample_clip) as video:
        assert sum(1 for _ in video) == SAMPLE_DECODED
    assert video.decode_errors == 0  # 2 short of the header's 750: within the slack


def test_start_skips_then_counts_from_there(tmp_path, damaged):
    path = damaged("cut.avi", lambda data: data.__delitem__(slice(len(data) // 2, None)))
    total = count_frames(path)
    with VideoHandler(path) as video:
        assert video.skip(100) == 100
        assert sum(1 for _ in video) == total - 100
    assert video.decode_errors == SAMPLE_ANNOUNCED - total
