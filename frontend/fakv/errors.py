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


def capacity_error(r, length, seqlen_new, capacity, paged):
    """The DataError of a sequence whose keys (cache_seqlens[r] = length,
    plus the new ones) do not fit in its cache: FlashAttention's message
    when paged."""
    if paged:
        return DataError("Paged KV cache: max(seqlens_k)" + (" + seqlen_knew" if seqlen_new else "")
                         + f" (= {length + seqlen_new}) exceeds the capacity addressable by block_table "
                           f"(max_num_blocks_per_seq * page_block_size = {capacity}). Allocate more "
                           f"columns in block_table, otherwise the kernel would index block_table out "
                           f"of bounds. (flash_attn_with_kvcache: cache_seqlens[{r}] = {length})")
    return DataError(f"flash_attn_with_kvcache: cache_seqlens[{r}] = {length}"
                     + (f" + {seqlen_new} new keys" if seqlen_new else "")
                     + f" is outside [0, {capacity}] (the rows the cache holds for a sequence); "
                       f"cache_seqlens ({length + seqlen_new}) exceeds the cache ({capacity} rows)")
