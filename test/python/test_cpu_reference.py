"""test/cpu's expected outputs (Inputs/*.expected, read by the lit CPU execution tests) are what
test/cpu/reference.py computes now: an edit to either side without the other fails here, not silently."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_cpu_expected_files_are_current():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "test", "cpu", "reference.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
