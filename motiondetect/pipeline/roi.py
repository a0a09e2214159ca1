"""Region of interest (ROI): polygons or a mask image, rasterised once into an (H, W) uint8 mask.

Only motion inside the ROI counts: the detector zeroes the mask outside it before counting, the
motion fraction is a share of the ROI's pixels, and the frame is cropped to the ROI's bounding
box (plus the pipeline's reach) before the filters run. In a config::

    roi:
      polygons:                   # pixel coordinates of the input frame, [x, y] each
        - [[0, 120], [320, 120], [320, 240], [0, 240]]

or ``roi: {mask: roi.png}`` (non-zero pixels are inside; the image must have the frames' size; a
relative name is relative to the config file). ``--roi FILE`` takes such a YAML file (or a bare
list of polygons) or a mask image.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np
import yaml

from motiondetect.core.errors import ConfigError
from motiondetect.core.safety import read_image
from motiondetect.pipeline.config import ROI_SCHEMA, schema_problems, yaml_problem
from motiondetect.sources.video import IMAGE_SUFFIXES


def roi_from_file(path: str | Path) -> dict[str, Any]:
    """Read ``--roi FILE``: a mask image, or YAML holding ``polygons:`` (or a bare list of them).

    Args:
        path: an image (``.png``, ``.bmp``... non-zero inside) or a ``.yaml`` / ``.yml`` file.

    Returns:
        The config's ``roi`` value: ``{"mask": path}`` or ``{"polygons": [...]}``.

    Raises:
        ConfigError: the file cannot be read, is not YAML, or its polygons are malformed.
    """
    path = Path(path)
    if path.suffix.lower() in IMAGE_SUFFIXES:
        return {"mask": str(path.resolve())}  # absolute: the report's config works from any folder
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([f"--roi: cannot read {str(path)!r}: {getattr(exc, 'strerror', None) or exc}"]) from None
    except yaml.YAMLError as exc:
        raise ConfigError(
            [f"--roi: {str(path)!r} is neither an image ({', '.join(sorted(IMAGE_SUFFIXES))}) nor usable YAML: {yaml_problem(exc)}"]
        ) from None
    roi = {"polygons": data} if isinstance(data, list) else data
    problems = schema_problems(ROI_SCHEMA, roi, ("roi",))
    if roi is None or problems:
        raise ConfigError([f"--roi {path}: {p}" for p in problems] or [f"--roi {path}: the file is empty"])
    if "mask" in roi:
        roi = {"mask": str((path.parent / roi["mask"]).resolve())}
    return roi


def rasterize(roi: dict[str, Any] | None, size: tuple[int, int]) -> np.ndarray | None:
    """Make the (H, W) ROI mask for frames of ``size`` from a validated config ``roi`` value.

    Polygons are filled one by one with ``cv2.fillPoly`` (their union: one call with several
    polygons would leave their overlaps out), boundary pixels included; points past the right
    or bottom edge are allowed and clipped (coordinates are whole pixels >= 0: the schema
    refuses negative ones).

    Args:
        roi: ``{"polygons": [[[x, y], ...], ...]}``, ``{"mask": path}`` or ``None``.
        size: (width, height) of the frames, pixels.

    Returns:
        (H, W) uint8, 255 inside and 0 outside; ``None`` when ``roi`` is ``None``.

    Raises:
        ConfigError: the mask image cannot be read or has another size, or the ROI holds no
            pixel of the frame.
    """
    if roi is None:
        return None
    width, height = size
    if "mask" in roi:
        image = read_image(roi["mask"], cv2.IMREAD_GRAYSCALE)
        if image is None:
            raise ConfigError([f"roi.mask: cannot read image {roi['mask']!r}"])
        if image.shape != (height, width):
            raise ConfigError([f"roi.mask: {roi['mask']!r} is {image.shape[1]}x{image.shape[0]}, the frames are {width}x{height}"])
        mask = np.where(image > 0, 255, 0).astype(np.uint8)
    else:
        mask = np.zeros((height, width), np.uint8)
        for polygon in roi["polygons"]:
            cv2.fillPoly(mask, [np.asarray(polygon, np.int32).reshape(-1, 1, 2)], 255)
    if not mask.any():
        raise ConfigError([f"roi: the region of interest holds no pixel of the {width}x{height} frame"])
    return mask
