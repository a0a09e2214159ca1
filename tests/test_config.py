"""Config: defaults, YAML loading, validation messages with key paths, overrides."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from motiondetect.core.errors import ConfigError
from motiondetect.filters import (
    REGISTRY,
    Closing,
    Difference,
    Dilation,
    Downscale,
    Erosion,
    GaussianBackground,
    Gray,
    Median,
    RedBlend,
    Register,
    Threshold,
    Upscale,
)
from motiondetect.pipeline.config import build_filters, default_config, load_config, merge, validate, with_overrides

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_YAML = ROOT / "configs" / "default.yaml"
SEED_YAML = ROOT / "configs" / "seed.yaml"

BASE = [{"filter": "gray"}, {"filter": "difference"}, {"filter": "threshold"}]


def write(tmp_path: Path, text: str, name="config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def problems_of(tmp_path, text) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    err = info.value
    assert err.problems, "a ConfigError must list its problems"
    assert "\n" not in str(err), "the message is printed as one line"
    for problem in err.problems:
        assert problem in str(err)
    return err.problems


# -- defaults -----------------------------------------------------------------------------


def test_default_config_contents():
    # The pipeline chosen by measurement on the CDnet clips (README, "Detection quality").
    cfg = default_config()
    assert cfg["backend"] == "auto" and cfg["decoder"] == "auto" and cfg["preset"] == "veryfast"
    assert cfg["pipeline"] == [
        {"filter": "gray"},
        {"filter": "downscale", "height": 240},
        {"filter": "register", "max_shift": 32, "peak_ratio": 3.0, "min_peak": 0.08, "far_ratio": 2.0, "taper": 0.25},
        {
            "filter": "gaussian_background",
            "sigmas": 2.0,
            "min_sigma": 6.0,
            "shadow_floor": 0.08,
            "relative_floor": 0.08,
            "chroma_min_sigma": 8.0,
            "shadow_chroma": 2.0,
            "shadow_ratio": 0.4,
            "grow_sigmas": 1.2,
            "alpha": 0.01,
            "alpha_foreground": 0.002,
            "variance_alpha": 0.04,
            "variance_alpha_foreground": 0.0025,
            "still_frames": 7,
            "still_frames_inter": 17,
            "still_tolerance": 0,
            "quiet_tolerance": 0,
            "variance_min_change": 9,
            "lightswitch": 0.7,
            "exposure": 1.25,
            "light_field": 0.0,
            "warmup": 50,
            "bootstrap": 24,
            "ghost_frames": 100,
            "recent_gate": 15,
        },
        {"filter": "median", "kernel_size": 9},
        {"filter": "erosion", "kernel_size": 3, "iterations": 1},
        {"filter": "dilation", "kernel_size": 7, "iterations": 1},
        {"filter": "closing", "kernel_size": 9},
        {"filter": "upscale"},
        {"filter": "red_blend", "alpha": 0.5},
    ]
    assert cfg["events"] == {
        "min_area": 0.001,
        "min_pixels": None,
        "min_event_length": 0.1,
        "merge_gap": 2.0,
        "time_before": 1.5,
        "time_after": 2.0,
        "max_area": 1.0,
    }
    assert cfg["scan"] == {"downscale": 1, "frame_skip": 0, "batch": 0, "chunk": 60.0}
    assert cfg["overlays"] == {"blend": True, "boxes": False, "timecode": False, "fraction": False, "box_min_area": 0.0005}
    assert cfg["roi"] is None
    assert validate(cfg) == []


def test_seed_preset_is_the_case_study_pipeline():
    cfg = load_config(SEED_YAML)
    assert cfg["pipeline"] == [
        {"filter": "gray"},
        {"filter": "difference"},
        {"filter": "threshold", "threshold": 25},
        {"filter": "erosion", "kernel_size": 3, "iterations": 1},
        {"filter": "red_blend", "alpha": 0.5},
    ]
    assert cfg["events"] == {
        "min_area": 0.001,
        "min_pixels": None,
        "min_event_length": 0.1,
        "merge_gap": 2.0,
        "time_before": 1.5,
        "time_after": 2.0,
        "max_area": 1.0,
    }
    assert cfg["scan"] == {"downscale": 1, "frame_skip": 0, "batch": 0, "chunk": 60.0}
    assert cfg["overlays"] == {"blend": True, "boxes": False, "timecode": False, "fraction": False, "box_min_area": 0.0005}
    assert cfg["roi"] is None
    assert validate(cfg) == []


def test_default_config_is_a_fresh_copy():
    cfg = default_config()
    cfg["pipeline"][3]["sigmas"] = 9.0
    assert default_config()["pipeline"][3]["sigmas"] == 2.0


def test_default_yaml_matches_builtin_defaults():
    if not DEFAULT_YAML.is_file():
        pytest.skip(f"{DEFAULT_YAML} not written yet")
    raw = yaml.safe_load(DEFAULT_YAML.read_text(encoding="utf-8"))
    assert raw == default_config()  # every key spelled out, no reliance on the merge
    assert load_config(DEFAULT_YAML) == default_config()


def test_none_and_empty_file_give_defaults(tmp_path):
    assert load_config(None) == default_config()
    assert load_config(write(tmp_path, "")) == default_config()
    assert load_config(write(tmp_path, "# only a comment\n", "c.yaml")) == default_config()


def test_partial_file_merges_over_defaults(tmp_path):
    cfg = load_config(write(tmp_path, "events:\n  min_area: 0.25\nbackend: cpu\n"))
    assert cfg["events"]["min_area"] == 0.25
    assert cfg["backend"] == "cpu"
    assert cfg["pipeline"] == default_config()["pipeline"]


def test_pipeline_replaced_whole(tmp_path):
    text = "pipeline:\n  - filter: gray\n  - filter: difference\n  - filter: threshold\n    threshold: 40\n"
    cfg = load_config(write(tmp_path, text))
    assert cfg["pipeline"] == [{"filter": "gray"}, {"filter": "difference"}, {"filter": "threshold", "threshold": 40}]
    filters = build_filters(cfg)
    assert [type(f) for f in filters] == [Gray, Difference, Threshold]
    assert filters[2].params == {"threshold": 40}


def test_build_filters_from_defaults():
    filters = build_filters(default_config())
    assert [type(f) for f in filters] == [
        Gray,
        Downscale,
        Register,
        GaussianBackground,
        Median,
        Erosion,
        Dilation,
        Closing,
        Upscale,
        RedBlend,
    ]
    assert filters[5].params == {"kernel_size": 3, "iterations": 1}
    assert filters[6].params == {"kernel_size": 7, "iterations": 1}
    assert filters[7].params == {"kernel_size": 9}
    assert filters[9].params == {"alpha": 0.5}


def test_merge_does_not_modify_its_inputs():
    base = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    override = {"a": {"b": 2}, "e": [3]}
    base0, override0 = copy.deepcopy(base), copy.deepcopy(override)
    assert merge(base, override) == {"a": {"b": 2, "c": [1, 2]}, "d": 1, "e": [3]}
    assert base == base0 and override == override0


# -- error messages name the key path ------------------------------------------------------


def test_unknown_filter_name(tmp_path):
    problems = problems_of(tmp_path, "pipeline:\n  - filter: gray\n  - filter: sharpen\n")
    assert len(problems) == 1
    assert problems[0].startswith("pipeline[1].filter:")
    assert "'sharpen'" in problems[0]
    for name in REGISTRY:  # the allowed names come from the registry
        assert name in problems[0]


def test_unknown_key_in_filter_entry(tmp_path):
    problems = problems_of(tmp_path, "pipeline:\n  - filter: gray\n  - filter: difference\n  - filter: threshold\n    treshold: 30\n")
    assert len(problems) == 1
    assert problems[0].startswith("pipeline[2]")
    assert "treshold" in problems[0]
    assert "threshold" in problems[0].replace("treshold", "")  # the allowed key is named


def test_unknown_top_level_key(tmp_path):
    problems = problems_of(tmp_path, "backend: cpu\nthreshold: 30\n")
    assert len(problems) == 1
    assert problems[0].startswith("config:")
    assert "'threshold'" in problems[0]
    for allowed in ("backend", "pipeline", "events"):
        assert allowed in problems[0]


def test_unknown_event_setting(tmp_path):
    problems = problems_of(tmp_path, "events:\n  min_frames: 5\n")
    assert problems[0].startswith("events:") and "min_frames" in problems[0] and "min_area" in problems[0]


def test_unknown_key_messages_say_unknown_key(tmp_path):
    problems = problems_of(tmp_path, "backend: cpu\nthreshold: 30\n")
    assert "unknown key" in problems[0]
    problems = problems_of(tmp_path, "pipeline:\n  - filter: gray\n    alpha: 1\n  - filter: difference\n  - filter: threshold\n")
    assert problems[0].startswith("pipeline[0]") and "unknown key 'alpha'" in problems[0]


def test_wrong_type_string_for_threshold(tmp_path):
    problems = problems_of(tmp_path, "pipeline:\n  - filter: gray\n  - filter: difference\n  - filter: threshold\n    threshold: '25'\n")
    assert problems == ["pipeline[2].threshold: expected integer, got str '25'"]


@pytest.mark.parametrize(
    "entry, key",
    [
        ("  - filter: threshold\n    threshold: true\n", "pipeline[2].threshold"),
        ("  - filter: threshold\n  - filter: erosion\n    iterations: yes\n", "pipeline[3].iterations"),
        ("  - filter: threshold\n  - filter: erosion\n    kernel_size: true\n", "pipeline[3].kernel_size"),
        ("  - filter: threshold\n  - filter: red_blend\n    alpha: false\n", "pipeline[3].alpha"),
    ],
)
def test_bool_is_not_a_number(tmp_path, entry, key):
    problems = problems_of(tmp_path, "pipeline:\n  - filter: gray\n  - filter: difference\n" + entry)
    assert len(problems) == 1 and problems[0].startswith(key + ":")
    assert "True" in problems[0] or "False" in problems[0]


def test_float_threshold_refused(tmp_path):
    problems = problems_of(tmp_path, "pipeline:\n  - filter: gray\n  - filter: difference\n  - filter: threshold\n    threshold: 25.5\n")
    assert problems[0].startswith("pipeline[2].threshold:") and "25.5" in problems[0]


@pytest.mark.parametrize(
    "text, key, value",
    [
        (
            "pipeline:\n  - filter: gray\n  - filter: difference\n  - filter: threshold\n    threshold: 300\n",
            "pipeline[2].threshold",
            "300",
        ),
        ("pipeline:\n  - filter: gray\n  - filter: difference\n  - filter: threshold\n    threshold: -1\n", "pipeline[2].threshold", "-1"),
        (
            "pipeline:\n  - filter: gray\n  - filter: difference\n  - filter: threshold\n  - filter: red_blend\n    alpha: 1.5\n",
            "pipeline[3].alpha",
            "1.5",
        ),
        (
            "pipeline:\n  - filter: gray\n  - filter: difference\n  - filter: threshold\n  - filter: erosion\n    kernel_size: 4\n",
            "pipeline[3].kernel_size",
            "4",
        ),
        (
            "pipeline:\n  - filter: gray\n  - filter: difference\n  - filter: threshold\n  - filter: erosion\n    kernel_size: 33\n",
            "pipeline[3].kernel_size",
            "33",
        ),
        (
            "pipeline:\n  - filter: gray\n  - filter: difference\n  - filter: threshold\n  - filter: erosion\n    iterations: 0\n",
            "pipeline[3].iterations",
            "0",
        ),
        ("events:\n  min_area: -0.5\n", "events.min_area", "-0.5"),
        ("events:\n  min_area: 2\n", "events.min_area", "2"),
        ("backend: gpu\n", "backend", "'gpu'"),
    ],
)
def test_out_of_range(tmp_path, text, key, value):
    problems = problems_of(tmp_path, text)
    assert len(problems) == 1
    assert problems[0].startswith(key + ":")
    assert value in problems[0]


@pytest.mark.parametrize(
    "text, key",
    [
        ("events:\n  time_before: .nan\n", "events.time_before"),
        ("events:\n  min_area: .nan\n", "events.min_area"),
        ("overlays:\n  box_min_area: .NaN\n", "overlays.box_min_area"),
        ("tuned_fps: [25, .inf]\n", "tuned_fps[1]"),
        (
            "pipeline:\n  - filter: gray\n  - filter: difference\n  - filter: threshold\n  - filter: red_blend\n    alpha: .nan\n",
            "pipeline[3].alpha",
        ),
    ],
)
def test_not_a_number_is_refused(tmp_path, text, key):
    """YAML reads .nan and .inf, and JSON Schema's minimum and maximum let NaN through (every
    comparison with it is false): before, `time_before: .nan` ended in a traceback and
    `min_area: .nan` ran, found nothing and wrote NaN into the JSON report."""
    problems = problems_of(tmp_path, text)
    assert f"{key}: expected a finite number" in problems[0]


def test_not_a_number_on_the_command_line_is_one_line(monkeypatch, capsys, tmp_path):
    from helpers import one_line_error, run_cli

    for flag in ("--time-before", "--min-area", "--merge-gap", "--max-area"):
        code, _, err = run_cli(monkeypatch, capsys, tmp_path, "clip.mp4", flag, "nan")
        assert code == 2
        expected = f"motiondetect: error: argument {flag}: expected a finite number, got nan (see motiondetect --help)"
        assert one_line_error(err) == expected  # one line: argparse's usage block is not printed


def test_out_of_range_names_the_allowed_range(tmp_path):
    problems = problems_of(tmp_path, "pipeline:\n  - filter: gray\n  - filter: difference\n  - filter: threshold\n    threshold: 300\n")
    assert "0..255" in problems[0]


def test_even_kernel_size_lists_odd_choices(tmp_path):
    problems = problems_of(
        tmp_path, "pipeline:\n  - filter: gray\n  - filter: difference\n  - filter: threshold\n  - filter: erosion\n    kernel_size: 4\n"
    )
    assert "3, 5" in problems[0] and "31" in problems[0]


@pytest.mark.parametrize("text, got", [("- gray\n- difference\n", "list"), ("42\n", "int"), ("just a string\n", "str")])
def test_config_must_be_a_mapping(tmp_path, text, got):
    problems = problems_of(tmp_path, text)
    assert problems == [f"config: expected a mapping of settings, got {got}"]


def test_malformed_yaml_names_the_line(tmp_path):
    path = write(tmp_path, "backend: cpu\npipeline:\n  - filter: gray\n   bad: [\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    (problem,) = info.value.problems
    assert "not valid YAML" in problem
    assert "line 4" in problem
    assert str(path) in problem


@pytest.mark.parametrize("tag", ["!!python/object/apply:os.mkdir", "!!python/object/new:os.mkdir"])
def test_python_tags_refused_and_not_constructed(tmp_path, tag):
    target = tmp_path / "constructed"
    path = write(tmp_path, f"backend: {tag} [{str(target)!r}]\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "python/object" in str(info.value)
    assert not target.exists(), "the YAML tag was executed"


def test_python_object_tag_refused(tmp_path):
    with pytest.raises(ConfigError, match="python/object"):
        load_config(write(tmp_path, "events: !!python/object:collections.OrderedDict {}\n"))


def test_unreadable_config(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path)  # a folder


def test_several_problems_reported_at_once(tmp_path):
    text = (
        "backend: gpu\n"
        "colour: red\n"
        "pipeline:\n"
        "  - filter: gray\n"
        "  - filter: difference\n"
        "  - filter: threshold\n"
        "    threshold: 300\n"
        "  - filter: red_blend\n"
        "    alpha: 1.5\n"
        "events:\n"
        "  min_area: -1\n"
    )
    problems = problems_of(tmp_path, text)
    assert len(problems) == 5, problems
    for key in ("backend:", "config:", "pipeline[2].threshold:", "pipeline[3].alpha:", "events.min_area:"):
        assert sum(p.startswith(key) for p in problems) == 1, (key, problems)
    with pytest.raises(ConfigError, match=r"invalid configuration \(5 problems\)"):
        load_config(write(tmp_path, text))


def test_engine_values_checked(tmp_path):
    if "engine" not in default_config():
        pytest.skip("this version has no engine setting")
    problems = problems_of(tmp_path, "engine: tensor\n")
    assert len(problems) == 1 and problems[0].startswith("engine:") and "'tensor'" in problems[0]
    # threshold has no cuBLAS form, so a per-filter engine 'cublas' is refused there.
    problems = problems_of(tmp_path, "pipeline:\n  - filter: gray\n  - filter: difference\n  - filter: threshold\n    engine: cublas\n")
    assert len(problems) == 1 and problems[0].startswith("pipeline[2].engine:")


# -- pipelines that do not chain ----------------------------------------------------------


def chain_problems(tmp_path, names):
    text = "pipeline:\n" + "".join(f"  - filter: {n}\n" for n in names)
    return problems_of(tmp_path, text)


def test_threshold_before_gray(tmp_path):
    problems = chain_problems(tmp_path, ["threshold", "gray", "difference"])
    assert any(p.startswith("pipeline[0]:") and "threshold" in p and "GRAY" in p for p in problems)
    assert any(p.startswith("pipeline[1]:") and "gray" in p for p in problems)


def test_no_difference_filter(tmp_path):
    problems = chain_problems(tmp_path, ["gray", "threshold", "erosion"])
    assert problems == ["pipeline: needs exactly one frame-pair filter (e.g. 'difference'); got 0"]


def test_two_difference_filters(tmp_path):
    problems = chain_problems(tmp_path, ["gray", "difference", "difference", "threshold"])
    assert problems == ["pipeline: needs exactly one frame-pair filter (e.g. 'difference'); got 2"]


def test_no_mask_produced(tmp_path):
    problems = chain_problems(tmp_path, ["gray", "difference"])
    assert problems == ["pipeline: no filter produces a motion mask (e.g. 'threshold')"]


def test_empty_pipeline(tmp_path):
    problems = problems_of(tmp_path, "pipeline: []\n")
    assert any(p.startswith("pipeline:") for p in problems)


def test_entry_without_filter_or_not_a_mapping(tmp_path):
    problems = problems_of(tmp_path, "pipeline:\n  - threshold: 3\n  - gray\n")
    assert any(p.startswith("pipeline[0]:") and "'filter'" in p for p in problems)
    assert any(p.startswith("pipeline[1]:") and "object" in p for p in problems)


def test_unhashable_filter_value_is_a_config_error(tmp_path):
    problems = problems_of(tmp_path, "pipeline:\n  - filter: [gray]\n  - filter: difference\n  - filter: threshold\n")
    assert problems[0].startswith("pipeline[0].filter:")


# -- command-line overrides ---------------------------------------------------------------


def test_with_overrides_sets_every_threshold_and_backend():
    cfg = load_config(SEED_YAML)
    cfg["pipeline"].insert(3, {"filter": "threshold", "threshold": 7})
    out = with_overrides(cfg, backend="cpu", threshold=99)
    assert [e["threshold"] for e in out["pipeline"] if e["filter"] == "threshold"] == [99, 99]
    assert out["backend"] == "cpu"
    # The input is not modified.
    assert [e.get("threshold") for e in cfg["pipeline"] if e["filter"] == "threshold"] == [25, 7]
    assert cfg["backend"] == "auto" and cfg["decoder"] == "auto" and cfg["preset"] == "veryfast"


def test_with_overrides_none_changes_nothing():
    assert with_overrides(default_config()) == default_config()


def test_with_overrides_without_threshold_filter():
    cfg = default_config()
    cfg["pipeline"] = [e for e in cfg["pipeline"] if e["filter"] != "threshold"]
    assert with_overrides(cfg, backend="cpu")["backend"] == "cpu"  # fine without --threshold
    with pytest.raises(ConfigError) as info:
        with_overrides(cfg, threshold=30)
    assert "--threshold" in str(info.value) and "threshold" in info.value.problems[0]


# -- GPU engines (issue 3): validated from each filter's ENGINES --------------------------


def test_engine_global_and_per_filter(tmp_path):
    config = load_config(
        write(tmp_path, "engine: cublas\npipeline:\n  - filter: gray\n  - {filter: difference, engine: kernel}\n  - filter: threshold\n")
    )
    engines = {f.NAME: f.engine for f in build_filters(config)}
    # gray takes the global engine, difference its own, threshold has no cuBLAS form.
    assert engines == {"gray": "cublas", "difference": "kernel", "threshold": "kernel"}


def test_engine_errors_name_the_allowed_engines(tmp_path):
    problems = problems_of(
        tmp_path, "engine: blas\npipeline:\n  - {filter: gray}\n  - {filter: difference}\n  - {filter: threshold, engine: cublas}\n"
    )
    assert "engine: 'blas' is not one of kernel, cublas" in problems
    assert "pipeline[2].engine: 'cublas' is not one of kernel" in problems


def test_engine_override_replaces_per_filter_settings():
    config = load_config(SEED_YAML)
    config["pipeline"][0]["engine"] = "cublas"
    kernel = with_overrides(config, engine="kernel")
    assert kernel["engine"] == "kernel" and all("engine" not in e for e in kernel["pipeline"])
    assert [f.engine for f in build_filters(with_overrides(config, engine="cublas"))] == ["cublas", "cublas", "kernel", "kernel", "kernel"]


# -- presets (configs/) ----------------------------------------------------------------------


def sigmas_of(config):
    return next(e.get("sigmas") for e in config["pipeline"] if e["filter"] == "gaussian_background")


@pytest.mark.parametrize("name", ["high_sensitivity", "low_sensitivity", "fast_scan"])
def test_presets_load_and_are_documented(name):
    path = ROOT / "configs" / f"{name}.yaml"
    text = path.read_text(encoding="utf-8")
    header = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        header.append(line)
    assert len(header) >= 6 and "DVR-Scan" in " ".join(header), "the header says what the preset is for and where it comes from"
    assert f"-c configs/{name}.yaml" in text  # an example command
    assert load_config(path) != default_config()


def test_a_bundled_preset_is_found_by_name_from_any_folder(tmp_path, monkeypatch):
    """``-c outdoor``, ``outdoor.yaml`` and ``configs/outdoor.yaml`` read the bundled preset where
    no such file exists (here: a folder outside the checkout), a file of that name wins where it
    exists, and a name that is neither says which presets there are."""
    from motiondetect.pipeline.presets import preset_names

    monkeypatch.chdir(tmp_path)
    assert preset_names() == sorted(p.stem for p in (ROOT / "configs").glob("*.yaml"))
    bundled = load_config(ROOT / "configs" / "outdoor.yaml")
    for name in ("outdoor", "outdoor.yaml", "configs/outdoor.yaml", "./configs/outdoor.yaml"):
        assert load_config(name) == bundled, name
    (tmp_path / "outdoor.yaml").write_text("events:\n  min_area: 0.02\n")
    assert load_config("outdoor.yaml")["events"]["min_area"] == 0.02  # the file where the command runs
    assert load_config("outdoor") == bundled  # no file named "outdoor" here
    for wrong in ("nosuch", "other/outdoor.yaml", "outdoor.txt"):
        with pytest.raises(ConfigError) as err:
            load_config(wrong)
        assert f"cannot read config file {wrong!r}" in str(err.value) and "bundled presets: default, fast_scan" in str(err.value)


def test_presets_move_the_way_their_names_say():
    default = default_config()
    high, low, fast = (load_config(ROOT / "configs" / f"{n}.yaml") for n in ("high_sensitivity", "low_sensitivity", "fast_scan"))
    # The sensitivity presets are the default pipeline with another threshold on the model.
    for preset in (high, low):
        assert [e["filter"] for e in preset["pipeline"]] == [e["filter"] for e in default["pipeline"]]
    assert sigmas_of(high) < sigmas_of(default) < sigmas_of(low)
    assert high["events"]["min_area"] < default["events"]["min_area"] < low["events"]["min_area"]
    assert low["events"]["min_event_length"] > default["events"]["min_event_length"] and low["events"]["max_area"] < 1.0
    assert fast["scan"] == {"downscale": 2, "frame_skip": 1, "batch": 0, "chunk": 60.0}
    assert high["scan"] == low["scan"] == default["scan"]


def test_sensitivity_presets_flag_more_and_fewer_pixels_on_real_footage():
    """On the bundled highway clip's 120 frames (cars, a road, trees), the high-sensitivity preset
    flags more pixels than the default and the low-sensitivity one fewer, each in at least 90 %
    of the frames where the default flags any."""
    import cv2

    from motiondetect.pipeline.config import build_filters
    from motiondetect.pipeline.detector import MotionDetector

    capture = cv2.VideoCapture(str(ROOT / "samples" / "highway_traffic_320x240.avi"))
    frames = [capture.read()[1] for _ in range(120)]
    counts = {}
    for name in ("high_sensitivity", "default", "low_sensitivity"):
        detector = MotionDetector(build_filters(load_config(ROOT / "configs" / f"{name}.yaml")), annotate=False)
        counts[name] = np.array([np.count_nonzero(detector.process(f).mask) for f in frames])
    moving = counts["default"] > 0
    assert moving.sum() > 60
    assert np.mean(counts["high_sensitivity"][moving] > counts["default"][moving]) > 0.9
    assert np.mean(counts["low_sensitivity"][moving] < counts["default"][moving]) > 0.9


def test_setting_sections_and_with_settings():
    from motiondetect.pipeline.config import SECTIONS, with_settings

    config = with_settings(default_config(), "events", {"min_area": 0.02, "merge_gap": None})
    assert config["events"]["min_area"] == 0.02 and config["events"]["merge_gap"] == 2.0
    assert default_config()["events"]["min_area"] == 0.001  # the input is not changed
    with pytest.raises(ConfigError, match=r"scan.downscale: 0 is out of range"):
        with_settings(default_config(), "scan", {"downscale": 0})
    with pytest.raises(ConfigError, match="overlays.boxes: expected boolean"):
        with_settings(default_config(), "overlays", {"boxes": 1})
    for section, table in SECTIONS.items():
        for name, (schema, default, text) in table.items():
            assert validate({section: {name: default}}) == [], (section, name)
            assert text and text[0].islower(), (section, name)


def test_event_setting_errors(tmp_path):
    problems = problems_of(tmp_path, "events:\n  min_pixels: 0\n  merge_gap: -1\n  max_area: high\n")
    assert problems == [
        "events.max_area: expected number, got str 'high'",
        "events.merge_gap: -1 is out of range (allowed 0.0..86400.0)",
        "events.min_pixels: 0 is out of range (allowed >= 1)",
    ]


@pytest.mark.parametrize(
    "size, frames",
    [((320, 240), 32), ((1920, 1080), 32), ((2560, 1440), 18), ((3840, 2160), 8), ((7680, 4320), 2), ((100_000, 100_000), 1)],
)
def test_auto_batch_holds_32_frames_of_1080p(size, frames):
    """scan.batch 0 (the default): the batch size the frame size gives."""
    from motiondetect.pipeline.batch import auto_batch

    assert auto_batch(size) == frames
    assert frames * size[0] * size[1] <= 32 * 1920 * 1080 or frames == 1


@pytest.mark.parametrize(
    "size, frames",
    [((320, 240), 8), ((1920, 1080), 8), ((2560, 1440), 8), ((3840, 2160), 4), ((7680, 4320), 1), ((100_000, 100_000), 1)],
)
def test_auto_batch_for_host_decoded_frames_holds_4_frames_of_2160p(size, frames):
    """The CPU decoder's frames: at most 8 a batch, and no more pixels than 4 frames of 2160p."""
    from motiondetect.pipeline.batch import auto_batch

    assert auto_batch(size, host_decoded=True) == frames
    assert frames * size[0] * size[1] <= 4 * 3840 * 2160 or frames == 1


