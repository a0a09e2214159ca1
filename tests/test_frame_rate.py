"""The background model's per-frame values at the source's frame rate (``tuned_fps``)."""

from __future__ import annotations

import argparse
import json
import logging
import math

import cv2
import numpy as np
import pytest
import yaml
from helpers import run_cli as run_main
from helpers import square_frames

import motiondetect.apps.evaluate as evaluate_module
from motiondetect.filters import GaussianBackground
from motiondetect.outputs.writer import VideoWriter
from motiondetect.pipeline.config import build_filters, default_config, validate
from motiondetect.pipeline.frame_rate import (
    at_frame_rate,
    for_source,
    fps_arg,
    frames_per_frame,
    rescaled_count,
    rescaled_period,
    rescaled_rate,
    rescaled_step,
)
from motiondetect.scaleout.chunks import warmup_frames


def model(config: dict) -> dict:
    """The gaussian_background entry of a config's pipeline."""
    (entry,) = [e for e in config["pipeline"] if e["filter"] == "gaussian_background"]
    return entry


@pytest.mark.parametrize("fps", [25.0, 25.5, 29.97, 30.0])
def test_inside_the_tuned_range_nothing_changes(fps):
    config = default_config()
    rescaled, k = at_frame_rate(config, fps)
    assert k == 1.0 and rescaled is config  # the same object: GPU and CPU keep their bits


def test_null_range_keeps_per_frame_values_at_any_rate():
    config = {**default_config(), "tuned_fps": None}
    assert at_frame_rate(config, 5.0) == (config, 1.0)


@pytest.mark.parametrize("fps, k", [(12.5, 2.0), (5.0, 5.0), (60.0, 0.5), (120.0, 0.25), (27.0, 1.0)])
def test_frames_per_frame_is_the_nearer_end_over_the_rate(fps, k):
    assert frames_per_frame(fps, (25.0, 30.0)) == pytest.approx(k)


@pytest.mark.parametrize("fps", [0.0, -1.0, math.nan, math.inf])
def test_frame_rate_must_be_positive(fps):
    with pytest.raises(ValueError, match="positive number of frames/s"):
        frames_per_frame(fps, (25.0, 30.0))


def test_half_rate_values_by_hand():
    """At 12.5 frames/s one frame stands for two at 25: the rates are what two frames learn and
    the counts half, rounded half up (7 -> 3.5 -> 4)."""
    rescaled, k = at_frame_rate(default_config(), 12.5)
    entry = model(rescaled)
    assert k == 2.0
    assert entry["alpha"] == pytest.approx(0.0199)  # 1 - 0.99^2
    assert entry["alpha_foreground"] == pytest.approx(0.003996)  # 1 - 0.998^2
    assert entry["variance_alpha"] == pytest.approx(0.0784)  # 1 - 0.96^2
    assert entry["variance_alpha_foreground"] == pytest.approx(0.00499375)  # 1 - 0.9975^2
    assert (entry["still_frames"], entry["warmup"], entry["bootstrap"]) == (4, 25, 12)
    # Everything else as it was: thresholds, floors, the other filters.
    untouched = {
        k: v for k, v in model(default_config()).items() if k not in GaussianBackground.LEARNING_RATES + GaussianBackground.FRAME_COUNTS
    }
    assert {k: entry[k] for k in untouched} == untouched
    assert [e for e in rescaled["pipeline"] if e["filter"] != "gaussian_background"] == [
        e for e in default_config()["pipeline"] if e["filter"] != "gaussian_background"
    ]


def test_double_rate_values_by_hand():
    entry = model(at_frame_rate(default_config(), 60.0)[0])
    assert entry["alpha"] == pytest.approx(1 - 0.99**0.5)
    assert (entry["still_frames"], entry["warmup"], entry["bootstrap"]) == (14, 100, 48)


