//===- LinearLayout.cpp - register layouts as bit-linear maps -------------===//

#include "dialect/LinearLayout.h"
#include "dialect/FakvGPUDialect.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::fakvgpu;

namespace {
Coord unit(unsigned rank, unsigned dim, int64_t value) {
  Coord c(rank, 0);
  c[dim] = value;
  return c;
}
bool isZero(ArrayRef<int64_t> c) {
  return llvm::all_of(c, [](int64_t x) { return x == 0; });
}
void xorInto(Coord &acc, ArrayRef<int64_t> b) {
  for (auto [a, x] : llvm::zip(acc, b))
    a ^= x;
}
} // namespace

bool mlir::fakvgpu::isPowerOfTwoShape(ArrayRef<int64_t> shape) {
  return llvm::all_of(shape, [](int64_t s) { return s > 0 && llvm::isPowerOf2_64(s); });
}

LinearLayout LinearLayout::wgmmaAccumulator(ArrayRef<int64_t> shape,
                                            unsigned numWarps) {
  // wgmma m64nNk16 f32 accumulator, thread t = 32 w + l, register r:
  //   row = 16 w + l / 4 + 8 ((r / 2) mod 2), col = 8 (r / 4) + 2 (l mod 4) + r mod 2
  LinearLayout l;
  l.rank = 2;
  l.regs.push_back(unit(2, 1, 1));
  l.regs.push_back(unit(2, 0, 8));
  for (int64_t c = 8; c < std::max<int64_t>(shape[1], 8); c *= 2)
    l.regs.push_back(unit(2, 1, c));
  l.lanes = {unit(2, 1, 2), unit(2, 1, 4), unit(2, 0, 1), unit(2, 0, 2),
             unit(2, 0, 4)};
  l.warps = {unit(2, 0, 16), unit(2, 0, 32)};
  for (unsigned w = 4; w < numWarps; w *= 2)
    l.warps.push_back(Coord(2, 0));
  return l.restricted(shape);
}

LinearLayout LinearLayout::wgmmaSwappedAccumulator(ArrayRef<int64_t> shape,
                                                   unsigned numWarps) {
  // The accumulator above of a (64 x M') wgmma, its row the tile's column
  // and its column the tile's row; then one register bit per further 64
  // columns (the next wgmma's accumulator).
  LinearLayout t = wgmmaAccumulator({64, wgmmaSwappedN(shape[0])}, numWarps);
  LinearLayout l;
  l.rank = 2;
  auto swap = [](const Coord &c) { return Coord{c[1], c[0]}; };
  for (const Coord &c : t.regs)
    l.regs.push_back(swap(c));
  for (int64_t c = 64; c < shape[1]; c *= 2)
    l.regs.push_back(unit(2, 1, c));
  for (const Coord &c : t.lanes)
    l.lanes.push_back(swap(c));
  for (const Coord &c : t.warps)
    l.warps.push_back(swap(c));
  return l.restricted(shape);
}

LinearLayout LinearLayout::blocked(ArrayRef<int64_t> shape, unsigned numWarps,
                                   unsigned vector) {
  // The tile's coordinate bits from the least significant (last dimension
  // first), handed out to registers, lanes, warps, then registers again.
  SmallVector<Coord> bits;
  unsigned rank = shape.size();
  for (int d = rank - 1; d >= 0; --d)
    for (int64_t v = 1; v < shape[d]; v *= 2)
      bits.push_back(unit(rank, d, v));
  LinearLayout l;
  l.rank = rank;
  size_t next = 0;
  auto take = [&]() { return next < bits.size() ? bits[next++] : Coord(rank, 0); };
  for (unsigned v = 1; v < vector && next < bits.size(); v *= 2)
    l.regs.push_back(take());
  for (int i = 0; i < 5; ++i)
    l.lanes.push_back(take());
  for (unsigned w = 1; w < numWarps; w *= 2)
    l.warps.push_back(take());
  while (next < bits.size())
    l.regs.push_back(take());
  return l;
}

