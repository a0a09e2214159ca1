"""The wheel carries the kernels and the presets, and an installed copy finds them without the source tree."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("hatchling", reason="building the wheel needs hatchling (pip install '.[test]')")

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-q", "-w", str(out)],
        check=True,
    )
    return next(out.glob("motiondetect-*.whl"))


def test_wheel_contains_every_kernel_and_the_console_script(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for source in (ROOT / "kernels").glob("*.cu"):
        assert f"motiondetect/kernels/{source.name}" in names
    for preset in (ROOT / "configs").glob("*.yaml"):
        assert f"motiondetect/configs/{preset.name}" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "motiondetect = motiondetect.__main__:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_installed_wheel_finds_its_kernels_and_presets_outside_the_source_tree(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    target = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True, check=True
    ).stdout.strip()
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(target)  # a wheel install is an unpack into site-packages
    # Dependencies (numpy, cv2...) come from this interpreter's site-packages, listed after the
    # fresh venv's own, so the unpacked motiondetect wins over any editable install.
    (Path(target) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    probe = (
        "from motiondetect.gpu.kernel_sources import kernel_dir; import motiondetect; print(kernel_dir()); print(motiondetect.__file__)\n"
        "from motiondetect.pipeline.presets import preset_dir; from motiondetect.pipeline.config import load_config\n"
        "print(preset_dir()); print(load_config('outdoor')['pipeline'][3]['light_field'])"
    )
    # Without PYTHONPATH: a developer's PYTHONPATH=. would put the source tree first.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    kernels, package, presets, light_field = result.stdout.split()
    assert Path(kernels) == Path(target) / "motiondetect" / "kernels"
    assert Path(package).is_relative_to(target)
    assert {p.name for p in Path(kernels).glob("*.cu")} == {p.name for p in (ROOT / "kernels").glob("*.cu")}
    assert Path(presets) == Path(target) / "motiondetect" / "configs" and float(light_field) == 24.0  # -c outdoor


def test_scikit_cuda_imports_without_pkg_resources():
    """scikit-cuda 0.5.3 reads its version through pkg_resources, which setuptools 81 dropped
    and which costs 0.2 s to import; motiondetect imports the package without it, in a fresh
    interpreter here (its CUDA libraries are not needed for the package itself). scikit-cuda
    requires PyCUDA, which builds only with the CUDA toolkit, so this runs where the [cuda]
    extra is installed (the GPU machine)."""
    import importlib.metadata
    import importlib.util

    if importlib.util.find_spec("skcuda") is None:
        pytest.skip("scikit-cuda is not installed (pip install '.[cuda]')")
    code = (
        "import sys\n"
        "from motiondetect.gpu.blas import _import_package\n"
        "_import_package()\n"
        "import skcuda\n"
        "print(skcuda.__version__, 'pkg_resources' in sys.modules, len(list(skcuda.__path__)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    assert out == [importlib.metadata.version("scikit-cuda"), "False", "1"]
