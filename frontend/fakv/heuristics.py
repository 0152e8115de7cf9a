"""How many splits of the keys a decode call uses when num_splits=0: the
seed's FlashAttention heuristic, with the device's L2 size; `num_sms` is
the number of programs that run at once (fakv.interface.plan passes the SMs
times the decode programs one SM holds)."""
import math


def num_splits_heuristic(total_mblocks, num_sms, num_n_blocks, num_m_blocks, size_one_kv_head,
                         is_causal_or_local, max_splits, l2_bytes=50 * 1024 * 1024):
    # Enough programs already: no split, unless the KV of one head misses L2
    # and there are many query blocks.
    if total_mblocks >= 0.8 * num_sms:
        if size_one_kv_head > l2_bytes and num_m_blocks >= num_sms * 2:
            return min((size_one_kv_head + l2_bytes - 1) // l2_bytes, max_splits)
        return 1
    # Too few key blocks to split.
    if num_n_blocks <= 4:
        return 1
    max_splits = min(max_splits, num_sms, num_n_blocks)
    efficiency = []
    for s in range(1, max_splits + 1):
        n_waves = total_mblocks * s / num_sms
        efficiency.append(n_waves / math.ceil(n_waves))
    best = max(efficiency)
    # The fewest splits within 85% of the best wave efficiency.
    for s in range(1, max_splits + 1):
        if efficiency[s - 1] >= 0.85 * best:
            return s
    return 1
