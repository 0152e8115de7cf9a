"""Every kind of flash_attn_with_kvcache call compiles for sm_90a, without a
GPU: a deterministic sample of the API's configurations (head dims 32, 59,
128, 256; 1, 4 or 32 query heads per kv head; paged or contiguous; new
keys with no, interleaved, NeoX or partial rotary; cache_leftpad; causal;
planned, three and merged splits) run in compile-only mode, each kernel
through the whole GPU pipeline to a cubin that the assembler (nvJitLink or
ptxas) accepts. A configuration the GPU lowering cannot take (a register
tile past its limit, a layout it cannot convert) fails here, not first on
the H200. Then every cell of bench/bench_grid.py, as planned."""
import itertools
import os
import subprocess
import sys

import pytest

from needs import needs_assembler

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

GRID = list(itertools.product((32, 59, 128, 256), (1, 4, 32), (True, False), ("none", "interleaved", "neox", "half"),
                              (1, 3), (False, True), (False, True), ("planned", "3", "merged")))
# A fixed thirteenth (every value of every axis), and the largest tiles: head dim 256, 32 query heads
# per kv head (MQA), three causal queries, each split mode.
SAMPLE = [c for i, c in enumerate(GRID) if i % 13 == 0] + \
    [(256, 32, paged, "neox", 3, True, False, splits) for paged in (True, False) for splits in ("planned", "3", "merged")]

SCRIPT = """
import os, sys, json, numpy as np, ml_dtypes
import fakv
from fakv import interface, prepare
bf = ml_dtypes.bfloat16
failed = []
page = int(sys.argv[2])
for d, group, paged, rotary, new, causal, leftpad, splits in json.loads(sys.argv[1]):
    prepare.MERGE_SPLITS = splits == "merged"
    hk, b, cap = 2, 2, 512
    q = np.zeros((b, new if causal else 1, hk * group, d), bf)
    if paged:
        k = np.zeros((b * cap // page, page, hk, d), bf)
        table = np.arange(b * cap // page, dtype=np.int32).reshape(b, -1)
    else:
        k, table = np.zeros((b, cap, hk, d), bf), None
    kn = np.zeros((b, new, hk, d), bf)
    kw = {"cache_leftpad": np.zeros((b,), np.int32)} if leftpad else {}
    if rotary != "none":
        rd = (d // 2) & ~1 if rotary == "half" else d & ~1
        angles = np.zeros((cap, rd // 2), bf)
        kw.update(rotary_cos=angles, rotary_sin=angles, rotary_interleaved=rotary == "interleaved")
    try:
        fakv.flash_attn_with_kvcache(q, k, k.copy(), kn, kn, cache_seqlens=np.array([10, 300], np.int32),
                                     block_table=table, causal=causal,
                                     num_splits=0 if splits == "planned" else 3, **kw)
    except Exception as e:  # noqa: BLE001
        failed.append([d, group, paged, rotary, new, causal, leftpad, splits, str(e)[-300:]])
print(json.dumps(failed))
"""


def _compile_only(script, cache, *args, **env):
    """`script` (its arguments `args`) in a fresh process, compile-only, on the source tree's fakv, its kernel cache
    in `cache`, `env` added (None: that variable removed): (its last line of output as JSON, or None; its stderr)."""
    import json
    full = dict(os.environ, FAKV_CACHE_DIR=str(cache), FAKV_COMPILE_ONLY="1", PYTHONPATH=os.path.join(ROOT, "frontend"))
    full.update((name, value) for name, value in env.items() if value is not None)
    for name in [name for name, value in env.items() if value is None]:
        full.pop(name, None)
    out = subprocess.run([sys.executable, "-c", script, *args], env=full, capture_output=True, text=True,
                         timeout=1200)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    return (json.loads(lines[-1]) if lines else None), out.stderr


def _compile_sample(tmp_path, sample, page=256, **env):
    """SCRIPT's compile-only calls of `sample` in a fresh process (cache in tmp_path, `env` added; paged caches in
    pages of `page`): the calls that failed."""
    import json
    return _compile_only(SCRIPT, tmp_path, json.dumps(sample), str(page), **env)[0]


