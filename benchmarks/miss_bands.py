"""Where a pipeline misses and false-alarms: CDnet pixel counts by band of rows, beside how busy the labels are there.

A clip's pixel F says how much of the mask is wrong, not where. This script scores the config's
pipeline (the CPU reference; the GPU's masks are the same) and any of ``evaluate --baselines``'
anchors by the CDnet rules of ``motiondetect evaluate`` (:func:`~motiondetect.evaluation.scoring.pixel_classes`),
and splits the counts over bands of rows. Each row of the table is one band:

- ``positive``, ``hit``, ``missed``, ``false``: labelled-motion pixels, and the mask's true
  positives, false negatives and false positives there, summed over the scored frames;
- ``recall``: hit / positive in the band; ``% missed``, ``% false``: the band's share of the
  clip's false negatives and false positives;
- ``busy``: the labels' occupancy, the share of scored frames on which a pixel of the band is
  labelled motion, as the mean over the band's pixels and its largest pixel (``mean/max``).
  A background model learns what a pixel shows most of the time: where the largest is near 1,
  the road behind a queue of cars is seldom in view.

Measured with it (docs/evaluation-log.md, "Busy lanes"): on ``cdnet_highway`` 89 % of the default's
missed pixels lie in its top 10 rows, where oncoming cars queue into view and the labels hold
motion on up to 84 % of the scored frames, while OpenCV's GSOC + median misses 151 of those
50,887 pixels. Usage::

    python benchmarks/miss_bands.py FOLDER ... [-c CONFIG] [--edges 5,10,20,40,-40,-20,-10]
        [--anchors "OpenCV KNN + median 5x5,OpenCV GSOC + median 5x5"] [--skip 50]

``--edges`` are the rows where a band ends and the next begins, counted from the top, or from
the bottom where negative (``-10``: ten rows above the last; write ``--edges=-10,...`` when the
first is negative, which argparse would take for an option). Every failure the command refuses
prints one line and exits 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from motiondetect.core.errors import MotionDetectError  # noqa: E402
from motiondetect.evaluation import scoring  # noqa: E402
from motiondetect.pipeline.config import build_filters, load_config  # noqa: E402
from motiondetect.pipeline.detector import MotionDetector  # noqa: E402

#: The default ``--edges``: fine bands at the top and bottom, where objects enter a view.
DEFAULT_EDGES = "5,10,20,40,-40,-20,-10"


def band_limits(height: int, edges: list[int]) -> list[tuple[int, int]]:
    """The bands ``[(first row, row after the last), ...]`` of a frame ``height`` rows high, top
    to bottom, split at ``edges`` (rows from the top, or from the bottom where negative).

    Raises:
        ValueError: an edge lies outside ``1 .. height - 1`` once counted from the top.
    """
    rows = []
    for edge in edges:
        row = edge if edge >= 0 else height + edge
        if not 0 < row < height:
            raise ValueError(f"--edges: row {edge} lies outside a frame of {height} rows (expected 1..{height - 1}, or -1..-{height - 1})")
        rows.append(row)
    cuts = [0, *sorted(set(rows)), height]
    return list(zip(cuts[:-1], cuts[1:]))


class RowCounts(scoring.Scorer):
    """A :class:`~motiondetect.evaluation.scoring.Scorer` that also keeps its CDnet pixel counts
    per row, ``(H,)`` each, summed over the scored frames, and the labels' motion per pixel
    (``(H, W)``: frames on which it is labelled 255); made on the first frame it scores."""

    hit: np.ndarray
    missed: np.ndarray
    false: np.ndarray
    labelled: np.ndarray

    @property
    def scored(self) -> int:
        """Frames scored."""
        return len(self.numbers)

    @property
    def positives(self) -> np.ndarray:
        """(H,) labelled-motion pixels per row."""
        return self.hit + self.missed

    def add(self, mask: np.ndarray, labels: np.ndarray, number: int | None = None) -> None:
        """Score one frame as the Scorer does, and count it per row (see the class docstring)."""
        super().add(mask, labels, number)
        if self.scored == 1:
            height, width = labels.shape
            self.hit, self.missed, self.false = (np.zeros(height, np.int64) for _ in range(3))
            self.labelled = np.zeros((height, width), np.int64)
        predicted, positive, negative = scoring.pixel_classes(mask, labels, self.roi)
        self.hit += np.count_nonzero(predicted & positive, axis=1)
        self.missed += np.count_nonzero(positive & ~predicted, axis=1)
        self.false += np.count_nonzero(predicted & negative, axis=1)
        self.labelled += positive


def count_rows(folder: scoring.GroundTruthFolder, methods: list[scoring.Method], skip: int) -> list[RowCounts]:
    """Each method's :class:`RowCounts` over the folder, by the rules of
    :func:`~motiondetect.evaluation.scoring.evaluate`, which runs them.

    Raises:
        GroundTruthError: a frame or label image cannot be decoded or has another size.
    """
    return [counts for _, counts in scoring.evaluate(folder, methods, skip=skip, scorer=RowCounts).scores]


def band_rows(counts: RowCounts, bands: list[tuple[int, int]]) -> list[list[str]]:
    """The table's cells for one method: a row per band (see the module docstring)."""
    missed_all, false_all = max(int(counts.missed.sum()), 1), max(int(counts.false.sum()), 1)
    busy = counts.labelled / max(counts.scored, 1)
    rows = []
    for top, bottom in bands:
        positive, hit = int(counts.positives[top:bottom].sum()), int(counts.hit[top:bottom].sum())
        missed, false = int(counts.missed[top:bottom].sum()), int(counts.false[top:bottom].sum())
        recall = f"{hit / positive:.3f}" if positive else "-"
        band_busy = busy[top:bottom]
        rows.append(
            [
                f"{top}-{bottom - 1}",
                f"{positive:,}",
                f"{hit:,}",
                f"{missed:,}",
                f"{false:,}",
                recall,
                f"{100 * missed / missed_all:.1f}",
                f"{100 * false / false_all:.1f}",
                f"{band_busy.mean():.2f}/{band_busy.max():.2f}",
            ]
        )
    return rows