LinearLayout LinearLayout::restricted(ArrayRef<int64_t> shape) const {
  LinearLayout l = *this;
  auto clip = [&](Coord &c) {
    for (unsigned d = 0; d < rank; ++d)
      c[d] &= shape[d] - 1;
  };
  for (Coord &c : l.regs)
    clip(c);
  for (Coord &c : l.lanes)
    clip(c);
  for (Coord &c : l.warps)
    clip(c);
  llvm::erase_if(l.regs, [](const Coord &c) { return isZero(c); });
  return l;
}

LinearLayout LinearLayout::sliced(unsigned dim) const {
  LinearLayout l = *this;
  l.rank = rank - 1;
  auto drop = [&](Coord &c) { c.erase(c.begin() + dim); };
  for (Coord &c : l.regs)
    drop(c);
  for (Coord &c : l.lanes)
    drop(c);
  for (Coord &c : l.warps)
    drop(c);
  llvm::erase_if(l.regs, [](const Coord &c) { return isZero(c); });
  return l;
}

LinearLayout LinearLayout::expanded(unsigned dim) const {
  LinearLayout l = *this;
  l.rank = rank + 1;
  auto add = [&](Coord &c) { c.insert(c.begin() + dim, 0); };
  for (Coord &c : l.regs)
    add(c);
  for (Coord &c : l.lanes)
    add(c);
  for (Coord &c : l.warps)
    add(c);
  return l;
}

LinearLayout LinearLayout::reshaped(ArrayRef<int64_t> from,
                                    ArrayRef<int64_t> to) const {
  auto linearIndex = [&](ArrayRef<int64_t> c) {
    int64_t idx = 0;
    for (unsigned d = 0; d < from.size(); ++d)
      idx = idx * from[d] + c[d];
    return idx;
  };
  auto delinearize = [&](int64_t idx) {
    Coord c(to.size(), 0);
    for (int d = to.size() - 1; d >= 0; --d) {
      c[d] = idx % to[d];
      idx /= to[d];
    }
    return c;
  };
  LinearLayout l;
  l.rank = to.size();
  for (const Coord &c : regs)
    l.regs.push_back(delinearize(linearIndex(c)));
  for (const Coord &c : lanes)
    l.lanes.push_back(delinearize(linearIndex(c)));
  for (const Coord &c : warps)
    l.warps.push_back(delinearize(linearIndex(c)));
  return l;
}

Coord LinearLayout::regCoord(int64_t reg) const {
  Coord c(rank, 0);
  for (unsigned b = 0; b < regs.size(); ++b)
    if (reg & (int64_t(1) << b))
      xorInto(c, regs[b]);
  return c;
}

std::optional<int64_t> LinearLayout::regOf(ArrayRef<int64_t> regPart) const {
  for (int64_t r = 0; r < numRegs(); ++r)
    if (ArrayRef<int64_t>(regCoord(r)) == regPart)
      return r;
  return std::nullopt;
}

LinearLayout LinearLayout::fromAttr(LinearAttr attr) {
  LinearLayout l;
  l.rank = attr.getRank();
  if (l.rank == 0)                       // (no coordinates: no bases to read)
    return l;
  auto split = [&](ArrayRef<int64_t> flat, SmallVector<Coord> &out) {
    for (size_t i = 0; i + l.rank <= flat.size(); i += l.rank)
      out.push_back(Coord(flat.slice(i, l.rank)));
  };
  split(attr.getRegs(), l.regs);
  split(attr.getLanes(), l.lanes);
  split(attr.getWarps(), l.warps);
  return l;
}

LinearAttr LinearLayout::toAttr(MLIRContext *ctx) const {
  auto flat = [](ArrayRef<Coord> bases) {
    SmallVector<int64_t> out;
    for (const Coord &c : bases)
      llvm::append_range(out, c);
    return out;
  };
  return LinearAttr::get(ctx, rank, flat(regs), flat(lanes), flat(warps));
}
