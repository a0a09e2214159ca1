"""Leave-one-clip-out tuning (motiondetect/tuning.py), ``motiondetect evaluate --loo`` and
benchmarks/tune_loo.py: the selection rule, the grid, the scores against a hand count, the cache,
the table, the command's errors, and a run on real dev-set frames."""

from __future__ import annotations

import copy
import importlib
import json
import statistics
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from motiondetect.core.errors import UsageError
from motiondetect.evaluation import tuning
from motiondetect.evaluation.scoring import load_folder
from motiondetect.evaluation.tuning import leave_one_out
from motiondetect.pipeline.config import build_filters, default_config, load_config
from motiondetect.pipeline.detector import MotionDetector
from tests.helpers import SEED_YAML, benchmark_module, make_folder, one_line_error, run_cli

ROOT = Path(__file__).resolve().parent.parent
TINY = {("gaussian_background", "sigmas"): [2.0, 3.0], ("median", "kernel_size"): [7, 9]}


# -- leave-one-clip-out -------------------------------------------------------------------------


# Clip "a" alone loves p1; the others prefer p2, so a is scored with p2. Clip "d" prefers p3,
# which nobody else does.
FOUR_CLIPS = {
    "a": {"p1": 1.00, "p2": 0.10, "p3": 0.20},
    "b": {"p1": 0.50, "p2": 0.60, "p3": 0.40},
    "c": {"p1": 0.52, "p2": 0.55, "p3": 0.50},
    "d": {"p1": 0.10, "p2": 0.20, "p3": 0.90},
}


def test_leave_one_out_chooses_each_clip_without_it():
    scores = FOUR_CLIPS
    chosen = leave_one_out(scores)
    # By hand: mean over the three other clips.
    #   a: p1 0.373, p2 0.450, p3 0.600 -> p3;  b: p1 0.540, p2 0.283, p3 0.533 -> p1
    #   c: p1 0.533, p2 0.300, p3 0.500 -> p1;  d: p1 0.673, p2 0.417, p3 0.367 -> p1
    assert chosen == {"a": "p3", "b": "p1", "c": "p1", "d": "p1"}
    # Whatever a clip's own scores are, its choice does not move.
    rng = np.random.default_rng(0)
    for clip in scores:
        for _ in range(20):
            changed = {**scores, clip: {k: float(rng.random()) for k in scores[clip]}}
            assert leave_one_out(changed)[clip] == chosen[clip]


def test_leave_one_out_chooses_only_what_every_other_clip_admits():
    scores = FOUR_CLIPS
    # Clip "c" refuses p1 (say p1 breaks its frame F1). The folds that keep c fall back to their
    # best among p2 and p3 (by hand, from the means above); c's own fold may still take p1.
    admissible = {clip: {"p1": clip != "c", "p2": True, "p3": True} for clip in scores}
    assert leave_one_out(scores, admissible) == {"a": "p3", "b": "p3", "c": "p1", "d": "p2"}
    assert leave_one_out(scores, {clip: dict.fromkeys(scores[clip], True) for clip in scores}) == leave_one_out(scores)
    with pytest.raises(ValueError, match="without clip 'a', no parameter set is admitted by every other clip"):
        leave_one_out(scores, {clip: dict.fromkeys(scores[clip], clip == "a") for clip in scores})


def test_frame_f1_guard_keeps_the_target_or_the_base_where_lower():
    def s(f1):
        return {"pixel_f": 0.5, "frame_f1": f1}

    scores = {
        "meets": {"base": s(0.97), "same": s(0.95), "breaks": s(0.949), "better": s(1.0)},
        "misses": {"base": s(0.90), "same": s(0.90), "breaks": s(0.899), "better": s(0.93)},
    }
    assert tuning.frame_f1_guard(scores, "base") == {
        "meets": {"base": True, "same": True, "breaks": False, "better": True},
        "misses": {"base": True, "same": True, "breaks": False, "better": True},
    }


def test_leave_one_out_ties_and_errors():
    assert leave_one_out({"a": {(1, 2): 0.5, (3, 4): 0.5}, "b": {(1, 2): 0.5, (3, 4): 0.5}}) == {"a": (1, 2), "b": (1, 2)}
    with pytest.raises(ValueError, match="at least 2 clips; got 1"):
        leave_one_out({"a": {1: 0.5}})
    with pytest.raises(ValueError, match="clip 'b' has other parameter sets than clip 'a'"):
        leave_one_out({"a": {1: 0.5, 2: 0.1}, "b": {1: 0.5}})


