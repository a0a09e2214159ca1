"""Every kernel source compiles with nvcc for Hopper (sm_90), where nvcc is on the PATH.

CI has nvcc but no GPU: this catches syntax and type errors in kernels/*.cu before the GPU
machine sees them.
"""

import shutil
import subprocess

import pytest

from motiondetect.gpu.kernel_sources import kernel_dir

NVCC = shutil.which("nvcc")
KERNELS = sorted(kernel_dir().glob("*.cu"))


def test_every_filter_has_its_kernel_file():
    from motiondetect.filters import REGISTRY

    names = {path.stem for path in KERNELS}
    assert {cls.KERNEL for cls in REGISTRY.values()} <= names


@pytest.mark.skipif(NVCC is None, reason="nvcc not on the PATH")
@pytest.mark.parametrize("source", KERNELS, ids=lambda p: p.name)
def test_kernel_compiles_for_sm90(source, tmp_path):
    # PyCUDA wraps sources in extern "C"; compile them the same way so names stay unmangled.
    # The wrapped copy lives elsewhere, so the kernel folder is on the include path (as
    # CUDAHandler passes it to SourceModule) for the shared headers such as batch.cuh.
    wrapped = tmp_path / source.name
    wrapped.write_text('extern "C" {\n' + source.read_text() + "\n}\n")
    result = subprocess.run(
        [
            NVCC,
            "-arch=sm_90",
            "-cubin",
            "-Werror",
            "all-warnings",
            "-I",
            str(kernel_dir()),
            "-o",
            str(tmp_path / "out.cubin"),
            str(wrapped),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