@needs_assembler
def test_every_kind_of_call_compiles_for_sm90a(tmp_path):
    assert {c[3] for c in SAMPLE} == {"none", "interleaved", "neox", "half"}
    assert {c[0] for c in SAMPLE} == {32, 59, 128, 256} and {c[7] for c in SAMPLE} == {"planned", "3", "merged"}
    failed = _compile_sample(tmp_path, SAMPLE)
    assert not failed, "\n".join(map(str, failed))
    cubins = [f for f in os.listdir(tmp_path) if f.endswith(".cubin")]
    assert len(cubins) >= 20, cubins          # decode, combine and append specialisations


@needs_assembler
def test_every_paged_kind_of_call_compiles_with_small_pages_gathered(tmp_path):
    """The sample's paged calls in pages of 16 with FAKV_GATHER_PAGES=1 (every call's pages gathered by cp.async,
    not by a TMA box per page): new keys, rotary, cache_leftpad, causal, planned, three and merged splits."""
    sample = [c for c in SAMPLE if c[2]]
    assert {c[3] for c in sample} == {"none", "interleaved", "neox", "half"} and {c[7] for c in sample} == {
        "planned", "3", "merged"}
    failed = _compile_sample(tmp_path, sample, page=16, FAKV_GATHER_PAGES="1")
    assert not failed, "\n".join(map(str, failed))
    import json
    decodes = [kern for f in os.listdir(tmp_path) if f.endswith(".json") and not f.startswith("index")
               for kern in json.load(open(tmp_path / f)).get("facts", {}).get("kernels", [])
               if kern["name"] == "decode"]
    assert len(decodes) >= 10 and all(not kern.get("tensormaps") for kern in decodes)     # (no TMA box per page)


@needs_assembler
def test_the_64_row_form_compiles_for_sm90a(tmp_path):
    """FAKV_SWAP_AB=0: every fifth call of the sample in the 64-row form (decode's dots with the query rows as
    wgmma's M, key blocks of 32 at head dim 128), which the plan now keeps for programs of 64 rows or more."""
    import json
    sample = SAMPLE[::5]
    assert {c[0] for c in sample} == {32, 59, 128, 256} and {c[7] for c in sample} == {"planned", "3", "merged"}
    failed = _compile_sample(tmp_path, sample, FAKV_SWAP_AB="0", FAKV_ROW_BOXES="0")
    assert not failed, "\n".join(map(str, failed))
    facts = [json.load(open(tmp_path / f))["facts"] for f in os.listdir(tmp_path) if f.endswith(".json")]
    rows = {m["rows"] for f in facts for kern in f["kernels"] if kern["name"] == "decode"
            for m in kern.get("tensormaps", [])}
    assert 32 in rows, rows                   # head dim 128's key blocks of 32 (swapped: 64), a box each


GATHER_SCRIPT = """
import glob, json, os, numpy as np, ml_dtypes
import fakv
from fakv import interface
bf = ml_dtypes.bfloat16
rows = []
for page in (16, 64):
    b, hk, cap = 1, 2, 1024
    q = np.zeros((b, 1, hk * 4, 128), bf)
    k = np.zeros((b * cap // page, page, hk, 128), bf)
    table = np.arange(b * cap // page, dtype=np.int32).reshape(b, -1)
    before = set(glob.glob(os.environ["FAKV_CACHE_DIR"] + "/*.json"))
    fakv.flash_attn_with_kvcache(q, k, k.copy(), cache_seqlens=np.array([1000], np.int32), block_table=table)
    new = set(glob.glob(os.environ["FAKV_CACHE_DIR"] + "/*.json")) - before
    kernels = [kern for f in new for kern in json.load(open(f))["facts"]["kernels"] if kern["name"] == "decode"]
    options = interface.plan(b, 1, hk * 4, hk, 128, "bf16", True, page, cap, False, 0)["decode_options"]
    rows.append([page, options.get("gather_pages", False), [len(kern.get("tensormaps", [])) for kern in kernels]])
print(json.dumps(rows))
"""