# -- the grid ------------------------------------------------------------------------------------


def test_grid_axes_keep_the_pipelines_filters_and_add_the_configs_own_value():
    base = default_config()
    (gauss,) = [e for e in base["pipeline"] if e["filter"] == "gaussian_background"]
    gauss["sigmas"] = 3.2  # not a grid value: it joins the axis, so the config is a grid point
    grid = {**TINY, ("blur", "kernel_size"): [3, 5], ("median", "no_such_parameter"): [1]}
    axes = tuning.grid_axes(grid, base)
    assert axes == {("gaussian_background", "sigmas"): [2.0, 3.0, 3.2], ("median", "kernel_size"): [7, 9]}
    points = tuning.grid_points(axes)
    assert len(points) == 6 and {("gaussian_background", "sigmas"): 3.2, ("median", "kernel_size"): 7} in points
    # The seed pipeline (gray, difference, threshold, erosion) has none of the small grid's filters.
    with pytest.raises(UsageError, match="the pipeline has none of them"):
        tuning.grid_axes(tuning.GRIDS["small"], load_config(SEED_YAML))


def test_grid_summaries_name_every_grid_its_points_and_axes_in_the_help():
    assert tuning.grid_summary("tiny") == "tiny (4 points: gaussian_background.sigmas, median.kernel_size)"
    assert tuning.grid_summary("small").startswith("small (216 points: gaussian_background.sigmas, ")
    with pytest.raises(KeyError):
        tuning.grid_summary("no_such_grid")
    from motiondetect.apps.evaluate import build_parser

    text = " ".join(build_parser().format_help().split())  # argparse wraps lines
    for name in tuning.GRIDS:
        assert " ".join(tuning.grid_summary(name).split()) in text, name


def test_config_for_sets_only_the_named_parameters():
    base = default_config()
    config = tuning.config_for(base, {("median", "kernel_size"): 3, ("gaussian_background", "sigmas"): 3.0})
    changed = [(a, b) for a, b in zip(base["pipeline"], config["pipeline"]) if a != b]
    assert changed == [
        ({**base["pipeline"][3]}, {**base["pipeline"][3], "sigmas": 3.0}),
        ({**base["pipeline"][4]}, {**base["pipeline"][4], "kernel_size": 3}),
    ]
    assert base == default_config()  # the base is not touched
    assert (
        tuning.point_key({("median", "kernel_size"): 3, ("gaussian_background", "sigmas"): 2.5})
        == "gaussian_background.sigmas=2.5,median.kernel_size=3"
    )
    assert tuning.short_key("gaussian_background.sigmas=2.5,median.kernel_size=3,blur.kernel_size=5") == "sig=2.5 med=3 blur.kernel_size=5"


# -- scores against a hand count -------------------------------------------------------------------


def hand_pixel_f(config: dict, root: Path, skip: int, passes: int = 1) -> float:
    """CDnet pixel F of a config on a folder, counted with NumPy (255 positive; 0, 50 negative).
    With ``passes`` > 1 the folder is played forward, backward, forward ... through one detector
    and only the last pass is counted; the first ``skip`` frames of the counted pass are not."""
    detector = MotionDetector(build_filters(config), annotate=False)
    tp = fp = fn = 0
    names = sorted((root / "input").iterdir())
    for p in range(passes):
        for i, name in enumerate(names if p % 2 == 0 else names[::-1]):
            mask = detector.process(cv2.imread(str(name))).mask
            if p < passes - 1 or i < skip:
                continue
            labels = cv2.imread(str(root / "groundtruth" / f"gt{name.stem[2:]}.png"), cv2.IMREAD_GRAYSCALE)
            moving, positive, negative = mask == 255, labels == 255, (labels == 0) | (labels == 50)
            tp += int((moving & positive).sum())
            fp += int((moving & negative).sum())
            fn += int((~moving & positive).sum())
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def hand_config(sigmas: float, median: int) -> dict:
    config = copy.deepcopy(default_config())
    for entry in config["pipeline"]:
        if entry["filter"] == "gaussian_background":
            entry["sigmas"] = sigmas
        if entry["filter"] == "median":
            entry["kernel_size"] = median
    return config


