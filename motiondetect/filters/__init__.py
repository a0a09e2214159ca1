"""Pipeline filters and the registry built from their ``NAME``s.

``REGISTRY`` is the single list of filters: config validation, ``--help`` text and error
messages are derived from it.
"""

from motiondetect.filters.base import Filter, Kind, Param
from motiondetect.filters.difference import Difference
from motiondetect.filters.erosion import Erosion
from motiondetect.filters.gray import Gray
from motiondetect.filters.red_blend import RedBlend
from motiondetect.filters.threshold import Threshold

#: Filter classes by their ``NAME``, in pipeline order.
REGISTRY: dict[str, type[Filter]] = {cls.NAME: cls for cls in (Gray, Difference, Threshold, Erosion, RedBlend)}

__all__ = ["REGISTRY", "Difference", "Erosion", "Filter", "Gray", "Kind", "Param", "RedBlend", "Threshold"]