def test_batch_size_follows_the_decoder_the_run_chose():
    """scan.batch when set; else auto_batch for the source's size, by its decoder: NVDEC frames
    32 at 1080p, host-decoded ones 8."""
    from types import SimpleNamespace

    from motiondetect.pipeline.assembly import batch_size
    from motiondetect.sources.nvdec import NvdecSource

    nvdec = object.__new__(NvdecSource)  # no decoder behind it: only its type and size matter
    nvdec.size = (1920, 1080)
    host = SimpleNamespace(size=(1920, 1080))
    auto, fixed = {"scan": {"batch": 0}}, {"scan": {"batch": 5}}
    assert (batch_size(auto, nvdec), batch_size(auto, host)) == (32, 8)
    assert (batch_size(fixed, nvdec), batch_size(fixed, host)) == (5, 5)


@pytest.mark.parametrize(
    "decoder, backend, is_file, nvdec_installed, expected",
    [
        ("cpu", "cuda", True, True, True),
        ("auto", "cpu", True, True, True),
        ("auto", "auto", False, True, True),  # cameras, image sequences, --concat
        ("auto", "auto", True, False, True),  # no PyNvVideoCodec: NVDEC is never tried
        ("auto", "auto", True, True, False),  # NVDEC may decode it
        ("auto", "cuda", True, True, False),
        ("nvdec", "cuda", True, True, False),
        ("nvdec", "cpu", True, False, False),  # an error, not a CPU run
    ],
)
def test_decodes_on_cpu_only_when_choose_decoder_cannot_take_nvdec(monkeypatch, decoder, backend, is_file, nvdec_installed, expected):
    """The decoder may start before the device's set-up only when choose_decoder will return the
    input's own decoder whatever that set-up finds."""
    import importlib.util
    from types import SimpleNamespace

    from motiondetect.pipeline import assembly

    real = importlib.util.find_spec
    monkeypatch.setattr(
        assembly.importlib.util,
        "find_spec",
        lambda name, *a: (object() if nvdec_installed else None) if name == "PyNvVideoCodec" else real(name, *a),
    )
    video = SimpleNamespace(decodes_pictures=is_file)
    config = {"decoder": decoder, "backend": backend}
    assert assembly.decodes_on_cpu(config, video) is expected
    if expected:  # and choose_decoder agrees: the input's own decoder, with CUDA or without
        for cuda in (None, object()):
            if cuda is not None and (backend == "cpu" or (decoder == "auto" and is_file)):
                continue  # no CUDA handler on the CPU backend; PyNvVideoCodec's absence is NvdecSource's to find
            batched = "the CPU backend" if cuda is None else None
            source, _ = assembly.choose_decoder(decoder, video, cuda, batched, None, None, check=False)
            assert source is video or not is_file