@pytest.fixture
def three_clips(tmp_path):
    # The square moves at different speeds against different greys: the clips disagree a little.
    roots = []
    for name, first, count in (("one", 100, 14), ("two", 300, 16), ("three", 500, 18)):
        root, _, _ = make_folder(tmp_path / name, count=count, first=first)
        roots.append(root)
    return roots


def test_tune_scores_every_point_as_a_hand_count_and_chooses_without_the_clip(three_clips, tmp_path, monkeypatch):
    monkeypatch.setitem(tuning.GRIDS, "test", TINY)
    cache = tmp_path / "cache.json"
    result = tuning.tune([str(r) for r in three_clips], default_config(), grid="test", skip=4, jobs=1, cache_path=cache)
    assert list(result.scores) == ["one", "two", "three"] and len(result.keys) == 4
    assert result.base == "gaussian_background.sigmas=2.0,median.kernel_size=9"
    for root in three_clips:
        for sigmas in (2.0, 3.0):
            for median in (7, 9):
                key = f"gaussian_background.sigmas={sigmas},median.kernel_size={median}"
                assert result.scores[root.name][key]["pixel_f"] == pytest.approx(
                    hand_pixel_f(hand_config(sigmas, median), root, 4), abs=1e-12
                )
    pixel_f = {c: {k: v["pixel_f"] for k, v in by_key.items()} for c, by_key in result.scores.items()}
    assert result.guarded and result.chosen == leave_one_out(pixel_f, tuning.frame_f1_guard(result.scores, result.base))
    unguarded = tuning.tune([str(r) for r in three_clips], default_config(), grid="test", skip=4, jobs=1, cache_path=cache, guard=False)
    assert unguarded.chosen == leave_one_out(pixel_f) and "frame F1" not in unguarded.criterion
    assert "among points that keep each of them at frame F1 0.95" in tuning.format_loo_table(result).splitlines()[0]
    # A second run takes every score from the cache.
    monkeypatch.setattr(tuning, "_score", lambda *a: pytest.fail("scored again despite the cache"))
    again = tuning.tune([str(r) for r in three_clips], default_config(), grid="test", skip=4, jobs=1, cache_path=cache)
    assert again.scores == result.scores and again.chosen == result.chosen


def test_the_cache_scores_again_after_a_code_change_and_keys_the_anchors_by_what_decides_them(three_clips, tmp_path, monkeypatch):
    monkeypatch.setitem(tuning.GRIDS, "test", {("gaussian_background", "sigmas"): [2.0, 3.0]})
    monkeypatch.setattr("motiondetect.evaluation.scoring.bgslibrary_available", lambda: False)  # as where pybgs is missing
    paths, cache = [str(r) for r in three_clips[:2]], tmp_path / "cache.json"
    first = tuning.tune(paths, default_config(), grid="test", skip=4, jobs=1, anchors=True, cache_path=cache)
    runs = []
    real = tuning._score
    monkeypatch.setattr(tuning, "_score", lambda *a: runs.append(a[1] is None) or real(*a))
    # The same code: nothing is scored again.
    tuning.tune(paths, default_config(), grid="test", skip=4, jobs=1, anchors=True, cache_path=cache)
    assert runs == []
    # Another package source (the model changed): every point is scored again, the anchors are
    # not, and the old code's point scores leave the cache.
    monkeypatch.setattr(tuning, "code_digest", lambda: "0123456789abcdef")
    again = tuning.tune(paths, default_config(), grid="test", skip=4, jobs=1, anchors=True, cache_path=cache)
    assert runs == [False] * 4 and again.scores == first.scores and again.anchors == first.anchors
    stored = json.loads(cache.read_text())
    for slot in stored.values():
        points = [entry for entry in slot if not entry.startswith("anchors@")]
        assert len(points) == 2 and all(entry.endswith("@0123456789abcdef") for entry in points)
    # Another set of anchors (here: pybgs found) is scored anew, not answered from the old one.
    runs.clear()
    before = tuning.anchors_entry()
    monkeypatch.setattr("motiondetect.evaluation.scoring.bgslibrary_available", lambda: True)
    assert tuning.anchors_entry() != before
    monkeypatch.setattr(
        tuning, "_score", lambda path, config, *a: runs.append(config is None) or (real(path, config, *a) if config else [])
    )
    tuning.tune(paths, default_config(), grid="test", skip=4, jobs=1, anchors=True, cache_path=cache)
    assert runs == [True, True]