def test_a_rescaled_rate_learns_in_one_frame_what_the_old_one_learns_in_k():
    """An exponential average stepped toward a constant: k steps at ``rate`` land where one step
    at the rescaled rate does (whole k), and the fraction learnt per second is the same at any k."""
    for rate in (0.01, 0.002, 0.3):
        for steps in (2, 3, 5):
            mean = 0.0
            for _ in range(steps):
                mean += rate * (1.0 - mean)
            assert rescaled_rate(rate, steps) == pytest.approx(mean)
    assert rescaled_rate(0.0, 4.0) == 0.0 and rescaled_rate(1.0, 0.5) == 1.0


def test_counts_keep_off_at_zero_and_stay_in_range():
    assert rescaled_count(0, 25.0, 100000) == 0  # a feature turned off stays off
    assert rescaled_count(7, 25.0, 100000) == 2  # at 1 frame/s: a run of two frames, not one
    assert rescaled_count(7, 5.0, 100000) == 2 and rescaled_count(7, 3.0, 100000) == 2  # 1.4, 2.33
    assert rescaled_count(1, 25.0, 100000) == 1  # a count the user set to 1 is not raised
    assert rescaled_count(24, 0.03, 255) == 255  # at 1000 frames/s: the parameter's maximum
    entry = model(at_frame_rate(default_config(), 1000.0)[0])
    assert entry["bootstrap"] == 255 and validate(at_frame_rate(default_config(), 1000.0)[0]) == []
    assert validate(at_frame_rate(default_config(), 0.5)[0]) == []
    slow = model(at_frame_rate(default_config(), 1.0)[0])
    assert (slow["still_frames"], slow["warmup"], slow["bootstrap"]) == (2, 2, 2)


def test_the_input_config_is_not_changed():
    config = default_config()
    at_frame_rate(config, 10.0)
    assert config == default_config()


def test_running_average_alpha_is_a_rate_too():
    config = {**default_config(), "pipeline": [{"filter": "gray"}, {"filter": "running_average"}, {"filter": "threshold"}]}
    (_, entry, threshold) = at_frame_rate(config, 5.0)[0]["pipeline"]
    assert entry["alpha"] == pytest.approx(1 - 0.99**5) and threshold == {"filter": "threshold"}


def subsense_config(**params) -> dict:
    return {**default_config(), "pipeline": [{"filter": "gray"}, {"filter": "subsense", **params}, {"filter": "median"}]}


def test_subsense_half_rate_values_by_hand():
    """A sample model's time constants by their kind: update periods halve (an update a second
    as often as before), the D_min window halves as a count, and the steps added each frame
    double; the thresholds and shares stay."""
    rescaled, k = at_frame_rate(subsense_config(), 12.5)
    (_, entry, median) = rescaled["pipeline"]
    assert k == 2.0
    assert (entry["t_lower"], entry["t_upper"], entry["dmin_frames"]) == (1.0, 128.0, 50)
    assert entry["blink_decay"] == pytest.approx(0.2) and entry["threshold_step"] == pytest.approx(0.02)
    assert {k: v for k, v in entry.items() if k not in ("t_lower", "t_upper", "dmin_frames", "blink_decay", "threshold_step")} == {
        "filter": "subsense"
    }
    assert median == {"filter": "median"}
    fast = at_frame_rate(subsense_config(t_lower=4.0), 60.0)[0]["pipeline"][1]
    assert (fast["t_lower"], fast["t_upper"], fast["dmin_frames"]) == (8.0, 512.0, 200)
    assert fast["blink_decay"] == pytest.approx(0.05)


def test_periods_and_steps_stay_in_their_parameters_ranges():
    assert rescaled_period(2.0, 5.0, 1.0, 4096.0) == 1.0  # at most one update a frame
    assert rescaled_period(256.0, 0.01, 1.0, 4096.0) == 4096.0
    assert rescaled_step(0.1, 5.0, 0.0, 16.0) == pytest.approx(0.5) and rescaled_step(0.5, 1000.0, 0.0, 1.0) == 1.0
    for fps in (0.5, 1.0, 5.0, 60.0, 1000.0):
        assert validate(at_frame_rate(subsense_config(), fps)[0]) == []