@needs_assembler
def test_gather_pages_option_compiles_for_sm90a(tmp_path):
    """FAKV_GATHER_PAGES=1 (@fakv.jit(gather_pages=True)): pages smaller than a key block (16 keys, blocks of 64)
    are gathered by decode's producer threads, its kernel without tensor maps; pages of a block or more still go by
    TMA (two maps, K and V); unset, pages of 16 go by TMA too."""
    for setting, gathered in (("1", True), ("", False)):
        rows, _ = _compile_only(GATHER_SCRIPT, tmp_path / (setting or "unset"), FAKV_GATHER_PAGES=setting)
        assert rows == [[16, gathered, [0 if gathered else 2]], [64, False, [2]]], (setting, rows)


ADAPTIVE_SCRIPT = """
import json, numpy as np, ml_dtypes
import fakv
from fakv import interface
bf = ml_dtypes.bfloat16
interface.T.device_properties = lambda x: (2, 50 << 20, 3352)     # a GPU of 2 SMs: a batch of 2 x 2 kv heads fills it
interface._ADAPTIVE_SPLITS = 4                              # FAKV_ADAPTIVE_SPLITS=4
planned = []
for d, paged, new in ((64, True, 0), (128, False, 0), (128, True, 1)):
    b, hk, cap = 2, 2, 4096
    q = np.zeros((b, 1, 8, d), bf)
    if paged:
        k, table = np.zeros((b * cap // 256, 256, hk, d), bf), np.arange(b * cap // 256, dtype=np.int32).reshape(b, -1)
    else:
        k, table = np.zeros((b, cap, hk, d), bf), None
    kn = np.zeros((b, new, hk, d), bf) if new else None
    p = interface.plan(b, 1, 8, hk, d, "bf16", paged, 256 if paged else cap, cap, False, 0, 2, 50 << 20, bool(new))
    planned.append(p["decode"]["ADAPTIVE"])
    fakv.flash_attn_with_kvcache(q, k, k.copy(), kn, kn, cache_seqlens=np.array([10, 3000], np.int32),
                                 block_table=table)
print(json.dumps(planned))
"""


@needs_assembler
def test_adaptive_splits_compile_for_sm90a(tmp_path):
    """decode.py with ADAPTIVE (FAKV_ADAPTIVE_SPLITS; kernels/splits.py: every length of the batch
    read, unrolled) through the GPU pipeline to a cubin, paged and not,
    head dims 64 and 128, with new keys too."""
    assert _compile_only(ADAPTIVE_SCRIPT, tmp_path)[0] == [2, 2, 2]
    assert len([f for f in os.listdir(tmp_path) if f.endswith(".cubin")]) >= 5   # 3 decodes, 2 combines


LONGEST_FIRST_SCRIPT = """
import glob, json, os, numpy as np, ml_dtypes
import fakv
from fakv import interface
bf = ml_dtypes.bfloat16
interface._LONGEST_FIRST = True                             # (the default)
rows = []
for d, page in ((128, 256), (128, 16), (64, 0)):
    b, hk, cap = 128, 8, 4096                               # 1024 programs: several waves of 264 on 132 SMs
    q = np.zeros((b, 1, 32, d), bf)
    if page:
        k, table = np.zeros((b * cap // page, page, hk, d), bf), np.arange(b * cap // page, dtype=np.int32).reshape(b, -1)
    else:
        k, table = np.zeros((b, cap, hk, d), bf), None
    p = interface.plan(b, 1, 32, hk, d, "bf16", bool(page), page or cap, cap, False, 0, 132, 50 << 20)
    before = set(glob.glob(os.environ["FAKV_CACHE_DIR"] + "/*.json"))
    fakv.flash_attn_with_kvcache(q, k, k.copy(), cache_seqlens=np.full(b, cap, np.int32), block_table=table)
    facts = [json.load(open(f))["facts"]["kernels"][0] for f in set(glob.glob(os.environ["FAKV_CACHE_DIR"] + "/*.json")) - before]
    rows.append([p["decode"]["LONGEST_FIRST"], list(p["decode_grid"]), [f["grid_packing"] for f in facts]])
print(json.dumps(rows))
"""


