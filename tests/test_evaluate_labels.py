"""motiondetect evaluate on label images that are not CDnet's: one warning a folder, with the
likely cause (0/1 masks, lossy labels), where before they were scored silently."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import pytest

from motiondetect.apps.cli import main
from motiondetect.evaluation.scoring import LabelValues, Method, decoded_frames, evaluate, load_folder

#: main() rebinds the root logger to the (captured) stderr: every test here has it restored.
pytestmark = pytest.mark.usefixtures("restored_logging")

HEIGHT, WIDTH, COUNT = 36, 48, 8
#: What the warning says of every folder whose labels are not CDnet's.
WARNED = "label images hold values that are not CDnet labels"


def cdnet_labels(i: int) -> np.ndarray:
    """Frame ``i``'s CDnet labels: a square moving 3 pixels a frame (255) with its one-pixel
    outline (170) and a shadow below it (50), on static ground (0) with a band outside the ROI (85)."""
    label = np.zeros((HEIGHT, WIDTH), np.uint8)
    label[:, :4] = 85
    left = 6 + 3 * i
    label[9:23, left - 1 : left + 13] = 170
    label[10:22, left : left + 12] = 255
    label[23:27, left : left + 12] = 50
    return label


def jpeg_round_trip(label: np.ndarray) -> np.ndarray:
    """``label`` saved as JPEG (quality 90) and read back: values near CDnet's (253, 3, 168...)."""
    return cv2.imdecode(cv2.imencode(".jpg", label, [cv2.IMWRITE_JPEG_QUALITY, 90])[1], cv2.IMREAD_GRAYSCALE)


def near_values(label: np.ndarray) -> np.ndarray:
    """``label`` with CDnet's values nudged by 1-3 where the square's left edge is (as lossy
    compression leaves them): deterministic, whatever the JPEG library."""
    out = label.astype(np.int16)
    edge = np.zeros(label.shape, bool)
    edge[:, 4:] = np.diff(label.astype(np.int16), axis=1)[:, 3:] != 0
    out[edge] += np.where(out[edge] >= 128, -2, 3)
    return out.astype(np.uint8)


def make_cdnet_folder(root: Path, labels: Callable[[np.ndarray], np.ndarray] = lambda x: x) -> Path:
    """A tiny folder in the layout :func:`~motiondetect.evaluation.scoring.load_folder` reads:
    ``input/in000001.jpg`` ... (a grey background with a moving square), ``groundtruth/gt000001.png``
    ... (:func:`cdnet_labels` passed through ``labels``), ``temporalROI.txt`` (all frames) and an
    ``ROI.bmp`` of the whole frame."""
    (root / "input").mkdir(parents=True)
    (root / "groundtruth").mkdir()
    for i in range(COUNT):
        frame = np.full((HEIGHT, WIDTH, 3), 90, np.uint8)
        frame[10:22, 6 + 3 * i : 18 + 3 * i] = (30, 200, 240)
        cv2.imwrite(str(root / "input" / f"in{i + 1:06d}.jpg"), frame)
        cv2.imwrite(str(root / "groundtruth" / f"gt{i + 1:06d}.png"), labels(cdnet_labels(i)))
    (root / "temporalROI.txt").write_text(f"1 {COUNT}\n")
    cv2.imwrite(str(root / "ROI.bmp"), np.full((HEIGHT, WIDTH), 255, np.uint8))
    return root


def evaluate_warnings(root: Path, capsys) -> list[str]:
    """The lines of ``motiondetect evaluate`` (CPU) on ``root`` that warn of its label values."""
    assert main(["evaluate", str(root), "--backend", "cpu", "--skip", "2", "-q"]) == 0
    return [line for line in capsys.readouterr().err.splitlines() if WARNED in line]


def test_zero_one_masks_warn_once_with_the_multiply_by_255_hint(tmp_path, capsys):
    """Before, 0/1 masks scored every frame as without motion, and every 1 as not scored, silently."""
    root = make_cdnet_folder(tmp_path / "binary01", lambda label: (label == 255).astype(np.uint8))
    ones = COUNT * 12 * 12
    (line,) = evaluate_warnings(root, capsys)
    assert line.startswith(f"motiondetect: binary01: {ones} pixels in {COUNT} of {COUNT} label images hold values")
    assert ": 1; they are not scored" in line
    assert "labels look like 0/1 masks" in line and "CDnet labels mark motion 255: multiply by 255" in line
    assert "lossy" not in line


@pytest.mark.parametrize("lossy", [jpeg_round_trip, near_values])
def test_lossy_labels_warn_once_with_the_png_hint(tmp_path, capsys, lossy):
    """Before, the values near CDnet's that a JPEG round trip leaves were not scored, silently."""
    root = make_cdnet_folder(tmp_path / "lossy", lossy)
    (line,) = evaluate_warnings(root, capsys)
    assert line.startswith("motiondetect: lossy: ") and f"of {COUNT} label images" in line
    assert "looks like lossy (JPEG) labels" in line and "use PNG" in line
    assert "0/1" not in line


@pytest.mark.parametrize(
    "labels",
    [lambda label: label, lambda label: np.where(label == 255, 255, 0).astype(np.uint8)],
    ids=["cdnet", "binary0_255"],
)
def test_cdnet_labels_and_0_255_masks_do_not_warn(tmp_path, capsys, labels):
    root = make_cdnet_folder(tmp_path / "clean", labels)
    assert evaluate_warnings(root, capsys) == []


def test_label_values_counts_and_hints():
    values = LabelValues()
    assert values.warning() is None
    values.add(np.array([[0, 50, 85], [170, 255, 255]], np.uint8))
    assert (values.images, values.odd_images, values.odd_pixels) == (1, 0, 0) and values.warning() is None
    # Class indices (0 static, 1 motion, 2 shadow, 3 unknown): not 0/1 masks, and though near 0, not lossy.
    values.add(np.array([[0, 1, 2], [2, 3, 0]], np.uint8))
    message = values.warning()
    assert (values.images, values.odd_images, values.odd_pixels) == (2, 1, 4)
    assert message is not None and message.startswith("4 pixels in 1 of 2 label images")
    assert ": 2, 1, 3; they are not scored" in message and message.endswith("convert the labels to CDnet's values")
    # Values far from every CDnet label (a grey image) are not called lossy either.
    far = LabelValues()
    far.add(np.array([[120, 121, 122, 30]], np.uint8))
    assert (far.warning() or "").endswith("convert the labels to CDnet's values")
    many = LabelValues()
    many.add(np.arange(1, 9, dtype=np.uint8).reshape(2, 4))
    assert ": 1, 2, 3, 4, 5 and 3 more;" in (many.warning() or "")


def test_evaluate_counts_the_labels_it_reads_and_not_frames_given(tmp_path):
    folder = load_folder(make_cdnet_folder(tmp_path / "clip", lambda label: (label == 255).astype(np.uint8)))
    read = evaluate(folder, [Method("nothing", lambda frame: np.zeros(frame.shape[:2], np.uint8))], skip=0)
    assert read.label_values is not None and read.label_values.odd_images == COUNT
    given = evaluate(folder, [Method("nothing", lambda frame: np.zeros(frame.shape[:2], np.uint8))], frames=list(decoded_frames(folder)))
    assert given.label_values is None  # counted where decoded (tuning scores one decoding many times)
