// Kernels of the conv family (ops/conv.h): conv1d/2d/3d (integer and 'same'/'valid' padding),
// conv_transpose1d/2d/3d, aten::convolution and aten::_convolution (what traced graphs hold).

#include "ops/conv.h"
#include "ops/shape.h"
#include "runtime/register_utils.h"

namespace torchless {
namespace {

using namespace kreg;

// F.convNd(padding='same'|'valid'): 'same' pads dilation * (k - 1) in total per dim, the odd
// element on the right (as at::_convolution_mode does).
Tensor convPaddingMode(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                       const IntList& stride, const std::string& padding, const IntList& dilation,
                       int64_t groups, size_t spatial) {
  if (padding == "valid")
    return ops::convNd(input, weight, bias, stride, IntList(spatial, 0), dilation, groups);
  if (padding != "same") throw Error(fmt::format("Invalid padding string: '{}'", padding));
  for (int64_t s : stride)
    if (s != 1) throw Error("padding='same' is not supported for strided convolutions");
  IntList pad(spatial, 0), extra;
  bool asymmetric = false;
  const int64_t nd = weight.dim();
  IntList extraPad(2 * spatial, 0);
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t d = dilation.size() == 1 ? dilation[0] : dilation[i];
    const int64_t k = weight.size(nd - static_cast<int64_t>(spatial) + static_cast<int64_t>(i));
    const int64_t total = d * (k - 1);
    pad[i] = total / 2;
    if (total % 2) {
      asymmetric = true;
      // constant_pad_nd lists pads from the last dim backwards.
      extraPad[2 * (spatial - 1 - i) + 1] = 1;
    }
  }
  Tensor x = asymmetric ? ops::constantPadNd(input, extraPad, 0) : input;
  return ops::convNd(x, weight, bias, stride, pad, dilation, groups);
}

}  // namespace

void registerConvKernels(KernelRegistry& r) {
  const std::pair<const char*, size_t> convs[] = {
      {"aten::conv1d", 1}, {"aten::conv2d", 2}, {"aten::conv3d", 3}};
  for (const auto& [name, n] : convs) {
    const size_t nd = n;
    defFamily(r, name, [nd](const IValue* a) {
      return ops::convNd(a[0].toTensor(), a[1].toTensor(), toOptTensor(a[2]), toIntList(a[3], nd),
                         toIntList(a[4], nd), toIntList(a[5], nd), a[6].toInt());
    });
    defFamily(r, std::string(name) + ".padding", [nd](const IValue* a) {
      return convPaddingMode(a[0].toTensor(), a[1].toTensor(), toOptTensor(a[2]),
                             toIntList(a[3], nd), a[4].toStringRef(), toIntList(a[5], nd),
                             a[6].toInt(), nd);
    });
  }
  const std::pair<const char*, size_t> transposed[] = {{"aten::conv_transpose1d", 1},
                                                       {"aten::conv_transpose2d.input", 2},
                                                       {"aten::conv_transpose3d.input", 3}};
  for (const auto& [name, n] : transposed) {
    const size_t nd = n;
    defFamily(r, name, [nd](const IValue* a) {
      return ops::convTransposeNd(a[0].toTensor(), a[1].toTensor(), toOptTensor(a[2]),
                                  toIntList(a[3], nd), toIntList(a[4], nd), toIntList(a[5], nd),
                                  a[6].toInt(), toIntList(a[7], nd));
    });
  }
  auto convolution = [](const IValue* a) {
    return ops::convolution(a[0].toTensor(), a[1].toTensor(), toOptTensor(a[2]), toIntList(a[3]),
                            toIntList(a[4]), toIntList(a[5]), a[6].toBool(), toIntList(a[7]),
                            a[8].toInt());
  };
  defFamily(r, "aten::convolution", convolution);
  defFamily(r, "aten::_convolution", convolution);
  defFamily(r, "aten::_convolution.deprecated", convolution);
  defFamily(r, "aten::_convolution_mode", [](const IValue* a) {
    Tensor w = a[1].toTensor();
    const size_t nd = static_cast<size_t>(w.dim() - 2);
    return convPaddingMode(a[0].toTensor(), w, toOptTensor(a[2]), toIntList(a[3], nd),
                           a[4].toStringRef(), toIntList(a[5], nd), a[6].toInt(), nd);
  });
  // Created only by the fuse_conv_activation pass on graphs compiled for execution.
  defN<13>(r, "torchless::conv_fused", [](const IValue* a) {
    Tensor w = a[1].toTensor();
    const size_t nd = static_cast<size_t>(std::max<int64_t>(w.dim() - 2, 1));
    return ops::convolutionFused(a[0].toTensor(), w, toOptTensor(a[2]), toIntList(a[3], nd),
                                 toIntList(a[4], nd), toIntList(a[5], nd), a[6].toInt(),
                                 toOptTensor(a[7]),
                                 ops::convActivationFromString(a[8].toStringRef()), a[9].toDouble(),
                                 a[10].toDouble(), a[11].toBool(), a[12].toBool());
  });
}

}  // namespace torchless
