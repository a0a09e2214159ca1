"""Event segmentation on hand-made fraction sequences and against an independent offline
reference; timecodes; the JSON and CSV writers."""

from __future__ import annotations

import csv
import json
import os
import stat

import pytest
from helpers import offline_events
from hypothesis import given, settings
from hypothesis import strategies as st

from motiondetect.outputs.events import (
    CSV_COLUMNS,
    EventSegmenter,
    format_timecode,
    seconds_to_frames,
    write_csv_atomic,
    write_json_atomic,
)

FPS = 10.0  # 0.1 s per frame: settings below are whole frames
M, Q, L = 0.5, 0.05, 0.95  # moving, quiet (below min_area 0.1), lightswitch (above max_area 0.8)


def segment(fractions, boxes=None, first=0, **kw):
    """Run the streaming segmenter; settings default to 'every run is an event, no padding'."""
    params = dict(min_area=0.1, min_event_length=0.0, merge_gap=0.0, time_before=0.0, time_after=0.0)
    params.update(kw)
    seg = EventSegmenter(FPS, **params)
    for i, f in enumerate(fractions):
        seg.update(first + i, f, None if boxes is None else boxes[i])
    return seg.finish()


def spans(events):
    return [(e.start_frame, e.end_frame) for e in events]


def motion_spans(events):
    return [(e.motion_start_frame, e.motion_end_frame) for e in events]


# -- the degenerate settings: runs of moving frames ----------------------------------------


def test_no_motion_no_events():
    assert segment([0.0] * 10) == []
    assert segment([]) == []
    assert segment([0.05, 0.09, 0.0999]) == []


def test_runs_become_events_without_padding_or_merging():
    events = segment([0, 0.2, 0.3, 0, 0, 0.5, 0.5, 0.6, 0.1, 0, 0.9])
    assert spans(events) == motion_spans(events) == [(1, 2), (5, 8), (10, 10)]
    assert [e.peak_motion for e in events] == [0.3, 0.6, 0.9]
    assert [e.index for e in events] == [1, 2, 3]
    assert (events[1].start_time, events[1].end_time) == (0.5, 0.8)
    assert events[1].duration == pytest.approx(0.4)  # 4 frames of 0.1 s


def test_min_area_boundary_is_inclusive_and_zero_needs_some_motion():
    size = 320 * 240
    seg = EventSegmenter(FPS, min_area=77 / size, min_event_length=0, merge_gap=0, time_before=0, time_after=0)
    for i, count in enumerate([76, 77, 78, 76, 77]):
        seg.update(i, count / size)
    assert spans(seg.finish()) == [(1, 2), (4, 4)]
    assert spans(segment([0.0, 1e-9, 0.0, 0.0], min_area=0.0)) == [(1, 1)]


def test_min_pixels_replaces_min_area():
    area = 1000
    seg = EventSegmenter(FPS, min_area=0.9, min_pixels=50, area=area, min_event_length=0, merge_gap=0, time_before=0, time_after=0)
    for i, count in enumerate([49, 50, 51, 0, 49]):
        seg.update(i, count / area)
    assert spans(seg.finish()) == [(1, 2)]
    with pytest.raises(ValueError, match="area"):
        EventSegmenter(FPS, min_pixels=5)


# -- min_event_length ----------------------------------------------------------------------


def test_min_event_length_needs_consecutive_frames():
    # 0.3 s at 10 fps = 3 frames: the runs of 1 and 2 frames start nothing, the run of 3 does,
    # from its first frame.
    events = segment([M, 0, M, M, 0, M, M, M, 0, 0], min_event_length=0.3)
    assert motion_spans(events) == [(5, 7)]


def test_min_event_length_rounds_half_up():
    assert seconds_to_frames(0.1, 25) == 3  # 2.5 frames
    assert seconds_to_frames(0.1, 30) == 3
    assert seconds_to_frames(1.5, 25) == 38
    assert seconds_to_frames(0.0, 25) == 0
    assert EventSegmenter(25, min_event_length=0).min_frames == 1  # at least one frame


def test_short_bursts_inside_an_event_extend_it():
    # Once started, a single moving frame within the merge gap extends the event.
    events = segment([M, M, M, 0, M, 0, 0, 0, 0, 0], min_event_length=0.3, merge_gap=0.2)
    assert motion_spans(events) == [(0, 4)]


