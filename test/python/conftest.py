"""Python tests of the fakv package (frontend/fakv) and of the kernels in
kernels/, on the CPU path. The package is used from the source tree: the
extension and the runtime library are built into frontend/fakv by CMake."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for p in ("frontend", os.path.join("test", "cpu")):
    path = os.path.join(ROOT, p)
    if path not in sys.path:
        sys.path.insert(0, path)

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "fakv-cache"))
