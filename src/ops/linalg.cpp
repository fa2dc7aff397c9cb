#include "ops/linalg.h"

#include "ops/dnnl_utils.h"
#include "ops/elementwise.h"
#include "ops/parallel.h"
#include "ops/reduction.h"
#include "ops/shape.h"
#include "ops/tensor_iterator.h"
#include "ops/thread_budget.h"

#include <array>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace torchless::ops {
namespace {

// Note [oneDNN matmul cache]
// Creating a oneDNN matmul primitive descriptor costs as much as a small product, so each
// distinct product (sizes and strides of the three 3-D operands, the bias's, the thread count)
// gets its primitive once and keeps it in a process-wide cache of at most kMaxMatmulPrims
// entries (emptied when full, as the convolution cache: Note [oneDNN convolution cache]).
// Operands are plain strided f32 memory wrapped per call, so nothing else is cached.
constexpr size_t kMaxMatmulPrims = 1024;
using MatmulKey = std::array<int64_t, 26>;

struct MatmulKeyHash {
  size_t operator()(const MatmulKey& k) const {
    size_t h = 1469598103934665603ull;
    for (int64_t x : k) h = (h ^ static_cast<size_t>(x)) * 1099511628211ull;
    return h;
  }
};

std::mutex gMatmulMu;
std::unordered_map<MatmulKey, std::shared_ptr<dnnl::matmul>, MatmulKeyHash> gMatmuls;

void putDims(MatmulKey& k, size_t& at, const Tensor& t) {
  for (int64_t d = 0; d < 3; ++d) {
    k[at++] = t.sizes()[static_cast<size_t>(d)];
    k[at++] = t.strides()[static_cast<size_t>(d)];
  }
}

// The cached primitive for c = a @ b (+ bias), all 3-D f32 (bias [1, 1, N] or absent).
std::shared_ptr<dnnl::matmul> matmulPrim(const Tensor& a, const Tensor& b, const Tensor& c,
                                         const Tensor* bias) {
  MatmulKey key{};
  size_t at = 0;
  key[at++] = omp_get_max_threads();
  key[at++] = bias != nullptr;
  putDims(key, at, a);
  putDims(key, at, b);
  putDims(key, at, c);
  if (bias) putDims(key, at, *bias);
  {
    std::lock_guard<std::mutex> lock(gMatmulMu);
    auto it = gMatmuls.find(key);
    if (it != gMatmuls.end()) return it->second;
  }
  auto ad = dnnl_utils::stridedDesc(a), bd = dnnl_utils::stridedDesc(b),
       cd = dnnl_utils::stridedDesc(c);
  auto desc = bias ? dnnl::matmul::desc(ad, bd, dnnl_utils::stridedDesc(*bias), cd)
                   : dnnl::matmul::desc(ad, bd, cd);
  auto prim = std::make_shared<dnnl::matmul>(
      dnnl::matmul::primitive_desc(desc, dnnl_utils::userScratchpad(), dnnl_utils::engine()));
  std::lock_guard<std::mutex> lock(gMatmulMu);
  if (gMatmuls.size() >= kMaxMatmulPrims) gMatmuls.clear();
  gMatmuls.emplace(key, prim);
  return prim;
}

void checkSameDtype(const Tensor& a, const Tensor& b, const char* an, const char* bn) {
  TL_CHECK(a.dtype() == b.dtype(), "expected {} and {} to have the same dtype, but got: {} != {}",
           an, bn, dtypeName(a.dtype()) == std::string("float32") ? "float" : dtypeName(a.dtype()),
           dtypeName(b.dtype()) == std::string("float32") ? "float" : dtypeName(b.dtype()));
}

// Float operands oneDNN accepts: each matrix has a unit stride in one of its last two dims.
Tensor denseMatrices(const Tensor& t) {
  const int64_t n = t.dim();
  const bool ok = t.strides()[n - 1] == 1 || t.strides()[n - 2] == 1 || t.sizes()[n - 1] == 1 ||
                  t.sizes()[n - 2] == 1;
  for (int64_t d = 0; d < n; ++d)
    if (t.strides()[d] == 0 && t.sizes()[d] > 1) return t.contiguous();
  return ok ? t : t.contiguous();
}

// c[B, M, N] = a[B, M, K] @ b[B, K, N] (+ bias[1, 1, N], f32 only); all 3-D, same batch (or a
// batch of 1 in b).
void bmmInto(const Tensor& c, const Tensor& a, const Tensor& b, const Tensor* bias = nullptr) {
  const int64_t B = a.sizes()[0], M = a.sizes()[1], K = a.sizes()[2], N = b.sizes()[2];
  if (c.numel() == 0) return;
  if (K == 0) {
    Tensor cc = c;
    zero_(cc);
    if (bias) copyInto(cc, *bias);
    return;
  }
  if (a.dtype() == ScalarType::Float) {
    Tensor x = denseMatrices(a), w = denseMatrices(b);
    // Note [Thread budget] in ops/thread_budget.h (the cache key takes the limited count).
    ThreadLimit limit(threadsForWork(2.0 * static_cast<double>(B) * static_cast<double>(M) *
                                     static_cast<double>(N) * static_cast<double>(K)));
    auto prim = matmulPrim(x, w, c, bias);
    auto am = dnnl_utils::wrap(dnnl_utils::stridedDesc(x), x),
         bm = dnnl_utils::wrap(dnnl_utils::stridedDesc(w), w),
         cm = dnnl_utils::wrap(dnnl_utils::stridedDesc(c), c);
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}};
    if (bias) args.emplace(DNNL_ARG_BIAS, dnnl_utils::wrap(dnnl_utils::stridedDesc(*bias), *bias));
    dnnl_utils::execute(*prim, args);  // Note [Scratchpads of shared primitives]
    return;
  }
  dispatchNumeric(a.dtype(), "addmm_impl_cpu_", [&](auto tag) {
    using T = decltype(tag);
    using A = Acc<T>;
    const T* ap = a.data<T>();
    const T* bp = b.data<T>();
    T* cp = c.data<T>();
    const int64_t as0 = a.strides()[0], as1 = a.strides()[1], as2 = a.strides()[2];
    const int64_t bs0 = b.sizes()[0] == 1 ? 0 : b.strides()[0], bs1 = b.strides()[1],
                  bs2 = b.strides()[2];
    const int64_t cs0 = c.strides()[0], cs1 = c.strides()[1], cs2 = c.strides()[2];
    parallelFor(
        B * M, std::max<int64_t>(1, 4096 / std::max<int64_t>(N * K, 1)),
        [&](int64_t lo, int64_t hi) {
          for (int64_t bm = lo; bm < hi; ++bm) {
            const int64_t bi = bm / M, i = bm % M;
            for (int64_t j = 0; j < N; ++j) {
              A acc = 0;
              for (int64_t k = 0; k < K; ++k)
                acc += static_cast<A>(static_cast<OpMath<T>>(ap[bi * as0 + i * as1 + k * as2])) *
                       static_cast<A>(static_cast<OpMath<T>>(bp[bi * bs0 + k * bs1 + j * bs2]));
              cp[bi * cs0 + i * cs1 + j * cs2] = castTo<T>(acc);
            }
          }
        });
  });
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b) {
  TL_CHECK(a.dim() == 2, "self must be a matrix");
  TL_CHECK(b.dim() == 2, "mat2 must be a matrix");
  TL_CHECK(a.sizes()[1] == b.sizes()[0],
           "mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})", a.sizes()[0],
           a.sizes()[1], b.sizes()[0], b.sizes()[1]);
  checkSameDtype(a, b, "mat1", "mat2");
  Tensor c = Tensor::empty({a.sizes()[0], b.sizes()[1]}, a.dtype());
  bmmInto(unsqueeze(c, 0), unsqueeze(a, 0), unsqueeze(b, 0));
  return c;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  TL_CHECK(a.dim() == 3, "batch1 must be a 3D tensor");
  TL_CHECK(b.dim() == 3, "batch2 must be a 3D tensor");
  TL_CHECK(
      b.sizes()[0] == a.sizes()[0] && b.sizes()[1] == a.sizes()[2],
      "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
      a.sizes()[0], a.sizes()[2], b.sizes()[0], b.sizes()[1]);
  checkSameDtype(a, b, "batch1", "batch2");
  Tensor c = Tensor::empty({a.sizes()[0], a.sizes()[1], b.sizes()[2]}, a.dtype());
  bmmInto(c, a, b);
  return c;
}

