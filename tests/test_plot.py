"""plot_motion and plot_threshold_curves: PNG files of the right size, events shaded and
labelled where their times fall (read back from the pixels), atomic writes, and the one-line
error without matplotlib."""

from __future__ import annotations

import sys

import cv2
import numpy as np
import pytest

pytest.importorskip("matplotlib")

from motiondetect.core.errors import UsageError
from motiondetect.outputs import plot
from motiondetect.outputs.plot import (
    MOTION_AXES,
    MOTION_SIZE,
    PANEL_SIZE,
    PANEL_TITLE_HEIGHT,
    plot_motion,
    plot_threshold_curves,
    require_matplotlib,
)

FPS = 25.0
FRAMES = 300  # 12 s
MIN_AREA = 0.001
EVENTS = [(2.0, 3.96), (8.0, 8.96)]  # first and last frame: shaded to 4.0 and 9.0 s
QUIET, MOVING = 0.0005, 0.0015  # fractions outside and inside the events
TOP = 2 * MIN_AREA * 1.05  # the y axis: max(2 * min_area, largest fraction) * 1.05


def motion_fractions() -> np.ndarray:
    fractions = np.full(FRAMES, QUIET)
    for start, end in EVENTS:
        fractions[round(start * FPS) : round(end * FPS) + 1] = MOVING
    return fractions


def read_png(path) -> np.ndarray:
    """The picture as (H, W, 3) uint8 BGR, after checking the file is a PNG."""
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    assert image is not None, path
    return image


def column(seconds: float) -> int:
    """Pixel column of a time on plot_motion's x axis (0 .. FRAMES / FPS across the axes)."""
    left, _, width, _ = MOTION_AXES
    return int((left + width * seconds / (FRAMES / FPS)) * MOTION_SIZE[0])


def row(height: float) -> int:
    """Pixel row of a height in the axes, 0 at its bottom and 1 at its top."""
    _, bottom, _, axes_height = MOTION_AXES
    return int(MOTION_SIZE[1] - (bottom + axes_height * height) * MOTION_SIZE[1])


def is_shaded(pixel) -> bool:
    """The events' orange over white or a grey grid line: red clearly above blue."""
    blue, _, red = (int(v) for v in pixel)
    return red - blue > 30


def is_background(pixel) -> bool:
    """White, or a light grey grid line."""
    return all(int(v) >= 220 for v in pixel) and max(pixel) - min(pixel) < 10


@pytest.fixture(scope="module")
def motion_png(tmp_path_factory):
    path = tmp_path_factory.mktemp("plot") / "motion.png"
    plot_motion(path, motion_fractions(), FPS, EVENTS, MIN_AREA)
    return path


def test_motion_plot_is_a_png_of_the_documented_size(motion_png):
    assert read_png(motion_png).shape == (MOTION_SIZE[1], MOTION_SIZE[0], 3)


def test_events_are_shaded_from_their_first_frame_to_the_end_of_their_last(motion_png):
    image = read_png(motion_png)
    y = row(0.9)  # above every line drawn: curve at 0.24 and 0.71, threshold at 0.48 of the axes
    for start, end in EVENTS:
        shown_end = end + 1 / FPS
        for inside in (start + 0.1, (start + shown_end) / 2, shown_end - 0.1):
            assert is_shaded(image[y, column(inside)]), f"{inside} s should be shaded: {image[y, column(inside)]}"
        for outside in (start - 0.1, shown_end + 0.1):
            assert is_background(image[y, column(outside)]), f"{outside} s should not be shaded: {image[y, column(outside)]}"
    for outside in (0.5, 6.0, 11.5):
        assert is_background(image[y, column(outside)])


