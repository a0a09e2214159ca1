"""Outputs of a footage scan, each a :class:`~motiondetect.runner.Sink`: per-event clips, the
motion-only video, the mask video and per-frame mask images. (The annotated video and the events
reports are :class:`~motiondetect.runner.VideoSink` and :class:`~motiondetect.runner.EventsSink`.)
"""

from motiondetect.outputs.clips import ClipSink, MotionOnlySink
from motiondetect.outputs.masks import MaskImagesSink, MaskVideoSink

__all__ = ["ClipSink", "MaskImagesSink", "MaskVideoSink", "MotionOnlySink"]
