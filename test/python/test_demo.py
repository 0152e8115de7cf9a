"""scripts/demo.py, the README's main job on a machine without a GPU: it compiles the decode kernel from its DSL
description and runs it through the CPU path, checked against a float64 reference, and says so (it printed
only the combine kernel as compiled, the API's decode being a copy with its plan's options)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_demo_compiles_and_runs_the_decode_kernel(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend"), FAKV_CACHE_DIR=str(tmp_path))
    env.pop("FAKV_COMPILE_ONLY", None)
    out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "demo.py")], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert sum(line.startswith("[demo] num_splits=") and " PASS " in line for line in lines) == 2
    assert any(line.startswith("[demo] compiled decode: ") and "CPU module" in line for line in lines), out.stdout
    assert any(line.startswith("[demo] compiled combine: ") for line in lines), out.stdout