Tensor mv(const Tensor& a, const Tensor& v) {
  TL_CHECK(a.dim() == 2 && v.dim() == 1, "vector + matrix @ vector expected, got {}, {}, {}", 1,
           a.dim(), v.dim());
  TL_CHECK(a.sizes()[1] == v.sizes()[0], "size mismatch, got input ({}), mat ({}x{}), vec ({})",
           a.sizes()[0], a.sizes()[0], a.sizes()[1], v.sizes()[0]);
  return squeeze(mm(a, unsqueeze(v, 1)), 1);
}

Tensor dot(const Tensor& a, const Tensor& b) {
  TL_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got {}D and {}D tensors",
           a.dim(), b.dim());
  TL_CHECK(a.numel() == b.numel(),
           "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of "
           "elements, but got {} and {} elements respectively",
           a.numel(), b.numel(), a.numel(), b.numel());
  TL_CHECK(a.dtype() == b.dtype(),
           "dot : expected both vectors to have same dtype, but found {} and {}",
           toString(a.dtype()), toString(b.dtype()));
  return reshape(mm(unsqueeze(a, 0), unsqueeze(b, 1)), {});
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  const int64_t da = a.dim(), db = b.dim();
  TL_CHECK(da > 0 && db > 0,
           "both arguments to matmul need to be at least 1D, but they are {}D and {}D", da, db);
  if (da == 1 && db == 1) return dot(a, b);
  if (da == 2 && db == 1) return mv(a, b);
  if (da == 1 && db == 2) return squeeze(mm(unsqueeze(a, 0), b), 0);
  if (da == 2 && db == 2) return mm(a, b);
  // Batched: promote 1-D operands, broadcast batch dims, run 3-D bmm, fix the shape.
  Tensor x = da == 1 ? unsqueeze(a, 0) : a;
  Tensor y = db == 1 ? unsqueeze(b, 1) : b;
  const int64_t M = x.size(-2), K = x.size(-1), K2 = y.size(-2), N = y.size(-1);
  TL_CHECK(K == K2, "mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})", M, K, K2, N);
  checkSameDtype(x, y, "mat1", "mat2");
  IntList ba(x.sizes().begin(), x.sizes().end() - 2), bb(y.sizes().begin(), y.sizes().end() - 2);
  const IntList batch = broadcastShapes(ba, bb);
  const int64_t B = checkedNumel(batch);
  IntList xs = batch, ys = batch;
  xs.insert(xs.end(), {M, K});
  ys.insert(ys.end(), {K, N});
  Tensor x3 = reshape(expand(x, xs), {B, M, K});
  Tensor y3 = bb == batch || bb.empty() ? reshape(expand(y, ys), {B, K, N})
                                        : reshape(expand(y, ys), {B, K, N});
  Tensor c = Tensor::empty({B, M, N}, x.dtype());
  bmmInto(c, x3, y3);
  IntList outShape = batch;
  if (da > 1) outShape.push_back(M);
  if (db > 1) outShape.push_back(N);
  return reshape(c, outShape);
}

