"""Find the motion events of a video with the Python API: VideoHandler -> MotionDetector -> EventSegmenter.

Run from the repository root:

    python docs/examples/python_api.py samples/highway_traffic_320x240.avi
    python docs/examples/python_api.py clip.mp4 --cuda      # on the GPU (pip install "motiondetect[cuda]")
"""

import argparse
from contextlib import ExitStack

from motiondetect import CUDAHandler, EventSegmenter, MotionDetector, VideoHandler, build_filters, default_config
from motiondetect.pipeline.frame_rate import for_source


def scan(path: str, use_cuda: bool = False) -> list[dict]:
    """Return the motion events of ``path`` as the report's dicts (the CLI's events, no outputs)."""
    config = default_config()  # or load_config("my.yaml"): the same dict, validated
    # The bundled clip's traffic never stops: split it at its quieter moments, as the CLI's
    # --min-area 0.05 --merge-gap 0.5 --time-before 0.5 --time-after 0.5 do.
    config["events"].update(min_area=0.05, merge_gap=0.5, time_before=0.5, time_after=0.5)
    with ExitStack() as stack:
        cuda = stack.enter_context(CUDAHandler()) if use_cuda else None  # None: the CPU reference
        # annotate=False skips the red blend (no video is written here); masks=False skips the
        # masks' download from the GPU: only the motion fraction and the box come back.
        video = stack.enter_context(VideoHandler(path))
        # The background model's per-frame rates and counts at the video's frame rate (unchanged
        # between 25 and 30 frames/s) and for its codec (H.264's skip blocks), as the CLI builds it.
        filters = build_filters(for_source(config, video.fps, inter_coded=video.inter_coded))
        detector = MotionDetector(filters, cuda=cuda, annotate=False, masks=False)
        width, height = video.size
        events = EventSegmenter.from_config(config["events"], video.fps, area=width * height)
        for frame in video:  # Frame(index, time, image): a decoded Y'CbCr Picture for video files
            result = detector.process(frame.image)
            events.update(frame.index, result.motion_fraction, result.bbox)
        events.finish()
        return events.as_dicts()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("video", nargs="?", default="samples/highway_traffic_320x240.avi")
    parser.add_argument("--cuda", action="store_true", help="run the kernels on the GPU")
    args = parser.parse_args()
    for event in scan(args.video, args.cuda):
        print(
            f"event {event['index']}: frames {event['start_frame']}-{event['end_frame']} "
            f"({event['start_timecode']} to {event['end_timecode']}), "
            f"peak motion {event['peak_motion']:.3f}, box {event['bbox']}"
        )


if __name__ == "__main__":
    main()