def test_worker_processes_give_the_same_scores(three_clips, monkeypatch):
    small = {("gaussian_background", "sigmas"): [2.5, 3.0]}
    monkeypatch.setitem(tuning.GRIDS, "test", small)
    paths = [str(r) for r in three_clips[:2]]
    one = tuning.tune(paths, default_config(), grid="test", skip=4, jobs=1, anchors=True)
    two = tuning.tune(paths, default_config(), grid="test", skip=4, jobs=2, anchors=True)
    assert one.scores == two.scores and one.anchors == two.anchors
    assert [a["name"] for a in one.anchors["one"]][:2] == ["OpenCV MOG2 (defaults)", "OpenCV MOG2 + median 5x5"]


def test_the_worker_pool_shuts_down_in_order(three_clips, monkeypatch):
    """tune reads every result of score_runs and one more, so the generator reaches its own
    shutdown(); the pool is never dropped with wait=False (the failure path), whose wake-up pipe
    CPython's exit hook then wrote to, printing "OSError: [Errno 9] Bad file descriptor"."""
    from concurrent.futures import ProcessPoolExecutor

    calls = []
    real = ProcessPoolExecutor.shutdown
    monkeypatch.setattr(ProcessPoolExecutor, "shutdown", lambda self, *a, **k: calls.append((a, k)) or real(self, *a, **k))
    monkeypatch.setitem(tuning.GRIDS, "test", {("gaussian_background", "sigmas"): [2.5, 3.0]})
    tuning.tune([str(r) for r in three_clips[:2]], default_config(), grid="test", skip=4, jobs=2)
    assert calls == [((), {})]


def test_tune_refuses_one_clip_and_twin_names(three_clips, tmp_path):
    with pytest.raises(UsageError, match=r"at least 2 ground-truth folders .*; got 1"):
        tuning.tune([str(three_clips[0])], default_config(), grid="tiny")
    twin, _, _ = make_folder(tmp_path / "elsewhere" / "one")
    with pytest.raises(UsageError, match="one is given twice"):
        tuning.tune([str(three_clips[0]), str(twin)], default_config(), grid="tiny")


# -- the table -------------------------------------------------------------------------------------


def made_up_result() -> tuning.LooResult:
    keys = ["median.kernel_size=3", "median.kernel_size=5"]
    f = {"a": (0.9, 0.5), "b": (0.4, 0.8), "c": (0.3, 0.7)}
    scores = {c: {k: {"pixel_f": v, "frame_f1": 1.0 - v / 10} for k, v in zip(keys, fs)} for c, fs in f.items()}
    anchors = {
        c: [{"name": "MOG2", "pixel_f": 0.6, "frame_f1": 0.9}, {"name": "KNN", "pixel_f": 0.55 + i / 10, "frame_f1": 0.95}]
        for i, c in enumerate(f)
    }
    chosen = leave_one_out({c: {k: v["pixel_f"] for k, v in by.items()} for c, by in scores.items()})
    return tuning.LooResult("tiny", {("median", "kernel_size"): [3, 5]}, keys, keys[1], scores, anchors, chosen)


