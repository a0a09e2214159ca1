"""Pipeline filters and the registry built from their ``NAME``s.

``REGISTRY`` is the single list of filters: config validation, ``--help`` text and error
messages are derived from it.
"""

from motiondetect.filters.base import Filter, Kind, Param
from motiondetect.filters.blur import Blur
from motiondetect.filters.closing import Closing
from motiondetect.filters.difference import Difference
from motiondetect.filters.dilation import Dilation
from motiondetect.filters.dispersion_threshold import DispersionThreshold
from motiondetect.filters.downscale import Downscale
from motiondetect.filters.equalize import Equalize
from motiondetect.filters.erosion import Erosion
from motiondetect.filters.gaussian_background import GaussianBackground
from motiondetect.filters.gray import Gray
from motiondetect.filters.median import Median
from motiondetect.filters.red_blend import RedBlend
from motiondetect.filters.register import Register
from motiondetect.filters.running_average import RunningAverage
from motiondetect.filters.subsense import Subsense
from motiondetect.filters.threshold import Threshold
from motiondetect.filters.upscale import Upscale

#: Filter classes by their ``NAME``, in the order they can appear in a pipeline: the grey frame
#: and what prepares it, the frame-pair filters, what turns a difference into a mask, the mask
#: clean-up, and the output.
REGISTRY: dict[str, type[Filter]] = {
    cls.NAME: cls
    for cls in (
        Gray,
        Equalize,
        Blur,
        Downscale,
        Register,
        Difference,
        RunningAverage,
        GaussianBackground,
        Subsense,
        Threshold,
        DispersionThreshold,
        Median,
        Erosion,
        Dilation,
        Closing,
        Upscale,
        RedBlend,
    )
}

__all__ = [
    "REGISTRY",
    "Blur",
    "Closing",
    "Difference",
    "Dilation",
    "DispersionThreshold",
    "Downscale",
    "Equalize",
    "Erosion",
    "Filter",
    "GaussianBackground",
    "Gray",
    "Kind",
    "Median",
    "Param",
    "RedBlend",
    "Register",
    "RunningAverage",
    "Subsense",
    "Threshold",
    "Upscale",
]
