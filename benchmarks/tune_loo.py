"""Leave-one-clip-out tuning of the default pipeline over the dev set, next to the defaults and anchors.

For every point of a small grid over the default pipeline's most important parameters, every clip
is scored by CDnet rules (CPU backend, first ``--skip`` frames not scored). Each clip is then
scored with the parameters that have the best mean pixel F over all the *other* clips
(:func:`motiondetect.evaluate.leave_one_out`), and the table prints, per clip, those parameters,
their pixel F and frame F1, next to today's defaults, the single best grid point over all clips
(in-sample, for the overfitting gap) and the classic anchors (as ``evaluate --baselines``).
Usage::

    python benchmarks/tune_loo.py samples/dev/*/ ../shared/samples/cdnet_highway ../shared/samples/cdnet_fall \\
        [--jobs 2] [--cache .data/tune_loo.json] [--grid small|tiny|subsense] [--config configs/subsense.yaml]

``--config`` tunes another pipeline than the default one (its values are then the "defaults"
row); the ``subsense`` grid goes with ``configs/subsense.yaml``.

Scores are cached per clip and grid point in a JSON file (keyed by the clip folder's name and
the parameter values), so a rerun or a grown grid only computes what is missing. Each worker
decodes a clip once and keeps it in memory; masks are made with ``annotate=False`` (the red
blend does not change them).

Why a script and not ``motiondetect evaluate --loo``: the grid is a tuning run (minutes, a cache,
worker processes), not a score of one configuration; the selection rule itself lives in the
package (``leave_one_out``) where ``evaluate`` can reuse it.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import os
import statistics
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from motiondetect.config import build_filters, default_config, load_config
from motiondetect.detector import MotionDetector
from motiondetect.evaluate import DEFAULT_SKIP, Method, decoded_frames, evaluate, leave_one_out, load_folder, opencv_baselines

#: The tuned parameters: (filter, parameter) and the values tried. Today's defaults are in every
#: list, so the default pipeline is a grid point.
GRIDS = {
    "small": {
        ("gaussian_background", "sigmas"): [2.5, 3.0, 3.5, 4.0],
        ("gaussian_background", "min_sigma"): [4.0, 6.0, 8.0],
        ("downscale", "height"): [160, 240, 320],
        ("median", "kernel_size"): [3, 5, 7],
        ("dilation", "kernel_size"): [3, 5],
    },
    "tiny": {
        ("gaussian_background", "sigmas"): [2.5, 3.0],
        ("median", "kernel_size"): [3, 5],
    },
    "subsense": {
        ("subsense", "color_threshold"): [10, 15, 20],
        ("subsense", "ghost_share"): [0.9, 0.995],
        ("subsense", "ghost_distance"): [0.01, 0.05],
        ("median", "kernel_size"): [9],
    },
}

_CLIPS: dict[str, tuple] = {}  # per worker: folder path -> (GroundTruthFolder, decoded frames)


def config_for(params: dict[tuple[str, str], float], base: dict | None = None) -> dict:
    """``base`` (default: the default config) with ``params`` ({(filter, parameter): value}) set in its pipeline."""
    config = copy.deepcopy(base or default_config())
    for (name, key), value in params.items():
        (entry,) = [e for e in config["pipeline"] if e["filter"] == name]
        entry[key] = value
    return config


def _clip(path: str):
    if path not in _CLIPS:
        folder = load_folder(path)
        _CLIPS[path] = (folder, list(decoded_frames(folder)))
    return _CLIPS[path]


def _summary(evaluation) -> list[dict]:
    return [
        {"name": method.name, "pixel_f": scorer.pixel.f_measure, "frame_f1": scorer.frames.f1, "pixel": scorer.pixel.as_dict(), "frame": scorer.frames.as_dict()}
        for method, scorer in evaluation.scores
    ]


def score_point(path: str, params: dict, skip: int, min_area: float, base: dict | None = None) -> dict:
    """Pixel F, frame F1 and counts of the ``base`` (default) pipeline with ``params`` on one clip (CPU)."""
    folder, frames = _clip(path)
    detector = MotionDetector(build_filters(config_for(params, base)), annotate=False)
    method = Method("motiondetect", lambda frame: detector.process(frame).mask)
    return _summary(evaluate(folder, [method], skip=skip, min_area=min_area, frames=frames))[0]


def score_anchors(path: str, skip: int, min_area: float) -> list[dict]:
    """The anchors of ``evaluate --baselines`` on one clip."""
    folder, frames = _clip(path)
    return _summary(evaluate(folder, opencv_baselines(), skip=skip, min_area=min_area, frames=frames))


def point_key(params: dict) -> str:
    """Cache key of a grid point: ``filter.parameter=value`` pairs, sorted."""
    return ",".join(f"{name}.{key}={value}" for (name, key), value in sorted(params.items()))


def run(paths: list[str], grid: dict, jobs: int, cache_path: Path | None, skip: int, min_area: float, base: dict | None = None) -> tuple[dict, list[dict]]:
    """Score every clip at every grid point of the ``base`` (default) pipeline and the anchors
    (cached); return ({clip: {key: scores}}, points)."""
    cache = json.loads(cache_path.read_text()) if cache_path and cache_path.is_file() else {}
    points = [dict(zip(grid, values)) for values in itertools.product(*grid.values())]
    tag = f"skip={skip},min_area={min_area}"
    if base is not None:  # another pipeline: its own cache entries (the tuned values aside, which every point sets)
        tuned = {name: [key for (n, key) in grid if n == name] for name, _ in grid}
        tag += ",pipeline=" + json.dumps([{k: v for k, v in e.items() if k not in tuned.get(e["filter"], [])} for e in base["pipeline"]], sort_keys=True)
    todo = []
    for path in paths:
        clip = cache.setdefault(f"{Path(path).resolve().name}|{tag}", {})
        todo += [(path, "anchors", None)] if "anchors" not in clip else []
        todo += [(path, point_key(p), p) for p in points if point_key(p) not in clip]
    print(f"{len(paths)} clips x {len(points)} grid points: {len(todo)} runs to do ({jobs} workers)", flush=True)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {
            pool.submit(score_anchors, path, skip, min_area) if params is None else pool.submit(score_point, path, params, skip, min_area, base): (path, key)
            for path, key, params in sorted(todo)  # grouped by clip: a worker decodes few clips
        }
        for done, (future, (path, key)) in enumerate(futures.items(), 1):
            cache[f"{Path(path).resolve().name}|{tag}"][key] = future.result()
            if cache_path and (done % 50 == 0 or done == len(futures)):
                cache_path.parent.mkdir(parents=True, exist_ok=True)
                cache_path.write_text(json.dumps(cache))
    return {Path(p).resolve().name: cache[f"{Path(p).resolve().name}|{tag}"] for p in paths}, points


def table(results: dict, points: list[dict], base: dict | None = None) -> str:
    """The LOO table: per clip the LOO choice and scores, the defaults (``base``'s values), the
    in-sample best and the anchors."""
    keys = [point_key(p) for p in points]
    pixel = {clip: {k: results[clip][k]["pixel_f"] for k in keys} for clip in results}
    chosen = leave_one_out(pixel)
    defaults = point_key({k: v for k, v in ((k, _default(k, base)) for k in points[0])})
    best_all = max(keys, key=lambda k: statistics.mean(pixel[c][k] for c in results))
    anchors = [a["name"] for a in next(iter(results.values()))["anchors"]]
    lines = ["clip                   LOO params (chosen without the clip)                     LOO F  LOO F1   default F  F1     in-sample-best F  F1     best anchor (pixel F, F1)"]
    rows = {"LOO": [], "default": [], "best": [], **{a: [] for a in anchors}}
    for clip in results:
        loo, dflt, best = results[clip][chosen[clip]], results[clip][defaults], results[clip][best_all]
        by_anchor = {a["name"]: a for a in results[clip]["anchors"]}
        top = max(by_anchor.values(), key=lambda a: a["pixel_f"])
        lines.append(
            f"{clip:22} {_short(chosen[clip]):56} {loo['pixel_f']:.3f}  {loo['frame_f1']:.3f}    {dflt['pixel_f']:.3f}  {dflt['frame_f1']:.3f}  "
            f"{best['pixel_f']:.3f}  {best['frame_f1']:.3f}    {top['name']} ({top['pixel_f']:.3f}, {top['frame_f1']:.3f})"
        )
        for name, row in (("LOO", loo), ("default", dflt), ("best", best), *((a, by_anchor[a]) for a in anchors)):
            rows[name].append(row)
    lines.append("")
    lines.append(f"mean over {len(results)} clips           pixel F  frame F1  min frame F1")
    labels = {"LOO": "leave-one-clip-out", "default": "today's defaults", "best": f"in-sample best ({_short(best_all)})"}
    for name, values in rows.items():
        label = labels.get(name, name)
        lines.append(f"  {label:60} {statistics.mean(v['pixel_f'] for v in values):.3f}    {statistics.mean(v['frame_f1'] for v in values):.3f}     {min(v['frame_f1'] for v in values):.3f}")
    votes: dict[str, int] = {}
    for key in chosen.values():
        votes[key] = votes.get(key, 0) + 1
    lines.append("")
    lines.append("LOO choices (how many clips chose each): " + "; ".join(f"{_short(k)} x{n}" for k, n in sorted(votes.items(), key=lambda kv: -kv[1])))
    return "\n".join(lines)


def _default(key: tuple[str, str], base: dict | None = None):
    (entry,) = [e for e in (base or default_config())["pipeline"] if e["filter"] == key[0]]
    return entry[key[1]]


def _short(key: str) -> str:
    names = {
        "gaussian_background.sigmas": "sig", "gaussian_background.min_sigma": "minsig", "downscale.height": "h", "median.kernel_size": "med",
        "dilation.kernel_size": "dil", "subsense.color_threshold": "R0", "subsense.ghost_share": "gs", "subsense.ghost_distance": "gd",
    }
    parts = [p.split("=") for p in key.split(",")]
    return " ".join(f"{names.get(n, n)}={v}" for n, v in parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", help="ground-truth folders in the CDnet layout (at least 2)")
    parser.add_argument("--grid", choices=sorted(GRIDS), default="small", help="parameter grid [default: small]")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes [default: all cores]")
    parser.add_argument("--cache", type=Path, default=Path(".data/tune_loo.json"), help="score cache (JSON) [default: .data/tune_loo.json]")
    parser.add_argument("--skip", type=int, default=DEFAULT_SKIP, help=f"frames at the start not scored [default: {DEFAULT_SKIP}]")
    parser.add_argument("--config", type=Path, help="tune this preset's pipeline instead of the default one (e.g. configs/subsense.yaml)")
    args = parser.parse_args()
    base = load_config(args.config) if args.config else None
    min_area = (base or default_config())["events"]["min_area"]
    results, points = run(args.folders, GRIDS[args.grid], args.jobs, args.cache, args.skip, min_area, base)
    print(table(results, points, base))


if __name__ == "__main__":
    main()
