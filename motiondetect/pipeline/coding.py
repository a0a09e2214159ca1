"""A background model's values for how its source was coded.

An inter-coded video (H.264, HEVC, MPEG-4, VP9, AV1: a lossy codec that predicts frames from
others) codes a block that barely changed as a copy of the last frame's, a skip block. Its
pixels then repeat their grey levels exactly, whether the block shows a ghost (background that
something uncovered) or a person at rest. ``gaussian_background``'s still-foreground absorption
takes a pixel whose grey level repeats on ``still_frames`` (7) frames in a row as a ghost, a
count chosen on image sequences, where a resting person's pixels still change a little. Measured
on the 20 dev clips through libx264 and back (CRF 23, 28 and 35, a keyframe a second), 7 frames
took resting people in: mean pixel F 0.793, 0.781 and 0.759, against 0.795, 0.791 and 0.775 with
17, the count leave-one-clip-out chose over the three in 17 of 20 folds, while on the clips as
they are 7 scores 0.800 and 17 0.795 (docs/evaluation-log.md, "Frame rate, compression and noise").

:func:`for_coding` swaps in, for an inter-coded source, the values each filter declares in
``INTER_CODED`` (``{"still_frames": "still_frames_inter"}``).
"""

from __future__ import annotations

import copy
from typing import Any

from motiondetect.filters import REGISTRY


def for_coding(config: dict[str, Any], inter_coded: bool) -> dict[str, Any]:
    """The config with each pipeline filter's ``INTER_CODED`` values swapped in for an
    inter-coded source.

    Args:
        config: a validated, complete config.
        inter_coded: the frames come from an inter-coded video
            (:attr:`motiondetect.sources.video.VideoHandler.inter_coded`).

    Returns:
        ``config`` itself when ``inter_coded`` is false or no value changes, else a copy in which
        each such parameter holds its inter-coded counterpart's value (a counterpart the entry
        leaves out is taken at its default).
    """
    if not inter_coded:
        return config
    swapped = copy.deepcopy(config)
    changed = False
    for entry in swapped["pipeline"]:
        cls = REGISTRY[entry["filter"]]
        for name, inter in cls.INTER_CODED.items():
            value = cls.entry_value(entry, inter)
            changed |= value != cls.entry_value(entry, name)
            entry[name] = value
    return swapped if changed else config
