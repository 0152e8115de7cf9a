"""The exceptions fakv raises for bad input.

FakvError derives from both ValueError (fakv's own contract: a bad argument)
and RuntimeError (what FlashAttention raises, through TORCH_CHECK), so code
written for either catches it.
"""


class FakvError(ValueError, RuntimeError):
    """An argument fakv cannot run: a wrong shape, dtype, device or value."""


class DataError(FakvError):
    """Bad data in an argument's contents, found by a kernel (reported by
    the next call or fakv.synchronize()) or by FAKV_CHECK_DATA=1's checks."""
