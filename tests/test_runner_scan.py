"""The run loop's scanning parts: frame skip, event routing into clips (bounded memory), reports."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from helpers import seed_config
from hypothesis import given, settings
from hypothesis import strategies as st

from motiondetect.core.types import Frame, FrameResult
from motiondetect.outputs.clips import _EventFramesSink
from motiondetect.outputs.events import EventSegmenter
from motiondetect.outputs.sinks import EventsSink, Sink
from motiondetect.pipeline.config import build_filters
from motiondetect.pipeline.detector import MotionDetector
from motiondetect.pipeline.runner import Runner

FPS = 10.0


class Recorder(Sink):
    def __init__(self):
        self.frames, self.results, self.closed = [], [], None

    def consume(self, frame, result):
        self.frames.append(frame)
        self.results.append(result)

    def close(self, summary):
        self.closed = summary


def frames_of(images, fps=25.0):
    return [Frame(i, i / fps, image) for i, image in enumerate(images)]


# -- frame skip ----------------------------------------------------------------------------


@pytest.mark.parametrize("skip", [1, 2])
def test_frame_skip_processes_one_in_n_plus_one_and_holds(sample_frames, skip):
    recorder = Recorder()
    detector = MotionDetector(build_filters(seed_config()))
    summary = Runner(frames_of(sample_frames[:20]), detector, [recorder], frame_skip=skip).run()
    assert summary.complete and summary.frames == 20 and len(recorder.results) == 20
    # A processed frame is compared with its predecessor, as in a full run ...
    full = [MotionDetector(build_filters(seed_config())).process(sample_frames[0])]
    reference = MotionDetector(build_filters(seed_config()))
    reference.process(sample_frames[0])
    full += [reference.process(frame) for frame in sample_frames[1:20]]
    for i in range(0, 20, skip + 1):
        want, got = full[i], recorder.results[i]
        np.testing.assert_array_equal(got.mask, want.mask)
        np.testing.assert_array_equal(got.frame, want.frame)
        assert (got.motion_fraction, got.bbox) == (want.motion_fraction, want.bbox)
        # ... and the skipped ones hold that result over their own frames.
        for j in range(i + 1, min(i + skip + 1, 20)):
            held = recorder.results[j]
            assert held.mask is got.mask and held.motion_fraction == got.motion_fraction
            red = np.where(got.mask != 0, (sample_frames[j][..., 2].astype(int) + 256) // 2, sample_frames[j][..., 2])
            np.testing.assert_array_equal(held.frame[..., 2], red)
    assert sum(r.motion_fraction > 0 for r in recorder.results[:: skip + 1]) > 3


def test_frame_skip_events_against_the_full_run(sample_clip):
    """Events stay in input frames and land where the full run puts them, give or take the
    skipped frame."""
    from motiondetect.sources.video import VideoHandler

    params = dict(min_area=0.01, min_event_length=0.2, merge_gap=0.5, time_before=0.3, time_after=0.5)
    spans = {}
    for skip in (0, 1):
        events = EventSegmenter(25.0, **params)
        with VideoHandler(sample_clip) as video:
            Runner(video, MotionDetector(build_filters(seed_config()), annotate=False), [], events=events, frame_skip=skip).run()
        spans[skip] = [(e.motion_start_frame, e.motion_end_frame) for e in events.events]
    assert len(spans[0]) >= 5
    near = [any(abs(s - start) <= 2 and abs(e - end) <= 2 for s, e in spans[0]) for start, end in spans[1]]
    assert sum(near) >= 0.7 * len(spans[0]) and len(spans[1]) <= len(spans[0]) + 1, (spans[0], spans[1])


# -- routing frames into events ------------------------------------------------------------


class EventFrames(_EventFramesSink):
    """Records which frame went to which event, and the buffers' peak sizes."""

    def __init__(self, events):
        super().__init__(events)
        self.written: dict[int, list[int]] = {}
        self.open: list[int] = []
        self.peak_recent = self.peak_held = 0

    def consume(self, frame, result):
        super().consume(frame, result)
        self.peak_recent = max(self.peak_recent, len(self._recent))
        self.peak_held = max(self.peak_held, len(self._held))

    def _begin(self, event):
        assert not self.open
        self.open.append(event.index)
        self.written[event.index] = []

    def _write(self, event, image, time):
        assert self.open == [event.index]
        self.written[event.index].append(int(image[0]))

    def _end(self, event):
        assert self.open.pop() == event.index