Tensor addmm(const Tensor& self, const Tensor& m1, const Tensor& m2, const Scalar& beta,
             const Scalar& alpha) {
  Tensor p = mm(m1, m2);
  if (!(alpha.isIntegral() && alpha.toLong() == 1)) p = mul(p, alpha);
  if (beta.toDouble() == 0) return p;
  TL_CHECK(broadcastShapes(self.sizes(), p.sizes()) == p.sizes(),
           "The expanded size of the tensor ({}) must match the existing size ({}) at "
           "non-singleton dimension 1",
           p.sizes()[1], self.dim() > 0 ? self.size(-1) : 1);
  return add(p, beta.isIntegral() && beta.toLong() == 1 ? self : mul(self, beta));
}

Tensor baddbmm(const Tensor& self, const Tensor& b1, const Tensor& b2, const Scalar& beta,
               const Scalar& alpha) {
  Tensor p = bmm(b1, b2);
  if (!(alpha.isIntegral() && alpha.toLong() == 1)) p = mul(p, alpha);
  if (beta.toDouble() == 0) return p;
  return add(p, beta.isIntegral() && beta.toLong() == 1 ? self : mul(self, beta));
}

Tensor linear(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias) {
  TL_CHECK(weight.dim() == 2 || weight.dim() == 1, "linear: weight must be 1-D or 2-D");
  // f32 [*, K] x [N, K]^T + [N]: the leading dims fold into M (as PyTorch's linear does for
  // contiguous input) and the bias is added by the matmul primitive itself.
  if (weight.dim() == 2 && x.dim() >= 2 && x.dtype() == ScalarType::Float &&
      weight.dtype() == ScalarType::Float && x.size(-1) == weight.sizes()[1] && x.numel() > 0 &&
      weight.numel() > 0) {
    const bool withBias = bias && bias->defined();
    // PyTorch's linear is addmm(bias, x, weight.t()) here, which rejects a bias of another dtype.
    TL_CHECK(!withBias || bias->dtype() == ScalarType::Float,
             "self and mat2 must have the same dtype");
    const bool fuseBias = withBias && bias->dtype() == ScalarType::Float && bias->dim() == 1 &&
                          bias->sizes()[0] == weight.sizes()[0] &&
                          (bias->strides()[0] == 1 || bias->sizes()[0] == 1);
    const int64_t K = weight.sizes()[1], N = weight.sizes()[0];
    Tensor x2 = reshape(x, {-1, K});
    const int64_t M = x2.sizes()[0];
    Tensor c = Tensor::empty({1, M, N}, ScalarType::Float);
    if (fuseBias) {
      Tensor b3 = bias->asStrided({1, 1, N}, {N, N, 1}, bias->storageOffset());
      bmmInto(c, unsqueeze(x2, 0), unsqueeze(t(weight), 0), &b3);
    } else {
      bmmInto(c, unsqueeze(x2, 0), unsqueeze(t(weight), 0));
    }
    IntList outShape(x.sizes().begin(), x.sizes().end() - 1);
    outShape.push_back(N);
    Tensor out = reshape(c, outShape);
    if (withBias && !fuseBias) out = add(out, *bias);
    return out;
  }
  Tensor out = weight.dim() == 2 ? matmul(x, t(weight)) : matmul(x, weight);
  if (bias && bias->defined()) out = add(out, *bias);
  return out;
}

