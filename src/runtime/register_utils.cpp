#include "runtime/register_utils.h"

#include "ops/shape.h"

#include <cmath>

namespace torchless::kreg {

namespace {
bool sameArgs(const FunctionSchema& a, const FunctionSchema& b, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (a.arguments()[i].type()->str() != b.arguments()[i].type()->str()) return false;
  return true;
}
}  // namespace

const OpInfo* inplaceVariant(const OpInfo& functional) {
  const auto& s = functional.schema;
  for (const OpInfo* op : OperatorRegistry::global().lookup(s.name() + "_")) {
    if (op->schema.overloadName() != s.overloadName()) continue;
    if (op->schema.arguments().size() != s.arguments().size()) continue;
    if (sameArgs(op->schema, s, s.arguments().size())) return op;
  }
  return nullptr;
}

std::vector<const OpInfo*> outVariants(const OpInfo& functional) {
  std::vector<const OpInfo*> found;
  const auto& s = functional.schema;
  const size_t n = s.arguments().size();
  for (const OpInfo* op : OperatorRegistry::global().lookup(s.name())) {
    const auto& args = op->schema.arguments();
    if (op == &functional || args.size() != n + 1 || !args[n].isOut()) continue;
    if (args[n].name() != "out" || op->schema.returns().size() != 1) continue;
    if (sameArgs(op->schema, s, n)) found.push_back(op);
  }
  return found;
}

Tensor writeOut(const Tensor& out, const Tensor& result) {
  Tensor o = out;
  if (o.sizes() != result.sizes()) {
    // out= resizes its output to the result's shape (PyTorch warns when out was not empty).
    Tensor fresh = Tensor::empty(result.sizes(), o.dtype());
    auto& impl = *o.impl();
    impl.storage = fresh.storage();
    impl.storageOffset = 0;
    impl.sizes = fresh.sizes();
    impl.strides = fresh.strides();
  }
  if (!ops::canCast(result.dtype(), o.dtype()))
    throw Error(fmt::format("result type {} can't be cast to the desired output type {}",
                            toString(result.dtype()), toString(o.dtype())));
  ops::copy_(o, result);
  return o;
}

Tensor assignInPlace(const IValue& selfValue, const Tensor& result) {
  Tensor self = selfValue.toTensor();
  if (self.is(result)) return self;
  ops::assignResult(self, result);
  return self;
}

IValue tensorList(std::vector<Tensor> tensors) {
  std::vector<IValue> values;
  values.reserve(tensors.size());
  for (auto& t : tensors) values.emplace_back(std::move(t));
  return IValue(ListImpl::create(TensorType::get(), std::move(values)));
}

std::vector<std::optional<double>> scalesOf(const IValue& v, size_t n) {
  std::vector<std::optional<double>> out(n);
  if (v.isNone()) return out;
  auto d = v.toDoubleVector();
  for (size_t i = 0; i < n && i < d.size(); ++i) out[i] = d[i];
  return out;
}

// upsample_*.vec: output_size or floor(input size * scale_factor) per spatial dim.
IntList vecOutputSize(const Tensor& x, const IValue& outputSize, const IValue& scaleFactors,
                      size_t n) {
  if (!outputSize.isNone()) return toIntList(outputSize, n);
  if (scaleFactors.isNone())
    throw Error("Must specify exactly one of output_size and scale_factors");
  auto s = scaleFactors.toDoubleVector();
  if (s.size() != n)
    throw Error(fmt::format("scale_factors has {} element{} for {} spatial dimension{}", s.size(),
                            s.size() == 1 ? "" : "s", n, n == 1 ? "" : "s"));
  IntList out(n);
  for (size_t i = 0; i < n; ++i) {
    const double f = s[i];
    out[i] = static_cast<int64_t>(std::floor(
        static_cast<double>(x.size(x.dim() - static_cast<int64_t>(n) + static_cast<int64_t>(i))) *
        f));
  }
  return out;
}

}  // namespace torchless::kreg