COLUMNS = ("rows", "positive", "hit", "missed", "false", "recall", "% missed", "% false", "busy mean/max")


def markdown(rows: list[list[str]]) -> str:
    """A Markdown table of :data:`COLUMNS` and ``rows``."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def chosen_anchors(names: list[str]) -> list[scoring.Method]:
    """The anchors of ``evaluate --baselines`` named in ``names``, in that order.

    Raises:
        MotionDetectError: a name is not among the anchors installed here.
    """
    if not names:
        return []
    anchors = {method.name: method for method in scoring.classic_baselines()}
    unknown = [name for name in names if name not in anchors]
    if unknown:
        raise MotionDetectError(
            f"--anchors: {', '.join(map(repr, unknown))} not installed here; expected one of {', '.join(map(repr, anchors))}"
        )
    return [anchors[name] for name in names]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", help="ground-truth folders in the CDnet layout")
    parser.add_argument("-c", "--config", help="YAML config [default: built-in defaults]")
    parser.add_argument(
        "--edges", default=DEFAULT_EDGES, help=f"rows where the bands split, negative from the bottom [default: {DEFAULT_EDGES}]"
    )
    parser.add_argument("--anchors", default="", help="comma-separated anchor names as evaluate --baselines prints them")
    parser.add_argument(
        "--skip", type=int, default=scoring.DEFAULT_SKIP, help=f"frames at the start not scored [default: {scoring.DEFAULT_SKIP}]"
    )
    args = parser.parse_args(argv)
    try:
        edges = [int(edge) for edge in args.edges.split(",") if edge.strip()]
    except ValueError:
        parser.exit(2, f"miss_bands.py: --edges expects comma-separated whole rows; got {args.edges!r}\n")
    names = [name.strip() for name in args.anchors.split(",") if name.strip()]
    try:
        config = load_config(args.config)
        chosen_anchors(names)  # refused before the first clip is read
        for path in args.folders:
            folder = scoring.load_folder(path)
            bands = band_limits(folder.size[1], edges)
            methods = [scoring.detector_method(MotionDetector(build_filters(config), annotate=False))] + chosen_anchors(names)
            for method, counts in zip(methods, count_rows(folder, methods, args.skip)):
                print(f"\n{folder.name}: {method.name}, {counts.scored} frames scored\n")
                print(markdown(band_rows(counts, bands)))
    except (MotionDetectError, ValueError) as exc:
        print(f"miss_bands.py: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
