"""Region of interest: polygons and mask images rasterised, files read, shapes validated."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import SHARED_SAMPLES

from motiondetect.core.errors import ConfigError
from motiondetect.pipeline.config import load_config, validate
from motiondetect.pipeline.roi import rasterize, roi_from_file

ROOT = Path(__file__).resolve().parent.parent
CDNET_ROI = SHARED_SAMPLES / "cdnet_highway" / "ROI.bmp"


def test_rectangle_polygon_fills_its_pixels_inclusive():
    mask = rasterize({"polygons": [[[10, 5], [29, 5], [29, 14], [10, 14]]]}, (40, 20))
    expected = np.zeros((20, 40), np.uint8)
    expected[5:15, 10:30] = 255  # corners are pixel centres: both edges included
    np.testing.assert_array_equal(mask, expected)
    assert mask.dtype == np.uint8 and mask.shape == (20, 40)


def test_overlapping_polygons_are_a_union():
    # One cv2.fillPoly call with both would leave the overlap out (even-odd): check it is in.
    a = [[2, 2], [10, 2], [10, 10], [2, 10]]
    b = [[5, 5], [15, 5], [15, 15], [5, 15]]
    mask = rasterize({"polygons": [a, b]}, (20, 20))
    expected = np.zeros((20, 20), np.uint8)
    expected[2:11, 2:11] = 255
    expected[5:16, 5:16] = 255
    np.testing.assert_array_equal(mask, expected)


def test_triangle_against_point_in_polygon():
    triangle = [[5, 3], [60, 10], [20, 45]]
    mask = rasterize({"polygons": [triangle]}, (64, 48))
    contour = np.array(triangle, np.float32).reshape(-1, 1, 2)
    inside = outside = 0
    for y in range(48):
        for x in range(64):
            distance = cv2.pointPolygonTest(contour, (float(x), float(y)), True)
            if distance > 1:  # clearly inside
                assert mask[y, x] == 255, (x, y)
                inside += 1
            elif distance < -1:  # clearly outside
                assert mask[y, x] == 0, (x, y)
                outside += 1
    assert inside > 500 and outside > 1000


def test_points_outside_the_frame_are_clipped():
    mask = rasterize({"polygons": [[[0, 0], [500, 0], [500, 500], [0, 500]]]}, (30, 20))
    assert mask.all()


def test_polygon_outside_the_frame_is_an_error():
    with pytest.raises(ConfigError, match="no pixel"):
        rasterize({"polygons": [[[100, 100], [120, 100], [110, 120]]]}, (30, 20))


def test_none_is_the_whole_frame():
    assert rasterize(None, (30, 20)) is None


def test_mask_image_non_zero_is_inside(tmp_path):
    image = np.zeros((20, 30), np.uint8)
    image[3:8, 4:9] = 1  # any non-zero value counts
    image[10, 20] = 200
    cv2.imwrite(str(tmp_path / "roi.png"), image)
    mask = rasterize({"mask": str(tmp_path / "roi.png")}, (30, 20))
    np.testing.assert_array_equal(mask, np.where(image > 0, 255, 0))


def test_colour_mask_image_is_read_as_grey(tmp_path):
    image = np.zeros((20, 30, 3), np.uint8)
    image[5:10, 5:10, 2] = 255  # red square
    cv2.imwrite(str(tmp_path / "roi.png"), image)
    assert np.count_nonzero(rasterize({"mask": str(tmp_path / "roi.png")}, (30, 20))) == 25


@pytest.mark.skipif(not CDNET_ROI.is_file(), reason="shared CDnet samples not present")
def test_cdnet_roi_bitmap_is_the_whole_frame():
    assert rasterize({"mask": str(CDNET_ROI)}, (320, 240)).all()


def test_mask_image_errors(tmp_path):
    cv2.imwrite(str(tmp_path / "small.png"), np.full((10, 10), 255, np.uint8))
    with pytest.raises(ConfigError, match="10x10, the frames are 30x20"):
        rasterize({"mask": str(tmp_path / "small.png")}, (30, 20))
    with pytest.raises(ConfigError, match="cannot read"):
        rasterize({"mask": str(tmp_path / "missing.png")}, (30, 20))
    cv2.imwrite(str(tmp_path / "empty.png"), np.zeros((20, 30), np.uint8))
    with pytest.raises(ConfigError, match="no pixel"):
        rasterize({"mask": str(tmp_path / "empty.png")}, (30, 20))


# -- --roi FILE ----------------------------------------------------------------------------


def test_roi_file_yaml_mapping_bare_list_and_image(tmp_path):
    (tmp_path / "a.yaml").write_text("polygons:\n  - [[0, 0], [5, 0], [5, 5]]\n")
    assert roi_from_file(tmp_path / "a.yaml") == {"polygons": [[[0, 0], [5, 0], [5, 5]]]}
    (tmp_path / "b.yml").write_text("- [[0, 0], [5, 0], [5, 5]]\n- [[1, 1], [2, 1], [2, 2]]\n")
    assert len(roi_from_file(tmp_path / "b.yml")["polygons"]) == 2
    assert roi_from_file(tmp_path / "m.png") == {"mask": str(tmp_path / "m.png")}
    (tmp_path / "c.yaml").write_text("mask: m.bmp\n")
    assert roi_from_file(tmp_path / "c.yaml") == {"mask": str(tmp_path / "m.bmp")}  # relative to the YAML


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("polygons:\n  - [[0, 0], [5, 0]]\n", "at least 3"),
        ("polygons:\n  - [[0, 0], [5, 0, 1], [5, 5]]\n", "a point [x, y]"),
        ("polygons:\n  - [[0, 0], [5, -2], [5, 5]]\n", "out of range"),
        ("polygons:\n  - [[0, 0], [5.5, 2], [5, 5]]\n", "expected integer"),
        ("polygons: []\n", "polygons"),
        ("shapes: 3\n", "unknown key 'shapes'"),
        ("", "empty"),
        ("polygons: [\n", "YAML"),
    ],
)
def test_roi_file_errors(tmp_path, text, fragment):
    (tmp_path / "r.yaml").write_text(text)
    with pytest.raises(ConfigError) as info:
        roi_from_file(tmp_path / "r.yaml")
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_roi_file_missing(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        roi_from_file(tmp_path / "nope.yaml")


# -- in the config -------------------------------------------------------------------------


def test_config_roi_shapes_validated():
    assert validate({"roi": {"polygons": [[[0, 0], [5, 0], [5, 5]]]}}) == []
    assert validate({"roi": None}) == []
    (problem,) = validate({"roi": {"polygons": [[[0, 0], [5, 0]]]}})
    assert problem.startswith("roi.polygons[0]:") and "at least 3" in problem
    (problem,) = validate({"roi": {"polygons": [[[0, 0], [5, 0], [5, 5]]], "mask": "m.png"}})
    assert problem.startswith("roi:") and "one of the two" in problem
    assert validate({"roi": {}})[0].startswith("roi:")


def test_config_roi_mask_is_relative_to_the_config_file(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.yaml").write_text("roi:\n  mask: masks/roi.png\n")
    config = load_config(tmp_path / "sub" / "c.yaml")
    assert Path(config["roi"]["mask"]) == tmp_path / "sub" / "masks" / "roi.png"