@needs_assembler
def test_longest_first_compiles_for_sm90a(tmp_path):
    """decode.py with LONGEST_FIRST (kernels/splits.py's longest_first: the batch's 128
    lengths as one tile, reduced to scalars) through the GPU pipeline to a cubin, paged 256 and 16 at head dim
    128 and contiguous at 64: planned with the heads on grid axis 0 and packed there (its facts' grid_packing),
    and with ptxas's report (FAKV_DUMP_IR) at most 128 registers and no spill, so that two programs still share
    an SM at full speed (at most 120: the main loop as without the sort)."""
    import re
    rows, stderr = _compile_only(LONGEST_FIRST_SCRIPT, tmp_path, FAKV_DUMP_IR="1")
    assert rows == [[128, [32, 128, 1], [[4, 1, 1]]]] * 3, rows
    ptxs = _dumped_ptx(stderr, "decode")
    assert len(ptxs) == 3
    # The reductions' scalars broadcast from lane 0 (fakv.item), so that ptxas keeps the sequence index and what is
    # made of it uniform: else the main loop grows by a third (docs/decisions.md, "Heads first").
    assert all(re.search(r"shfl\.sync\.idx\.b32\s+%r\d+, %r\d+, 0, 31, -1;", body) for body in ptxs)
    for i, body in enumerate(ptxs):
        used = _registers(tmp_path / f"decode{i}.ptx", body)
        # (without the sort 111; 126 when the index was not known uniform)
        assert used <= 120


def _ptxas():
    from fakv import ptx
    return next((p for p in ptx._ptxas_candidates() if os.path.isfile(p)), None)


def _dumped_ptx(stderr, kernel):
    """The PTX of each compilation of `kernel` that FAKV_DUMP_IR printed."""
    import re
    parts = re.split(r"^// (ptx|llvm|fakv IR|fakvgpu) of (\w+).*$", stderr, flags=re.M)
    return [parts[i + 2] for i in range(1, len(parts) - 2, 3) if parts[i] == "ptx" and parts[i + 1] == kernel]