# -- merge_gap -----------------------------------------------------------------------------


def test_gap_up_to_merge_gap_merges_longer_splits():
    # merge_gap 0.2 s = 2 frames.
    assert motion_spans(segment([M, 0, 0, M], merge_gap=0.2)) == [(0, 3)]
    assert motion_spans(segment([M, 0, 0, 0, M], merge_gap=0.2)) == [(0, 0), (4, 4)]


def test_merge_gap_is_at_least_time_after():
    # merge_gap 0 with 0.3 s of padding after: a pause of 3 frames would put the next motion
    # inside the padding, so the events merge; a pause of 4 does not.
    events = segment([M, 0, 0, 0, M, 0, 0, 0, 0, 0], merge_gap=0.0, time_after=0.3)
    assert motion_spans(events) == [(0, 4)]
    events = segment([M, 0, 0, 0, 0, M, 0, 0, 0, 0, 0, 0], merge_gap=0.0, time_after=0.3)
    assert motion_spans(events) == [(0, 0), (5, 5)] and spans(events) == [(0, 3), (5, 8)]


# -- padding -------------------------------------------------------------------------------


def test_padding_before_and_after():
    fractions = [0] * 20 + [M] * 3 + [0] * 20
    (event,) = segment(fractions, time_before=0.5, time_after=0.7)
    assert (event.motion_start_frame, event.motion_end_frame) == (20, 22)
    assert (event.start_frame, event.end_frame) == (15, 29)
    assert event.frame_count == 15 and event.duration == pytest.approx(1.5)


def test_padding_cut_at_the_start_and_end_of_the_input():
    (event,) = segment([0, 0, M, M, 0, 0], time_before=1.5, time_after=2.0)
    assert (event.start_frame, event.end_frame) == (0, 5)
    assert (event.motion_start_frame, event.motion_end_frame) == (2, 3)


def test_padding_cut_at_the_first_frame_fed_not_zero():
    # A run that starts at frame 100 (e.g. --start) cannot pad before it.
    (event,) = segment([0, M, 0], first=100, time_before=1.0)
    assert (event.start_frame, event.motion_start_frame) == (100, 101)


def test_padding_before_never_overlaps_the_previous_event():
    # after 0.2 s (2 frames), before 1.0 s (10 frames): the second event's padding starts right
    # after the first one's.
    fractions = [M] + [0] * 5 + [M] + [0] * 3
    events = segment(fractions, time_before=1.0, time_after=0.2)
    assert spans(events) == [(0, 2), (3, 8)]
    assert motion_spans(events) == [(0, 0), (6, 6)]


def test_min_event_length_with_padding_reaches_back_before_the_run():
    fractions = [0] * 10 + [M] * 4 + [0] * 10
    (event,) = segment(fractions, min_event_length=0.4, time_before=0.3, time_after=0.2)
    assert (event.start_frame, event.motion_start_frame, event.motion_end_frame, event.end_frame) == (7, 10, 13, 15)


# -- max_area (lightswitch) ----------------------------------------------------------------


def test_lightswitch_frame_is_ignored():
    # One frame where 95 % of the picture changes: no event with max_area 0.8; with the default
    # 1.0 (off) it is an event.
    fractions = [0, 0, L, 0, 0]
    assert segment(fractions, max_area=0.8) == []
    assert spans(segment(fractions)) == [(2, 2)]


def test_lightswitch_inside_an_event_counts_as_no_motion():
    # The ignored frame neither extends the event nor enters its statistics.
    fractions = [M, M, L, 0, 0, 0]
    (event,) = segment(fractions, max_area=0.8, merge_gap=0.1)
    assert motion_spans([event]) == [(0, 1)]
    assert event.peak_motion == M and event.mean_motion == pytest.approx(M)
    events = segment([M, L, L, M], max_area=0.8, merge_gap=0.1)
    assert motion_spans(events) == [(0, 0), (3, 3)]  # two ignored frames: a gap of 2 > 1


def test_lightswitch_breaks_a_starting_run():
    assert segment([M, L, M, 0], max_area=0.8, min_event_length=0.2) == []


# -- statistics ----------------------------------------------------------------------------