def test_config_error_survives_pickling():
    """Worker processes and Dask tasks send errors back pickled: the message must come back whole,
    not rebuilt from its characters."""
    import pickle

    error = ConfigError(["pipeline[2].sigmas: expected a number, got 'x'", "events.min_area: above 1"])
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is ConfigError and again.problems == error.problems and str(again) == str(error)
    assert str(again).startswith("invalid configuration (2 problems): pipeline[2].sigmas")


def test_a_key_given_twice_is_refused(tmp_path):
    # PyYAML keeps the last of two events: blocks without a word: min_area would be lost.
    (problem,) = problems_of(tmp_path, "events:\n  min_area: 0.01\nevents:\n  max_area: 0.5\n")
    assert "key 'events' at line 3 is given twice" in problem
    (problem,) = problems_of(tmp_path, "events:\n  min_area: 0.01\n  min_area: 0.02\n")
    assert "key 'min_area' at line 3 is given twice" in problem


def test_a_report_given_as_a_config_points_to_its_config_key(tmp_path):
    report = {"motiondetect_version": "0", "config": {}, "events": [{"start_frame": i} for i in range(500)]}
    (problem,) = problems_of(tmp_path, json.dumps(report))
    assert "is a motiondetect report" in problem and "'config' key" in problem and len(problem) < 300


def test_long_values_are_cut_in_problems(tmp_path):
    (problem,) = problems_of(tmp_path, "events: " + json.dumps(list(range(1000))) + "\n")
    assert problem.startswith("events: expected object, got list [0, 1, 2") and problem.endswith("...") and len(problem) < 120


def test_hints_for_yaml_that_reads_otherwise(tmp_path):
    (problem,) = problems_of(tmp_path, "events:\n  min_area: 1e-3\n")
    assert problem == "events.min_area: expected number, got str '1e-3' (YAML reads it as text: write 0.001)"
    (problem,) = problems_of(tmp_path, "roi: mask.png\n")
    assert "(an image is written as roi: {mask: FILE})" in problem
