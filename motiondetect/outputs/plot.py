"""Pictures of a run (``--plot``): the motion fraction over time with the events, and the
precision / recall / F-measure curves of a threshold sweep. PNG files, written atomically.

matplotlib is an optional extra (``pip install 'motiondetect[plot]'``), imported only when a
picture is drawn. Figures are built as :class:`matplotlib.figure.Figure` on an Agg canvas, so
no pyplot state, no GUI backend and no display are involved (works on servers without one).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from motiondetect.core.errors import UsageError
from motiondetect.core.files import atomic_write
from motiondetect.outputs.events import EventSegmenter, event_spans, format_timecode
from motiondetect.outputs.sinks import Sink

#: Resolution of every picture, pixels per inch.
DPI = 100
#: Size of :func:`plot_motion`'s picture, (width, height) in pixels.
MOTION_SIZE = (1200, 400)
#: Where :func:`plot_motion`'s axes lie, (left, bottom, width, height) as fractions of the picture:
#: fixed (no automatic layout) so that times map to the same pixel columns in every picture,
#: with room above the axes for the events' labels and the title.
MOTION_AXES = (0.085, 0.13, 0.895, 0.66)
#: Size of one clip's panel in :func:`plot_threshold_curves`, pixels; the title adds a band.
PANEL_SIZE = (400, 300)
PANEL_TITLE_HEIGHT = 50
#: Most panels side by side in :func:`plot_threshold_curves`.
PANEL_COLUMNS = 3

MOTION_COLOUR = "tab:blue"
THRESHOLD_COLOUR = "tab:red"
EVENT_COLOUR = "tab:orange"
EVENT_ALPHA = 0.25
#: Rows of event labels above the axes; a label goes to the first row it does not overlap in,
#: and is left out when there is none (overlapping labels were unreadable ink).
_LABEL_ROWS = 3
_LABEL_FONT_SIZE = 7  # points
_LABEL_ROW_STEP = 9  # points between rows
_LABEL_GAP = 4  # pixels kept free between two labels of a row

_MISSING_MATPLOTLIB = "--plot needs matplotlib: pip install 'motiondetect[plot]'"


def plot_motion(
    path: str | Path,
    fractions: np.ndarray,
    fps: float,
    events: Sequence[tuple[float, float]],
    min_area: float,
    title: str = "",
    times: np.ndarray | None = None,
) -> None:
    """Draw the motion fraction of every frame against time, with the events, to a PNG file.

    The curve is the fraction of pixels that move in each frame (frame ``i`` at ``i / fps``
    seconds); a dashed line marks ``min_area``, the fraction at which a frame moves. Each event
    is shaded from its first frame to the end of its last (``end + 1 / fps``) and labelled
    above the axes with its start and end as ``hh:mm:ss.ss``, in the first of three rows where
    the label overlaps no other. An event whose label fits in no row (many events close
    together) stays shaded but unlabelled, and a note at the bottom right says how many of the
    events are labelled; no label overlaps another or leaves the picture. The y axis is linear,
    from 0 to ``max(2 * min_area, largest fraction) * 1.05``. The picture is
    :data:`MOTION_SIZE` pixels with the axes at :data:`MOTION_AXES`, the x axis running from 0
    to ``len(fractions) / fps`` (with ``times``, to the last frame's time + 1 / fps).

    Args:
        path: the PNG file; its folder must exist. An existing file is replaced whole.
        fractions: (N,) motion fraction per frame, in [0, 1] (NaN: not drawn).
        fps: frames per second of the input (> 0).
        events: (start, end) seconds of each event: the timestamps of its first and last frame
            (:attr:`~motiondetect.outputs.events.MotionEvent.start_time` / ``end_time``). May be empty.
        min_area: the event threshold, a motion fraction in [0, 1].
        title: heading of the picture (the input's name, say); empty for none.
        times: (N,) time of each frame in seconds (a variable-frame-rate file's own
            timestamps), or ``None``: frame ``i`` at ``i / fps``.

    Raises:
        UsageError: matplotlib is not installed.
        ValueError: ``fractions`` is not one-dimensional, or ``fps`` is not > 0.
        OSError: the file cannot be written (no temporary file is left behind).
    """
    fractions = np.asarray(fractions, dtype=np.float64)
    if fractions.ndim != 1:
        raise ValueError(f"fractions must be one value per frame, shape (N,); got shape {fractions.shape}")
    if not fps > 0:
        raise ValueError(f"fps must be > 0; got {fps}")
    figure_class, canvas_class = _matplotlib()

    width, height = MOTION_SIZE
    figure = figure_class(figsize=(width / DPI, height / DPI), dpi=DPI)
    canvas = canvas_class(figure)
    axes = figure.add_axes(MOTION_AXES)
    frame_s = 1 / fps
    if times is not None and len(times) != len(fractions):
        raise ValueError(f"times must be one value per frame: {len(times)} times, {len(fractions)} fractions")
    x = np.arange(len(fractions)) * frame_s if times is None else np.asarray(times, dtype=np.float64)
    duration = len(fractions) * frame_s if times is None or not len(x) else float(x[-1]) + frame_s
    peak = float(np.nanmax(fractions)) if len(fractions) and not np.all(np.isnan(fractions)) else 0.0
    top = max(2 * min_area, peak) * 1.05
    axes.set_xlim(0, duration if duration > 0 else 1.0)
    axes.set_ylim(0, top if top > 0 else 1.0)

    for start, end in events:
        axes.axvspan(start, end + frame_s, color=EVENT_COLOUR, alpha=EVENT_ALPHA, linewidth=0, zorder=1)
    axes.plot(x, fractions, color=MOTION_COLOUR, linewidth=0.8, zorder=3)
    axes.axhline(min_area, color=THRESHOLD_COLOUR, linestyle="--", linewidth=1, zorder=2)
    axes.annotate(
        f"min_area {min_area:g}",
        xy=(1, min_area),
        xycoords=("axes fraction", "data"),
        xytext=(-4, 2),
        textcoords="offset points",
        ha="right",
        va="bottom",
        fontsize=_LABEL_FONT_SIZE,
        color=THRESHOLD_COLOUR,
    )
    axes.set_xlabel("time (s)")
    axes.set_ylabel("motion (fraction of pixels)")
    axes.grid(True, color="0.9", linewidth=0.5)
    axes.set_axisbelow(True)
    _label_events(axes, canvas, events, frame_s)
    if title:
        figure.suptitle(title, y=0.98, va="top", fontsize=11)
    _save_png(canvas, path)


def _label_events(axes, canvas, events: Sequence[tuple[float, float]], frame_s: float) -> None:
    """Write each event's times above its shading, in the first of the rows above the axes where
    it overlaps no other label; labels that would leave the picture are aligned to the event's
    edge instead of its centre. A label that fits in no row is left out, and a note at the bottom
    right counts the labelled events (the events report lists them all)."""
    renderer = canvas.get_renderer()
    picture_width = canvas.figure.bbox.width
    row_ends = [-math.inf] * _LABEL_ROWS  # right edge of the last label in each row, pixels
    labelled = 0
    for start, end in events:
        label = axes.annotate(
            f"{_timecode(start)}–{_timecode(end)}",
            xy=((start + end + frame_s) / 2, 1),
            xycoords=axes.get_xaxis_transform(),
            xytext=(0, 2),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=_LABEL_FONT_SIZE,
            annotation_clip=False,
        )
        box = label.get_window_extent(renderer)
        if box.x0 < 0:
            label.xy = (start, 1)
            label.set_horizontalalignment("left")
        elif box.x1 > picture_width:
            label.xy = (end + frame_s, 1)
            label.set_horizontalalignment("right")
        box = label.get_window_extent(renderer)
        free = [row for row, row_end in enumerate(row_ends) if row_end + _LABEL_GAP <= box.x0]
        if not free:
            label.remove()
            continue
        label.xyann = (0, 2 + free[0] * _LABEL_ROW_STEP)
        row_ends[free[0]] = box.x1
        labelled += 1
    if labelled < len(events):
        # Below the x axis, right of its centred label: the labels' rows are full.
        canvas.figure.text(
            0.99,
            0.01,
            f"{labelled} of {len(events)} events labelled; all are in the events report",
            ha="right",
            va="bottom",
            fontsize=_LABEL_FONT_SIZE,
            color="0.4",
        )


def _timecode(seconds: float) -> str:
    """``hh:mm:ss.ss``: the reports' timecode to the hundredth of a second."""
    return format_timecode(round(seconds, 2))[:-1]


def plot_threshold_curves(path: str | Path, curves: Mapping[str, Sequence[tuple[float, float, float, float]]], threshold_name: str) -> None:
    """Draw precision, recall and F-measure against a threshold, one panel per clip, to a PNG file.

    Each panel plots a clip's points sorted by threshold and marks the point of highest
    F-measure with its value and threshold. Panels fill rows of up to :data:`PANEL_COLUMNS`; the
    picture is ``PANEL_SIZE[0] * columns`` by ``PANEL_SIZE[1] * rows + PANEL_TITLE_HEIGHT``
    pixels. The threshold axis is logarithmic when every threshold is > 0 and they span a factor
    of 100 or more (a sweep of ``min_area`` from 1e-4 to 0.1, say), else linear.

    Args:
        path: the PNG file; its folder must exist. An existing file is replaced whole.
        curves: clip name -> its (threshold, precision, recall, F-measure) points, the scores in
            [0, 1] (NaN where undefined, e.g. precision with nothing detected: not drawn). A clip
            without points gets an empty panel.
        threshold_name: what the threshold is (``min_area``, ``threshold``...), for the axis.

    Raises:
        UsageError: matplotlib is not installed.
        ValueError: ``curves`` is empty.
        OSError: the file cannot be written (no temporary file is left behind).
    """
    if not curves:
        raise ValueError("no threshold curves to plot")
    figure_class, canvas_class = _matplotlib()

    columns = min(len(curves), PANEL_COLUMNS)
    rows = math.ceil(len(curves) / columns)
    width, height = PANEL_SIZE[0] * columns, PANEL_SIZE[1] * rows + PANEL_TITLE_HEIGHT
    figure = figure_class(figsize=(width / DPI, height / DPI), dpi=DPI, layout="constrained")
    canvas = canvas_class(figure)
    panels = figure.subplots(rows, columns, squeeze=False).ravel()
    for panel, (name, points) in zip(panels, curves.items()):
        _threshold_panel(panel, name, points, threshold_name)
    for panel in panels[len(curves) :]:
        panel.set_visible(False)
    panels[0].legend(loc="best", fontsize=7)
    # On two lines where one panel is the figure's width: one line was cut off at both sides.
    joint = "\n" if columns == 1 else " "
    figure.suptitle(f"precision, recall and F-measure{joint}against {threshold_name}", fontsize=10)
    _save_png(canvas, path)


def _threshold_panel(panel, name: str, points: Sequence[tuple[float, float, float, float]], threshold_name: str) -> None:
    table = np.asarray(points, dtype=np.float64).reshape(-1, 4)
    table = table[np.argsort(table[:, 0], kind="stable")]
    thresholds, precision, recall, f_measure = table.T
    panel.plot(thresholds, precision, marker=".", label="precision", color="tab:blue")
    panel.plot(thresholds, recall, marker=".", label="recall", color="tab:green")
    panel.plot(thresholds, f_measure, marker=".", label="F-measure", color="tab:red", linewidth=2)
    if not len(table):
        panel.text(0.5, 0.5, "no points", transform=panel.transAxes, ha="center", va="center", color="0.4")
        panel.set_xticks([])
    elif not np.all(np.isnan(f_measure)):
        best = int(np.nanargmax(f_measure))
        x, y = thresholds[best], f_measure[best]
        panel.plot([x], [y], marker="*", markersize=12, color="black", linestyle="none", zorder=5)
        # Aligned to stay inside the panel when the best point is the first or the last.
        align = "left" if best == 0 else "right" if best == len(table) - 1 else "center"
        panel.annotate(
            f"best F {y:.3f} at {x:.3g}",
            xy=(x, y),
            xytext=(0, 8),
            textcoords="offset points",
            ha=align,
            va="bottom",
            fontsize=8,
        )
    positive = thresholds[thresholds > 0]
    if len(positive) == len(thresholds) and len(positive) and positive.max() >= 100 * positive.min():
        panel.set_xscale("log")
    panel.set_ylim(0, 1.12)  # room for the best point's label at F = 1
    panel.set_title(name, fontsize=9)
    panel.set_xlabel(threshold_name, fontsize=8)
    panel.tick_params(labelsize=7)
    panel.grid(True, color="0.9", linewidth=0.5)


def require_matplotlib() -> None:
    """Check that the pictures can be drawn, so that ``--plot`` fails at once, not after a run.

    Raises:
        UsageError: matplotlib is not installed.
    """
    _matplotlib()


def _matplotlib():
    """matplotlib's Figure and Agg canvas classes.

    Raises:
        UsageError: matplotlib is not installed.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise UsageError(_MISSING_MATPLOTLIB) from None
    return Figure, FigureCanvasAgg


def _save_png(canvas, path: str | Path) -> None:
    """Render to ``path`` whole (:func:`~motiondetect.core.files.atomic_write`)."""
    with atomic_write(path, "wb") as handle:
        canvas.print_png(handle)


class MotionPlotSink(Sink):
    """Collects every frame's motion fraction and draws :func:`plot_motion` when the run ends
    (``--plot FILE.png``), also after Ctrl-C or a failure: the picture shows what was processed.

    Args:
        path: PNG file to write.
        events: the run's segmenter (its trigger is the dashed line; its events are shaded).
        fps: frames per second of the input, for the time axis.
        title: the picture's title (the input's name).
    """

    def __init__(self, path: str | Path, events: EventSegmenter, fps: float, title: str = "") -> None:
        self.path, self.events, self.fps, self.title = Path(path), events, fps, title
        self.fractions: list[float] = []
        self.times: list[float] = []

    def consume(self, frame, result):
        self.fractions.append(result.motion_fraction)
        if self.events.frame_times:
            self.times.append(frame.time)

    def close(self, summary):
        spans = event_spans(self.events.events)
        times = np.asarray(self.times, np.float64) if self.events.frame_times else None  # the events' own times
        plot_motion(self.path, np.asarray(self.fractions, np.float64), self.fps, spans, self.events.trigger, title=self.title, times=times)

    def describe(self):
        return str(self.path)
