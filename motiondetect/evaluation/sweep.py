"""Threshold sweeps: a clip's pixel precision, recall and F-measure as the pipeline's decision
threshold moves (``motiondetect evaluate --plot``), the precision/recall trade-off a single
score hides."""

from __future__ import annotations

from typing import Any, Callable

from motiondetect.core.errors import UsageError
from motiondetect.evaluation.tuning import Axis, config_for, score_runs

#: The decision threshold of each model and the values swept; the config's own value is added.
#: Ranges bracket each parameter's documented default: 3 standard deviations (MOG2's 4 is
#: ``varThreshold`` 16), the case study's 25 grey levels, SuBSENSE's R0 of 15 (St-Charles et al.).
THRESHOLDS: dict[str, tuple[str, list[float]]] = {
    "gaussian_background": ("sigmas", [1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0]),
    "threshold": ("threshold", [5, 10, 15, 20, 25, 30, 40, 50, 70]),
    "subsense": ("color_threshold", [5, 10, 15, 20, 25, 30, 40]),
    "dispersion_threshold": ("sigma_strong", [1.5, 2.0, 2.5, 3.0, 4.0, 5.0]),
}


def threshold_axis(config: dict[str, Any]) -> tuple[Axis, list[float]]:
    """The first filter of ``config``'s pipeline with a threshold in :data:`THRESHOLDS`, as an
    axis ``(filter, parameter)``, and the values to try (sorted, the config's own included).

    Raises:
        UsageError: the pipeline has none of those filters.
    """
    for entry in config["pipeline"]:
        if entry["filter"] in THRESHOLDS:
            key, values = THRESHOLDS[entry["filter"]]
            return (entry["filter"], key), sorted(set(values) | {entry[key]})
    raise UsageError(f"--plot sweeps the threshold of {', '.join(THRESHOLDS)}; the pipeline has none of them")


def sweep(
    paths: list[str],
    config: dict[str, Any],
    skip: int,
    min_area: float,
    jobs: int = 1,
    progress: Callable[[int], Any] | None = None,
) -> tuple[Axis, dict[str, list[tuple[float, float, float, float]]]]:
    """Score ``config`` on each clip at every value of its threshold (CPU reference).

    Args:
        paths: ground-truth folders in the CDnet layout.
        config: a validated config; its pipeline's threshold (:func:`threshold_axis`) moves.
        skip, min_area: as :func:`motiondetect.evaluation.scoring.evaluate`.
        jobs: worker processes.
        progress: called with 1 after each run, or ``None``.

    Returns:
        The axis swept, and per clip path, its (threshold, pixel precision, pixel recall, pixel
        F-measure) points in threshold order (NaN where undefined: no positive pixel).

    Raises:
        UsageError: as :func:`threshold_axis`.
    """
    axis, values = threshold_axis(config)
    points = [(path, value) for path in paths for value in values]
    runs = [(path, config_for(config, {axis: value})) for path, value in points]
    curves: dict[str, list[tuple[float, float, float, float]]] = {path: [] for path in paths}
    for (path, value), scores in zip(points, score_runs(runs, skip, min_area, jobs), strict=True):  # strict: see tuning.tune
        pixel = scores["pixel"]
        curves[path].append((value, pixel["precision"], pixel["recall"], pixel["f_measure"]))
        if progress is not None:
            progress(1)
    return axis, curves
