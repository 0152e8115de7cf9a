"""Markers for the tests that need something of the machine."""
import pytest

from fakv import ptx


def _has_assembler():
    try:
        ptx.assembler()
        return True
    except ptx.AssemblerError:
        return False


HAS_ASSEMBLER = _has_assembler()
needs_assembler = pytest.mark.skipif(not HAS_ASSEMBLER, reason="needs nvJitLink or ptxas (the CUDA toolkit)")
