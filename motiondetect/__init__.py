"""motiondetect: GPU video motion detection (background model or frame pairs, mask clean-up, red blend).

Importing this package never touches CUDA; the GPU is used only when a
:class:`~motiondetect.gpu.cuda_handler.CUDAHandler` is entered. The public names below are loaded
on first use (PEP 562 module ``__getattr__``), so ``import motiondetect`` is cheap and the
command line can start the CUDA driver before NumPy, OpenCV and PyAV are imported
(:mod:`motiondetect.gpu.early_start`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_EXPORTS = {
    "ConfigError": "motiondetect.core.errors",
    "CudaUnavailable": "motiondetect.core.errors",
    "MotionDetectError": "motiondetect.core.errors",
    "UsageError": "motiondetect.core.errors",
    "VideoOpenFailure": "motiondetect.core.errors",
    "Picture": "motiondetect.core.picture",
    "Frame": "motiondetect.core.types",
    "FrameResult": "motiondetect.core.types",
    "REGISTRY": "motiondetect.filters",
    "Filter": "motiondetect.filters",
    "CUDAHandler": "motiondetect.gpu.cuda_handler",
    "EventSegmenter": "motiondetect.outputs.events",
    "MotionEvent": "motiondetect.outputs.events",
    "VideoWriter": "motiondetect.outputs.writer",
    "build_filters": "motiondetect.pipeline.config",
    "default_config": "motiondetect.pipeline.config",
    "load_config": "motiondetect.pipeline.config",
    "MotionDetector": "motiondetect.pipeline.detector",
    "VideoHandler": "motiondetect.sources.video",
}

__all__ = [
    "CUDAHandler",
    "ConfigError",
    "CudaUnavailable",
    "EventSegmenter",
    "Filter",
    "Frame",
    "FrameResult",
    "MotionDetectError",
    "MotionDetector",
    "MotionEvent",
    "Picture",
    "REGISTRY",
    "UsageError",
    "VideoHandler",
    "VideoOpenFailure",
    "VideoWriter",
    "build_filters",
    "default_config",
    "load_config",
    "__version__",
]


def __getattr__(name: str) -> Any:
    """Import the module behind a public name on first use and keep the name here."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'motiondetect' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # the names as static analysis sees them
    from motiondetect.core.errors import ConfigError, CudaUnavailable, MotionDetectError, UsageError, VideoOpenFailure
    from motiondetect.core.picture import Picture
    from motiondetect.core.types import Frame, FrameResult
    from motiondetect.filters import REGISTRY, Filter
    from motiondetect.gpu.cuda_handler import CUDAHandler
    from motiondetect.outputs.events import EventSegmenter, MotionEvent
    from motiondetect.outputs.writer import VideoWriter
    from motiondetect.pipeline.config import build_filters, default_config, load_config
    from motiondetect.pipeline.detector import MotionDetector
    from motiondetect.sources.video import VideoHandler