def test_subsense_rescaled_steps_keep_the_blink_count_per_second():
    """v(x) falls by blink_decay on each frame without a blink: over the same second of a still
    scene it falls as far at 12.5 frames/s, rescaled, as at 25 (the CPU reference's state; the
    Q16 roundings of 0.1 and 0.2 differ by one unit a frame)."""
    from motiondetect.filters.subsense import Q16, V_INIT, Subsense

    frames = [np.full((8, 8), 100, np.uint8)] * 25
    ends = []
    for fps, step in ((25.0, 1), (12.5, 2)):
        (_, entry, _) = at_frame_rate(subsense_config(), fps)[0]["pipeline"]
        model = Subsense(**{k: v for k, v in entry.items() if k != "filter"})
        for i in range(step, len(frames), step):
            model.reference(frames[i], frames[i - step])
        ends.append(int(model.model["v"][0, 0]))
    assert ends[0] == V_INIT - 24 * 6554  # 10 - 24 x 0.1 = 7.6, in Q16
    assert abs(ends[1] - ends[0]) <= 12 and ends[1] != V_INIT - 12 * 6554  # rescaled, not per frame
    assert ends[0] / Q16 == pytest.approx(7.6, abs=1e-3)


def test_chunk_warm_up_follows_the_rescaled_rates():
    """A chunk's warm-up is the slowest time constant: at half the rate it is half the frames,
    the same seconds."""
    at_25 = warmup_frames(build_filters(default_config()))
    at_12 = warmup_frames(build_filters(at_frame_rate(default_config(), 12.5)[0]))
    assert (at_25, at_12) == (500, 251)  # ceil(1 / 0.002), ceil(1 / 0.003996)


def test_for_source_counts_the_frame_skip_and_gives_notice(caplog):
    config = default_config()
    config["scan"]["frame_skip"] = 1  # 25 frames/s, one in two processed: the model sees 12.5
    with caplog.at_level(logging.INFO, logger="motiondetect"):
        rescaled = for_source(config, 25.0)
    assert model(rescaled)["still_frames"] == 4
    (record,) = [r for r in caplog.records if "tuned_fps" in r.getMessage()]
    assert "notice: the model sees 12.5 frames/s" in record.getMessage() and "still_frames 4" in record.getMessage()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="motiondetect"):
        assert for_source(default_config(), 30.0) == default_config()
        for_source(config, 25.0, notice=False)
    assert not caplog.records


@pytest.mark.parametrize(
    "value, problem",
    [
        ([30, 25], "tuned_fps: expected [low, high] frames/s with low <= high, got [30, 25]"),
        ([0, 25], "tuned_fps[0]"),
        ([25], "tuned_fps: [25] is too short"),
        ("25", "tuned_fps: expected array or null"),
    ],
)
def test_tuned_fps_is_validated(value, problem):
    problems = validate({"tuned_fps": value})
    assert len(problems) == 1 and problems[0].startswith(problem)


def test_tuned_fps_null_and_a_single_rate_are_valid():
    assert validate({"tuned_fps": None}) == [] and validate({"tuned_fps": [25, 25]}) == []


@pytest.mark.parametrize("text", ["0", "-5", "nan", "inf", "fast"])
def test_fps_arg_refuses_what_is_no_frame_rate(text):
    with pytest.raises(argparse.ArgumentTypeError, match="positive number of frames per second"):
        fps_arg(text)


def _sequence(folder, frames=6):
    folder.mkdir(parents=True)
    for i in range(frames):
        image = np.full((48, 64, 3), 90, np.uint8)
        cv2.rectangle(image, (4 + 6 * i, 10), (14 + 6 * i, 20), (230, 230, 230), -1)
        cv2.imwrite(str(folder / f"f{i:03d}.png"), image)
    return folder


