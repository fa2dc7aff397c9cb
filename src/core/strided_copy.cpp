#include "core/strided_copy.h"

#include <algorithm>
#include <cstring>

namespace torchless {
namespace {

ParallelForHook gParallelFor = nullptr;

constexpr int kMaxDims = 25;
// Split across threads only when a copy moves at least this many bytes; chunks are at least
// kGrainBytes (a copy is memory bound: small chunks cost more in wake-ups than they save).
constexpr int64_t kParallelBytes = 256 * 1024;
constexpr int64_t kGrainBytes = 64 * 1024;

struct Elem16 {
  uint64_t a, b;
};

// The outer iteration space: dims outer to inner with a source and a destination step each
// (in elements).
struct Space {
  int n = 0;
  int64_t size[kMaxDims];
  int64_t sstep[kMaxDims];
  int64_t dstep[kMaxDims];
  int64_t count() const {
    int64_t c = 1;
    for (int d = 0; d < n; ++d) c *= size[d];
    return c;
  }
};

// Calls body(srcOffset, dstOffset, idx) for the outer items [begin, end) in row-major order.
template <typename Body>
void runOuter(const Space& sp, int64_t begin, int64_t end, const Body& body) {
  int64_t idx[kMaxDims];
  int64_t so = 0, doff = 0, rem = begin;
  for (int d = sp.n; d-- > 0;) {
    idx[d] = rem % sp.size[d];
    rem /= sp.size[d];
    so += idx[d] * sp.sstep[d];
    doff += idx[d] * sp.dstep[d];
  }
  for (int64_t i = begin; i < end; ++i) {
    body(so, doff, idx);
    for (int d = sp.n; d-- > 0;) {
      if (++idx[d] < sp.size[d]) {
        so += sp.sstep[d];
        doff += sp.dstep[d];
        break;
      }
      so -= (sp.size[d] - 1) * sp.sstep[d];
      doff -= (sp.size[d] - 1) * sp.dstep[d];
      idx[d] = 0;
    }
  }
}

// Runs the outer items, in parallel through the hook when the whole copy is large.
template <typename Body>
void forOuter(const Space& sp, int64_t bytesPerItem, const Body& body) {
  const int64_t items = sp.count();
  if (items == 0) return;
  if (gParallelFor != nullptr && items > 1 && items * bytesPerItem >= kParallelBytes) {
    const int64_t grain = std::max<int64_t>(1, kGrainBytes / std::max<int64_t>(bytesPerItem, 1));
    gParallelFor(items, grain, [&](int64_t b, int64_t e) { runOuter(sp, b, e, body); });
    return;
  }
  runOuter(sp, 0, items, body);
}

// dst[i * dstRow + j] = src[i + j * srcCol] for i < rows, j < cols, in tiles of kTile x kTile.
template <typename T>
void transposeBlock(T* dst, const T* src, int64_t rows, int64_t cols, int64_t dstRow,
                    int64_t srcCol) {
  constexpr int64_t kTile = 16;
  for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
    const int64_t j1 = std::min(cols, j0 + kTile);
    for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
      const int64_t i1 = std::min(rows, i0 + kTile);
      for (int64_t i = i0; i < i1; ++i) {
        T* d = dst + i * dstRow;
        const T* s = src + i;
        for (int64_t j = j0; j < j1; ++j) d[j] = s[j * srcCol];
      }
    }
  }
}

template <typename T>
void gatherRow(T* dst, const T* src, int64_t n, int64_t stride) {
  for (int64_t j = 0; j < n; ++j) dst[j] = src[j * stride];
}

template <typename Fn>
bool withItemType(size_t item, const Fn& fn) {
  switch (item) {
    case 1: fn(uint8_t{}); return true;
    case 2: fn(uint16_t{}); return true;
    case 4: fn(uint32_t{}); return true;
    case 8: fn(uint64_t{}); return true;
    case 16: fn(Elem16{}); return true;
    default: return false;
  }
}

// Element by element, for more than kMaxDims dims after merging or an unusual item size.
void copyGeneric(std::byte* dst, const std::byte* src, const int64_t* z, const int64_t* s, int nd,
                 size_t item) {
  int64_t n = 1;
  for (int d = 0; d < nd; ++d) n *= z[d];
  std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(dst + i * static_cast<int64_t>(item), src + off * static_cast<int64_t>(item), item);
    for (int d = nd; d-- > 0;) {
      if (++idx[d] < z[d]) {
        off += s[d];
        break;
      }
      off -= (z[d] - 1) * s[d];
      idx[d] = 0;
    }
  }
}

}  // namespace

void setParallelForHook(ParallelForHook hook) { gParallelFor = hook; }