def test_axis_is_linear_from_zero_to_twice_min_area_and_a_margin(motion_png):
    image = read_png(motion_png).astype(int)
    x = column(6.0)  # a quiet stretch: the curve at QUIET
    blue_rows = [y for y in range(MOTION_SIZE[1]) if image[y, x, 0] > 150 and image[y, x, 2] < 120]
    assert blue_rows and abs(np.mean(blue_rows) - row(QUIET / TOP)) <= 2
    x = column(3.0)  # inside the first event: the curve at MOVING
    blue_rows = [y for y in range(MOTION_SIZE[1]) if image[y, x, 0] > 150 and image[y, x, 2] < 120]
    assert blue_rows and abs(np.mean(blue_rows) - row(MOVING / TOP)) <= 2
    # The dashed min_area line: red pixels along its row over a second of quiet time.
    band = image[row(MIN_AREA / TOP) - 2 : row(MIN_AREA / TOP) + 3, column(5.0) : column(6.0)]
    assert np.any((band[..., 2] > 180) & (band[..., 1] < 110) & (band[..., 0] < 110))


def test_events_are_labelled_above_their_shading(motion_png):
    image = read_png(motion_png)
    labels = cv2.cvtColor(image[: row(1.0) - 1], cv2.COLOR_BGR2GRAY)  # the band above the axes (no title)
    for start, end in EVENTS:
        middle = column((start + end + 1 / FPS) / 2)
        assert labels[:, middle - 15 : middle + 15].min() < 100, f"no label above the event at {start} s"
    quiet = column(6.0)
    assert labels[:, quiet - 15 : quiet + 15].min() > 200  # nothing above a stretch without events


def test_label_text_is_the_events_timecodes():
    assert plot._timecode(3725.5) == "01:02:05.50"
    assert plot._timecode(3.96) == "00:00:03.96"
    assert plot._timecode(0.004) == "00:00:00.00"


def test_run_without_events_and_a_title(tmp_path):
    path = tmp_path / "quiet.png"
    plot_motion(path, np.zeros(50), FPS, [], MIN_AREA, title="camera 3")
    image = read_png(path)
    assert image.shape == (MOTION_SIZE[1], MOTION_SIZE[0], 3)
    assert is_background(image[row(0.9), column(6.0 * 50 / FRAMES)])


def test_degenerate_runs_still_draw(tmp_path):
    plot_motion(tmp_path / "none.png", np.array([]), FPS, [], MIN_AREA)  # no frames
    plot_motion(tmp_path / "zero.png", np.zeros(10), FPS, [(0.0, 0.0)], 0.0)  # nothing to scale the y axis by
    plot_motion(tmp_path / "nan.png", np.full(10, np.nan), FPS, [], MIN_AREA)
    for name in ("none.png", "zero.png", "nan.png"):
        assert read_png(tmp_path / name).shape == (MOTION_SIZE[1], MOTION_SIZE[0], 3)


def test_many_close_events_are_drawn(tmp_path):
    events = [(t, t + 0.2) for t in np.arange(0.0, 11.5, 0.3)]  # more labels than fit: some left out
    plot_motion(tmp_path / "busy.png", motion_fractions(), FPS, events, MIN_AREA)
    assert read_png(tmp_path / "busy.png").shape == (MOTION_SIZE[1], MOTION_SIZE[0], 3)


def drawn_texts(monkeypatch, tmp_path, fractions, events, title=""):
    """The boxes (window extents, pixels) of the events' labels and of the picture's own texts
    (the title, the note counting the labels) as plot_motion saves them, by text; the picture's box."""
    saved = []
    save = plot._save_png
    monkeypatch.setattr(plot, "_save_png", lambda canvas, path: (saved.append(canvas), save(canvas, path)))
    plot_motion(tmp_path / "m.png", fractions, FPS, events, MIN_AREA, title=title)
    figure = saved[0].figure
    renderer = saved[0].get_renderer()
    labels = {t.get_text(): t.get_window_extent(renderer) for t in figure.axes[0].texts if "–" in t.get_text()}
    texts = {t.get_text(): t.get_window_extent(renderer) for t in figure.texts}
    return labels, texts, figure.bbox