def test_the_command_rescales_a_slow_source_with_a_notice(tmp_path, monkeypatch, capsys, restored_logging):
    sequence = _sequence(tmp_path / "seq")
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "--fps", "5", "--no-video")
    assert rc == 0
    notices = [line for line in err.splitlines() if "tuned_fps" in line]
    assert len(notices) == 1 and "notice: the model sees 5 frames/s" in notices[0] and "bootstrap 5" in notices[0]
    report = json.loads((tmp_path / "seq_motion.json").read_text(encoding="utf-8"))
    assert report["config"]["tuned_fps"] == [25, 30] and model(report["config"])["still_frames"] == 7  # the user's config
    rescaled = report["rescaled"]  # what the model ran with: k = 5, still_frames 7 / 5 -> at least 2
    assert (rescaled["gaussian_background.still_frames"], rescaled["gaussian_background.bootstrap"]) == (2, 5)
    assert rescaled["gaussian_background.alpha"] == pytest.approx(1 - 0.99**5)
    (tmp_path / "per_frame.yaml").write_text(yaml.safe_dump({"tuned_fps": None}))
    per_frame = ("-c", tmp_path / "per_frame.yaml", "--overwrite")
    rc, _, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "--fps", "5", "--no-video", *per_frame)
    assert rc == 0 and "tuned_fps" not in err
    assert json.loads((tmp_path / "seq_motion.json").read_text(encoding="utf-8"))["rescaled"] is None


def test_a_chunked_scan_reports_the_sequential_runs_rescaled_values(tmp_path, monkeypatch, capsys, restored_logging):
    """A 10 frames/s file on a local Dask cluster: the report says what the model ran with, as
    the sequential run's does (the workers and the planner build the model at the file's rate)."""
    pytest.importorskip("distributed")
    path = tmp_path / "slow.mp4"
    with VideoWriter(path, 10, (64, 48)) as writer:
        for frame in square_frames(count=40):
            writer.write(frame)
    reports = []
    for name, extra in (("sequential", []), ("chunked", ["--jobs", "2", "--chunk", "1"])):
        (tmp_path / name).mkdir()
        rc, _, err = run_main(monkeypatch, capsys, tmp_path / name, path, "--backend", "cpu", "--no-video", *extra)
        assert rc == 0, err
        assert (" in 1 chunk," in err) == (name == "chunked"), err  # the chunked run's own report
        reports.append(json.loads((tmp_path / name / "slow_motion.json").read_text(encoding="utf-8")))
    assert reports[0]["rescaled"] == reports[1]["rescaled"]
    assert reports[0]["rescaled"]["gaussian_background.still_frames"] == 7  # H.264: still_frames_inter 17 / 2.5 = 6.8


def test_evaluate_fps_rescales_its_detectors(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "clip"
    _sequence(folder / "input")
    (folder / "groundtruth").mkdir()
    for i, path in enumerate(sorted((folder / "input").iterdir())):
        path.rename(folder / "input" / f"in{i:06d}.png")
        cv2.imwrite(str(folder / "groundtruth" / f"gt{i:06d}.png"), np.zeros((48, 64), np.uint8))
    seen = []
    real = evaluate_module.build_filters
    monkeypatch.setattr(evaluate_module, "build_filters", lambda config: seen.append(model(config)) or real(config))
    assert evaluate_module.main([str(folder), "--backend", "cpu", "--skip", "0", "-q", "--fps", "12.5"]) == 0
    assert evaluate_module.main([str(folder), "--backend", "cpu", "--skip", "0", "-q"]) == 0
    assert [(e["still_frames"], e["bootstrap"]) for e in seen] == [(4, 12), (7, 24)]
    assert "motiondetect (cpu)" in capsys.readouterr().out


def test_an_entry_value_is_the_entrys_or_the_parameters_default():
    entry = {"filter": "gaussian_background", "alpha": 0.05}
    assert GaussianBackground.entry_value(entry, "alpha") == 0.05
    assert GaussianBackground.entry_value(entry, "still_frames") == GaussianBackground.param("still_frames").default == 7
    with pytest.raises(KeyError, match="no parameter 'nonesuch'"):
        GaussianBackground.param("nonesuch")