def test_table_rows_and_means():
    result = made_up_result()
    # By hand: a is chosen on b, c (means 0.35 vs 0.75) -> med=5; b on a, c (0.6, 0.6: tie, first) -> med=3;
    # c on a, b (0.65, 0.65: tie) -> med=3.
    assert result.chosen == {"a": "median.kernel_size=5", "b": "median.kernel_size=3", "c": "median.kernel_size=3"}
    lines = tuning.format_loo_table(result).splitlines()
    assert lines[1].split()[:2] == ["clip", "LOO"]
    a, b, c = (line.split() for line in lines[2:5])
    assert a[:5] == ["a", "med=5", "0.500", "0.950", "0.500"] and a[-3:] == ["MOG2", "0.600", "0.900"]
    assert b[:3] == ["b", "med=3", "0.400"] and b[-3:] == ["KNN", "0.650", "0.950"]
    assert c[:3] == ["c", "med=3", "0.300"] and c[-3:] == ["KNN", "0.750", "0.950"]
    # LOO: 0.5, 0.4, 0.3 -> 0.400; frame F1 0.95, 0.96, 0.97 -> 0.960, min 0.950, all three at
    # the 0.95 target; best anchors 0.6, 0.65, 0.75, none beaten.
    assert lines[6].endswith("frame F1 >= 0.95  above best anchor")
    loo = next(line for line in lines[5:] if line.startswith("leave-one-clip-out "))
    assert loo.split()[-5:] == ["0.400", "0.960", "0.950", "3/3", "0/3"]
    # med=5: 0.5, 0.8, 0.7, frame F1 0.95, 0.92, 0.93: one clip at the target, b above its anchor.
    best = next(line for line in lines if line.startswith("in-sample best"))
    assert "(med=5)" in best and best.split()[-5:] == ["0.667", "0.933", "0.920", "1/3", "1/3"]
    knn = next(line for line in lines if line.startswith("KNN"))
    assert knn.split()[-5:] == ["0.650", "0.950", "0.950", "3/3", "-"]
    assert lines[-1] == "LOO choices (clips that chose each): med=3 x2; med=5 x1"


def test_table_says_when_bgslibrary_was_not_counted():
    result = made_up_result()
    lines = tuning.format_loo_table(result).splitlines()
    note = "above best anchor: OpenCV's anchors only; bgslibrary's SuBSENSE and PAWCS are not scored: pybgs is not installed"
    assert any(line.startswith(note) for line in lines)
    for c in result.anchors:
        result.anchors[c].append({"name": "bgslibrary PAWCS (defaults)", "pixel_f": 0.1, "frame_f1": 0.9})
    assert not any("OpenCV's anchors only" in line for line in tuning.format_loo_table(result).splitlines())


def test_table_without_anchors_counts_frame_f1_only():
    result = made_up_result()
    result.anchors = {c: [] for c in result.anchors}
    lines = tuning.format_loo_table(result).splitlines()
    header = next(line for line in lines if line.startswith("over the clips"))
    assert header.endswith("frame F1 >= 0.95") and "anchor" not in header
    loo = next(line for line in lines[1:] if line.startswith("leave-one-clip-out "))
    assert loo.split()[-2:] == ["0.950", "3/3"]


# -- the command ---------------------------------------------------------------------------------


def test_cli_evaluate_loo_table_and_json(three_clips, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(tuning.GRIDS, "tiny", TINY)
    out_json = tmp_path / "scores.json"
    rc, out, err = run_cli(
        monkeypatch,
        capsys,
        tmp_path,
        "evaluate",
        *three_clips,
        "--backend",
        "cpu",
        "--skip",
        "4",
        "--baselines",
        "--loo",
        "--grid",
        "tiny",
        "--jobs",
        "1",
        "--json",
        out_json,
        "-q",
    )
    assert rc == 0, err
    report = json.loads(out_json.read_text())
    assert report["complete"] is True
    loo = report["leave_one_out"]
    assert loo["grid"] == "tiny" and loo["points"] == 4 and set(loo["clips"]) == {"one", "two", "three"}
    for evaluation in report["evaluations"]:
        clip = Path(evaluation["folder"]).name
        ours, *anchors = evaluation["methods"]
        # The grid's starting point is the config the per-clip table scored: the same counts.
        assert loo["clips"][clip]["base"]["pixel"] == ours["pixel"] and loo["clips"][clip]["base"]["frame"] == ours["frame"]
        # The anchors in the LOO table are the per-clip table's.
        assert [a["name"] for a in loo["clips"][clip]["anchors"]] == [a["name"] for a in anchors]
        assert [a["pixel"] for a in loo["clips"][clip]["anchors"]] == [a["pixel"] for a in anchors]
    assert "leave-one-clip-out over 3 clips, grid 'tiny' (4 points" in out
    rows = {line.split()[0]: line for line in out.splitlines() if line.split()[:1] in (["one"], ["two"], ["three"])}
    for clip, row in rows.items():
        chosen = loo["clips"][clip]
        assert tuning.short_key(chosen["chosen"]) in row and f"{chosen['loo']['pixel_f']:.3f}" in row


@pytest.mark.parametrize("available", [False, True])
def test_cli_baselines_say_when_bgslibrary_is_not_scored(three_clips, tmp_path, monkeypatch, capsys, restored_logging, available):
    monkeypatch.setattr("motiondetect.apps.evaluate.bgslibrary_available", lambda: available)
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, "evaluate", three_clips[0], "--backend", "cpu", "--skip", "4", "--baselines")
    notices = [line for line in err.splitlines() if "SuBSENSE and PAWCS are not scored: pybgs is not installed" in line]
    assert rc == 0 and len(notices) == (0 if available else 1) and all("notice:" in line for line in notices)