def test_labels_that_do_not_fit_are_left_out_and_counted(tmp_path, monkeypatch):
    # 60 events of 2 s every 10 s: 18 pixels apart, a label is about 130 wide.
    events = [(float(t), t + 2.0) for t in range(0, 600, 10)]
    labels, texts, picture = drawn_texts(monkeypatch, tmp_path, np.full(600 * int(FPS), QUIET), events, title="camera 3")
    assert 0 < len(labels) < len(events)
    assert set(texts) == {"camera 3", f"{len(labels)} of 60 events labelled; all are in the events report"}
    boxes = [*labels.values(), *texts.values()]  # none overlaps the title or the note either
    for index, box in enumerate(boxes):
        assert 0 <= box.x0 and box.x1 <= picture.width and 0 <= box.y0 and box.y1 <= picture.height, box
        for other in boxes[index + 1 :]:
            assert not box.overlaps(other), (box, other)


def test_no_note_when_every_label_fits(tmp_path, monkeypatch):
    labels, texts, _ = drawn_texts(monkeypatch, tmp_path, motion_fractions(), EVENTS, title="camera 3")
    assert sorted(labels) == ["00:00:02.00–00:00:03.96", "00:00:08.00–00:00:08.96"]
    assert list(texts) == ["camera 3"]  # the title, no note


def test_bad_arguments_raise(tmp_path):
    with pytest.raises(ValueError, match="one value per frame"):
        plot_motion(tmp_path / "m.png", np.zeros((2, 3)), FPS, [], MIN_AREA)
    with pytest.raises(ValueError, match="fps"):
        plot_motion(tmp_path / "m.png", np.zeros(3), 0.0, [], MIN_AREA)
    with pytest.raises(ValueError, match="no threshold curves"):
        plot_threshold_curves(tmp_path / "c.png", {}, "min_area")
    assert list(tmp_path.iterdir()) == []


CURVES = {
    "highway": [(t, 0.5 + 3 * t, 1 - 5 * t, 0.6 - abs(t - 0.05)) for t in np.linspace(0.001, 0.15, 12)],
    "office": [(0.1, 0.8, 0.6, 0.69), (0.001, 0.8, 0.7, 0.75), (0.01, 0.8, 0.65, 0.72)],  # unsorted
    "pedestrians": [(0.01, 0.9, 0.5, 0.6), (0.05, 0.85, 0.55, 0.65), (0.2, float("nan"), 0.0, float("nan"))],  # none detected at 0.2
    "empty": [],
}


