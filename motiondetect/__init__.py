"""motiondetect: GPU video motion detection (background model or frame pairs, mask clean-up, red blend).

Importing this package never touches CUDA; the GPU is used only when a
:class:`~motiondetect.gpu.cuda_handler.CUDAHandler` is entered.
"""

__version__ = "0.1.0"

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

__all__ = [
    "REGISTRY",
    "EventSegmenter",
    "Frame",
    "MotionEvent",
    "Picture",
    "CUDAHandler",
    "ConfigError",
    "CudaUnavailable",
    "Filter",
    "FrameResult",
    "MotionDetectError",
    "MotionDetector",
    "UsageError",
    "VideoHandler",
    "VideoOpenFailure",
    "VideoWriter",
    "build_filters",
    "default_config",
    "load_config",
    "__version__",
]
