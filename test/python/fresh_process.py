"""A Python script run in a fresh interpreter with the fakv under test on
its path: for what a new process sees (imports, the collector's state)."""
import os
import subprocess
import sys

import fakv


def run_fresh(script):
    """The words the script prints (it must succeed)."""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(fakv.__file__))))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()
