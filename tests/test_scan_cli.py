"""Footage scanning from the command line, end to end on the bundled real clip and small inputs:
reports, clips, motion-only video, masks, overlays, ROI, speed knobs, windows, several inputs."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import offline_events, one_line_error, run_cli, square_frames, video_grey

from motiondetect.apps.cli import main
from motiondetect.outputs.writer import VideoWriter

#: Settings that split the bundled highway clip into several events (the defaults, DVR-Scan's,
#: make its steady traffic one event); at 25 fps: 0.2 s = 5 frames, 0.5 s = 13, 0.3 s = 8.
SPLIT = ["--min-area", "0.01", "--min-event-length", "0.2", "--merge-gap", "0.5", "--time-before", "0.3", "--time-after", "0.5"]


#: main() rebinds the root logger to the (captured) stderr: every test here has it restored.
pytestmark = pytest.mark.usefixtures("restored_logging")


def independent_mask(previous, current):
    """The case study's chain on two grey images (luma first for video files)."""
    diff = cv2.absdiff(current, previous)
    return cv2.erode(cv2.threshold(diff, 25, 255, cv2.THRESH_BINARY)[1], np.ones((3, 3), np.uint8))


def decode(path):
    cap = cv2.VideoCapture(str(path))
    assert cap.isOpened(), path
    fps, frames = cap.get(cv2.CAP_PROP_FPS), []
    while True:
        ok, image = cap.read()
        if not ok:
            break
        frames.append(image)
    cap.release()
    return frames, fps


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


#: The case study's pipeline: the scan's expectations are an independent chain of its steps.
SEED_YAML = str(Path(__file__).resolve().parent.parent / "configs" / "seed.yaml")


def run(monkeypatch, capsys, cwd, *argv):
    rc, _, err = run_cli(monkeypatch, capsys, cwd, *argv)
    return rc, err


# -- one command, every output (the "done when") ------------------------------------


@pytest.fixture(scope="module")
def scan(sample_clip, tmp_path_factory):
    folder = tmp_path_factory.mktemp("scan")
    argv = [
        str(sample_clip),
        "-c",
        SEED_YAML,
        "--backend",
        "cpu",
        "--boxes",
        "--timecode",
        "--fraction",
        "--events",
        "report.json",
        "--events",
        "report.csv",
        "--clips",
        "clips",
        "--masks",
        "masks",
        "--mask-out",
        "mask.mp4",
        *SPLIT,
        "-q",
    ]
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        rc = main(argv)
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return folder, rc, report


@pytest.fixture(scope="module")
def frames(sample_clip):
    return decode(sample_clip)[0]


@pytest.fixture(scope="module")
def greys(sample_clip):
    return video_grey(sample_clip)


def test_scan_writes_every_output(scan):
    folder, rc, report = scan
    assert rc == 0 and report["complete"] is True and report["frame_count"] == 748
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["clips", "highway_traffic_320x240_motion.mp4", "mask.mp4", "masks", "report.csv", "report.json"]
    assert report["config"]["events"]["min_area"] == 0.01 and report["config"]["overlays"]["boxes"] is True


def test_scan_events_follow_the_rules(scan, greys):
    _, _, report = scan
    fractions = [0.0] + [np.count_nonzero(m) / m.size for m in (independent_mask(a, b) for a, b in zip(greys, greys[1:]))]
    expected = offline_events(fractions, 0.01, 1.0, min_frames=5, gap=13, before=8, after=13)
    got = [(e["start_frame"], e["end_frame"], e["motion_start_frame"], e["motion_end_frame"]) for e in report["events"]]
    assert got == [w[:4] for w in expected]
    assert len(got) >= 5