def test_peak_mean_and_box_over_the_motion_span():
    fractions = [0, 0.2, 0.05, 0.6, 0, 0]
    boxes = [None, (10, 10, 5, 5), (0, 0, 100, 100), (30, 2, 4, 4), None, None]
    (event,) = segment(fractions, boxes=boxes, merge_gap=0.1)
    assert motion_spans([event]) == [(1, 3)]
    assert event.peak_motion == 0.6
    assert event.mean_motion == pytest.approx((0.2 + 0.05 + 0.6) / 3)  # the quiet frame counts
    assert event.bbox == (10, 2, 24, 13)  # moving frames only: x 10..33, y 2..14


def test_as_dict_fields_and_rounding():
    seg = EventSegmenter(7.0, min_area=0.001, min_event_length=0, merge_gap=0, time_before=0, time_after=0)
    seg.update(3, 0.1234567891, (1, 2, 3, 4))
    seg.update(4, 0.2, (2, 2, 3, 4))
    (d,) = [e.as_dict() for e in seg.finish()]
    assert d == {
        "index": 1,
        "start_frame": 3,
        "end_frame": 4,
        "start_timecode": "00:00:00.429",
        "end_timecode": "00:00:00.571",
        "start_time": 0.429,
        "end_time": 0.571,
        "duration": 0.286,
        "motion_start_frame": 3,
        "motion_end_frame": 4,
        "peak_motion": 0.2,
        "mean_motion": 0.161728,
        "bbox": [1, 2, 4, 4],
    }
    json.dumps(d)


# -- streaming -----------------------------------------------------------------------------


def test_events_visible_while_running_and_started_ended_flags():
    seg = EventSegmenter(FPS, min_area=0.1, min_event_length=0.2, merge_gap=0.1, time_before=0, time_after=0)
    seg.update(0, M)
    assert seg.events == [] and seg.started is None
    seg.update(1, M)
    assert seg.started is seg.active is seg.events[0] and motion_spans(seg.events) == [(0, 1)]
    seg.update(2, 0)
    assert seg.started is None and seg.ended is None and seg.active is not None
    seg.update(3, 0)
    assert seg.ended is seg.events[0] and seg.active is None
    assert spans(seg.events) == [(0, 1)]


def test_interrupted_run_reports_the_open_event_cut_at_the_last_frame():
    seg = EventSegmenter(FPS, min_area=0.1, min_event_length=0, merge_gap=2.0, time_before=0, time_after=2.0)
    for i, f in enumerate([0, M, M, M, 0, 0]):
        seg.update(i, f)
    events = seg.finish()  # stopped at frame 5, 2 s of padding not reached
    assert spans(events) == [(1, 5)] and motion_spans(events) == [(1, 3)]
    assert seg.finish() == events and spans(events) == [(1, 5)]  # idempotent


def test_fps_must_be_positive():
    with pytest.raises(ValueError, match="fps"):
        EventSegmenter(0)


# -- against an independent offline segmentation ------------------------------------------


#: Fraction sequences as runs of one value (long pauses and bursts both occur).
RUNS = st.lists(st.tuples(st.sampled_from([0.0, Q, 0.2, M, L]), st.integers(1, 12)), max_size=14).map(
    lambda runs: [value for value, length in runs for _ in range(length)]
)


@settings(max_examples=400, deadline=None)
@given(
    fractions=RUNS,
    min_frames=st.integers(1, 4),
    gap=st.integers(0, 6),
    before=st.integers(0, 6),
    after=st.integers(0, 6),
    lightswitch=st.booleans(),
)
def test_streaming_equals_offline_reference(fractions, min_frames, gap, before, after, lightswitch):
    max_area = 0.8 if lightswitch else 1.0
    events = segment(
        fractions,
        min_event_length=min_frames / FPS,
        merge_gap=gap / FPS,
        time_before=before / FPS,
        time_after=after / FPS,
        max_area=max_area,
    )
    got = [(e.start_frame, e.end_frame, e.motion_start_frame, e.motion_end_frame, e.peak_motion, e.mean_motion) for e in events]
    want = offline_events(fractions, 0.1, max_area, min_frames, gap, before, after)
    assert [g[:5] for g in got] == [w[:5] for w in want]
    assert [g[5] for g in got] == pytest.approx([w[5] for w in want])
    # Padded events never overlap and stay in the input.
    for a, b in zip(events, events[1:]):
        assert a.end_frame < b.start_frame
    assert all(0 <= e.start_frame <= e.motion_start_frame <= e.motion_end_frame <= e.end_frame < len(fractions) for e in events)


