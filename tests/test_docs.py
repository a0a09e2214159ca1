"""The manual keeps up with the code: every command-line option of ``motiondetect`` and
``motiondetect evaluate`` is in docs/usage.md, every setting and filter parameter in
docs/configuration.md, and the README stays the short front door (at most 150 lines)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from motiondetect.apps.cli import build_parser
from motiondetect.apps.evaluate import build_parser as evaluate_parser
from motiondetect.filters import REGISTRY
from motiondetect.pipeline.config import SECTIONS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
pytestmark = pytest.mark.skipif(not DOCS.is_dir(), reason="docs/ is not in this copy of the project")


def _options(parser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings if option.startswith("--")}


def test_every_command_line_option_is_in_the_usage_page():
    usage = (DOCS / "usage.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"--[a-z][a-z0-9-]*", usage))
    missing = sorted((_options(build_parser()) | _options(evaluate_parser())) - documented)
    assert not missing, f"options missing from docs/usage.md: {missing}"


def test_the_usage_page_lists_every_choice_of_the_options_with_choices():
    """A choice the parser offers (a new --grid, a backend) appears in the option's row, which
    writes the choices as the parser's help does: ``--grid {a,b,...}``."""
    usage = (DOCS / "usage.md").read_text(encoding="utf-8")
    for parser in (build_parser(), evaluate_parser()):
        for action in parser._actions:
            if action.choices and action.option_strings:
                option = max(action.option_strings, key=len)
                rows = re.findall(re.escape(option) + r" \{([^}]*)\}", usage)
                assert rows, f"docs/usage.md has no row {option} {{...}}"
                for row in rows:
                    assert row.split(",") == [str(c) for c in action.choices], f"{option}: {row} against {list(action.choices)}"


def test_every_setting_and_filter_parameter_is_in_the_configuration_page():
    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| `")]

    def documented(prefix: str, name: str) -> bool:  # a row of its own, or one that groups several
        return any(f"`{prefix}." in row and re.search(rf"[`./ ]{re.escape(name)}`", row) for row in rows)

    missing = [f"{section}.{key}" for section, table in SECTIONS.items() for key in table if not documented(section, key)]
    missing += [f"{name}.{p.name}" for name, cls in REGISTRY.items() for p in cls.PARAMS if not documented(name, p.name)]
    assert not missing, f"missing from docs/configuration.md: {missing}"


def test_the_configuration_page_gives_each_filter_parameters_default():
    """The default column of a parameter's own row is the value the filter uses (it went stale once)."""
    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    defaults = {f"{name}.{p.name}": p.default for name, cls in REGISTRY.items() for p in cls.PARAMS}
    wrong, checked = [], 0
    for row in page.splitlines():
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        key = cells[0].strip("`") if len(cells) >= 3 else ""
        if key not in defaults or not isinstance(defaults[key], (int, float)) or isinstance(defaults[key], bool):
            continue
        checked += 1
        if float(cells[2]) != float(defaults[key]):
            wrong.append(f"{key}: page {cells[2]}, filter {defaults[key]}")
    assert checked >= 20
    assert not wrong, f"docs/configuration.md disagrees with the filters: {wrong}"


def test_the_readme_is_the_front_door():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    assert "python -m pytest -q" in readme  # CI runs this command (.ci/run)
    for image in re.findall(r"\]\((docs/images/[^)]+)\)", readme):
        assert (ROOT / image).is_file(), image


def test_the_python_api_page_shows_what_its_example_prints(capsys, monkeypatch):
    """The page's output block is the example's output on the bundled clip today (CPU backend),
    so a change of the defaults that moves the events shows up here."""
    import runpy

    page = (DOCS / "python-api.md").read_text(encoding="utf-8")
    command = "$ python docs/examples/python_api.py samples/highway_traffic_320x240.avi\n"
    shown = page[page.index(command) + len(command) :].split("```", 1)[0]
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr("sys.argv", ["python_api.py", "samples/highway_traffic_320x240.avi"])
    runpy.run_path(str(DOCS / "examples" / "python_api.py"), run_name="__main__")
    assert capsys.readouterr().out == shown


def test_the_scanning_page_shows_what_its_command_writes(tmp_path, capsys, monkeypatch, restored_logging):
    """The first lines of events.csv on the scanning page are what the command at the top of the
    page writes today (CPU backend; the events do not depend on the other outputs asked for)."""
    from helpers import run_cli

    page = (DOCS / "scanning.md").read_text(encoding="utf-8")
    shown = page[page.index("\nindex,start_frame,") + 1 :].split("```", 1)[0]
    flags = ["--min-area", "0.05", "--merge-gap", "0.5", "--time-before", "0.5", "--time-after", "0.5"]
    assert " ".join(flags) in page
    sample = ROOT / "samples" / "highway_traffic_320x240.avi"
    rc, _, _ = run_cli(monkeypatch, capsys, tmp_path, sample, "--backend", "cpu", "--no-video", "--events", "events.csv", *flags)
    assert rc == 0
    written = (tmp_path / "events.csv").read_text(encoding="utf-8").splitlines()
    assert written[: len(shown.splitlines())] == shown.splitlines()


def _sections(path: Path) -> list[str]:
    """The sections of ``path``: its Markdown headings (not a code block's comments) and the bold
    titles that open a paragraph or a list item (``**The correlation's window** ...``)."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    headings = re.findall(r"^#{1,6} +(.+)$", text, flags=re.M)
    titles = re.findall(r"^(?:- )?\*\*(.+?)\*\*", text, flags=re.M)
    return [t.strip() for t in headings + titles]


def test_every_section_a_config_or_docstring_names_exists():
    """Configs and docstrings point to sections as ``docs/evaluation-log.md, "Exposure"`` or
    ``README, "Detection quality"``; each named section is a heading of that file (the start of
    it: headings carry suffixes such as "(the default)"). Comment and docstring lines are joined
    first, so a reference broken over two lines is checked too."""
    sources = [*sorted((ROOT / "configs").glob("*.yaml")), *sorted((ROOT / "motiondetect").rglob("*.py"))]
    sources += sorted((ROOT / "benchmarks").glob("*.py"))
    reference = re.compile(r"(README|docs/[a-z_-]+\.md)(?:,| section| \()? \"([A-Z][^\"]+)\"")
    found, broken = 0, []
    for path in sources:
        text = re.sub(r"\n\s*(?:#:?\s*)?", " ", path.read_text(encoding="utf-8"))
        for target, title in reference.findall(text):
            found += 1
            sections = _sections(ROOT / ("README.md" if target == "README" else target))
            if not any(s.startswith(title) for s in sections):
                broken.append(f"{path.relative_to(ROOT)}: {target}, {title!r}")
    assert found > 50  # the pattern still matches how the sources write their references
    assert not broken, f"references to sections that do not exist: {broken}"