def _registers(path, ptx, max_spill=0):
    """The registers ptxas -v reports for `ptx` (written to `path`), asserting that it assembles with at most
    `max_spill` bytes of spill stores and without warpgroup arrives ptxas had to inject (C7519: an accumulator
    register written between wgmma.fence and the wgmma that reads it); the test skipped without ptxas
    (nvJitLink alone gives no report: its register bounds were checks that could not fail)."""
    import re
    ptxas = _ptxas()
    if ptxas is None:
        pytest.skip("ptxas -v reports the registers (CI has it)")
    path.write_text(ptx)
    r = subprocess.run([ptxas, "-arch=sm_90a", "-v", str(path), "-o", os.devnull], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    spills = [int(n) for n in re.findall(r"\b(\d+) bytes spill stores", r.stdout + r.stderr)]
    assert spills and max(spills) <= max_spill, r.stdout + r.stderr
    assert "C7519" not in r.stdout + r.stderr, r.stdout + r.stderr
    return int(re.search(r"Used (\d+) registers", r.stdout + r.stderr).group(1))


SMALL_PAGES_SCRIPT = """
import glob, json, os, sys, numpy as np, ml_dtypes
import fakv
from fakv import interface
bf = ml_dtypes.bfloat16
rows = []
for d in (64, 128, 256):
    for page in (4, 8, 16, 24, 32):
        hk, b = 2, 2
        cap = 4032 if page == 24 else 4096
        q = np.zeros((b, 1, hk * 4, d), bf)
        k = np.zeros((b * cap // page, page, hk, d), bf)
        table = np.arange(b * cap // page, dtype=np.int32).reshape(b, -1)
        before = set(glob.glob(os.environ["FAKV_CACHE_DIR"] + "/*.json"))
        fakv.flash_attn_with_kvcache(q, k, k.copy(), cache_seqlens=np.array([10, 4000], np.int32),
                                     block_table=table, num_splits=1)
        (new,) = set(glob.glob(os.environ["FAKV_CACHE_DIR"] + "/*.json")) - before
        (kern,) = json.load(open(new))["facts"]["kernels"]
        p = interface.plan(b, 1, hk * 4, hk, d, "bf16", True, page, cap, False, 1)
        rows.append([d, page, p["decode"]["BLOCK_N"], p["decode_options"]["stages"],
                     sorted({m["rows"] for m in kern.get("tensormaps", [])}), kern["smem_bytes"]])
print(json.dumps(rows))
"""


@needs_assembler
def test_pages_smaller_than_a_block_compile_for_sm90a(tmp_path):
    """Pages smaller than a key block, through the GPU pipeline to cubins
    (one split: the longest share, so the plan's extra ring stage where it
    applies): whole swizzle atoms that divide the block (8, 16, 32 rows) are
    copied by a TMA box per page (the kernel's tensor maps have the page's
    rows, or 16 of them: row boxes, the default up to head dim 128), pages
    of 4 and 24 by the gather (no tensor map); every kernel fits an sm_90
    block's 227 KiB of shared memory."""
    rows, _ = _compile_only(SMALL_PAGES_SCRIPT, tmp_path)
    assert len(rows) == 15
    for d, page, block_n, stages, boxes, smem in rows:
        tma = page % 8 == 0 and block_n % page == 0
        assert boxes == ([min(page, 16) if d <= 128 else page] if tma else []), (d, page, boxes)
        base = 3 if d <= 128 else 2
        long_split = -(-(4032 if page == 24 else 4096) // block_n) >= 64
        ring = 2 * block_n * max(64, 1 << (d - 1).bit_length()) * 2         # a K and a V block per stage
        fits = d > 128 or (base + 1) * ring <= 96 * 1024                  # (two programs per SM up to d128)
        # (swapped head dim 64 keeps three: interface._plan, session 39)
        assert stages == base + (1 if page < block_n and long_split and fits and d > 64 else 0), (d, page, stages)
        assert smem <= 227 * 1024, (d, page, smem)


def _swapped_decodes(tmp_path, script, **env):
    """The decode PTX of each compilation `script` makes with FAKV_SWAP_AB=1 (compile only), and the wgmma shapes
    of each."""
    import re
    ptxs = _dumped_ptx(_compile_only(script, tmp_path, **{"FAKV_DUMP_IR": "1", "FAKV_SWAP_AB": "1", **env})[1],
                       "decode")
    return ptxs, [sorted(set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.(m\d+n\d+k16)", body))) for body in ptxs]


SWAP_AB_SCRIPT = """
import json, numpy as np, ml_dtypes
import fakv
bf = ml_dtypes.bfloat16
for d, group, page, sq in ((128, 4, 256, 1), (64, 4, 0, 1), (256, 4, 16, 1), (128, 1, 256, 1), (128, 16, 0, 1),
                           (128, 4, 256, 4)):
    b, hk, cap = 2, 2, 1024
    q = np.zeros((b, sq, hk * group, d), bf)
    if page:
        k, table = np.zeros((b * cap // page, page, hk, d), bf), np.arange(b * cap // page, dtype=np.int32).reshape(b, -1)
    else:
        k, table = np.zeros((b, cap, hk, d), bf), None
    fakv.flash_attn_with_kvcache(q, k, k.copy(), cache_seqlens=np.array([10, 900], np.int32), block_table=table,
                                 causal=sq > 1)
"""


@needs_assembler
def test_swap_ab_compiles_for_sm90a(tmp_path):
    """FAKV_SWAP_AB=1 (@fakv.jit(swap_ab=True), docs/decisions.md "Power"): decode's dots of a few query rows run
    as wgmmas of their transposes, M' = the rows rounded up to at least 8 (n8 for GQA 4 and MHA, n16 for 16 heads
    or 4 x 4 queries), no 64-row wgmma left; head dims 64, 128 and 256, contiguous and pages of 16 and 256; and with
    ptxas's report fewer registers than the 64-row form's 111 (the scores are 4 per thread, not 16)."""
    ptxs, shapes = _swapped_decodes(tmp_path, SWAP_AB_SCRIPT)
    assert shapes == [["m64n8k16"], ["m64n8k16"], ["m64n8k16"], ["m64n8k16"], ["m64n16k16"], ["m64n16k16"]], shapes
    for i, body in enumerate(ptxs[:2]):
        used = _registers(tmp_path / f"swapped{i}.ptx", body)
        assert used <= 96


SWAPPED_APPEND_SCRIPT = """
import numpy as np, ml_dtypes
import fakv
bf = ml_dtypes.bfloat16
for d, page, rotary in ((128, 256, "neox"), (128, 0, "interleaved"), (64, 16, "half"), (128, 256, "none")):
    b, hk, cap = 2, 2, 1024
    q = np.zeros((b, 1, hk * 4, d), bf)
    if page:
        k, table = np.zeros((b * cap // page, page, hk, d), bf), np.arange(b * cap // page, dtype=np.int32).reshape(b, -1)
    else:
        k, table = np.zeros((b, cap, hk, d), bf), None
    kn, kw = np.zeros((b, 1, hk, d), bf), {}
    if rotary != "none":
        rd = d // 2 if rotary == "half" else d
        angles = np.zeros((cap, rd // 2), bf)
        kw = dict(rotary_cos=angles, rotary_sin=angles, rotary_interleaved=rotary == "interleaved")
    fakv.flash_attn_with_kvcache(q, k, k.copy(), kn, kn, cache_seqlens=np.array([10, 900], np.int32),
                                 block_table=table, causal=True, **kw)
"""


@needs_assembler
def test_swapped_appending_decode_compiles_for_sm90a(tmp_path):
    """An appending call with swapped dots (FAKV_SWAP_AB=1, the default where fewer than 64 query rows) that decode appends
    itself (FAKV_FUSED_APPEND=1 and FAKV_COMBINE_APPENDS=0, the setmaxnreg of its registers): decode
    attends its new keys a key block at a time (NEW_N = 64, kernels/append.py's new_rows rotating 16 rows at a
    time), so every wgmma is the swapped m64n8k16, with NeoX, interleaved, partial and no rotary; ptxas spills at
    most 16 bytes (the rotation's registers beside the consumer's 232)."""
    ptxs, shapes = _swapped_decodes(tmp_path, SWAPPED_APPEND_SCRIPT, FAKV_FUSED_APPEND="1", FAKV_COMBINE_APPENDS="0")
    assert shapes == [["m64n8k16"]] * 4, shapes
    assert all("setmaxnreg.inc.sync.aligned.u32" in body for body in ptxs)
    for i, body in enumerate(ptxs):
        _registers(tmp_path / f"swapped_append{i}.ptx", body, max_spill=16)


CLUSTER_SCRIPT = """
import glob, json, os, numpy as np, ml_dtypes
import fakv
from fakv import interface
bf = ml_dtypes.bfloat16
rows = []
for d, page, new in ((128, 256, 0), (128, 0, 0), (64, 16, 0), (256, 256, 0), (128, 256, 1)):
    b, hk, cap = 1, 8, 1024
    q = np.zeros((b, 1, 32, d), bf)
    if page:
        k, table = np.zeros((b * cap // page, page, hk, d), bf), np.arange(b * cap // page, dtype=np.int32)[None]
    else:
        k, table = np.zeros((b, cap, hk, d), bf), None
    kn = np.zeros((b, new, hk, d), bf) if new else None
    before = set(glob.glob(os.environ["FAKV_CACHE_DIR"] + "/*.json"))
    fakv.flash_attn_with_kvcache(q, k, k.copy(), kn, kn, cache_seqlens=np.array([1000], np.int32), block_table=table)
    new_files = set(glob.glob(os.environ["FAKV_CACHE_DIR"] + "/*.json")) - before
    kernels = {kern["name"]: kern for f in new_files for kern in json.load(open(f))["facts"]["kernels"]}
    rows.append([d, page, new, kernels["decode"]["cluster"][2] if "decode" in kernels else None,
                 sorted(n for n in kernels if n.startswith("combine"))])
print(json.dumps(rows))
"""


@needs_assembler
def test_cluster_splits_compile_for_sm90a(tmp_path):
    """A b1 s1024 call's 8 splits run as one thread-block cluster per kv head (decode's facts: clusters of 8 on grid
    axis 2) and merge there, no combine kernel compiled, with FAKV_CLUSTER_SPLITS unset (these small calls) or 1;
    not for head dim 256 or a call that appends (decode with combine, or combine appending). With 0 the same calls
    compile no cluster (and a combine per head dim: listed where first compiled)."""
    clustered = [[128, 256, 0, 8, []], [128, 0, 0, 8, []], [64, 16, 0, 8, []], [256, 256, 0, 1, ["combine"]]]
    want = {"1": clustered, "": clustered,                # (unset: these small calls are where it is planned)
            "0": [[128, 256, 0, 1, ["combine"]], [128, 0, 0, 1, []], [64, 16, 0, 1, ["combine"]],   # (d128's
                  [256, 256, 0, 1, ["combine"]]]}                                                     # compiled)
    for setting in ("1", "", "0"):
        rows, _ = _compile_only(CLUSTER_SCRIPT, tmp_path / (setting or "unset"), FAKV_CLUSTER_SPLITS=setting)
        assert rows[:4] == want[setting], (setting, rows)
        d, page, new, cluster, combines = rows[4]          # appending: whatever it compiles, no cluster
        assert cluster in (1, None) and combines, (setting, rows[4])


GRID_PLANS_SCRIPT = """
import json, sys, numpy as np, ml_dtypes
import fakv
from fakv import interface
bf = ml_dtypes.bfloat16
shapes, layouts = json.loads(sys.argv[1]), json.loads(sys.argv[2])

def virtual(shape):          # a cache of `shape` over one sequence's (or page's) memory: stride 0 on its first axis
    base = np.zeros(shape[1:], bf)
    return np.lib.stride_tricks.as_strided(base, shape, (0,) + base.strides)

seen, failed = set(), []
for name, b, s, h, hk, d, ragged in shapes:
    lens = (np.random.default_rng(0).integers(1, s + 1, b) if ragged else np.full(b, s)).astype(np.int32)
    for page in layouts:
        q = np.zeros((b, 1, h, d), bf)
        k = virtual((b * s // page, page, hk, d) if page else (b, s, hk, d))
        table = np.arange(b * s // page, dtype=np.int32).reshape(b, -1) if page else None
        p = interface.plan(b, 1, h, hk, d, "bf16", bool(page), page or s, s, True, 0, 132, 50 << 20,
                           ragged=ragged, cluster="auto")
        seen.add(json.dumps([p["decode_options"], p["decode"]["ADAPTIVE"] > 0, p["decode"]["LONGEST_FIRST"] > 0,
                             p["num_splits"] > 1, p["cluster"] > 0], sort_keys=True))
        try:
            fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=lens, block_table=table, causal=True)
        except Exception as e:  # noqa: BLE001
            failed.append([name, page, str(e)[-300:]])
print(json.dumps({"failed": failed, "plans": sorted(seen)}))
"""


@needs_assembler
def test_every_grid_cell_plan_compiles_for_sm90a(tmp_path):
    """Each cell of bench/bench_grid.py (its 20 shapes, contiguous and in pages of 16, 64 and 256: the plans the
    H200 is measured on, caches of up to 16 GiB stood in for by arrays of one sequence's memory, stride 0 on their
    first axis) compiles to cubins in compile-only mode. The cells take every kind of plan the large calls get:
    pages of 16 gathered or by TMA, two and three ring stages, two programs an SM, splits merged by combine or in a cluster,
    ragged lengths' adaptive splits, sequences longest first."""
    import json
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
    from bench_grid import LAYOUTS, SHAPES
    defaults = dict.fromkeys(("FAKV_GATHER_PAGES", "FAKV_CLUSTER_SPLITS", "FAKV_SWAP_AB", "FAKV_ADAPTIVE_SPLITS",
                              "FAKV_LONGEST_FIRST"))     # (unset: the plans the grid measures)
    result, _ = _compile_only(GRID_PLANS_SCRIPT, tmp_path, json.dumps(SHAPES), json.dumps(list(LAYOUTS)), **defaults)
    assert result["failed"] == []
    plans = [json.loads(p) for p in result["plans"]]
    assert {p[0]["stages"] for p in plans} == {2, 3}      # (4: swapped d64 pages of 16 until session 39)
    assert any(p[0].get("ctas_per_sm") == 2 for p in plans)
    assert any(p[0].get("gather_pages") for p in plans) and any(not p[0].get("gather_pages") for p in plans)
    assert any(p[1] for p in plans) and any(p[2] for p in plans)          # adaptive splits, longest first
    assert any(p[3] and not p[4] for p in plans) and any(p[4] for p in plans)   # combine, cluster


ROW_BOXES_SCRIPT = """
import glob, json, os, sys, numpy as np, ml_dtypes
import fakv
bf = ml_dtypes.bfloat16
b, s = 2, 1024
q, lens = np.zeros((b, 1, 32, 128), bf), np.full(b, s, np.int32)
for page in (0, 16, 256):
    if page:
        k = np.zeros((b * s // page, page, 8, 128), bf)
        table = np.arange(b * s // page, dtype=np.int32).reshape(b, -1)
    else:
        k, table = np.zeros((b, s, 8, 128), bf), None
    fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=lens, block_table=table, causal=True, num_splits=1)
maps = [m["rows"] for f in glob.glob(os.path.join(os.environ["FAKV_CACHE_DIR"], "*.json"))
        for kern in json.load(open(f))["facts"]["kernels"] for m in kern["tensormaps"]]
print(json.dumps(sorted(maps)))
"""


@needs_assembler
def test_row_boxes_compile_for_sm90a_in_boxes_of_16_rows(tmp_path):
    """FAKV_ROW_BOXES=1: decode's K and V tensor maps have boxes of 16 rows, contiguous and in pages of 16 and 256
    (the kernels assemble for sm_90a); the PTX of a contiguous decode asks for a box's two 64-channel parts one
    after the other: copies in pairs of the same rows, 8 a tile (4 boxes x 2 parts), against 2 without."""
    import re
    maps, _ = _compile_only(ROW_BOXES_SCRIPT, tmp_path, FAKV_ROW_BOXES="1", FAKV_GATHER_PAGES=None)
    assert maps == [16] * 6
    ptx = {}
    for setting in ("0", "1"):
        out = tmp_path / f"decode-{setting}.ptx"
        env = dict(os.environ, FAKV_ROW_BOXES=setting, FAKV_CACHE_DIR=str(tmp_path / setting),
                   PYTHONPATH=os.path.join(ROOT, "frontend"))
        subprocess.run([sys.executable, "-m", "fakv.compile", os.path.join(ROOT, "kernels", "decode.py"), "--kernel",
                        "decode", "--emit", "ptx", "--attention", "batch=2,seqlen_k=1024,num_splits=1", "-o",
                        str(out)], env=env, check=True, capture_output=True, timeout=600)
        ptx[setting] = re.findall(r"cp\.async\.bulk\.tensor\.4d\S* \[[^]]*\], \[(%rd\d+), \{([^}]*)\}", out.read_text())
    assert len(ptx["0"]) == 4 and len(ptx["1"]) == 16
    first = [coords.split(", ") for m, coords in ptx["1"] if m == ptx["1"][0][0]]
    assert len(first) == 8 and len({c[0] for c in first}) == 2
    for a, b in zip(first[::2], first[1::2]):
        assert a[0] != b[0] and a[1:] == b[1:]            # one box's two parts: other channels, the same rows
    assert len({c[2] for c in first}) == 4                 # four boxes down the tile
