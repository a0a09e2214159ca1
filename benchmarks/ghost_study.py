"""Ghosts: the whole-blob edge test of ``gaussian_background.ghost_frames``, at other settings (CPU study).

The model takes a ghost (what it flags where an object it had learnt has left) into the
background when a blob of its mask has its outline in the model's mean and none in the frame,
and the frame there is still (:mod:`motiondetect.filters.ghosts`). It runs that test on its first
``ghost_frames`` frame pairs after the bootstrap only (100 by default): the CUDA backend's batched
kernel keeps each pixel in registers through a batch of frames and cannot ask a whole-blob
question between frames, so over those frames it runs one frame a launch and tests on the host.

This study runs the same test (:class:`~motiondetect.filters.ghosts.GhostWindow`) from a subclass
of the model's CPU reference, with the test's constants as settings and on every frame if asked:
``ratio`` (the mean's border gradient over the frame's, at least), ``checks`` (tests in a row),
``stillness`` (times the frame's median change, plus one grey level), ``lag`` (frames between a
decision and the absorption, 0: at once; what a batched GPU form that acts a batch later would
cost) and ``window`` (frame pairs after the bootstrap the test covers; left out: all).

Prints the mean pixel F over the folders for each setting, the clips it moves most against the
first setting, each clip's pixel F, and the leave-one-clip-out choice among the settings::

    python benchmarks/ghost_study.py FOLDER ... [--settings off,default,1/3/0.5/0,1/3/0.5/8] [--jobs 2]

A setting is ``off`` (``ghost_frames`` 0), ``default`` (the config as it is) or
``ratio/checks/stillness/lag[/window]`` (the subclass, ``ghost_frames`` 0).
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from motiondetect import filters  # noqa: E402
from motiondetect.core.errors import MotionDetectError  # noqa: E402
from motiondetect.evaluation.scoring import DEFAULT_SKIP  # noqa: E402
from motiondetect.evaluation.tuning import leave_one_out, score_config  # noqa: E402
from motiondetect.filters.gaussian_background import GaussianBackground, take_ghosts  # noqa: E402
from motiondetect.filters.ghosts import GhostWindow  # noqa: E402
from motiondetect.pipeline.config import load_config  # noqa: E402


@dataclass(frozen=True)
class Setting:
    """One point of the study: ``ratio`` (the mean's border gradient over the frame's, at least),
    ``checks`` (tests in a row), ``stillness`` (times the frame's median change, plus one grey
    level), ``lag`` (frames between the decision and the absorption) and ``window`` (the test
    runs on the first ``window`` frame pairs after the bootstrap only; ``None``: on all)."""

    ratio: float
    checks: int
    stillness: float
    lag: int
    window: int | None = None

    @classmethod
    def parse(cls, text: str) -> Setting | str:
        """``"ratio/checks/stillness/lag[/window]"``, or ``"off"`` / ``"default"`` as they are;
        ValueError otherwise."""
        if text in ("off", "default"):
            return text
        try:
            ratio, checks, stillness, lag, *window = text.split("/")
            if len(window) > 1:
                raise ValueError
            return cls(float(ratio), int(checks), float(stillness), int(lag), int(window[0]) if window else None)
        except ValueError:
            raise ValueError(
                f"expected a setting as ratio/checks/stillness/lag[/window] (such as 1/3/0.5/0), off or default; got {text!r}"
            ) from None

    def __str__(self) -> str:
        text = f"{self.ratio:g}/{self.checks}/{self.stillness:g}/{self.lag}"
        return text if self.window is None else f"{text}/{self.window}"


class GhostTestedBackground(GaussianBackground):
    """``gaussian_background``'s CPU reference with the ghost test after it (:data:`SETTING`):
    the model's own :class:`~motiondetect.filters.ghosts.GhostWindow` at the setting's values,
    on every pair after the bootstrap or its ``window``, acting ``lag`` pairs later."""

    SETTING: Setting | None = None

    def reset(self) -> None:
        super().reset()
        setting = self.SETTING
        self._study = None if setting is None else GhostWindow(setting.ratio, setting.stillness, setting.checks)
        self._due: dict[int, np.ndarray] = {}

    def reference(self, src, side=None, chroma=None):
        out = super().reference(src, side, chroma)
        setting = self.SETTING
        if self._study is None or setting is None or self._boot_grey is not None:  # not before the bootstrap's median
            return out
        due = self._due.pop(self._pairs, None)
        if due is not None:
            take_ghosts(due, src, chroma, self._mean, self._chroma_mean, self._still, out)
        if setting.window is not None and self._pairs > self.params["bootstrap"] + setting.window:
            return out
        take = self._study.take(src, self._mean, out)  # the first call keeps the frame only
        if take is not None and setting.lag:
            self._due[self._pairs + setting.lag] = take
        elif take is not None:
            take_ghosts(take, src, chroma, self._mean, self._chroma_mean, self._still, out)
        return out


def score(path: str, setting: Setting | str, config: dict, skip: int, min_area: float) -> float:
    """Pixel F of ``config`` on one clip at ``setting`` (:meth:`Setting.parse`)."""
    if setting != "default":
        config = copy.deepcopy(config)
        for entry in config["pipeline"]:
            if entry["filter"] == "gaussian_background":
                entry["ghost_frames"] = 0
    GhostTestedBackground.SETTING = setting if isinstance(setting, Setting) else None
    filters.REGISTRY["gaussian_background"] = GhostTestedBackground
    return score_config(path, config, skip, min_area)["pixel_f"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", help="ground-truth folders in the CDnet layout (at least 2)")
    parser.add_argument("-c", "--config", help="YAML config [default: built-in defaults]")
    parser.add_argument(
        "--settings",
        default="off,default,1/3/0.5/0,1/3/0.5/8,1/3/0.5/32",
        help="comma-separated ratio/checks/stillness/lag[/window], off or default",
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes [default: all cores]")
    parser.add_argument("--skip", type=int, default=DEFAULT_SKIP, help=f"frames not scored at a window's start [default: {DEFAULT_SKIP}]")
    args = parser.parse_args(argv)
    try:
        settings = [Setting.parse(s) for s in args.settings.split(",")]
        if len(args.folders) < 2:
            raise ValueError(f"leave-one-clip-out needs at least 2 folders; got {len(args.folders)}")
        config = load_config(args.config)
        min_area = config["events"]["min_area"]
        runs = [(f, s) for f in args.folders for s in settings]
        with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(score, *zip(*runs), *([x] * len(runs) for x in (config, args.skip, min_area))))
    except (MotionDetectError, ValueError) as exc:
        print(f"ghost_study: error: {exc}", file=sys.stderr)
        return 2
    names = [str(s) for s in settings]
    scores = {
        Path(f).name: dict(zip(names, results[i * len(names) : (i + 1) * len(names)], strict=True)) for i, f in enumerate(args.folders)
    }
    clips = list(scores)
    print("| setting | mean pixel F | largest gains and losses |")
    print("| --- | ---: | --- |")
    for name in names:
        moves = sorted(((scores[c][name] - scores[c][names[0]], c) for c in clips), key=lambda m: -abs(m[0]))
        shown = ", ".join(f"{c} {d:+.3f}" for d, c in moves[:4] if abs(d) >= 0.0005) or "-"
        print(f"| {name} | {sum(scores[c][name] for c in clips) / len(clips):.4f} | {shown} |")
    print("\n| clip | " + " | ".join(names) + " |")
    print("| --- |" + " ---: |" * len(names))
    for c in clips:
        print(f"| {c} | " + " | ".join(f"{scores[c][n]:.3f}" for n in names) + " |")
    chosen = leave_one_out(scores)
    held_out = sum(scores[c][chosen[c]] for c in clips) / len(clips)
    picks = {n: sum(1 for c in clips if chosen[c] == n) for n in names}
    print(f"\nleave-one-clip-out: held out {held_out:.4f}; folds' choices: " + ", ".join(f"{n} {k}" for n, k in picks.items() if k))
    return 0


if __name__ == "__main__":
    sys.exit(main())