# -- timecodes -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "seconds, text",
    [
        (0, "00:00:00.000"),
        (0.0004, "00:00:00.000"),
        (0.0005, "00:00:00.001"),
        (59.9996, "00:01:00.000"),
        (3725.5, "01:02:05.500"),
        (100 * 3600 + 1.25, "100:00:01.250"),
    ],
)
def test_format_timecode(seconds, text):
    assert format_timecode(seconds) == text


# -- the writers -----------------------------------------------------------------------------


def test_csv_and_json_agree(tmp_path):
    seg = EventSegmenter(25.0, min_area=0.1, min_event_length=0, merge_gap=0, time_before=0.2, time_after=0.2)
    for i, f in enumerate([0] * 10 + [M] * 5 + [0] * 30 + [0.3] * 2 + [0] * 3):
        seg.update(i, f, (i, 3, 10, 20) if f else None)
    dicts = [e.as_dict() for e in seg.finish()]
    assert len(dicts) == 2
    write_csv_atomic(tmp_path / "e.csv", dicts)
    write_json_atomic(tmp_path / "e.json", {"events": dicts})
    with open(tmp_path / "e.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert tuple(rows[0]) == CSV_COLUMNS
    events = json.loads((tmp_path / "e.json").read_text())["events"]
    for row, event in zip(rows, events, strict=True):
        for key, value in event.items():
            if key == "bbox":
                assert [int(row[k]) for k in ("bbox_x", "bbox_y", "bbox_w", "bbox_h")] == value
            elif isinstance(value, str):
                assert row[key] == value
            else:
                assert float(row[key]) == value and type(value)(row[key]) == value


def test_csv_without_box_has_empty_cells(tmp_path):
    seg = EventSegmenter(25.0, min_area=0.1, min_event_length=0, time_before=0, time_after=0)
    seg.update(0, M)
    write_csv_atomic(tmp_path / "e.csv", [e.as_dict() for e in seg.finish()])
    (row,) = csv.DictReader(open(tmp_path / "e.csv", newline=""))
    assert (row["bbox_x"], row["bbox_h"], row["index"]) == ("", "", "1")


def test_write_creates_valid_json_and_no_temp_file(tmp_path):
    path = tmp_path / "events.json"
    data = {"events": [{"start_frame": 1}], "complete": True, "fps": 25.0}
    write_json_atomic(path, data)
    assert json.loads(path.read_text(encoding="utf-8")) == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.json"]


def test_write_replaces_whole(tmp_path):
    path = tmp_path / "events.json"
    write_json_atomic(path, {"events": list(range(1000)), "long": "x" * 5000})
    write_json_atomic(path, {"events": []})
    assert json.loads(path.read_text(encoding="utf-8")) == {"events": []}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.json"]


def test_failed_write_leaves_old_file_and_no_temp(tmp_path):
    path = tmp_path / "events.json"
    write_json_atomic(path, {"old": True})
    before = path.read_bytes()
    with pytest.raises(TypeError):
        write_json_atomic(path, {"new": object()})  # not JSON-serialisable, fails mid-write
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.json"]


def test_failed_first_write_leaves_nothing(tmp_path):
    with pytest.raises(TypeError):
        write_json_atomic(tmp_path / "events.json", {"bad": {1, 2}})
    with pytest.raises(KeyError):
        write_csv_atomic(tmp_path / "events.csv", [{"index": 1}])  # missing fields
    assert list(tmp_path.iterdir()) == []


def test_missing_folder_raises_oserror(tmp_path):
    with pytest.raises(OSError):
        write_json_atomic(tmp_path / "missing" / "events.json", {})
    assert list(tmp_path.iterdir()) == []


def test_written_files_have_normal_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        write_json_atomic(tmp_path / "events.json", {})
        write_csv_atomic(tmp_path / "events.csv", [])
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "events.json").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "events.csv").stat().st_mode) == 0o644
