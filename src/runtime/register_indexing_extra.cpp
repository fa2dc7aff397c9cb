// Kernels for the scatter/gather family, searches and unique, einsum, embedding_bag and
// torchvision's detection ops (ops/scatter.h, ops/search.h, ops/einsum.h,
// ops/embedding_bag.h, ops/vision.h). In-place and out= overloads are derived with defFamily
// (Note [Binding kernels] in register_utils.h).
#include "ops/einsum.h"
#include "ops/embedding_bag.h"
#include "ops/grid_sample.h"
#include "ops/random.h"
#include "ops/reduction.h"
#include "ops/scatter.h"
#include "ops/search.h"
#include "ops/shape.h"
#include "ops/tensor_iterator.h"
#include "ops/vision.h"
#include "runtime/register_utils.h"

namespace torchless {
namespace {

using namespace kreg;

/// A Tensor value argument (index_fill.int_Tensor): must be 0-dim.
Scalar zeroDimValue(const IValue& v, const char* op) {
  const Tensor t = v.toTensor();
  TL_CHECK(t.dim() == 0,
           "{} only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
           op, t.dim());
  return toScalar(v);
}

std::tuple<Tensor, Tensor, Tensor, Tensor> embeddingBagArgs(const IValue* a,
                                                            std::optional<int64_t> paddingIdx) {
  // (weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
  //  include_last_offset[, padding_idx])
  return ops::embeddingBag(a[0].toTensor(), a[1].toTensor(), a[2].toTensor(), a[4].toInt(),
                           toOptTensor(a[6]), a[7].toBool(), paddingIdx);
}

/// torch.meshgrid(tensors, indexing): 0-d or 1-d inputs, outputs of shape [n0, n1, ...]
/// ("ij") or [n1, n0, ...] ("xy": the grid of the first two inputs swapped); every output is
/// an expanded view.
std::vector<Tensor> meshgrid(std::vector<Tensor> ts, const std::string& indexing) {
  TL_CHECK(indexing == "ij" || indexing == "xy",
           "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {}", indexing);
  TL_CHECK(!ts.empty(), "meshgrid expects a non-empty TensorList");
  for (const auto& t : ts)
    TL_CHECK(t.dim() <= 1,
             "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {}",
             t.toString());
  const bool swap = indexing == "xy" && ts.size() >= 2;
  if (swap) std::swap(ts[0], ts[1]);
  IntList shape;
  for (const auto& t : ts) shape.push_back(t.numel());
  std::vector<Tensor> out;
  for (size_t i = 0; i < ts.size(); ++i) {
    IntList v(ts.size(), 1);
    v[i] = -1;
    out.push_back(ops::expand(ops::view(ts[i], v), shape));
  }
  if (swap) std::swap(out[0], out[1]);
  return out;
}

/// repeat_interleave: indices 0..n-1, index i repeated repeats[i] times.
Tensor repeatIndices(const Tensor& repeats, int64_t n) {
  TL_CHECK(repeats.dim() <= 1, "repeats must be 0-dim or 1-dim tensor");
  TL_CHECK(repeats.dtype() == ScalarType::Long || repeats.dtype() == ScalarType::Int,
           "repeats has to be Long or Int tensor");
  const int64_t m = repeats.numel();
  TL_CHECK(m == 1 || m == n,
           "repeats must have the same size as input along dim, but got repeats.size(0) = {} and "
           "input.size({}) = {}",
           m, 0, n);
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = repeats.intAt(m == 1 ? 0 : i);
    TL_CHECK(k >= 0, "repeats can not be negative");
    for (int64_t j = 0; j < k; ++j) idx.push_back(i);
  }
  return Tensor::fromVector(idx, {static_cast<int64_t>(idx.size())});
}

Tensor repeatInterleave(const Tensor& self, const Tensor& repeats, std::optional<int64_t> dim) {
  Tensor x = self;
  int64_t d = 0;
  if (!dim)
    x = ops::reshape(self, {-1});
  else
    d = ops::wrapDim(*dim, self.dim());
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  return ops::indexSelect(x.dim() == 0 ? ops::reshape(x, {1}) : x, d, repeatIndices(repeats, n));
}

/// Tensor.diagonal(offset, dim1, dim2): a view.
Tensor diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  const int64_t d1 = ops::wrapDim(dim1, x.dim()), d2 = ops::wrapDim(dim2, x.dim());
  TL_CHECK(d1 != d2, "diagonal dimensions cannot be identical {}, {}", dim1, dim2);
  const int64_t s1 = x.size(d1), s2 = x.size(d2);
  int64_t len = offset >= 0 ? std::min(s1, s2 - offset) : std::min(s1 + offset, s2);
  len = std::max<int64_t>(len, 0);
  int64_t storageOffset = x.storageOffset();
  if (len > 0) storageOffset += offset >= 0 ? offset * x.stride(d2) : -offset * x.stride(d1);
  IntList sizes, strides;
  for (int64_t k = 0; k < x.dim(); ++k)
    if (k != d1 && k != d2) {
      sizes.push_back(x.size(k));
      strides.push_back(x.stride(k));
    }
  sizes.push_back(len);
  strides.push_back(x.stride(d1) + x.stride(d2));
  return x.asStrided(sizes, strides, storageOffset);
}

}  // namespace