void copyToDense(void* dstv, const void* srcv, const IntList& sizes, const IntList& strides,
                 size_t item) {
  auto* dst = static_cast<std::byte*>(dstv);
  const auto* src = static_cast<const std::byte*>(srcv);
  const auto isz = static_cast<int64_t>(item);
  // Drop size-1 dims and merge dims that are contiguous in the source (outer to inner).
  std::vector<int64_t> zv, sv;
  int64_t zs[kMaxDims], ss[kMaxDims];
  int64_t* z = zs;
  int64_t* s = ss;
  if (sizes.size() > static_cast<size_t>(kMaxDims)) {
    zv.resize(sizes.size());
    sv.resize(sizes.size());
    z = zv.data();
    s = sv.data();
  }
  int nd = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return;
    if (sizes[d] == 1) continue;
    if (nd > 0 && s[nd - 1] == strides[d] * sizes[d]) {
      z[nd - 1] *= sizes[d];
      s[nd - 1] = strides[d];
      continue;
    }
    z[nd] = sizes[d];
    s[nd] = strides[d];
    ++nd;
  }
  if (nd == 0) {
    std::memcpy(dst, src, item);
    return;
  }
  if (nd == 1 && s[0] == 1) {
    std::memcpy(dst, src, static_cast<size_t>(z[0]) * item);
    return;
  }
  const bool typed = item == 1 || item == 2 || item == 4 || item == 8 || item == 16;
  if (nd > kMaxDims || !typed) {
    copyGeneric(dst, src, z, s, nd, item);
    return;
  }
  int64_t ds[kMaxDims];  // destination strides (dense)
  ds[nd - 1] = 1;
  for (int d = nd - 1; d-- > 0;) ds[d] = ds[d + 1] * z[d + 1];
  const int last = nd - 1;
  Space sp;
  if (s[last] == 1) {
    // Runs of z[last] elements: one memcpy each.
    for (int d = 0; d < last; ++d) {
      sp.size[sp.n] = z[d];
      sp.sstep[sp.n] = s[d];
      sp.dstep[sp.n] = ds[d];
      ++sp.n;
    }
    const size_t runBytes = static_cast<size_t>(z[last]) * item;
    forOuter(sp, static_cast<int64_t>(runBytes), [&](int64_t so, int64_t doff, const int64_t*) {
      std::memcpy(dst + doff * isz, src + so * isz, runBytes);
    });
    return;
  }
  // A transpose: some other dim k is the source's contiguous one.
  int k = -1;
  for (int d = last; d-- > 0;)
    if (s[d] == 1) {
      k = d;
      break;
    }
  if (k >= 0 && z[k] >= 4 && z[last] >= 4) {
    // Blocks of kRows rows of dim k (an outer dim of its own) by the whole last dim.
    constexpr int64_t kRows = 16;
    int kpos = -1;
    for (int d = 0; d < last; ++d) {
      if (d == k) {
        kpos = sp.n;
        sp.size[sp.n] = (z[k] + kRows - 1) / kRows;
        sp.sstep[sp.n] = kRows * s[k];
        sp.dstep[sp.n] = kRows * ds[k];
      } else {
        sp.size[sp.n] = z[d];
        sp.sstep[sp.n] = s[d];
        sp.dstep[sp.n] = ds[d];
      }
      ++sp.n;
    }
    const int64_t rowsK = z[k], cols = z[last], dstRow = ds[k], srcCol = s[last];
    withItemType(item, [&](auto tag) {
      using T = decltype(tag);
      forOuter(sp, kRows * cols * isz, [&](int64_t so, int64_t doff, const int64_t* idx) {
        const int64_t rows = std::min(kRows, rowsK - idx[kpos] * kRows);
        transposeBlock<T>(reinterpret_cast<T*>(dst + doff * isz),
                          reinterpret_cast<const T*>(src + so * isz), rows, cols, dstRow, srcCol);
      });
    });
    return;
  }
  // A strided gather per row of the last dim.
  for (int d = 0; d < last; ++d) {
    sp.size[sp.n] = z[d];
    sp.sstep[sp.n] = s[d];
    sp.dstep[sp.n] = ds[d];
    ++sp.n;
  }
  const int64_t cols = z[last], srcCol = s[last];
  withItemType(item, [&](auto tag) {
    using T = decltype(tag);
    forOuter(sp, cols * isz, [&](int64_t so, int64_t doff, const int64_t*) {
      gatherRow<T>(reinterpret_cast<T*>(dst + doff * isz),
                   reinterpret_cast<const T*>(src + so * isz), cols, srcCol);
    });
  });
}

}  // namespace torchless
