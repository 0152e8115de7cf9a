"""Imported for its effect: puts the source tree's frontend/ first on
sys.path when fakv is built there (its extensions next to the sources), so
that the GPU tests, the bench and the demo test the working tree; otherwise
`import fakv` finds the installed package (the wheel, on the GPU machine)."""
import glob
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FRONTEND = os.path.join(ROOT, "frontend")
if glob.glob(os.path.join(FRONTEND, "fakv", "_fakv*.so")) and FRONTEND not in sys.path:
    sys.path.insert(0, FRONTEND)
