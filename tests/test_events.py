"""EventTracker on hand-made fraction sequences; write_json_atomic."""

from __future__ import annotations

import json
import os
import stat

import pytest

from motiondetect.events import EventTracker, MotionEvent, write_json_atomic

FPS = 25.0


def track(fractions, min_area=0.1):
    tracker = EventTracker(min_area)
    for i, f in enumerate(fractions):
        tracker.update(i, i / FPS, f)
    return tracker


def spans(tracker):
    return [(e.start_frame, e.end_frame) for e in tracker.events]


def test_no_motion_no_events():
    assert track([0.0] * 10).events == []
    assert track([]).events == []
    assert track([0.05, 0.09, 0.0999]).events == []


def test_runs_become_events():
    fractions = [0, 0.2, 0.3, 0, 0, 0.5, 0.5, 0.6, 0.1, 0, 0.9]
    tracker = track(fractions)
    assert spans(tracker) == [(1, 2), (5, 8), (10, 10)]
    first, second, third = tracker.events
    assert (first.start_time, first.end_time) == (1 / FPS, 2 / FPS)
    assert (second.start_time, second.end_time) == (5 / FPS, 8 / FPS)
    assert [e.peak_motion for e in tracker.events] == [0.3, 0.6, 0.9]


def test_single_frame_event():
    tracker = track([0, 0, 0.4, 0, 0])
    assert tracker.events == [MotionEvent(2, 2, 2 / FPS, 2 / FPS, 0.4)]


def test_event_open_at_the_end_is_kept():
    tracker = track([0, 0.2, 0.2, 0.7])
    assert spans(tracker) == [(1, 3)]
    assert tracker.events[0].peak_motion == 0.7
    assert tracker.events[0].end_time == 3 / FPS


def test_motion_from_the_first_frame():
    assert spans(track([0.5, 0.5, 0])) == [(0, 1)]


def test_min_area_boundary_is_inclusive():
    # A frame whose fraction equals min_area exactly (same count over the same size) is moving.
    size = 320 * 240
    min_area = 77 / size
    tracker = EventTracker(min_area)
    for i, count in enumerate([76, 77, 78, 76, 77]):
        tracker.update(i, i / FPS, count / size)
    assert spans(tracker) == [(1, 2), (4, 4)]


def test_zero_min_area_still_needs_some_motion():
    tracker = track([0.0, 1e-9, 0.0, 0.0], min_area=0.0)
    assert spans(tracker) == [(1, 1)]


def test_peak_is_the_maximum_wherever_it_falls():
    tracker = track([0.2, 0.8, 0.3, 0.5])
    assert tracker.events[0].peak_motion == 0.8


def test_events_visible_while_running():
    # An interrupted run still has its events: the open one is already in the list.
    tracker = EventTracker(0.1)
    tracker.update(0, 0.0, 0.5)
    assert spans(tracker) == [(0, 0)]
    tracker.update(1, 0.04, 0.5)
    assert spans(tracker) == [(0, 1)]


def test_as_dicts_rounds_and_is_json_ready():
    tracker = EventTracker(0.001)
    tracker.update(3, 3 / 7, 0.1234567891)
    tracker.update(4, 4 / 7, 0.2)
    (d,) = tracker.as_dicts()
    assert d == {"start_frame": 3, "end_frame": 4, "start_time": 0.429, "end_time": 0.571, "peak_motion": 0.2}
    json.dumps(tracker.as_dicts())
    tracker2 = EventTracker(0.001)
    tracker2.update(0, 0.0, 0.1234567891)
    assert tracker2.as_dicts()[0]["peak_motion"] == 0.123457


# -- write_json_atomic ---------------------------------------------------------------------


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
    assert list(tmp_path.iterdir()) == []


def test_missing_folder_raises_oserror(tmp_path):
    with pytest.raises(OSError):
        write_json_atomic(tmp_path / "missing" / "events.json", {})
    assert list(tmp_path.iterdir()) == []


def test_written_file_has_normal_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        write_json_atomic(tmp_path / "events.json", {})
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "events.json").stat().st_mode) == 0o644
