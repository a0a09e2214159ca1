"""Write the annotated video (the red blend of the motion mask) with the Python API.

Run from the repository root:

    python docs/examples/annotate.py samples/highway_traffic_320x240.avi annotated.mp4
"""

import sys

from motiondetect import MotionDetector, VideoHandler, VideoWriter, build_filters, default_config


def annotate(path: str, out: str) -> None:
    detector = MotionDetector(build_filters(default_config()))  # CPU; cuda=CUDAHandler() for the GPU
    with VideoHandler(path) as video, VideoWriter(out, video.fps, video.size) as writer:
        count = 0
        for frame in video:
            result = detector.process(frame.image)
            writer.write(result.frame)  # a Picture in, a Picture out: encoded as yuv420p, no conversion
            count += 1
    print(f"{out}: {count} frames, {video.size[0]}x{video.size[1]} at {video.fps:g} fps")


if __name__ == "__main__":
    annotate(*sys.argv[1:3])
