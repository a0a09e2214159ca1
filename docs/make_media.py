"""Regenerate the README's media from the bundled sample: a still and a short animated clip.

Runs the ``motiondetect`` command on ``samples/highway_traffic_320x240.avi`` with the default
pipeline and the boxes, timecode and motion-fraction overlays, then makes from its outputs

- ``docs/images/readme_frame.png``: frame 446 as input | annotated output | motion mask;
- ``docs/images/readme_clip.gif``: frames 420-509 of the annotated video (3.6 s, the truck
  passing), an animated GIF at 12.5 fps (every second frame) written by Pillow, with one
  median-cut palette for all frames (so still background keeps its index from frame to frame)
  and no dithering: 128 colours, or 96 or 64 when needed to stay under 1.5 MB.

Needs Pillow (``pip install pillow``; the ``[test]`` extra has it). Run from anywhere:

    python docs/make_media.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import av
import numpy as np

try:
    from PIL import Image
except ImportError:  # pragma: no cover - a message, not a traceback
    sys.exit("make_media.py needs Pillow: pip install pillow")

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "highway_traffic_320x240.avi"
IMAGES = ROOT / "docs" / "images"
STILL_FRAME = 446
CLIP = range(420, 510, 2)  # frames of the annotated video: 3.6 s at 25 fps, every second one
CLIP_FPS = 12.5
MAX_BYTES = 1_500_000
GAP = 4  # pixels of white between the still's panels


def decode_rgb(path: Path) -> list[np.ndarray]:
    """Every frame of a video as (H, W, 3) uint8 RGB."""
    with av.open(str(path)) as container:
        return [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]


def run_cli(workdir: Path) -> tuple[Path, Path]:
    """Run the command on the sample; return the annotated video and the mask folder."""
    video, masks = workdir / "annotated.mp4", workdir / "masks"
    command = [
        sys.executable,
        "-m",
        "motiondetect",
        str(SAMPLE),
        "--boxes",
        "--timecode",
        "--fraction",
        "-o",
        str(video),
        "--masks",
        str(masks),
        "--events",
        str(workdir / "events.json"),
        "-q",
    ]
    print("$ motiondetect samples/highway_traffic_320x240.avi", " ".join(command[4:]))
    subprocess.run(command, check=True, cwd=workdir)
    return video, masks


def still(inputs: list[np.ndarray], annotated: list[np.ndarray], masks: Path) -> Image.Image:
    """Input | annotated | mask of STILL_FRAME, side by side."""
    mask_file = sorted(masks.glob("*.png"))[STILL_FRAME]
    mask = np.asarray(Image.open(mask_file).convert("RGB"))
    panels = [inputs[STILL_FRAME], annotated[STILL_FRAME], mask]
    height = panels[0].shape[0]
    gap = np.full((height, GAP, 3), 255, np.uint8)
    return Image.fromarray(np.hstack([panels[0], gap, panels[1], gap, panels[2]]))


def animation(annotated: list[np.ndarray], path: Path) -> int:
    """Write CLIP's frames as a looping animated GIF under MAX_BYTES; return its colour count."""
    frames = [Image.fromarray(annotated[i]) for i in CLIP]
    # The palette is fitted to every fifth frame of the clip, tiled into one image.
    sample = frames[::5]
    width, height = sample[0].size
    mosaic = Image.new("RGB", (width * len(sample), height))
    for k, frame in enumerate(sample):
        mosaic.paste(frame, (k * width, 0))
    for colors in (128, 96, 64):
        palette = mosaic.quantize(colors=colors, method=Image.Quantize.MEDIANCUT)
        indexed = [frame.quantize(palette=palette, dither=Image.Dither.NONE) for frame in frames]
        indexed[0].save(path, save_all=True, append_images=indexed[1:], duration=round(1000 / CLIP_FPS), loop=0, optimize=True)
        if path.stat().st_size <= MAX_BYTES:
            return colors
    sys.exit(f"{path.name} is over {MAX_BYTES / 1e6:g} MB even with 64 colours: shorten CLIP or lower CLIP_FPS")


def main() -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        video, masks = run_cli(Path(tmp))
        annotated = decode_rgb(video)
        inputs = decode_rgb(SAMPLE)
        if len(annotated) != len(inputs):
            sys.exit(f"the annotated video has {len(annotated)} frames, the input {len(inputs)}")
        still_path = IMAGES / "readme_frame.png"
        still(inputs, annotated, masks).save(still_path, optimize=True)
        clip_path = IMAGES / "readme_clip.gif"
        colors = animation(annotated, clip_path)
    plot_path = IMAGES / "motion_plot.png"
    plot_command = [sys.executable, "-m", "motiondetect", str(SAMPLE), "--no-video", "--events", "/dev/null", "--overwrite", "-q"]
    plot_command += ["--min-area", "0.05", "--merge-gap", "0.5", "--time-before", "0.5", "--time-after", "0.5"]
    print("$ motiondetect samples/highway_traffic_320x240.avi", " ".join(plot_command[4:]), "--plot", plot_path.relative_to(ROOT))
    subprocess.run([*plot_command, "--plot", str(plot_path)], check=True)
    print(f"{still_path.relative_to(ROOT)}: {still_path.stat().st_size / 1e6:.2f} MB")
    print(f"{clip_path.relative_to(ROOT)}: {clip_path.stat().st_size / 1e6:.2f} MB, {len(CLIP)} frames, {colors} colours")


if __name__ == "__main__":
    main()