void registerIndexingExtraKernels(KernelRegistry& r) {
  // ---- scatter ----
  defFamily(r, "aten::scatter.src", [](const IValue* a) {
    return ops::scatter(a[0].toTensor(), a[1].toInt(), a[2].toTensor(), a[3].toTensor());
  });
  defFamily(r, "aten::scatter.value", [](const IValue* a) {
    return ops::scatterValue(a[0].toTensor(), a[1].toInt(), a[2].toTensor(), toScalar(a[3]));
  });
  defFamily(r, "aten::scatter.reduce", [](const IValue* a) {
    return ops::scatter(a[0].toTensor(), a[1].toInt(), a[2].toTensor(), a[3].toTensor(),
                        ops::scatterReduceFromString(a[4].toStringRef(), false));
  });
  defFamily(r, "aten::scatter.value_reduce", [](const IValue* a) {
    return ops::scatterValue(a[0].toTensor(), a[1].toInt(), a[2].toTensor(), toScalar(a[3]),
                             ops::scatterReduceFromString(a[4].toStringRef(), false));
  });
  defFamily(r, "aten::scatter_add", [](const IValue* a) {
    return ops::scatter(a[0].toTensor(), a[1].toInt(), a[2].toTensor(), a[3].toTensor(),
                        ops::ScatterReduce::Sum);
  });
  defFamily(r, "aten::scatter_reduce.two", [](const IValue* a) {
    return ops::scatterReduceTwo(a[0].toTensor(), a[1].toInt(), a[2].toTensor(), a[3].toTensor(),
                                 ops::scatterReduceFromString(a[4].toStringRef(), true),
                                 a[5].toBool());
  });

  // ---- index_* and masked_* ----
  defFamily(r, "aten::index_add", [](const IValue* a) {
    return ops::indexAdd(a[0].toTensor(), a[1].toInt(), a[2].toTensor(), a[3].toTensor(),
                         toScalar(a[4]));
  });
  defFamily(r, "aten::index_copy", [](const IValue* a) {
    return ops::indexCopy(a[0].toTensor(), a[1].toInt(), a[2].toTensor(), a[3].toTensor());
  });
  defFamily(r, "aten::index_fill.int_Scalar", [](const IValue* a) {
    return ops::indexFill(a[0].toTensor(), a[1].toInt(), a[2].toTensor(), toScalar(a[3]));
  });
  defFamily(r, "aten::index_fill.int_Tensor", [](const IValue* a) {
    return ops::indexFill(a[0].toTensor(), a[1].toInt(), a[2].toTensor(),
                          zeroDimValue(a[3], "index_fill_"));
  });
  defFamily(r, "aten::masked_scatter", [](const IValue* a) {
    return ops::maskedScatter(a[0].toTensor(), a[1].toTensor(), a[2].toTensor());
  });
  defFamily(r, "aten::masked_select",
            [](const IValue* a) { return ops::maskedSelect(a[0].toTensor(), a[1].toTensor()); });

  // ---- searches, unique, sorting ----
  defFamily(r, "aten::searchsorted.Tensor", [](const IValue* a) {
    std::optional<std::string> side;
    if (!a[4].isNone()) side = a[4].toStringRef();
    return ops::searchsorted(a[0].toTensor(), a[1].toTensor(), a[2].toBool(), a[3].toBool(), side,
                             toOptTensor(a[5]));
  });
  defFamily(r, "aten::searchsorted.Scalar", [](const IValue* a) {
    std::optional<std::string> side;
    if (!a[4].isNone()) side = a[4].toStringRef();
    const Tensor seq = a[0].toTensor();
    const Scalar v = toScalar(a[1]);
    const Tensor value = v.isFloatingPoint() ? Tensor::scalar(v.toDouble(), ScalarType::Double)
                                             : Tensor::scalar(v.toLong(), ScalarType::Long);
    return ops::searchsorted(seq, value, a[2].toBool(), a[3].toBool(), side, toOptTensor(a[5]));
  });
  defFamily(r, "aten::bucketize.Tensor", [](const IValue* a) {
    return ops::bucketize(a[0].toTensor(), a[1].toTensor(), a[2].toBool(), a[3].toBool());
  });
  defFamily(r, "aten::bucketize.Scalar", [](const IValue* a) {
    const Scalar v = toScalar(a[0]);
    const Tensor value = v.isFloatingPoint() ? Tensor::scalar(v.toDouble(), ScalarType::Double)
                                             : Tensor::scalar(v.toLong(), ScalarType::Long);
    return ops::bucketize(value, a[1].toTensor(), a[2].toBool(), a[3].toBool());
  });
  defN<4>(r, "aten::_unique2", [](const IValue* a) {
    return ops::unique2(a[0].toTensor(), a[1].toBool(), a[2].toBool(), a[3].toBool());
  });
  defN<3>(r, "aten::_unique", [](const IValue* a) {
    auto [values, inverse, counts] =
        ops::unique2(a[0].toTensor(), a[1].toBool(), a[2].toBool(), false);
    return std::make_tuple(values, inverse);
  });
  defN<5>(r, "aten::unique_dim", [](const IValue* a) {
    return ops::uniqueDim(a[0].toTensor(), a[1].toInt(), a[3].toBool(), a[4].toBool());
  });
  defN<4>(r, "aten::unique_consecutive", [](const IValue* a) {
    return ops::uniqueConsecutive(a[0].toTensor(), a[1].toBool(), a[2].toBool(), toOptInt(a[3]));
  });
  defN<4>(r, "aten::unique_dim_consecutive", [](const IValue* a) {
    return ops::uniqueConsecutive(a[0].toTensor(), a[2].toBool(), a[3].toBool(), a[1].toInt());
  });
  defN<4>(r, "aten::argsort.stable", [](const IValue* a) {
    return std::get<1>(ops::sort(a[0].toTensor(), a[2].toInt(), a[3].toBool(), a[1].toBool()));
  });

  // ---- einsum, embedding_bag ----
  // path (a contraction order from opt_einsum) is ignored: left to right gives the same values.
  defN<3>(r, "aten::einsum",
          [](const IValue* a) { return ops::einsum(a[0].toStringRef(), a[1].toTensorVector()); });
  defN<8>(r, "aten::embedding_bag",
          [](const IValue* a) { return embeddingBagArgs(a, std::nullopt); });
  defN<9>(r, "aten::embedding_bag.padding_idx",
          [](const IValue* a) { return embeddingBagArgs(a, toOptInt(a[8])); });
  for (const char* name : {"aten::_embedding_bag", "aten::_embedding_bag_forward_only"}) {
    defN<9>(r, name, [](const IValue* a) {
      const int64_t p = a[8].toInt();
      return embeddingBagArgs(a, p < 0 ? std::nullopt : std::optional<int64_t>(p));
    });
  }

  // torch.where(condition) / nonzero_numpy: one Long index tensor per dim of the nonzeros.
  for (const char* name : {"aten::where", "aten::nonzero_numpy"}) {
    defN<1>(r, name, [](const IValue* a) {
      const Tensor nz = ops::nonzero(a[0].toTensor());  // [n, ndim]
      std::vector<Tensor> cols;
      for (int64_t d = 0; d < nz.size(1); ++d)
        cols.push_back(ops::contiguous(ops::select(nz, 1, d)));
      return tensorList(std::move(cols));
    });
  }

  // ---- meshgrid, repeat_interleave, diagonal, take, count_nonzero ----
  defN<1>(r, "aten::meshgrid",
          [](const IValue* a) { return tensorList(meshgrid(a[0].toTensorVector(), "ij")); });
  defN<2>(r, "aten::meshgrid.indexing", [](const IValue* a) {
    return tensorList(meshgrid(a[0].toTensorVector(), a[1].toStringRef()));
  });
  defN<2>(r, "aten::repeat_interleave.Tensor", [](const IValue* a) {
    const Tensor rep = a[0].toTensor();
    TL_CHECK(rep.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
    return repeatIndices(rep, rep.numel());
  });
  defN<4>(r, "aten::repeat_interleave.self_Tensor", [](const IValue* a) {
    return repeatInterleave(a[0].toTensor(), a[1].toTensor(), toOptInt(a[2]));
  });
  defN<4>(r, "aten::repeat_interleave.self_int", [](const IValue* a) {
    return repeatInterleave(a[0].toTensor(),
                            Tensor::fromVector(std::vector<int64_t>{a[1].toInt()}, {1}),
                            toOptInt(a[2]));
  });
  defN<4>(r, "aten::diagonal", [](const IValue* a) {
    return diagonal(a[0].toTensor(), a[1].toInt(), a[2].toInt(), a[3].toInt());
  });
  defFamily(
      r, "aten::diag",
      [](const IValue* a) {
        const Tensor x = a[0].toTensor();
        const int64_t k = a[1].toInt();
        TL_CHECK(x.dim() == 1 || x.dim() == 2, "diag(): Supports 1D or 2D tensors. Got {}D",
                 x.dim());
        if (x.dim() == 2) return ops::clone(diagonal(x, k, 0, 1));
        const int64_t n = x.size(0) + (k >= 0 ? k : -k);
        Tensor out = ops::zeros({n, n}, x.dtype());
        Tensor d = diagonal(out, k, 0, 1);
        ops::copy_(d, x);
        return out;
      },
      false);
  defFamily(r, "aten::take", [](const IValue* a) {
    const Tensor x = ops::reshape(a[0].toTensor().contiguous(), {-1});
    const Tensor idx = a[1].toTensor();
    TL_CHECK(idx.dtype() == ScalarType::Long,
             "take(): Expected a long tensor for index, but got {}", toString(idx.dtype()));
    const int64_t n = x.numel();
    std::vector<int64_t> flat(static_cast<size_t>(idx.numel()));
    for (int64_t i = 0; i < idx.numel(); ++i) {
      int64_t v = idx.contiguous().intAt(i);
      TL_CHECK(v >= -n && v < n,
               "out of range: tried to access index {} on a tensor of {} elements.", v, n);
      flat[static_cast<size_t>(i)] = v < 0 ? v + n : v;
    }
    return ops::reshape(ops::indexSelect(x, 0, Tensor::fromVector(flat, {idx.numel()})),
                        idx.sizes());
  });
  defFamily(r, "aten::take_along_dim", [](const IValue* a) {
    const Tensor x = a[0].toTensor(), idx = a[1].toTensor();
    const auto dim = toOptInt(a[2]);
    if (!dim) return ops::gather(ops::reshape(x, {-1}), 0, ops::reshape(idx, {-1}));
    TL_CHECK(x.dim() == idx.dim(),
             "torch.take_along_dim(): input and indices should have the same number of "
             "dimensions, but got {} dimensions for input, and {} dimensions for indices",
             x.dim(), idx.dim());
    const int64_t d = ops::wrapDim(*dim, x.dim());
    IntList xs = x.sizes(), is = idx.sizes();
    xs[static_cast<size_t>(d)] = 1;
    is[static_cast<size_t>(d)] = 1;
    IntList b = ops::broadcastShapes(xs, is);
    IntList bx = b, bi = b;
    bx[static_cast<size_t>(d)] = x.size(d);
    bi[static_cast<size_t>(d)] = idx.size(d);
    return ops::gather(ops::expand(x, bx), d, ops::expand(idx, bi));
  });
  defN<2>(r, "aten::count_nonzero", [](const IValue* a) {
    const Tensor nz = ops::ne(a[0].toTensor(), Scalar(0));
    const auto dim = toOptInt(a[1]);
    return ops::sum(nz, dim ? IntList{*dim} : IntList{}, false, ScalarType::Long);
  });
  defN<2>(r, "aten::count_nonzero.dim_IntList", [](const IValue* a) {
    return ops::sum(ops::ne(a[0].toTensor(), Scalar(0)), toIntList(a[1]), false, ScalarType::Long);
  });

  // ---- random sampling ----
  // PyTorch's default CPU generator and transforms (ops/random.h): the same seed gives the
  // same tensors. Only the default generator exists; a Generator argument must be None.
  auto noGenerator = [](const IValue& g, const char* op) {
    if (!g.isNone())
      throw UnsupportedError(
          fmt::format("{}: only the default generator is supported (pass generator=None)", op));
  };
  def(r, "aten::manual_seed", [](Stack& s) {
    const int64_t seed = s.back().toInt();
    s.pop_back();
    ops::manualSeed(static_cast<uint64_t>(seed));
  });
  defN<5>(r, "aten::rand", [](const IValue* a) {
    checkCpu(a[3]);
    Tensor t = ops::empty(toIntList(a[0]), toOptDtype(a[1]).value_or(ops::kDefaultFloat));
    ops::uniform_(t, 0.0, 1.0);
    return t;
  });
  defN<5>(r, "aten::randn", [](const IValue* a) {
    checkCpu(a[3]);
    Tensor t = ops::empty(toIntList(a[0]), toOptDtype(a[1]).value_or(ops::kDefaultFloat));
    ops::normal_(t, 0.0, 1.0);
    return t;
  });
  defN<6>(r, "aten::rand_like", [](const IValue* a) {
    checkCpu(a[3]);
    Tensor t = ops::zerosLike(a[0].toTensor(), toOptDtype(a[1]));
    ops::uniform_(t, 0.0, 1.0);
    return t;
  });
  defN<6>(r, "aten::randn_like", [](const IValue* a) {
    checkCpu(a[3]);
    Tensor t = ops::zerosLike(a[0].toTensor(), toOptDtype(a[1]));
    ops::normal_(t, 0.0, 1.0);
    return t;
  });
  defN<6>(r, "aten::randint", [](const IValue* a) {
    checkCpu(a[4]);
    // dtype=None is float, as in PyTorch (the schema's default is long).
    Tensor t = ops::empty(toIntList(a[1]), toOptDtype(a[2]).value_or(ops::kDefaultFloat));
    ops::random_(t, 0, a[0].toInt());
    return t;
  });
  defN<7>(r, "aten::randint.low", [](const IValue* a) {
    checkCpu(a[5]);
    Tensor t = ops::empty(toIntList(a[2]), toOptDtype(a[3]).value_or(ops::kDefaultFloat));
    ops::random_(t, a[0].toInt(), a[1].toInt());
    return t;
  });
  defN<5>(r, "aten::randperm", [](const IValue* a) {
    checkCpu(a[3]);
    return ops::randperm(a[0].toInt(), toOptDtype(a[1]).value_or(ScalarType::Long));
  });
  defN<4>(r, "aten::uniform_", [noGenerator](const IValue* a) {
    noGenerator(a[3], "aten::uniform_");
    Tensor self = a[0].toTensor();
    ops::uniform_(self, a[1].toDouble(), a[2].toDouble());
    return self;
  });
  defN<4>(r, "aten::normal_", [noGenerator](const IValue* a) {
    noGenerator(a[3], "aten::normal_");
    Tensor self = a[0].toTensor();
    ops::normal_(self, a[1].toDouble(), a[2].toDouble());
    return self;
  });
  defN<4>(r, "aten::random_.from", [noGenerator](const IValue* a) {
    noGenerator(a[3], "aten::random_");
    Tensor self = a[0].toTensor();
    ops::random_(self, a[1].toInt(), toOptInt(a[2]));
    return self;
  });
  defN<3>(r, "aten::random_.to", [noGenerator](const IValue* a) {
    noGenerator(a[2], "aten::random_");
    Tensor self = a[0].toTensor();
    ops::random_(self, 0, a[1].toInt());
    return self;
  });
  defN<2>(r, "aten::random_", [noGenerator](const IValue* a) {
    noGenerator(a[1], "aten::random_");
    Tensor self = a[0].toTensor();
    ops::random_(self);
    return self;
  });
  defN<3>(r, "aten::bernoulli_.float", [noGenerator](const IValue* a) {
    noGenerator(a[2], "aten::bernoulli_");
    Tensor self = a[0].toTensor();
    ops::bernoulli_(self, a[1].toDouble());
    return self;
  });
  defN<3>(r, "aten::bernoulli.p", [noGenerator](const IValue* a) {
    noGenerator(a[2], "aten::bernoulli");
    Tensor out = ops::zerosLike(a[0].toTensor());
    ops::bernoulli_(out, a[1].toDouble());
    return out;
  });
  defN<2>(r, "aten::bernoulli", [noGenerator](const IValue* a) {
    noGenerator(a[1], "aten::bernoulli");
    const Tensor p = a[0].toTensor();
    Tensor out = ops::zerosLike(p);
    ops::bernoulli_(out, p);
    return out;
  });
  defN<3>(r, "aten::bernoulli_.Tensor", [noGenerator](const IValue* a) {
    noGenerator(a[2], "aten::bernoulli_");
    Tensor self = a[0].toTensor();
    ops::bernoulli_(self, a[1].toTensor());
    return self;
  });

  // ---- devices ----
  defN<1>(r, "aten::cpu", [](const IValue* a) { return a[0].toTensor(); });

  // ---- grid_sample ----
  for (const char* name : {"aten::grid_sampler", "aten::grid_sampler_2d"})
    defFamily(r, name, [](const IValue* a) {
      return ops::gridSampler(a[0].toTensor(), a[1].toTensor(), a[2].toInt(), a[3].toInt(),
                              a[4].toBool());
    });

  // ---- torchvision ----
  defN<3>(r, "torchvision::nms", [](const IValue* a) {
    return ops::nms(a[0].toTensor(), a[1].toTensor(), a[2].toScalarDouble());
  });
  defN<7>(r, "torchvision::roi_align", [](const IValue* a) {
    return ops::roiAlign(a[0].toTensor(), a[1].toTensor(), a[2].toScalarDouble(), a[3].toInt(),
                         a[4].toInt(), a[5].toInt(), a[6].toBool());
  });
}

}  // namespace torchless
