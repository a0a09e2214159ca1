"""benchmarks/ghost_study.py: the ghost test at other settings (every frame, a lag, a window)."""

from __future__ import annotations

from pathlib import Path

import pytest

from motiondetect import filters
from motiondetect.evaluation.tuning import score_config
from motiondetect.pipeline.config import build_filters, load_config
from motiondetect.pipeline.detector import MotionDetector
from tests.filters.test_ghosts import ghost_scene
from tests.helpers import benchmark_module, make_folder

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def study():
    return benchmark_module("ghost_study")


def test_settings_parse_and_refuse_in_one_line(study):
    assert study.Setting.parse("off") == "off" and study.Setting.parse("default") == "default"
    assert str(study.Setting.parse("1.5/3/0.5/8")) == "1.5/3/0.5/8"
    assert study.Setting.parse("1/3/0.5/0/40") == study.Setting(1.0, 3, 0.5, 0, 40)
    for bad in ("1/3", "1/3/0.5/0/40/2", "1/x/0.5/0"):
        with pytest.raises(ValueError, match=r"ratio/checks/stillness/lag\[/window\] .* got"):
            study.Setting.parse(bad)


def _motion(frames, setting, study, monkeypatch) -> list[float]:
    config = load_config(None)
    for entry in config["pipeline"]:
        if entry["filter"] == "gaussian_background":
            entry["ghost_frames"] = 0
    monkeypatch.setattr(study.GhostTestedBackground, "SETTING", setting)
    monkeypatch.setitem(filters.REGISTRY, "gaussian_background", study.GhostTestedBackground)
    detector = MotionDetector(build_filters(config), annotate=False)
    return [float((detector.process(f).mask > 0).mean()) for f in frames]


def test_the_subclass_at_the_models_values_and_window_equals_the_default(study, monkeypatch):
    frames = ghost_scene()
    default = [float((m > 0).mean()) for m in _default_masks(frames)]
    assert _motion(frames, study.Setting(1.0, 3, 0.5, 0, 100), study, monkeypatch) == default


def _default_masks(frames):
    detector = MotionDetector(build_filters(load_config(None)), annotate=False)
    return [detector.process(f).mask for f in frames]


def test_a_lag_leaves_the_ghost_flagged_until_the_decision_is_applied(study, monkeypatch):
    frames = ghost_scene()
    off = _motion(frames, None, study, monkeypatch)
    tested = _motion(frames, study.Setting(1.0, 3, 0.5, 0), study, monkeypatch)
    lagged = _motion(frames, study.Setting(1.0, 3, 0.5, 8), study, monkeypatch)
    share = 60 * 50 / (240 * 320)
    assert min(off[45:]) > 0.5 * share and max(tested[36:]) == 0.0 and max(lagged[44:]) == 0.0
    assert max(lagged[36:40]) > 0.5 * share
    assert off[:30] == tested[:30] == lagged[:30]


def test_the_study_prints_each_setting_and_the_held_out_choice(study, tmp_path, capsys):
    clips = [make_folder(tmp_path / name, count=count, first=first)[0] for name, first, count in (("one", 100, 14), ("two", 300, 16))]
    args = [*map(str, clips), "--settings", "off,default,1/3/0.5/0", "--jobs", "1", "--skip", "4"]
    assert study.main(args) == 0
    text = capsys.readouterr().out
    assert "| off | " in text and "| default | " in text and "| 1/3/0.5/0 | " in text and "leave-one-clip-out: held out" in text
    # The 'default' column is the default pipeline's pixel F, as tuning scores it in this process.
    config = load_config(None)
    for clip in clips:
        row = next(line for line in text.splitlines() if line.startswith(f"| {clip.name} | "))
        default = float(row.split("|")[3])
        assert default == pytest.approx(score_config(str(clip), config, 4, config["events"]["min_area"])["pixel_f"], abs=5e-4)
    assert study.main([*map(str, clips), "--settings", "1/3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ratio/checks/stillness/lag" in err
