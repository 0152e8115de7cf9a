"""The work lists of kernels/worklist.py's persistent decode, from a batch's lengths: the batch's key blocks,
longest sequence first, cut into `programs` equal runs, one a program; a sequence cut between programs is run in
parts whose results the last to finish merges. Each program runs the parts of cut sequences first (their merges
then happen early, not at the call's end), then its whole sequences. Entries, per program and block:
work = sequence << 16 | block; flags = FRESH (its part's first block: the running max / sum reset) | LAST (its
part's last block) | part << 2 | parts << 5 | the block's keys << 9. A sequence without a key gets one block of
none (output 0, LSE +inf). The lists hold the lengths they were made from: a call must not change them."""
import numpy as np

FRESH, LAST = 1, 2
MAX_PARTS = 8                # parts of one sequence, at most (the part's index: three bits; parts: four)


def work_list(lengths, programs, block_n, cut=True, capacity=None):
    """(work, flags [programs, most blocks a program] int32, count [programs] int32) for host integer
    `lengths` (each in [0, capacity]: the kernel reads no length, so a bad one is refused here) in blocks of
    `block_n` keys (the kernel's BLOCK_N). cut=False: whole sequences only, longest first to the program with
    the fewest blocks so far, then moves and swaps (no merges; programs as even as whole sequences allow)."""
    lengths = [int(n) for n in lengths]
    if not lengths or programs < 1:
        raise ValueError(f"work_list: a batch of at least one sequence and one program, got {len(lengths)} "
                         f"sequences and {programs} programs")
    if len(lengths) >= 1 << 15:
        raise ValueError(f"work_list: at most {(1 << 15) - 1} sequences, got {len(lengths)}")
    bad = [b for b, n in enumerate(lengths) if n < 0 or (capacity is not None and n > capacity)]
    if bad:
        raise ValueError(f"work_list: sequence {bad[0]}'s length {lengths[bad[0]]} is outside [0, "
                         f"{'its cache' if capacity is None else capacity}]")
    blocks = [max(-(-n // block_n), 1) for n in lengths]
    if max(blocks) >= 1 << 16:
        raise ValueError(f"work_list: at most {(1 << 16) - 1} key blocks a sequence, got {max(blocks)}")

    def entries(b, lo, hi, k, parts):     # part k of `parts` of sequence b: its blocks [lo, hi)
        return [(b << 16 | i, (FRESH if i == lo else 0) | (LAST if i == hi - 1 else 0) | k << 2 | parts << 5
                 | min(lengths[b] - i * block_n, block_n) << 9) for i in range(lo, hi)]

    runs = [([], []) for _ in range(programs)]        # per program: (cut parts, whole sequences)
    if not cut:
        for p, seqs in enumerate(_balanced(blocks, programs)):
            for b in sorted(seqs, key=lambda b: (-blocks[b], b)):
                runs[p][1].extend(entries(b, 0, blocks[b], 0, 1))
        return _arrays(runs, programs)
    chunk, at = -(-sum(blocks) // programs), 0
    for b in sorted(range(len(blocks)), key=lambda b: (-blocks[b], b)):
        cuts = [at] + [c for c in range((at // chunk + 1) * chunk, at + blocks[b], chunk)] + [at + blocks[b]]
        parts = len(cuts) - 1
        if parts > MAX_PARTS:
            raise ValueError(f"work_list: sequence {b} ({blocks[b]} blocks) would run in {parts} parts, "
                             f"at most {MAX_PARTS}: use more blocks a program")
        for k in range(parts):
            runs[cuts[k] // chunk][0 if parts > 1 else 1].extend(entries(b, cuts[k] - at, cuts[k + 1] - at, k, parts))
        at += blocks[b]
    return _arrays(runs, programs)


def _balanced(blocks, programs):
    """Whole sequences into `programs` bins of near-equal blocks: longest first to the lightest bin (LPT), then
    moves and swaps out of the heaviest bin while they lower it below where it was."""
    bins, load = [[] for _ in range(programs)], [0] * programs
    for b in sorted(range(len(blocks)), key=lambda b: (-blocks[b], b)):
        p = min(range(programs), key=lambda p: (load[p], p))
        bins[p].append(b)
        load[p] += blocks[b]
    for _ in range(4 * len(blocks)):
        hi = max(range(programs), key=lambda p: (load[p], -p))
        best = None                      # (the pair's new larger load, from item, to bin, to item or None)
        for a in bins[hi]:
            for p in range(programs):
                if p == hi:
                    continue
                for c in [None] + bins[p]:
                    d = blocks[a] - (blocks[c] if c is not None else 0)
                    if d <= 0:
                        continue
                    worse = max(load[hi] - d, load[p] + d)
                    if worse < load[hi] and (best is None or worse < best[0]):
                        best = (worse, a, p, c)
        if best is None:
            break
        _, a, p, c = best
        bins[hi].remove(a)
        bins[p].append(a)
        d = blocks[a]
        if c is not None:
            bins[p].remove(c)
            bins[hi].append(c)
            d -= blocks[c]
        load[hi] -= d
        load[p] += d
    return bins


def _arrays(runs, programs):
    count = np.array([len(cut) + len(whole) for cut, whole in runs], np.int32)
    work = np.zeros((programs, max(int(count.max()), 1)), np.int32)
    flags = np.zeros_like(work)
    for p, (cut, whole) in enumerate(runs):
        for f, (w, g) in enumerate(cut + whole):
            work[p, f], flags[p, f] = w, g
    return work, flags, count