Tensor outer(const Tensor& a, const Tensor& b) {
  TL_CHECK(a.dim() == 1 && b.dim() == 1, "outer: Expected 1-D argument self, but got {}-D",
           a.dim());
  return mul(unsqueeze(a, 1), unsqueeze(b, 0));
}

Tensor cdist(const Tensor& x1In, const Tensor& x2In, double p, std::optional<int64_t> computeMode) {
  TL_CHECK(isFloatingType(x1In.dtype()) && x1In.dtype() != ScalarType::Half &&
               x1In.dtype() != ScalarType::BFloat16,
           "cdist only supports floating-point dtypes, X1 got: {}", toString(x1In.dtype()));
  TL_CHECK(x1In.dtype() == x2In.dtype(), "cdist only supports floating-point dtypes, X2 got: {}",
           toString(x2In.dtype()));
  TL_CHECK(x1In.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: {}D", x1In.dim());
  TL_CHECK(x2In.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: {}D", x2In.dim());
  TL_CHECK(x1In.size(-1) == x2In.size(-1),
           "X1 and X2 must have the same number of columns. X1: {} X2: {}", x1In.size(-1),
           x2In.size(-1));
  TL_CHECK(p >= 0, "cdist only supports non-negative p values");
  const int64_t mode = computeMode.value_or(0);
  TL_CHECK(mode >= 0 && mode <= 2, "possible modes: None, 1, 2, but was: {}", mode);
  const int64_t P = x1In.size(-2), R = x2In.size(-2), M = x1In.size(-1);
  IntList b1(x1In.sizes().begin(), x1In.sizes().end() - 2);
  IntList b2(x2In.sizes().begin(), x2In.sizes().end() - 2);
  IntList batch = broadcastShapes(b1, b2);
  int64_t B = 1;
  for (int64_t s : batch) B *= s;
  IntList outSizes = batch;
  outSizes.push_back(P);
  outSizes.push_back(R);
  IntList e1 = batch, e2 = batch;
  e1.insert(e1.end(), {P, M});
  e2.insert(e2.end(), {R, M});
  const Tensor x1 = reshape(expand(x1In, e1).contiguous(), {B, P, M});
  const Tensor x2 = reshape(expand(x2In, e2).contiguous(), {B, R, M});
  if (P == 0 || R == 0 || B == 0) return Tensor::empty(outSizes, x1In.dtype());
  if (M == 0) return reshape(ops::zeros({B, P, R}, x1In.dtype()), outSizes);
  if (p == 2 && (mode == 1 || (mode == 0 && (P > 25 || R > 25)))) {
    // ATen's _euclidean_dist: [-2 x1, |x1|^2, 1] . [x2, 1, |x2|^2]
    Tensor n1 = sum(mul(x1, x1), {-1}, true), n2 = sum(mul(x2, x2), {-1}, true);
    Tensor a = cat({mul(x1, Scalar(-2.0)), n1, ops::ones(n1.sizes(), n1.dtype())}, -1);
    Tensor b = cat({x2, ops::ones(n2.sizes(), n2.dtype()), n2}, -1);
    Tensor d = sqrt(clampMin(bmm(a, transpose(b, 1, 2)), Scalar(0.0)));
    return reshape(d, outSizes);
  }
  Tensor out = Tensor::empty({B, P, R}, x1In.dtype());
  auto direct = [&](auto tag) {
    using T = decltype(tag);
    const T* a = x1.data<T>();
    const T* b = x2.data<T>();
    T* o = out.data<T>();
    parallelFor(B * P, 1, [&](int64_t begin, int64_t end) {
      for (int64_t bp = begin; bp < end; ++bp) {
        const T* u = a + bp * M;
        const T* vs = b + (bp / P) * R * M;
        for (int64_t r = 0; r < R; ++r) {
          const T* v = vs + r * M;
          T acc = 0;
          for (int64_t m = 0; m < M; ++m) {
            const T d = std::abs(u[m] - v[m]);
            if (p == 0)
              acc += d != T(0) ? T(1) : T(0);
            else if (p == 1)
              acc += d;
            else if (p == 2)
              acc += d * d;
            else if (std::isinf(p))
              acc = std::max(acc, d);
            else
              acc += std::pow(d, static_cast<T>(p));
          }
          if (p == 2)
            acc = std::sqrt(acc);
          else if (p != 0 && p != 1 && !std::isinf(p))
            acc = std::pow(acc, static_cast<T>(1.0 / p));
          o[bp * R + r] = acc;
        }
      }
    });
  };
  if (x1In.dtype() == ScalarType::Double)
    direct(double{});
  else
    direct(float{});
  return reshape(out, outSizes);
}

Tensor pairwiseDistance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  const int64_t dim = std::max(x1.dim(), x2.dim()) - 1;
  return norm(add(sub(x1, x2), Scalar(eps)), p, {dim}, keepdim);
}

namespace {
// ATen's linspace_from_neg_one: linspace(-1, 1, n), scaled by (n - 1) / n unless align_corners;
// 0 for n <= 1.
Tensor baseCoordinates(int64_t n, bool alignCorners, ScalarType dt) {
  if (n <= 1) return ops::zeros({1}, dt);
  Tensor range = linspace(Scalar(-1.0), Scalar(1.0), n, dt);
  if (!alignCorners)
    range = div(mul(range, Scalar(static_cast<int64_t>(n - 1))), Scalar(static_cast<int64_t>(n)));
  return range;
}
}  // namespace

Tensor affineGridGenerator(const Tensor& theta, const IntList& size, bool alignCorners) {
  TL_CHECK(size.size() == 4 || size.size() == 5,
           "AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs.");
  TL_CHECK(isFloatingType(theta.dtype()), "Expected theta to have floating point type, but got {}",
           toString(theta.dtype()));
  const bool volumetric = size.size() == 5;
  const int64_t N = size[0], k = volumetric ? 3 : 2;
  TL_CHECK(theta.dim() == 3 && theta.size(0) == N && theta.size(1) == k && theta.size(2) == k + 1,
           "Expected a batch of {}D affine matrices of shape Nx{}x{} for size {}. Got {}.", k, k,
           k + 1, sizesToString(size), sizesToString(theta.sizes()));
  for (int64_t s : size) TL_CHECK(s >= 0, "affine_grid: invalid size {}", sizesToString(size));
  const ScalarType dt = theta.dtype();
  // base [N, (D,) H, W, k + 1]: x along W, y along H, (z along D,) then 1
  IntList spatial(size.begin() + 2, size.end());
  IntList baseSizes{N};
  baseSizes.insert(baseSizes.end(), spatial.begin(), spatial.end());
  baseSizes.push_back(k + 1);
  Tensor base = Tensor::empty(baseSizes, dt);
  const int64_t last = static_cast<int64_t>(baseSizes.size()) - 1;
  for (int64_t c = 0; c < k; ++c) {
    // coordinate c runs along spatial dim (k - 1 - c): x along the last
    const int64_t along = static_cast<int64_t>(spatial.size()) - 1 - c;
    Tensor coords = baseCoordinates(spatial[static_cast<size_t>(along)], alignCorners, dt);
    IntList shape(static_cast<size_t>(spatial.size()), 1);
    shape[static_cast<size_t>(along)] = coords.numel();
    Tensor plane = select(base, last, c);
    copy_(plane, reshape(coords, shape));
  }
  Tensor ones = select(base, last, k);
  fill_(ones, Scalar(1.0));
  int64_t points = 1;
  for (int64_t s : spatial) points *= s;
  Tensor grid = bmm(reshape(base, {N, points, k + 1}), transpose(theta, 1, 2));
  IntList outSizes{N};
  outSizes.insert(outSizes.end(), spatial.begin(), spatial.end());
  outSizes.push_back(k);
  return reshape(grid, outSizes);
}

}  // namespace torchless::ops
