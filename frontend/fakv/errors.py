"""The exceptions fakv raises: for kernels that do not compile, and for bad
input.

FakvError derives from both ValueError (fakv's own contract: a bad argument)
and RuntimeError (what FlashAttention raises, through TORCH_CHECK), so code
written for either catches it.
"""


class CompilationError(Exception):
    """A kernel that cannot be compiled; the message points at its source."""

    def __init__(self, message, filename=None, line=None, source_line=None):
        self.filename, self.line = filename, line
        where = f"{filename}:{line}: " if filename else ""
        text = f"{where}{message}"
        if source_line:
            text += f"\n    {source_line.strip()}"
        super().__init__(text)


class FakvError(ValueError, RuntimeError):
    """An argument fakv cannot run: a wrong shape, dtype, device or value."""


class DataError(FakvError):
    """Bad data in an argument's contents, found by a kernel (reported by
    the next call or fakv.synchronize()) or by FAKV_CHECK_DATA=1's checks."""
