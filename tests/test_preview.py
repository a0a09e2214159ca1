"""The preview window for real: under Xvfb, keys sent with xdotool, screenshots read back.

Needs Xvfb and xdotool (Debian packages `xvfb`, `xdotool`; .ci/run installs them), Pillow for
the screenshots, and OpenCV's GUI build. Skipped where any is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from motiondetect.apps.preview import HELP_SECONDS

ImageGrab = pytest.importorskip("PIL.ImageGrab", reason="screenshots need Pillow")
pytestmark = pytest.mark.skipif(not (shutil.which("Xvfb") and shutil.which("xdotool")), reason="needs Xvfb and xdotool")


@pytest.fixture(scope="module")
def display():
    """A private X server, :N with N free, for the module's tests."""
    number = next(n for n in range(90, 140) if not Path(f"/tmp/.X11-unix/X{n}").exists())
    server = subprocess.Popen(["Xvfb", f":{number}", "-screen", "0", "1024x768x24"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    name = f":{number}"
    for _ in range(100):  # the socket appears before the server answers: ask it something
        ready = subprocess.run(["xdotool", "getmouselocation"], env={**os.environ, "DISPLAY": name}, capture_output=True)
        if ready.returncode == 0:
            break
        time.sleep(0.1)
    else:
        pytest.skip(f"Xvfb {name} did not start")
    yield name
    server.terminate()
    server.wait(timeout=10)


class PreviewProcess:
    """``motiondetect`` running with a preview window; keys, screenshots and its stderr."""

    def __init__(self, display, cwd, *args):
        self.display, self.cwd = display, cwd
        self.stderr_path = cwd / "stderr.log"
        # Qt's shared-memory backing store now and then left the window unpainted under Xvfb
        # (a black screen for seconds); drawing through the X protocol avoids it.
        env = {**os.environ, "DISPLAY": display, "QT_X11_NO_MITSHM": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "motiondetect", *map(str, args)],
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=self.stderr_path.open("w"),
        )
        found = self.xdotool("search", "--sync", "--name", "^motiondetect - ", timeout=30)
        self.window = found.split()[0]
        self.started = time.monotonic()

    def xdotool(self, *args, timeout=10) -> str:
        env = {**os.environ, "DISPLAY": self.display}
        return subprocess.run(["xdotool", *args], env=env, capture_output=True, text=True, timeout=timeout).stdout

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def key(self, name: str, until: str | None = None) -> None:
        """Press ``name``; with ``until``, wait for one more occurrence of it in stderr, pressing
        again only after 3 s of silence (a key sent before the window has focus is lost)."""
        before = None if until is None else self.stderr.count(until)
        for _ in range(5):
            self.xdotool("windowfocus", "--sync", self.window)
            self.xdotool("key", "--window", self.window, name)
            if until is None:
                return
            deadline = time.monotonic() + 3.0
            while time.monotonic() < deadline:
                if self.stderr.count(until) > before:
                    return
                time.sleep(0.05)
        raise AssertionError(f"key {name!r} had no effect; stderr:\n{self.stderr}")

    def content(self) -> np.ndarray:
        """Screenshot of the frame area of the window, (H, W, 3) RGB, once it shows our overlay
        (a grab while the window is being redrawn can come back blank)."""
        for _ in range(30):
            image = self._grab()
            if has_overlay(image):
                return image
            time.sleep(0.2)
        raise AssertionError("the window never showed a frame with the overlay")

    def _grab(self) -> np.ndarray:
        geometry = dict(line.split("=") for line in self.xdotool("getwindowgeometry", "--shell", self.window).split())
        x, y, w, h = (int(geometry[k]) for k in ("X", "Y", "WIDTH", "HEIGHT"))
        window = np.array(ImageGrab.grab(xdisplay=self.display))[y : y + h, x : x + w]
        # WINDOW_GUI_NORMAL: no toolbar; the frame fills the window, scaled with its aspect ratio.
        return window

    def quit(self, key: str) -> int:
        """Press ``key`` until the process exits; return its exit code."""
        for _ in range(20):
            self.xdotool("windowfocus", "--sync", self.window)
            self.xdotool("key", "--window", self.window, key)
            try:
                return self.proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                continue
        raise AssertionError(f"{key!r} did not end the process; stderr:\n{self.stderr}")


def has_overlay(rgb: np.ndarray) -> bool:
    """Whether the top-left corner holds the overlay's green text on black."""
    corner = rgb[:40, :120]
    return corner.shape[:2] == (40, 120) and int(((corner[..., 1] > 200) & (corner[..., 0] < 100) & (corner[..., 2] < 100)).sum()) > 30


def red_pixels(rgb: np.ndarray) -> np.ndarray:
    r, g, b = (rgb[..., i].astype(int) for i in range(3))
    return (r - np.maximum(g, b)) > 50


@pytest.fixture
def preview(display, tmp_path, sample_clip):
    process = PreviewProcess(
        display, tmp_path, sample_clip, "--live", "--preview", "--backend", "cpu", "--record", "rec.mp4", "--events", "ev.json"
    )
    yield process
    if process.proc.poll() is None:
        process.proc.kill()


def snapshot(preview, tmp_path) -> tuple[np.ndarray, str]:
    """Press ``s``; return the PNG it wrote (RGB) and its name. The app writes exactly the image
    it hands to the window, so pixel checks do not depend on the X server's redraws."""
    preview.key("s", until="snapshot written")
    name = preview.stderr.strip().splitlines()[-1].rsplit("snapshot written: ", 1)[1]
    return cv2.cvtColor(cv2.imread(str(tmp_path / name)), cv2.COLOR_BGR2RGB), name


def test_preview_window_overlay_keys_and_outputs(preview, tmp_path):
    time.sleep(max(0.0, HELP_SECONDS + 0.5 - (time.monotonic() - preview.started)))  # key help gone
    shown = preview.content()  # a real screenshot of the window
    assert shown.shape[1] * 3 == shown.shape[0] * 4 and has_overlay(shown)  # the 4:3 frame, with overlay

    # Pause on a frame with visible motion; compare it with the mask view of the same frame.
    below_overlay = np.s_[45:, :]
    for _ in range(12):
        preview.key("space", until="paused\n")
        frame_view, name = snapshot(preview, tmp_path)
        if red_pixels(frame_view[below_overlay]).sum() >= 20:
            break
        preview.key("space", until="resumed\n")
        time.sleep(0.4)
    else:
        raise AssertionError("no frame with red motion shown in 12 tries")
    assert has_overlay(frame_view)
    time.sleep(0.5)
    assert snapshot(preview, tmp_path)[1] == name, "the frame changed while paused"
    preview.key("m")
    mask_view, mask_name = snapshot(preview, tmp_path)
    assert mask_name == name.replace(".png", "_mask.png")  # same frame, mask view
    white = cv2.dilate((mask_view[below_overlay].min(axis=2) > 200).astype(np.uint8), np.ones((3, 3), np.uint8)) > 0
    red = red_pixels(frame_view[below_overlay])
    assert (red & white).sum() >= 0.8 * red.sum(), "red pixels are not where the mask is set"
    preview.key("m")

    # Sensitivity up and down, resume, quit.
    # The default pipeline's sensitivity is the Gaussian model's sigmas (0.1 a key press).
    preview.key("plus", until="sigmas 2 -> 2.1")
    preview.key("minus", until="sigmas 2.1 -> 2")
    preview.key("space", until="resumed\n")
    time.sleep(0.5)
    assert preview.quit("q") == 0

    report = json.loads((tmp_path / "ev.json").read_text())
    capture = cv2.VideoCapture(str(tmp_path / "rec.mp4"))
    recorded = 0
    while capture.read()[0]:
        recorded += 1
    assert recorded == report["frame_count"] > 10
    assert report["complete"] is False  # quit before the end of the file
    assert "dropped_frames" in report


def test_escape_quits_cleanly(display, tmp_path, sample_clip):
    process = PreviewProcess(
        display, tmp_path, sample_clip, "--preview", "--realtime", "--backend", "cpu", "--no-video", "--events", "ev.json"
    )
    time.sleep(1.0)
    assert process.quit("Escape") == 0
    assert json.loads((tmp_path / "ev.json").read_text())["frame_count"] > 0


def test_no_display_is_one_line_and_exit_1(tmp_path, sample_clip):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    proc = subprocess.run(
        [sys.executable, "-m", "motiondetect", str(sample_clip), "--preview", "--backend", "cpu", "--no-video", "--events", "e.json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no display" in lines[0] and "Traceback" not in proc.stderr
