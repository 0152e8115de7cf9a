"""bench/timeline.py's PTX patches (what its GPU measurements rest on), on
the decode kernel's PTX of two planned calls, without a GPU: each mode adds
the stamps it says, where it says, and ptxas takes the result for sm_90a."""
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import timeline  # noqa: E402

PTXAS = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
needs_ptxas = pytest.mark.skipif(not os.path.exists(PTXAS), reason="needs ptxas")
CALLS = {"paged": "batch=128,heads=32,kv_heads=8,head_dim=128,page_size=256,seqlen_k=1024,causal=True,num_splits=0",
         "longest first": "batch=128,heads=32,kv_heads=8,head_dim=128,page_size=0,seqlen_k=8192,causal=True,"
                          "num_splits=0"}
BASE = 0x7f0000000000


@pytest.fixture(scope="module")
def ptxs(tmp_path_factory):
    out = {}
    for name, call in CALLS.items():
        path = tmp_path_factory.mktemp("ptx") / "decode.ptx"
        subprocess.run([sys.executable, "-m", "fakv.compile", os.path.join(ROOT, "kernels", "decode.py"), "--emit",
                        "ptx", "--attention", call, "-o", str(path)], check=True,
                       env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend")))
        out[name] = path.read_text()
    return out


def _reductions(ptx):
    """(predicate, op, slot) of each timeline reduction into the buffer."""
    return re.findall(r"(@%\w+ )?red\.global\.(min|max)\.u64 \t\[%tlb\+(\d+)\]", ptx)


def _assembles(ptx, tmp_path):
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    subprocess.run([PTXAS, "-arch=sm_90a", str(src), "-o", str(tmp_path / "k.cubin")], check=True)


@needs_ptxas
@pytest.mark.parametrize("name", list(CALLS))
def test_modes_stamp_what_they_say(ptxs, name, tmp_path):
    ptx = ptxs[name]
    assert not _reductions(ptx)
    light = timeline.patch(ptx, BASE, light=True)
    slots = sorted(int(s) // 8 for _, _, s in _reductions(light))
    assert slots.count(0) == 1 and slots.count(7) == 1 and set(slots) == {0, 5, 6, 7}   # entry, exit, SM
    first = timeline.patch(ptx, BASE, first=True)
    reds = _reductions(first)
    # The first copy stamped at each expect_tx under a flag the stamp clears (the producer's thread: once);
    # the first data after each slot wait, by thread 128, under a flag that wait clears.
    copies = [r for r in reds if r[2] == "8"]
    assert copies and all(p == "@%tlf " and op == "min" for p, op, _ in copies)
    assert len(re.findall(r"setp\.ne\.u32 \t%tlf, %tlj, %tlj;", first)) == len(copies)
    data = [r for r in reds if r[2] == "24"]
    assert data and all(p == "@%tlq " for p, _, _ in data)
    assert {int(s) // 8 for _, _, s in reds} == {0, 1, 3, 5, 6, 7}
    heavy = timeline.patch(ptx, BASE)
    assert {int(s) // 8 for _, _, s in _reductions(heavy)} == {0, 1, 2, 3, 4, 5, 6, 7}
    for patched in (light, first, heavy, timeline.patch(ptx, None, pad=4096, prefetch=True)):
        _assembles(patched, tmp_path)


@needs_ptxas
def test_table_prefetch_after_the_length_load(ptxs, tmp_path):
    """FAKV_PTX_TABLE: the block-table row of the sequence whose length was just loaded, prefetched into the
    cache named; a kernel that takes its length from longest first's tile has no such load: refused."""
    ptx = ptxs["paged"]
    patched = timeline.patch(ptx, None, table="L2")
    lines = patched.split("\n")
    at = next(i for i, s in enumerate(lines) if "prefetch.global.L2" in s)
    assert "ld.global.b32" in lines[at - 6] and "[decode_param_3]" in lines[at - 5]
    # The row's register is b: the program's sequence (ctaid.y over the query blocks), Seqlens[b]'s index.
    row = re.search(r"mul\.lo\.s32 \t%tps, (%r\d+), %tps;", patched).group(1)
    seqlens = re.search(r"ld\.param\.b64 \t(%rd\d+), \[decode_param_4\];", ptx).group(1)
    index = re.search(rf"mul\.wide\.s32 \t(%rd\d+), {row}, 4;", ptx).group(1)
    address = re.search(rf"add\.s64 \t(%rd\d+), {seqlens}, {index};", ptx).group(1)
    assert re.search(rf"ld\.global\.b32 \t%r\d+, \[{address}\];", ptx)
    program = re.search(rf"div\.s32 \t{row}, (%r\d+), %r\d+;", ptx).group(1)
    assert re.search(rf"mov\.u32 \t{program}, %ctaid\.y;", ptx)
    _assembles(patched, tmp_path)
    with pytest.raises(SystemExit, match="no load of Seqlens"):
        timeline.patch(ptxs["longest first"], None, table="L1")


@needs_ptxas
def test_table_rows_at_entry_and_next_lines(ptxs, tmp_path):
    """FAKV_PTX_TABLE=rowsL1: at entry, thread i < batch (decode's parameter 16) prefetches the first line of
    sequence i's block-table row (Table, parameter 3, plus i x table_stride, parameter 15, entries), the
    kernel unchanged otherwise; nextL2: after every scalar global load (the producer's table lookups, the
    length's load), the 128 bytes after it."""
    ptx = ptxs["longest first"]
    rows = timeline.patch(ptx, None, table="rowsL1")
    body = rows.split("\n")
    at = next(i for i, s in enumerate(body) if "prefetch.global.L1" in s)
    assert body[at].strip().startswith("@%tpp prefetch.global.L1")
    assert any("setp.lt.u32 \t%tpp, %tpt, %tps;" in s for s in body[at - 8:at])
    assert [s for s in body[at - 8:at] if "decode_param" in s] == [
        "\tld.param.b32 \t%tps, [decode_param_16];", "\tld.param.b64 \t%tpa, [decode_param_3];",
        "\tld.param.b32 \t%tps, [decode_param_15];"]
    assert at < next(i for i, s in enumerate(body) if "ld.global" in s)      # before the lengths' load
    assert rows.count("prefetch.global") == 1
    ahead = timeline.patch(ptxs["paged"], None, table="nextL2")
    loads = re.findall(r"ld\.global\.b32 \t%r\d+, \[(%rd\d+)\];\n\tprefetch\.global\.L2 \t\[(%rd\d+)\+128\];", ahead)
    assert loads and all(a == b for a, b in loads)
    assert len(loads) == len(re.findall(r"ld\.global\.b32 \t%r\d+, \[%rd\d+\];", ptxs["paged"]))
    for patched in (rows, ahead):
        _assembles(patched, tmp_path)
    with pytest.raises(SystemExit, match="FAKV_PTX_TABLE='L3'"):
        timeline.patch(ptxs["paged"], None, table="L3")


@needs_ptxas
def test_l2_hint_on_every_cache_copy(ptxs, tmp_path):
    """FAKV_PTX_L2HINT=first: one createpolicy of that priority at entry, and every TMA copy of the caches
    carries it (`.L2::cache_hint`, the policy as its last operand), nothing else changed (against the same
    patch without a hint); ptxas takes it."""
    ptx = ptxs["paged"]
    copies = re.findall(r"cp\.async\.bulk\.tensor\.[^\n]*;", ptx)
    assert copies and not any("cache_hint" in c for c in copies)
    for hint in ("first", "last", "normal", "unchanged"):
        patched = timeline.patch(ptx, None, hint=hint)
        assert patched.count("createpolicy") == 1
        assert f"createpolicy.fractional.L2::evict_{hint}.b64 \t%tlh, 1.0;" in patched
        hinted = re.findall(r"cp\.async\.bulk\.tensor\.[^\n]*;", patched)
        assert hinted == [c.replace("::bytes ", "::bytes.L2::cache_hint ")[:-1] + ", %tlh;" for c in copies]
        assert patched.replace("\n\t.reg .b64 \t%tlh;", "").replace(
            f"\n\tcreatepolicy.fractional.L2::evict_{hint}.b64 \t%tlh, 1.0;", "").replace(
            ".L2::cache_hint", "").replace(", %tlh;", ";") == timeline.patch(ptx, None)
        _assembles(patched, tmp_path)
    with pytest.raises(SystemExit, match="FAKV_PTX_L2HINT='no_allocate'"):
        timeline.patch(ptx, None, hint="no_allocate")


@needs_ptxas
def test_solo_producer(ptxs, tmp_path):
    """FAKV_PTX_SOLO: the one guard of the TMA producer's loop (tid > 127) becomes tid > 0, nothing else
    changes; ptxas takes it."""
    ptx = ptxs["paged"]
    solo = timeline.patch(ptx, None, solo=True)
    plain = timeline.patch(ptx, None)
    changed = [(a, b) for a, b in zip(plain.split("\n"), solo.split("\n")) if a != b]
    assert len(changed) == 1 and re.fullmatch(r"\tsetp\.gt\.u32 \t%p\d+, %r\d+, 127;", changed[0][0])
    assert changed[0][1] == changed[0][0].replace("127;", "0;")
    _assembles(solo, tmp_path)


@needs_ptxas
def test_waits_without_suspend_hint(ptxs, tmp_path):
    """FAKV_PTX_NOSUSPEND: every mbarrier.try_wait loses its suspend-time operand, nothing else changes."""
    ptx = ptxs["paged"]
    waits = re.findall(r"mbarrier\.try_wait[^\n]*;", ptx)
    assert waits and all(w.count(",") == 3 for w in waits)
    patched = timeline.patch(ptx, None, nosuspend=True)
    assert re.findall(r"mbarrier\.try_wait[^\n]*;", patched) == [w.rsplit(",", 1)[0] + ";" for w in waits]
    assert len(timeline.patch(ptx, None)) - len(patched) == sum(len(w.rsplit(",", 1)[1]) for w in waits)
    _assembles(patched, tmp_path)
