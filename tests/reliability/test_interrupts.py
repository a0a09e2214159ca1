"""Interruptions: SIGINT and SIGTERM at any point finish the current frame, close the video
(decodable up to that frame) and write the events so far, then exit with 128 + the signal.

Real processes on the bundled clip, signalled (a) by themselves at exact points (a frame in the
middle of its processing, the final flush, the setup, a second signal), through a small driver
that wraps one function, and (b) by this test from outside at times taken from the run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import count_frames, process_env, report

from motiondetect.core.signals import StopSignals, exit_code

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

#: Runs the command after wrapping one function so that the process signals itself there.
DRIVER = r"""
import os, signal, sys
import motiondetect.pipeline.detector as detector, motiondetect.sources.video as video, motiondetect.outputs.writer as writer
from motiondetect.apps.cli import main

point, sig, at = os.environ["MD_POINT"], getattr(signal, os.environ["MD_SIGNAL"]), int(os.environ.get("MD_AT", "0"))
calls = [0]

def kill_at(function, times=1):
    def wrapped(*args, **kwargs):
        if calls[0] == at:
            for _ in range(times):
                os.kill(os.getpid(), sig)
        calls[0] += 1
        return function(*args, **kwargs)
    return wrapped

if point == "frame":  # while frame AT is being processed
    detector.MotionDetector.process = kill_at(detector.MotionDetector.process)
elif point == "twice":  # two signals while frame AT is being processed
    detector.MotionDetector.process = kill_at(detector.MotionDetector.process, times=2)
elif point == "flush":  # when the video starts its final flush
    writer.VideoWriter.close = kill_at(writer.VideoWriter.close)
elif point == "setup":  # while the input is being opened
    video.VideoHandler.__init__ = kill_at(video.VideoHandler.__init__)
sys.exit(main(sys.argv[1:]))
"""


def drive(tmp_path, point, signame, at, *argv):
    env = process_env(MD_POINT=point, MD_SIGNAL=signame, MD_AT=str(at))
    return subprocess.run(
        [sys.executable, "-c", DRIVER, *map(str, argv)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )


def check_stopped(proc, tmp_path, signame):
    """Exit code 128 + N, no traceback, one warning; returns the report, whose frame count the
    video holds exactly."""
    assert proc.returncode == 128 + getattr(signal, signame), proc.stderr
    assert "Traceback" not in proc.stderr
    assert "Stopped after" in proc.stderr or "Stopped." in proc.stderr
    events = report(tmp_path / "out.json")  # valid JSON
    assert count_frames(tmp_path / "out.mp4") == events["frame_count"]
    return events


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("at", [0, 5, 150])
def test_signal_during_a_frame_finishes_it(tmp_path, sample_clip, signame, at):
    proc = drive(tmp_path, "frame", signame, at, sample_clip, "--backend", "cpu", "--end", "200f", "-o", "out.mp4", "--events", "out.json")
    events = check_stopped(proc, tmp_path, signame)
    assert events["frame_count"] == at + 1  # the frame being processed was finished, no more
    assert events["complete"] is False
    assert f"Stopped after {at + 1} frames" in proc.stderr


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_signal_during_the_final_flush_completes_the_outputs(tmp_path, sample_clip, signame):
    proc = drive(tmp_path, "flush", signame, 0, sample_clip, "--backend", "cpu", "--end", "120f", "-o", "out.mp4", "--events", "out.json")
    events = check_stopped(proc, tmp_path, signame)
    # Every frame was processed before the signal: the outputs are whole and say so.
    assert events["frame_count"] == 120 and events["complete"] is True


def test_signal_during_setup_leaves_no_outputs(tmp_path, sample_clip):
    proc = drive(tmp_path, "setup", "SIGTERM", 0, sample_clip, "--backend", "cpu", "-o", "out.mp4", "--events", "out.json")
    assert proc.returncode == 143 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == ["motiondetect: Stopped."]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_second_signal_stops_at_once(tmp_path, sample_clip):
    # The second signal does not wait for the frame (a stuck output, a paused preview): that
    # frame reaches no output, and the outputs still hold every frame before it.
    proc = drive(tmp_path, "twice", "SIGINT", 7, sample_clip, "--backend", "cpu", "--end", "100f", "-o", "out.mp4", "--events", "out.json")
    events = check_stopped(proc, tmp_path, "SIGINT")
    assert events["frame_count"] == 7 and events["complete"] is False


def test_several_inputs_stop_at_the_signalled_one(tmp_path, sample_clip):
    second = tmp_path / "second.avi"
    second.write_bytes(sample_clip.read_bytes())
    proc = drive(
        tmp_path, "frame", "SIGTERM", 3, sample_clip, second, "--backend", "cpu", "--end", "50f", "--no-video", "--events", "{stem}.json"
    )
    assert proc.returncode == 143
    assert report(tmp_path / "highway_traffic_320x240.json")["frame_count"] == 4
    assert not (tmp_path / "second.json").exists()  # never started


def wait_for(condition, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


@pytest.mark.parametrize("signame, delay", [("SIGINT", 0.0), ("SIGTERM", 1.0), ("SIGINT", 2.0)])
def test_signal_from_outside_a_live_run(tmp_path, sample_clip, signame, delay):
    # --live paces the clip at its 25 fps: 6 s for 150 frames. The signal comes once the video
    # has data (frames are flowing) plus ``delay``: early, in the middle, later on.
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "motiondetect",
            str(sample_clip),
            "--live",
            "--backend",
            "cpu",
            "--end",
            "150f",
            "-o",
            "out.mp4",
            "--events",
            "out.json",
        ],
        cwd=tmp_path,
        env=process_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert wait_for(lambda: (tmp_path / "out.mp4").exists() and (tmp_path / "out.mp4").stat().st_size > 0)
        time.sleep(delay)
        sent = time.monotonic()
        proc.send_signal(getattr(signal, signame))
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    proc.stderr.close()
    proc.stdout.close()
    assert time.monotonic() - sent < 5  # it stopped promptly, not at the end of the input
    events = check_stopped(subprocess.CompletedProcess(proc.args, proc.returncode, "", err), tmp_path, signame)
    assert events["complete"] is False and 0 < events["frame_count"] < 150


# -- the mechanism, in process --------------------------------------------------------------


def test_stop_signals_finish_the_item_and_restore_the_handlers():
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    seen = []
    with pytest.raises(KeyboardInterrupt), StopSignals() as stop:
        for item in stop.frames(range(10)):
            if item == 3:
                os.kill(os.getpid(), signal.SIGTERM)
            seen.append(item)  # the item in progress is finished
    assert seen == [0, 1, 2, 3] and stop.received == signal.SIGTERM
    assert {s: signal.getsignal(s) for s in before} == before


def test_stop_signals_never_interrupt_finishing():
    finished = False
    with StopSignals() as stop:
        with stop.finishing():
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.01)
            finished = True
    assert finished and stop.received == signal.SIGINT


def test_stop_signals_interrupt_a_wait_at_once():
    def slow():
        yield 1
        os.kill(os.getpid(), signal.SIGTERM)  # arrives while the consumer waits for item 2
        time.sleep(5)
        yield 2

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt), StopSignals() as stop:
        for _ in stop.frames(slow()):
            pass
    assert time.monotonic() - started < 2


def test_exit_codes():
    assert exit_code(signal.SIGINT) == 130 and exit_code(signal.SIGTERM) == 143 and exit_code(None) == 130