RUNS = st.lists(st.tuples(st.sampled_from([0.0, 0.05, 0.5, 0.95]), st.integers(1, 12)), max_size=14).map(
    lambda runs: [value for value, length in runs for _ in range(length)]
)


@settings(max_examples=300, deadline=None)
@given(
    fractions=RUNS,
    min_frames=st.integers(1, 4),
    gap=st.integers(0, 8),
    before=st.integers(0, 6),
    after=st.integers(0, 6),
    stop_early=st.booleans(),
)
def test_each_event_gets_exactly_its_frames_in_order(fractions, min_frames, gap, before, after, stop_early):
    events = EventSegmenter(
        FPS,
        min_area=0.1,
        max_area=0.8,
        min_event_length=min_frames / FPS,
        merge_gap=gap / FPS,
        time_before=before / FPS,
        time_after=after / FPS,
    )
    sink = EventFrames(events)
    fed = fractions[: len(fractions) // 2] if stop_early else fractions  # an interrupted run
    for i, f in enumerate(fed):
        events.update(i, f)
        sink.consume(Frame(i, i / FPS, None), FrameResult(None, np.array([i]), f))
    events.finish()
    sink.close(None)
    assert {e.index: list(range(e.start_frame, e.end_frame + 1)) for e in events.events} == sink.written
    assert not sink.open
    # Memory stays bounded by the settings, not by the input's length.
    assert sink.peak_recent <= events.lookback == before + min_frames
    assert sink.peak_held <= events.hold_frames == max(0, gap - after)


# -- reports -------------------------------------------------------------------------------


def test_events_sinks_write_json_and_csv_that_agree(tmp_path, sample_frames):
    events = EventSegmenter(25.0, min_area=0.001, time_before=0.1, time_after=0.1)
    sinks = [EventsSink(tmp_path / "e.json", events, {"input": "x"}), EventsSink(tmp_path / "e.CSV", events, {})]
    assert [s.format for s in sinks] == ["json", "csv"]
    summary = Runner(frames_of(sample_frames[:30]), MotionDetector(build_filters(seed_config())), sinks, events=events).run()
    report = json.loads((tmp_path / "e.json").read_text())
    assert report["input"] == "x" and report["complete"] is True and report["frame_count"] == summary.frames == 30
    rows = list(csv.DictReader(open(tmp_path / "e.CSV", newline="")))
    assert len(rows) == len(report["events"]) >= 1
    for row, event in zip(rows, report["events"]):
        assert int(row["start_frame"]) == event["start_frame"] and row["end_timecode"] == event["end_timecode"]
        assert [int(row[k]) for k in ("bbox_x", "bbox_y", "bbox_w", "bbox_h")] == event["bbox"]


def test_interrupted_run_finishes_the_open_event(tmp_path, sample_frames):
    events = EventSegmenter(25.0, min_area=0.001, time_after=2.0)

    class Stop(Sink):
        def consume(self, frame, result):
            if frame.index == 12:
                raise KeyboardInterrupt

        def close(self, summary):
            pass

    sink = EventsSink(tmp_path / "e.json", events, {})
    summary = Runner(frames_of(sample_frames[:30]), MotionDetector(build_filters(seed_config())), [Stop(), sink], events=events).run()
    assert summary.interrupted and summary.frames == 12
    report = json.loads((tmp_path / "e.json").read_text())
    assert report["complete"] is False
    assert report["events"] and report["events"][-1]["end_frame"] == 12  # cut at the last frame seen


def test_clip_that_cannot_be_written_stops_the_run_cleanly(tmp_path, sample_frames, monkeypatch):
    import motiondetect.outputs.clips as clips
    from motiondetect.core.errors import VideoOpenFailure
    from motiondetect.outputs.clips import ClipSink

    def refuse(*args, **kwargs):
        raise VideoOpenFailure("cannot write video: disk full")

    monkeypatch.setattr(clips, "VideoWriter", refuse)
    events = EventSegmenter(25.0, min_area=0.001, min_event_length=0)
    report = EventsSink(tmp_path / "e.json", events, {})
    sink = ClipSink(tmp_path, "x", events, 25.0, (320, 240))
    summary = Runner(frames_of(sample_frames[:10]), MotionDetector(build_filters(seed_config())), [sink, report], events=events).run()
    assert isinstance(summary.error, VideoOpenFailure) and not summary.complete
    assert json.loads((tmp_path / "e.json").read_text())["complete"] is False