@pytest.mark.parametrize(("clips", "size"), [(1, (400, 350)), (2, (800, 350)), (3, (1200, 350)), (4, (1200, 650))])
def test_threshold_curves_one_panel_per_clip(tmp_path, clips, size):
    path = tmp_path / "curves.png"
    plot_threshold_curves(path, dict(list(CURVES.items())[:clips]), "min_area")
    width = PANEL_SIZE[0] * min(clips, 3)
    height = PANEL_SIZE[1] * -(-clips // 3) + PANEL_TITLE_HEIGHT
    assert (width, height) == size
    image = read_png(path)
    assert image.shape == (height, width, 3)
    # Each drawn panel holds its curves: precision blue, recall green, F-measure red.
    for index in range(min(clips, 3)):
        panel = image[PANEL_TITLE_HEIGHT : PANEL_TITLE_HEIGHT + PANEL_SIZE[1], index * PANEL_SIZE[0] : (index + 1) * PANEL_SIZE[0]].astype(
            int
        )
        red = (panel[..., 2] > 180) & (panel[..., 1] < 80) & (panel[..., 0] < 80)
        assert red.sum() > 50, f"panel {index} has no F-measure curve"


def test_best_point_is_marked_at_the_highest_f_measure(tmp_path):
    # F peaks at the middle of three thresholds: the star (the one compact black blob; text
    # glyphs are smaller, the axes' spines thin) sits in the middle third, in the top half.
    path = tmp_path / "best.png"
    plot_threshold_curves(path, {"clip": [(1.0, 0.2, 0.2, 0.2), (2.0, 0.95, 0.95, 0.95), (3.0, 0.2, 0.2, 0.2)]}, "threshold")
    black = (cv2.cvtColor(read_png(path), cv2.COLOR_BGR2GRAY) < 60).astype(np.uint8)
    count, _, stats, centres = cv2.connectedComponentsWithStats(black, connectivity=8)
    stars = [
        tuple(centres[label])
        for label in range(1, count)
        if 8 <= stats[label, cv2.CC_STAT_WIDTH] <= 24
        and 8 <= stats[label, cv2.CC_STAT_HEIGHT] <= 24
        and stats[label, cv2.CC_STAT_AREA] >= 50
    ]
    assert len(stars) == 1, stars
    x, y = stars[0]
    assert PANEL_SIZE[0] / 3 < x < 2 * PANEL_SIZE[0] / 3
    assert PANEL_TITLE_HEIGHT < y < PANEL_TITLE_HEIGHT + PANEL_SIZE[1] / 2


def test_missing_matplotlib_is_a_usage_error(tmp_path, monkeypatch):
    for name in [name for name in sys.modules if name == "matplotlib" or name.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(UsageError) as caught:
        plot_motion(tmp_path / "m.png", np.zeros(3), FPS, [], MIN_AREA)
    assert str(caught.value) == "--plot needs matplotlib: pip install 'motiondetect[plot]'"
    assert caught.value.exit_code == 2
    with pytest.raises(UsageError, match="needs matplotlib"):
        plot_threshold_curves(tmp_path / "c.png", CURVES, "min_area")
    with pytest.raises(UsageError, match="needs matplotlib"):
        require_matplotlib()
    assert list(tmp_path.iterdir()) == []


def test_require_matplotlib_passes_when_installed():
    require_matplotlib()


def test_writes_are_atomic(tmp_path, monkeypatch):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    path = tmp_path / "motion.png"
    plot_motion(path, motion_fractions(), FPS, EVENTS, MIN_AREA)
    before = path.read_bytes()
    assert [p.name for p in tmp_path.iterdir()] == ["motion.png"]  # no temporary file left

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(FigureCanvasAgg, "print_png", interrupted)
    with pytest.raises(KeyboardInterrupt):
        plot_motion(path, np.zeros(10), FPS, [], MIN_AREA)
    with pytest.raises(KeyboardInterrupt):
        plot_threshold_curves(tmp_path / "curves.png", CURVES, "min_area")
    assert [p.name for p in tmp_path.iterdir()] == ["motion.png"]
    assert path.read_bytes() == before  # the old picture, whole


def test_unwritable_folder_raises_oserror(tmp_path):
    with pytest.raises(OSError):
        plot_motion(tmp_path / "missing" / "m.png", np.zeros(3), FPS, [], MIN_AREA)


def test_frames_are_drawn_at_their_own_times(tmp_path):
    # A variable-frame-rate input: frames 0-49 (moving) 0.2 s apart, to 9.8 s; the other 250
    # squeezed into 10-11.96 s. At n / fps, 5 s would be frame 125, quiet.
    fractions = np.full(FRAMES, QUIET)
    fractions[:50] = MOVING
    times = np.concatenate([0.2 * np.arange(50), 10 + 1.96 * np.arange(250) / 249])
    drawn = {}
    for name, given in (("timed", times), ("plain", None)):
        path = tmp_path / f"{name}.png"
        plot_motion(path, fractions, FPS, [], MIN_AREA, times=given)
        image = read_png(path)
        x = column(5.0)
        near = lambda height: image[row(height) - 3 : row(height) + 4, x - 1 : x + 2].reshape(-1, 3)  # noqa: E731
        drawn[name] = [not all(is_background(p) for p in near(f / TOP)) for f in (MOVING, QUIET)]
    assert drawn == {"timed": [True, False], "plain": [False, True]}
    with pytest.raises(ValueError, match="one value per frame"):
        plot_motion(tmp_path / "bad.png", fractions, FPS, [], MIN_AREA, times=times[:-1])
