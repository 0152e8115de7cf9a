"""fakv.heuristics.num_splits_heuristic at the bounds of each of its rules, the values worked out by hand from
the seed's FlashAttention heuristic (../shared/seeds: enough programs -> 1 split unless one KV head misses L2
with many query blocks; 4 key blocks or fewer -> 1; else the fewest splits within 85 % of the best wave
efficiency)."""
import pytest

from fakv.heuristics import num_splits_heuristic

L2 = 50 * 1024 * 1024


def splits(total_mblocks, num_n_blocks, num_sms=132, num_m_blocks=1, size_one_kv_head=1 << 20, max_splits=128,
           l2_bytes=L2):
    return num_splits_heuristic(total_mblocks, num_sms, num_n_blocks, num_m_blocks, size_one_kv_head, False,
                                max_splits, l2_bytes)


def test_enough_programs_is_at_80_percent_of_the_sms():
    """0.8 x 132 = 105.6: 106 programs are enough (1 split); 105 are not: one split fills 105/132 = 0.795 of a
    wave, as do 2-4 (1.59 / 2, ...), 5 fill 3.977 / 4 = 0.994 >= 0.85 x the best -> 5."""
    assert splits(106, 64) == 1
    assert splits(105, 64) == 5
    # Exactly 0.8 x the SMs is enough (FlashAttention's >=): 8 programs on 10 SMs -> 1; 7 are not: 4 splits
    # fill 2.8 / 3 = 0.93 of the waves, the first within 0.85 of the best (10 splits: 7 / 7) -> 4.
    assert splits(8, 64, num_sms=10) == 1
    assert splits(7, 64, num_sms=10) == 4


def test_four_key_blocks_are_too_few():
    """8 programs on 132 SMs: with 4 key blocks no split; with 5, one wave of 8s programs for s <= 5, the best
    40/132, and 4 splits' 32/132 below 0.85 of it -> 5."""
    assert splits(8, 4) == 1
    assert splits(8, 5) == 5


def test_the_fewest_splits_within_85_percent_of_the_best():
    """8 programs, 64 key blocks: 33 splits fill two waves exactly (efficiency 1); one wave of 8s programs
    reaches 0.85 at s = 14.03: 14 splits (112/132 = 0.848) fall short, 15 (0.909) do not -> 15. With at
    most 12 splits the best is 96/132 and 11 splits' 88/132 = 0.917 of it -> 11."""
    assert splits(8, 64) == 15
    assert splits(8, 64, max_splits=12) == 11
    assert splits(8, 10) == 9                        # capped by the key blocks: 72/80 of the best (0.9)


def test_a_kv_head_past_l2_with_many_query_blocks():
    """Enough programs, but one KV head larger than L2 and at least 2 x SMs query blocks: ceil(size / L2)
    splits, at most max_splits; a head of exactly L2, or one query block fewer, keeps 1."""
    many = dict(num_m_blocks=264)
    assert splits(200, 64, size_one_kv_head=L2 * 5 // 2, **many) == 3
    assert splits(200, 64, size_one_kv_head=L2 * 5 // 2, max_splits=2, **many) == 2
    assert splits(200, 64, size_one_kv_head=L2, **many) == 1
    assert splits(200, 64, size_one_kv_head=L2 * 5 // 2, num_m_blocks=263) == 1
    assert splits(200, 64, size_one_kv_head=L2 * 5 // 2, l2_bytes=L2 * 4, **many) == 1   # the device's L2


@pytest.mark.parametrize("total", [1, 7, 50, 105])
def test_never_more_splits_than_allowed(total):
    for max_splits in (1, 2, 3, 17):
        assert 1 <= splits(total, 64, max_splits=max_splits) <= max_splits