@pytest.mark.parametrize(
    "extra, fragment",
    [
        (["--loo"], "--loo needs at least 2 ground-truth folders"),
        (["--grid", "tiny"], "--grid only apply with --loo"),
        (["--jobs", "2", "--loo-cache", "c.json"], "--jobs, --loo-cache only apply with --loo"),
        (["--no-frame-f1-guard"], "--no-frame-f1-guard only apply with --loo"),
        (["--frame-f1-guard", "--grid", "tiny"], "--grid, --frame-f1-guard only apply with --loo"),
    ],
)
def test_cli_loo_usage_errors_are_one_line(three_clips, tmp_path, monkeypatch, capsys, extra, fragment):
    rc, out, err = run_cli(monkeypatch, capsys, tmp_path, "evaluate", three_clips[0], "--backend", "cpu", *extra)
    assert rc == 2 and fragment in one_line_error(err) and out == ""


def test_cli_loo_refuses_a_pipeline_the_grid_cannot_tune_before_any_work(three_clips, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("motiondetect.evaluation.scoring.evaluate", lambda *a, **k: pytest.fail("evaluated before the check"))
    rc, out, err = run_cli(monkeypatch, capsys, tmp_path, "evaluate", *three_clips[:2], "-c", SEED_YAML, "--backend", "cpu", "--loo")
    assert rc == 2 and "the pipeline has none of them" in one_line_error(err)
    twin, _, _ = make_folder(tmp_path / "x" / "one")
    rc, out, err = run_cli(monkeypatch, capsys, tmp_path, "evaluate", three_clips[0], twin, "--backend", "cpu", "--loo")
    assert rc == 2 and "'one' is given twice" in one_line_error(err)


def test_cli_ctrl_c_in_the_grid_keeps_the_tables_and_the_json(three_clips, tmp_path, monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(tuning, "tune", interrupted)
    out_json = tmp_path / "partial.json"
    rc, out, err = run_cli(
        monkeypatch, capsys, tmp_path, "evaluate", *three_clips[:2], "--backend", "cpu", "--skip", "4", "--loo", "--json", out_json, "-q"
    )
    assert rc == 130 and "Stopped" in err
    assert out.count("motiondetect (cpu)") == 2  # both per-clip tables were printed
    report = json.loads(out_json.read_text())
    assert report["complete"] is False and len(report["evaluations"]) == 2 and "leave_one_out" not in report


# -- real footage --------------------------------------------------------------------------------

DEV = ROOT / "samples" / "dev"


def linked_window(clip: Path, root: Path, numbers: range) -> Path:
    """A CDnet folder of symlinks to some frames of a dev clip (its ROI and temporal ROI too)."""
    for part in ("input", "groundtruth"):
        (root / part).mkdir(parents=True)
    for n in numbers:
        (root / "input" / f"in{n:06d}.jpg").symlink_to(clip / "input" / f"in{n:06d}.jpg")
        (root / "groundtruth" / f"gt{n:06d}.png").symlink_to(clip / "groundtruth" / f"gt{n:06d}.png")
    for name in ("ROI.bmp", "temporalROI.txt"):
        (root / name).symlink_to(clip / name)
    return root


def test_loo_on_real_dev_frames(tmp_path, monkeypatch):
    # 16 frames each of two real CDnet clips (people walking; a man entering an office), grid of
    # two sigmas: each clip's scores match a hand count over the same files.
    clips = {"baseline_pedestrians": range(650, 666), "baseline_office": range(600, 616)}
    for name in clips:
        if not (DEV / name / "groundtruth").is_dir():
            pytest.skip(f"{name} not materialized (python samples/dev/fetch_dev.py)")
    roots = [linked_window(DEV / name, tmp_path / name, numbers) for name, numbers in clips.items()]
    monkeypatch.setitem(tuning.GRIDS, "test", {("gaussian_background", "sigmas"): [2.5, 3.0]})
    result = tuning.tune([str(r) for r in roots], default_config(), grid="test", skip=4, jobs=1)
    for root in roots:
        for sigmas in (2.5, 3.0):
            key = f"gaussian_background.sigmas={sigmas}"
            assert result.scores[root.name][key]["pixel_f"] == pytest.approx(hand_pixel_f(hand_config(sigmas, 9), root, 4), abs=1e-12)
    assert any(v["pixel"]["tp"] > 0 for by in result.scores.values() for v in by.values())
    assert set(result.chosen.values()) <= set(result.keys)


# -- the benchmark -------------------------------------------------------------------------------


def test_benchmark_tune_loo_prints_the_table_and_caches(three_clips, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(tuning.GRIDS, "tiny", TINY)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        bench = importlib.import_module("tune_loo")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    cache = tmp_path / "cache.json"
    args = [
        *map(str, three_clips),
        "--grid",
        "tiny",
        "--jobs",
        "1",
        "--skip",
        "4",
        "--cache",
        str(cache),
        "--json",
        str(tmp_path / "r.json"),
    ]
    assert bench.main(args) == 0
    text = capsys.readouterr().out
    assert "leave-one-clip-out over 3 clips" in text and "OpenCV KNN + median 5x5" in text
    stored = json.loads(cache.read_text())
    assert bench.main(args) == 0 and json.loads(cache.read_text()) == stored
    assert bench.main([str(three_clips[0]), "--cache", str(cache)]) == 2
    assert "at least 2 ground-truth folders" in capsys.readouterr().err


def _long_run_study():
    return benchmark_module("long_run_study")


def test_long_run_ping_pong_plays_the_clip_back_and_forth_and_scores_its_last_pass(tmp_path):
    src, frames, labels = make_folder(tmp_path / "clip", count=6, first=100)
    long = _long_run_study().ping_pong(src, tmp_path / "long", passes=3, skip=2)
    order = [0, 1, 2, 3, 4, 5, 5, 4, 3, 2, 1, 0, 0, 1, 2, 3, 4, 5]
    folder = load_folder(long)
    assert [n for n, _, _ in folder.frames] == list(range(1, 19))
    for (n, image, label), source in zip(folder.frames, order):
        assert np.array_equal(cv2.imread(str(image)), frames[source]), n
        # Only the last pass (frames 13..18) has labels, its own frame's.
        assert (label is None) == (n < 13), n
        if label is not None:
            assert np.array_equal(cv2.imread(str(label), cv2.IMREAD_GRAYSCALE), labels[source]), n
    assert (long / "temporalROI.txt").read_text().split() == ["15", "18"]  # the last pass after its first 2
    with pytest.raises(ValueError, match="at least 1"):
        _long_run_study().ping_pong(src, tmp_path / "none", passes=0)


def test_benchmark_long_run_study_prints_fresh_long_and_the_held_out_choice(three_clips, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(tuning.GRIDS, "tiny", TINY)
    bench = _long_run_study()
    cache = tmp_path / "cache.json"
    args = [*map(str, three_clips), "--grid", "tiny", "--passes", "3", "--jobs", "1", "--skip", "4", "--cache", str(cache)]
    assert bench.main([*args, "--workdir", str(tmp_path / "work")]) == 0
    text = capsys.readouterr().out
    assert "3 clips, grid 'tiny' (4 points), long runs of 3 passes" in text
    assert text.count("(default)") == 1 and "| **mean** |" in text
    # Against a hand count: the clip's frames played forward, backward, forward through one
    # detector, counted on the last pass after its first 4 frames.
    row = next(line for line in text.splitlines() if line.startswith("| sig=2.0 med=9 (default)"))
    fresh, long = (float(v) for v in row.split("|")[2:4])
    assert fresh == pytest.approx(statistics.mean(hand_pixel_f(hand_config(2.0, 9), r, 4) for r in three_clips), abs=6e-5)
    assert long == pytest.approx(statistics.mean(hand_pixel_f(hand_config(2.0, 9), r, 4, passes=3) for r in three_clips), abs=6e-5)
    assert bench.main([str(three_clips[0]), "--cache", str(cache)]) == 2