def test_scan_csv_and_json_agree(scan):
    folder, _, report = scan
    rows = read_csv(folder / "report.csv")
    assert len(rows) == len(report["events"])
    for row, event in zip(rows, report["events"]):
        assert int(row["index"]) == event["index"]
        for key in ("start_frame", "end_frame", "motion_start_frame", "motion_end_frame"):
            assert int(row[key]) == event[key]
        for key in ("start_time", "end_time", "duration", "peak_motion", "mean_motion"):
            assert float(row[key]) == event[key]
        assert (row["start_timecode"], row["end_timecode"]) == (event["start_timecode"], event["end_timecode"])
        assert [int(row[k]) for k in ("bbox_x", "bbox_y", "bbox_w", "bbox_h")] == event["bbox"]


def test_scan_one_clip_per_event_with_its_duration(scan):
    folder, _, report = scan
    clips = sorted((folder / "clips").iterdir())
    assert [c.name for c in clips] == [f"highway_traffic_320x240_event{e['index']:04d}.mp4" for e in report["events"]]
    annotated, _ = decode(folder / "highway_traffic_320x240_motion.mp4")
    for clip, event in zip(clips, report["events"]):
        frames, fps = decode(clip)
        assert fps == pytest.approx(25.0)
        assert len(frames) == event["end_frame"] - event["start_frame"] + 1
        assert len(frames) / fps == pytest.approx(event["duration"], abs=1e-3)
        # The clip is the annotated video's span (both H.264 from the same frames, in GOPs that
        # start at other frames, so compare with a tolerance).
        for offset in (0, len(frames) // 2, len(frames) - 1):
            want = annotated[event["start_frame"] + offset].astype(int)
            assert np.abs(frames[offset].astype(int) - want).mean() < 6


def test_scan_mask_images_are_the_exact_masks(scan, greys):
    folder, _, _ = scan
    masks = sorted((folder / "masks").iterdir())
    assert len(masks) == 748 and masks[0].name == "highway_traffic_320x240_000000.png"
    for index in (0, 1, 150, 747):
        got = cv2.imread(str(folder / "masks" / f"highway_traffic_320x240_{index:06d}.png"), cv2.IMREAD_UNCHANGED)
        want = np.zeros((240, 320), np.uint8) if index == 0 else independent_mask(greys[index - 1], greys[index])
        assert got.dtype == np.uint8 and got.ndim == 2
        np.testing.assert_array_equal(got, want)


def test_scan_mask_video(scan):
    folder, _, _ = scan
    masks, fps = decode(folder / "mask.mp4")
    assert len(masks) == 748 and fps == pytest.approx(25.0) and masks[0].shape == (240, 320, 3)


def test_scan_overlays_on_the_annotated_video(scan, frames):
    folder, _, report = scan
    annotated, _ = decode(folder / "highway_traffic_320x240_motion.mp4")
    index = report["events"][0]["motion_start_frame"] + 2
    out, src = annotated[index].astype(int), frames[index].astype(int)
    # Light text on a black band in the top-left corner (antialiased, then H.264-coded).
    band = out[2:12, 2:60]
    assert (band.max(axis=2) < 60).mean() > 0.4 and (band.min(axis=2) > 150).mean() > 0.05
    assert np.abs(band - src[2:12, 2:60]).mean() > 40
    # Green box outlines where there was none.
    green = (out[..., 1] > 180) & (out[..., 2] < 120) & (out[..., 0] < 120)
    was_green = (src[..., 1] > 180) & (src[..., 2] < 120) & (src[..., 0] < 120)
    assert np.count_nonzero(green & ~was_green) > 30


def test_only_motion_video_holds_the_events_frames(sample_clip, tmp_path, monkeypatch, capsys, scan):
    _, _, report = scan
    rc, _ = run(
        monkeypatch,
        capsys,
        tmp_path,
        sample_clip,
        "-c",
        SEED_YAML,
        "--backend",
        "cpu",
        "-o",
        "only.mp4",
        "--only-motion",
        "--no-blend",
        *SPLIT,
        "--events",
        "e.json",
        "-q",
    )
    assert rc == 0
    frames, _ = decode(tmp_path / "only.mp4")
    assert len(frames) == sum(e["end_frame"] - e["start_frame"] + 1 for e in report["events"])
    written = json.loads((tmp_path / "e.json").read_text())
    assert written["events"] == report["events"] and written["output_video"] == "only.mp4"


def test_only_motion_without_events_writes_no_video(sequence, tmp_path, monkeypatch, capsys):
    rc, _ = run(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "-o", "only.mp4", "--only-motion", "--min-area", "0.9", "-q")
    assert rc == 0 and not (tmp_path / "only.mp4").exists()
    report = json.loads((tmp_path / "seq_motion.json").read_text())
    assert report["events"] == [] and report["output_video"] is None  # before: "only.mp4", never written
    # An earlier run's video there, replaced with --overwrite: removed, not left as if it were this run's.
    (tmp_path / "only.mp4").write_bytes(b"an earlier run's events")
    args = ("--backend", "cpu", "-o", "only.mp4", "--only-motion", "--min-area", "0.9", "--overwrite")
    rc, err = run(monkeypatch, capsys, tmp_path, sequence, *args)
    assert rc == 0 and not (tmp_path / "only.mp4").exists()
    assert "no motion events: only.mp4 not written, and the earlier file there removed" in err


# -- small inputs --------------------------------------------------------------------------


@pytest.fixture
def sequence(tmp_path) -> Path:
    folder = tmp_path / "seq"
    folder.mkdir()
    for i, f in enumerate(square_frames()):
        cv2.imwrite(str(folder / f"in{i:06d}.png"), f)
    return folder


def write_video(path, frames, fps=25):
    with VideoWriter(path, fps, (frames[0].shape[1], frames[0].shape[0])) as writer:
        for f in frames:
            writer.write(f)
    return path


@pytest.fixture
def two_videos(tmp_path) -> list[Path]:
    folder = tmp_path / "in"
    folder.mkdir()
    return [write_video(folder / "a.mp4", square_frames(6)), write_video(folder / "b.mp4", square_frames(9))]


def test_several_inputs_one_report_each(tmp_path, two_videos, monkeypatch, capsys):
    rc, err = run(monkeypatch, capsys, tmp_path, *two_videos, "--backend", "cpu", "--no-video")
    assert rc == 0
    a = json.loads((tmp_path / "a_motion.json").read_text())
    b = json.loads((tmp_path / "b_motion.json").read_text())
    assert (a["frame_count"], b["frame_count"]) == (6, 9)
    assert a["input"] == str(two_videos[0]) and len(a["events"]) == len(b["events"]) == 1
    assert err.count("frames in") == 2  # one summary line per input


def test_quoted_glob_is_expanded(tmp_path, two_videos, monkeypatch, capsys):
    rc, _ = run(
        monkeypatch, capsys, tmp_path, str(tmp_path / "in" / "*.mp4"), "--backend", "cpu", "--no-video", "--events", "{stem}.csv", "-q"
    )
    assert rc == 0
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == ["a.csv", "b.csv"]
    rc, err = run(monkeypatch, capsys, tmp_path, str(tmp_path / "none*.mp4"), "--backend", "cpu")
    assert rc == 1 and "no files match" in one_line_error(err)  # like a missing input


def test_several_inputs_need_stem_in_file_names(tmp_path, two_videos, monkeypatch, capsys):
    rc, err = run(monkeypatch, capsys, tmp_path, *two_videos, "--backend", "cpu", "-o", "out.mp4")
    assert rc == 2 and "{stem}" in one_line_error(err)
    assert list(tmp_path.glob("*.json")) == []


def test_concat_is_one_stream(tmp_path, two_videos, monkeypatch, capsys):
    rc, _ = run(monkeypatch, capsys, tmp_path, *two_videos, "--backend", "cpu", "--concat", "--events", "all.json", "--masks", "m", "-q")
    assert rc == 0
    report = json.loads((tmp_path / "all.json").read_text())
    assert report["frame_count"] == 15 and report["inputs"] == [str(p) for p in two_videos]
    assert len(list((tmp_path / "m").iterdir())) == 15 and (tmp_path / "m" / "a_000014.png").is_file()
    assert len(decode(tmp_path / "a_motion.mp4")[0]) == 15


def test_concat_refuses_other_sizes(tmp_path, two_videos, monkeypatch, capsys):
    other = write_video(tmp_path / "c.mp4", square_frames(4, height=64, width=80))
    rc, err = run(monkeypatch, capsys, tmp_path, two_videos[0], other, "--backend", "cpu", "--concat")
    assert rc == 2 and "64x48" in one_line_error(err) and "80x64" in err
    assert not list(tmp_path.glob("*.json"))


def test_start_and_end_window(tmp_path, sequence, monkeypatch, capsys):
    rc, _ = run(
        monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "--fps", "10", "--start", "0.3", "--end", "6f", "--masks", "m", "-q"
    )
    assert rc == 0
    report = json.loads((tmp_path / "seq_motion.json").read_text())
    assert report["frame_count"] == 3 and report["start_frame"] == 3
    (event,) = report["events"]
    # Frame 3 is the first seen (no predecessor: no motion); 4 and 5 move; padding stays inside.
    assert (event["start_frame"], event["motion_start_frame"], event["end_frame"]) == (3, 4, 5)
    assert event["start_time"] == 0.3
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["seq_000003.png", "seq_000004.png", "seq_000005.png"]
    assert len(decode(tmp_path / "seq_motion.mp4")[0]) == 3


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--start", "5f", "--end", "5f"], "--end"),
        (["--start", "1:xx"], "HH:MM:SS"),
        (["--min-area", "2"], "out of range"),
        (["--downscale", "0"], "out of range"),
        (["--frame-skip", "1.5"], "whole number"),
        (["--only-motion", "--no-video"], "--only-motion"),
        # Options that would be ignored: before, each ran with exit code 0 and wrote no such file.
        (["-o", "out.mp4", "--no-video"], "-o 'out.mp4' names the annotated video, which --no-video leaves out"),
        (["--clip-mode", "copy"], "--clip-mode copy says how --clips cuts the event clips; add --clips DIR"),
        (["--events", "a.json", "--events", "a.json"], "events file 'a.json' is named twice"),
        (["--realtime"], "--realtime paces the preview window of a file; add --preview"),
        (["--record", "r.mp4", "-o", "o.mp4"], "--record and -o both name the annotated video"),  # one was ignored
        (["--record", "r.mp4", "--no-video"], "--record 'r.mp4' names the annotated video"),
    ],
)
def test_usage_errors(tmp_path, sequence, monkeypatch, capsys, argv, fragment):
    rc, err = run(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", *argv)
    assert rc == 2 and fragment in err
    assert not (tmp_path / "seq_motion.json").exists()


def test_start_past_the_end_is_a_clear_error(tmp_path, sequence, monkeypatch, capsys):
    rc, err = run(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "--start", "100f")
    assert rc == 2 and "--start (frame 100) is past the end of the input (8 frames)" in one_line_error(err)
    assert not (tmp_path / "seq_motion.json").exists()  # before: a report of 0 frames, "complete": true


def test_roi_polygons_from_yaml(tmp_path, sequence, monkeypatch, capsys):
    # The square moves right along rows 10..25; a region over the right half only sees it late.
    (tmp_path / "roi.yaml").write_text("polygons:\n  - [[40, 0], [63, 0], [63, 47], [40, 47]]\n")
    rc, _ = run(
        monkeypatch,
        capsys,
        tmp_path,
        sequence,
        "--backend",
        "cpu",
        "--roi",
        "roi.yaml",
        "--masks",
        "m",
        "--fps",
        "10",
        "--time-before",
        "0",
        "-q",
    )
    assert rc == 0
    report = json.loads((tmp_path / "seq_motion.json").read_text())
    assert report["config"]["roi"] == {"polygons": [[[40, 0], [63, 0], [63, 47], [40, 47]]]}
    masks = [cv2.imread(str(p), cv2.IMREAD_GRAYSCALE) for p in sorted((tmp_path / "m").iterdir())]
    assert all(not m[:, :40].any() for m in masks)  # nothing outside the region
    moving = [i for i, m in enumerate(masks) if m.any()]
    assert moving and moving[0] >= 4  # the square (x 4 + 6i .. 19 + 6i) first crosses x = 40 at frame 4
    assert report["events"][0]["motion_start_frame"] == moving[0]
    x, _, w, _ = report["events"][0]["bbox"]
    assert x >= 40 and x + w <= 64


def test_roi_mask_image_and_its_errors(tmp_path, sequence, monkeypatch, capsys):
    roi = np.zeros((48, 64), np.uint8)
    roi[:, 40:] = 255
    cv2.imwrite(str(tmp_path / "roi.png"), roi)
    rc, _ = run(
        monkeypatch,
        capsys,
        tmp_path,
        sequence,
        "--backend",
        "cpu",
        "--roi",
        "roi.png",
        "--no-video",
        "--events",
        "r.json",
        "--fps",
        "10",
        "-q",
    )
    assert rc == 0
    assert json.loads((tmp_path / "r.json").read_text())["events"][0]["bbox"][0] >= 40
    cv2.imwrite(str(tmp_path / "small.png"), roi[:10])
    rc, err = run(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "--roi", "small.png", "--overwrite")
    assert rc == 2 and "64x10, the frames are 64x48" in one_line_error(err)
    (tmp_path / "bad.yaml").write_text("polygons:\n  - [[0, 0], [1, 1]]\n")
    rc, err = run(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "--roi", "bad.yaml", "--overwrite")
    assert rc == 2 and "at least 3" in one_line_error(err)


def test_output_folders_are_checked(tmp_path, sequence, monkeypatch, capsys):
    assert run(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "--clips", "c", "--masks", "m", "-q")[0] == 0
    assert (tmp_path / "c" / "seq_event0001.mp4").is_file() and (tmp_path / "m" / "seq_000007.png").is_file()
    for flag, folder in (("--clips", "c"), ("--masks", "m")):
        rc, err = run(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "--no-video", "--events", "x.json", flag, folder)
        assert rc == 2 and "--overwrite" in one_line_error(err)
    (tmp_path / "afile").write_text("")
    rc, err = run(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "--clips", "afile", "--overwrite")
    assert rc == 2 and "is a file" in one_line_error(err)
    rc, err = run(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "--masks", "no/such/dir", "--overwrite")
    assert rc == 2 and "parent folder" in one_line_error(err)


@pytest.mark.parametrize("name", ["out.mkv", "out.avi"])
def test_other_containers_are_written_quietly(tmp_path, sequence, monkeypatch, capsys, name):
    """-q prints errors only: MP4's movflags given to another muxer printed "Some options were
    not used" (the container follows the suffix)."""
    rc, err = run(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "-o", name, "-q")
    assert rc == 0 and err == ""
    frames, _ = decode(tmp_path / name)
    assert len(frames) == 8


def test_overwrite_leaves_no_clip_or_mask_of_an_earlier_run(tmp_path, sequence, monkeypatch, capsys):
    """Before, a second run with --overwrite and fewer events or frames left the first run's
    other clips and masks in the folders, beside a report that does not list them."""
    (tmp_path / "c").mkdir()
    (tmp_path / "m").mkdir()
    for name in ("c/seq_event0001.mp4", "c/seq_event0007.mp4", "m/seq_000099.png", "c/other_event0001.mp4", "m/notes.txt"):
        (tmp_path / name).write_bytes(b"an earlier run's")
    rc, err = run(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "--clips", "c", "--masks", "m", "--overwrite")
    assert rc == 0 and "2 clips of an earlier run removed from c" in err and "1 mask of an earlier run removed from m" in err
    report = json.loads((tmp_path / "seq_motion.json").read_text())
    clips = sorted(p.name for p in (tmp_path / "c").iterdir())
    assert clips == ["other_event0001.mp4"] + [f"seq_event{e['index']:04d}.mp4" for e in report["events"]]  # another input's stays
    assert (tmp_path / "c" / "seq_event0001.mp4").read_bytes() != b"an earlier run's"
    masks = sorted(p.name for p in (tmp_path / "m").iterdir())
    assert masks == ["notes.txt"] + [f"seq_{n:06d}.png" for n in range(report["frame_count"])]


def test_speed_knobs_keep_the_input_size(tmp_path, sample_clip, monkeypatch, capsys):
    rc, _ = run(
        monkeypatch,
        capsys,
        tmp_path,
        sample_clip,
        "--backend",
        "cpu",
        "--downscale",
        "2",
        "--frame-skip",
        "1",
        "--end",
        "40f",
        "--masks",
        "m",
        "--boxes",
        "-q",
    )
    assert rc == 0
    report = json.loads((tmp_path / "highway_traffic_320x240_motion.json").read_text())
    assert report["config"]["scan"] == {"downscale": 2, "frame_skip": 1, "batch": 0, "chunk": 60.0} and report["frame_count"] == 40
    mask = cv2.imread(str(tmp_path / "m" / "highway_traffic_320x240_000010.png"), cv2.IMREAD_GRAYSCALE)
    assert mask.shape == (240, 320) and mask.any()
    # Frames 0, 2, 4... are processed; 11 holds 10's mask.
    np.testing.assert_array_equal(mask, cv2.imread(str(tmp_path / "m" / "highway_traffic_320x240_000011.png"), cv2.IMREAD_GRAYSCALE))
    frames, _ = decode(tmp_path / "highway_traffic_320x240_motion.mp4")
    assert len(frames) == 40 and frames[0].shape == (240, 320, 3)


def test_preset_configs_run(tmp_path, sequence, monkeypatch, capsys):
    root = Path(__file__).resolve().parent.parent / "configs"
    for name in ("default", "high_sensitivity", "low_sensitivity", "fast_scan"):
        rc, err = run(
            monkeypatch,
            capsys,
            tmp_path,
            sequence,
            "--backend",
            "cpu",
            "-c",
            root / f"{name}.yaml",
            "--no-video",
            "--events",
            f"{name}.json",
            "-q",
        )
        assert rc == 0, err


def test_help_lists_every_setting_flag(capsys):
    from motiondetect.pipeline.config import SECTIONS

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for section, table in SECTIONS.items():
        assert f"{section} settings" in out
        for name, (_, default, _) in table.items():
            assert "--" + name.replace("_", "-") in out and f"{name}={default}" in out
    for flag in ("--clips", "--only-motion", "--mask-out", "--masks", "--roi", "--start", "--end", "--concat", "--no-blend"):
        assert flag in out


# -- clips by stream copy, the motion plot -------------------------------------------------


@pytest.fixture(scope="module")
def h264_clip(sample_clip, tmp_path_factory):
    """The sample re-encoded as H.264 with a keyframe every 25 frames, and its keyframes' indices."""
    import av

    path = tmp_path_factory.mktemp("h264") / "clip.mp4"
    with av.open(str(sample_clip)) as src, av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 320, 240, "yuv420p"
        stream.options = {"g": "25", "bf": "0"}
        for frame in src.decode(video=0):
            frame.pts = None
            for packet in stream.encode(frame.reformat(format="yuv420p")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    with av.open(str(path)) as container:
        keyframes = [i for i, p in enumerate(p for p in container.demux(video=0) if p.size) if p.is_keyframe]
    return path, keyframes


def test_copy_mode_cuts_each_event_from_the_input_at_the_keyframe_before_it(h264_clip, tmp_path, monkeypatch, capsys):
    path, keyframes = h264_clip
    argv = [path, "-c", SEED_YAML, "--backend", "cpu", *SPLIT, "--no-video", "--clips", "clips", "--clip-mode", "copy"]
    rc, err = run(monkeypatch, capsys, tmp_path, *argv, "--events", "report.json")
    assert rc == 0, err
    events = json.loads((tmp_path / "report.json").read_text())["events"]
    clips = sorted((tmp_path / "clips").iterdir())
    assert len(events) >= 3 and [c.name for c in clips] == [f"clip_event{e['index']:04d}.mp4" for e in events]
    source = decode(path)[0]
    for clip, event in zip(clips, events):
        first = max(k for k in keyframes if k <= event["start_frame"])
        frames, fps = decode(clip)
        assert fps == pytest.approx(25.0)
        assert len(frames) == event["end_frame"] - first + 1  # from the keyframe to the event's last frame
        for offset in (0, len(frames) - 1):  # the input's own pictures: no re-encoding, no overlay
            np.testing.assert_array_equal(frames[offset], source[first + offset])


def test_copy_mode_needs_one_video_file(tmp_path, monkeypatch, capsys, sequence):
    rc, err = run(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "--clips", "c", "--clip-mode", "copy", "--no-video")
    assert rc == 2 and "--clip-mode copy cuts clips from one video file" in one_line_error(err)


def test_plot_shows_the_motion_and_the_events(h264_clip, tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    path, _ = h264_clip
    rc, err = run(monkeypatch, capsys, tmp_path, path, "-c", SEED_YAML, "--backend", "cpu", *SPLIT, "--no-video", "--plot", "motion.png")
    assert rc == 0, err
    picture = cv2.imread(str(tmp_path / "motion.png"))
    assert picture.shape[:2] == (400, 1200)
    # The shading of the events (orange, partly transparent) covers a real share of the axes.
    b, g, r = (picture[..., c].astype(int) for c in range(3))
    shaded = (r > 200) & (g > 180) & (g < 235) & (b < 215) & (b > 150)
    assert shaded.mean() > 0.05


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--plot", "motion.jpg"], "--plot 'motion.jpg': expected a .png file name"),
    ],
)
def test_plot_refusals(sample_clip, tmp_path, monkeypatch, capsys, argv, message):
    pytest.importorskip("matplotlib")
    rc, err = run(monkeypatch, capsys, tmp_path, sample_clip, "--backend", "cpu", "--no-video", *argv)
    assert rc == 2 and message in one_line_error(err)


def test_plot_without_matplotlib_is_refused_before_the_run(sample_clip, tmp_path, monkeypatch, capsys):
    import sys

    for name in [name for name in sys.modules if name.split(".")[0] == "matplotlib"] + ["matplotlib"]:
        monkeypatch.setitem(sys.modules, name, None)  # as if it were not installed
    rc, err = run(monkeypatch, capsys, tmp_path, sample_clip, "--backend", "cpu", "--no-video", "--plot", "m.png")
    assert rc == 2 and "pip install 'motiondetect[plot]'" in one_line_error(err)
    assert not list(tmp_path.iterdir())  # nothing was written


def test_chunked_run_copies_the_same_clips_and_draws_the_plot(h264_clip, tmp_path, monkeypatch, capsys):
    """On a local Dask cluster the clips are cut from the input along the stitched events: with
    frame pairs (exact across chunks) the same clips, bit for bit, as a sequential run's."""
    pytest.importorskip("distributed")
    pytest.importorskip("matplotlib")
    path, _ = h264_clip
    common = [path, "-c", SEED_YAML, "--backend", "cpu", *SPLIT, "--no-video", "--clips", "clips", "--clip-mode", "copy", "--plot", "m.png"]
    for name, extra in (("sequential", []), ("chunked", ["--jobs", "2", "--chunk", "4"])):
        (tmp_path / name).mkdir()
        rc, err = run(monkeypatch, capsys, tmp_path / name, *common, *extra, "--events", "report.json")
        assert rc == 0, err
        assert (" chunks, " in err) == (name == "chunked"), err
    reports = [json.loads((tmp_path / name / "report.json").read_text())["events"] for name in ("sequential", "chunked")]
    assert reports[0] == reports[1] and len(reports[0]) >= 3
    clips = [sorted((tmp_path / name / "clips").iterdir()) for name in ("sequential", "chunked")]
    assert [c.name for c in clips[0]] == [c.name for c in clips[1]]
    for one, other in zip(*clips):
        a, b = decode(one)[0], decode(other)[0]
        assert len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))
    assert cv2.imread(str(tmp_path / "chunked" / "m.png")).shape[:2] == (400, 1200)
