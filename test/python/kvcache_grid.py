"""FlashAttention's kvcache test grids, the parts the CPU-path port
(test_kvcache.py) and the GPU port (test/gpu/test_kvcache.py) share: which
parameter combinations are valid, a deterministic sample of a grid, and a
case's name (its inputs are seeded from it), and which cache rows an append writes."""
import random

import numpy as np


def valid(c):
    sq, sk = c["seqlens"]
    if sq > sk and c["new_kv"]:
        return False
    if not c["new_kv"] and c["rotary_fraction"] > 0:
        return False
    if c.get("grid") == "fa3" and c["page_size"] and sk % c["page_size"]:   # FlashAttention 3's own skip
        return False
    return True


def sample(axes, n, seed, grid=None):
    """n distinct valid cases drawn from the product of `axes`; an axis
    `causal_local` of pairs sets `causal` and `local` together."""
    rng = random.Random(seed)
    out, seen = [], set()
    while len(out) < n:
        c = {k: rng.choice(v) for k, v in axes.items()}
        if "causal_local" in c:
            c["causal"], c["local"] = c.pop("causal_local")
        if grid:
            c["grid"] = grid
        ident = repr(sorted(c.items()))
        if valid(c) and ident not in seen:
            seen.add(ident)
            out.append(c)
    return out


def case_id(c):
    sq, sk = c["seqlens"]
    return (f"{c['grid'] + '-' if 'grid' in c else ''}{c['dtype']}-d{c['d']}-{c['mha_type']}-sq{sq}sk{sk}-"
            f"{'new' if c['new_kv'] else 'old'}"
            f"{'-causal' if c['causal'] else ''}{'-local' if c['local'] else ''}{'-alibi' if c['alibi'] else ''}"
            f"-rot{c['rotary_fraction']}{'i' if c['rotary_interleaved'] else 'n'}-page{c['page_size']}"
            f"{'-leftpad' if c['has_leftpad'] else ''}{'-bidx' if c['has_batch_idx'] else ''}-s{c['num_splits']}")


def appended_rows(cache_shape, seqlens, seqlen_new, table=None, batch_idx=None):
    """Where an append of `seqlen_new` keys at cache_seqlens writes: a boolean mask over the cache's first two
    dimensions (pages x rows of a page, or cache rows x positions); every other row must be left as it was."""
    mask = np.zeros(cache_shape[:2], bool)
    for i, n in enumerate(np.asarray(seqlens).reshape(-1).tolist()):
        row = i if batch_idx is None else int(batch_idx[i])
        for p in range(int(n), int(n) + seqlen_new):
            if table is None:
                mask[row, p] = True
            else:
                mask[int(table[row][p // cache_shape[1]]), p % cache_shape[1]] = True
    return mask
