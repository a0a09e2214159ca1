"""benchmarks/miss_bands.py: CDnet pixel counts by band of rows, and the labels' occupancy."""

from __future__ import annotations

import numpy as np
import pytest

from motiondetect.evaluation import scoring
from motiondetect.pipeline.config import build_filters, default_config
from motiondetect.pipeline.detector import MotionDetector
from tests.helpers import benchmark_module, make_folder

SKIP = 2


@pytest.fixture(scope="module")
def bands():
    return benchmark_module("miss_bands")


def test_band_limits_split_from_the_top_and_the_bottom(bands):
    assert bands.band_limits(36, [5, 10, -10]) == [(0, 5), (5, 10), (10, 26), (26, 36)]
    assert bands.band_limits(36, [10, 10]) == [(0, 10), (10, 36)]  # a repeated edge is one cut
    assert bands.band_limits(36, []) == [(0, 36)]
    for bad in (0, 36, -36):
        with pytest.raises(ValueError, match=r"outside a frame of 36 rows \(expected 1..35"):
            bands.band_limits(36, [bad])


def test_row_counts_sum_to_the_scorers_counts_and_follow_the_labels(bands, tmp_path):
    path, _, labels = make_folder(tmp_path / "clip", count=12)
    folder = scoring.load_folder(path)

    def detector():
        return scoring.detector_method(MotionDetector(build_filters(default_config()), annotate=False))

    (counts,) = bands.count_rows(folder, [detector()], SKIP)
    ((_, scorer),) = scoring.evaluate(folder, [detector()], skip=SKIP).scores
    assert counts.scored == 12 - SKIP
    assert (counts.hit.sum(), counts.missed.sum(), counts.false.sum()) == (scorer.pixel.tp, scorer.pixel.fn, scorer.pixel.fp)
    assert scorer.pixel.tp > 0  # the square is found, so the rows are not all zero
    # The labels, counted here on their own: 255 on rows 10..21 of the frames after the skip.
    labelled = sum((label == 255).astype(np.int64) for label in labels[SKIP:])
    assert np.array_equal(counts.labelled, labelled)
    assert np.array_equal(counts.positives, labelled.sum(axis=1))
    assert not counts.positives[:10].any() and not counts.positives[22:].any()


def test_band_rows_give_each_bands_share(bands):
    counts = bands.RowCounts(None, 0.001)
    counts.add(np.array([[255, 0], [0, 0], [255, 255], [0, 0]], np.uint8), np.array([[255, 255], [0, 0], [255, 0], [170, 170]], np.uint8))
    rows = bands.band_rows(counts, [(0, 2), (2, 4)])
    # rows 0-1: 2 labelled, 1 hit, 1 missed, no false; rows 2-3: 1 labelled and hit, 1 false
    assert rows[0] == ["0-1", "2", "1", "1", "0", "0.500", "100.0", "0.0", "0.50/1.00"]
    assert rows[1] == ["2-3", "1", "1", "0", "1", "1.000", "0.0", "100.0", "0.25/1.00"]


def test_main_prints_a_table_and_refuses_an_unknown_anchor_in_one_line(bands, tmp_path, capsys):
    path, _, _ = make_folder(tmp_path / "clip", count=12)
    assert bands.main([str(path), "--skip", str(SKIP), "--edges", "10,22"]) == 0
    out = capsys.readouterr().out
    assert "clip: motiondetect, 10 frames scored" in out and "| 0-9 |" in out and "| 22-35 |" in out
    assert bands.main([str(path), "--anchors", "no such anchor"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("miss_bands.py: --anchors: 'no such anchor' not installed here; expected one of") and "\n" not in err
    with pytest.raises(SystemExit) as exit_info:
        bands.main([str(path), "--edges", "5,x"])
    assert exit_info.value.code == 2
