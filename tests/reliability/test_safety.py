"""Safety: YAML only through safe_load, no shell or subprocess in the package, outputs never
replace the input or an existing file without --overwrite, reports written atomically."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import cv2
import pytest
from conftest import only_line, report, run_main, small_frames

import motiondetect
from motiondetect.core.safety import free_name
from motiondetect.outputs.clips import clip_name
from motiondetect.outputs.masks import mask_name
from motiondetect.outputs.writer import VideoWriter

PACKAGE = Path(motiondetect.__file__).parent
SOURCES = sorted(PACKAGE.rglob("*.py"))


def calls_and_names(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        yield node


def test_the_scan_sees_the_package():
    names = {p.name for p in SOURCES}
    assert {"cli.py", "config.py", "roi.py", "video.py", "safety.py"} <= names


def test_yaml_is_read_only_with_safe_load():
    unsafe = {
        "load",
        "load_all",
        "unsafe_load",
        "unsafe_load_all",
        "full_load",
        "full_load_all",
        "Loader",
        "UnsafeLoader",
        "FullLoader",
        "add_constructor",
    }
    found, safe_loads = [], 0
    for path in SOURCES:
        for node in calls_and_names(path):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "yaml":
                if node.attr in unsafe:
                    found.append(f"{path.name}:{node.lineno} yaml.{node.attr}")
                safe_loads += node.attr == "safe_load"
            if isinstance(node, ast.ImportFrom) and node.module == "yaml":
                found += [f"{path.name}:{node.lineno} from yaml import {a.name}" for a in node.names if a.name in unsafe]
    assert found == []
    assert safe_loads >= 2  # the config and the --roi file


def test_no_shell_or_subprocess_in_the_package():
    found = []
    for path in SOURCES:
        for node in calls_and_names(path):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                found += [f"{path.name}:{node.lineno} imports {m}" for m in modules if m.split(".")[0] in ("subprocess", "pty", "commands")]
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os":
                if node.attr in ("system", "popen") or node.attr.startswith(("exec", "spawn", "posix_spawn")):
                    found.append(f"{path.name}:{node.lineno} os.{node.attr}")
            if isinstance(node, ast.keyword) and node.arg == "shell":
                found.append(f"{path.name}:{node.lineno} shell=")
            if isinstance(node, ast.Name) and node.id in ("eval", "exec"):
                found.append(f"{path.name}:{node.lineno} {node.id}")
    assert found == []


# -- nothing is replaced without --overwrite ------------------------------------------------


@pytest.fixture
def clip(tmp_path) -> Path:
    path = tmp_path / "cam.mp4"
    with VideoWriter(path, 25, (32, 24)) as writer:
        for frame in small_frames(8):
            writer.write(frame)
    return path


OUTPUTS = {
    "video": (["-o", "v.mp4"], "v.mp4"),
    # Every moving frame an event: the square's motion makes one whatever the registration does.
    "only-motion video": (["-o", "v.mp4", "--only-motion", "--min-area", "0.01", "--min-event-length", "0"], "v.mp4"),
    "events json": (["--events", "e.json"], "e.json"),
    "events csv": (["--events", "e.csv"], "e.csv"),
    "mask video": (["--mask-out", "m.mp4"], "m.mp4"),
    "clips": (["--clips", "clips", "--min-area", "0.01", "--min-event-length", "0"], f"clips/{clip_name('cam', 1)}"),
    "masks": (["--masks", "masks"], f"masks/{mask_name('cam', 5)}"),
}


@pytest.mark.parametrize("kind", OUTPUTS)
def test_existing_outputs_are_never_replaced_without_overwrite(tmp_path, monkeypatch, capsys, clip, kind):
    flags, existing = OUTPUTS[kind]
    target = tmp_path / existing
    target.parent.mkdir(exist_ok=True)
    target.write_bytes(b"precious")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    extra = [] if "-o" in flags or "--mask-out" in flags else ["--no-video"]
    rc, err = run_main(monkeypatch, capsys, tmp_path, clip, "--backend", "cpu", *extra, *flags)
    assert rc == 2 and "--overwrite" in only_line(err)
    assert target.read_bytes() == b"precious"
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing written
    # With --overwrite it is replaced by a real output.
    rc, err = run_main(monkeypatch, capsys, tmp_path, clip, "--backend", "cpu", *extra, *flags, "--overwrite")
    assert rc == 0, err
    assert target.read_bytes() != b"precious"


def test_snapshot_names_never_replace_a_file(tmp_path):
    first = tmp_path / "cam_snapshot_000004.png"
    assert free_name(first) == first
    first.write_bytes(b"old")
    (tmp_path / "cam_snapshot_000004_2.png").write_bytes(b"old")
    assert free_name(first) == tmp_path / "cam_snapshot_000004_3.png"


# -- reports are written atomically ---------------------------------------------------------


@pytest.mark.parametrize("name", ["e.json", "e.csv"])
def test_reports_appear_whole_by_rename(tmp_path, monkeypatch, capsys, clip, name):
    final = tmp_path / name
    final.write_text("old report\n")
    renames = []
    real_replace = os.replace

    def replace(src, dst):
        src, dst = Path(src), Path(dst)
        # Until the rename the report still holds the old contents; the new one is complete.
        assert final.read_text() == "old report\n"
        data = src.read_bytes()
        if name.endswith(".json"):
            json.loads(data)
        else:
            assert data.startswith(b"index,start_frame") and data.endswith(b"\r\n")
        renames.append((src.resolve().parent, dst.resolve()))
        real_replace(src, dst)

    monkeypatch.setattr("motiondetect.core.files.os.replace", replace)
    rc, err = run_main(monkeypatch, capsys, tmp_path, clip, "--backend", "cpu", "--no-video", "--events", name, "--overwrite")
    assert rc == 0, err
    assert renames == [(tmp_path, final)]  # through a temporary file in the same folder
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["cam.mp4", name])  # no temporary left


def test_report_of_an_interrupted_run_is_whole(tmp_path, monkeypatch, capsys, clip):
    from motiondetect.pipeline.detector import MotionDetector

    real = MotionDetector.process
    calls = []

    def process(self, frame):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(self, frame)

    monkeypatch.setattr(MotionDetector, "process", process)
    rc, err = run_main(monkeypatch, capsys, tmp_path, clip, "--backend", "cpu", "--events", "e.json", "--events", "e.csv", "-o", "o.mp4")
    assert rc == 130
    assert report(tmp_path / "e.json")["complete"] is False
    assert (tmp_path / "e.csv").read_text().startswith("index,")
    cap = cv2.VideoCapture(str(tmp_path / "o.mp4"))
    assert int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) == 3
