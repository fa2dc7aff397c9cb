// Bad-input paths of the scatter / index / search / unique / einsum / embedding_bag /
// torchvision kernels and the packed-sequence RNN kernels: each throws PyTorch's message.
// (Their values are checked against PyTorch by gen_kernel_cases.py, runtime_kernel_oracle.)
#include "ir/ir_parser.h"
#include "ops/einsum.h"
#include "ops/embedding_bag.h"
#include "ops/rnn.h"
#include "ops/scatter.h"
#include "ops/search.h"
#include "ops/shape.h"
#include "ops/vision.h"
#include "runtime/interpreter.h"
#include "runtime/kernel.h"

#include <gtest/gtest.h>

namespace torchless {
namespace {

template <typename Fn>
std::string errorOf(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

#define EXPECT_ERROR(stmt, text)                                          \
  EXPECT_NE(errorOf([&] { (void)(stmt); }).find(text), std::string::npos) \
      << errorOf([&] { (void)(stmt); })

Tensor longs(std::vector<int64_t> v, IntList shape) { return Tensor::fromVector(v, shape); }

TEST(KernelExtra, ScatterErrors) {
  Tensor x = ops::zeros({3, 4});
  EXPECT_ERROR(ops::scatter(x, 0, longs({-1, 0}, {1, 2}), ops::ones({1, 2})),
               "index -1 is out of bounds for dimension 0 with size 3");
  EXPECT_ERROR(ops::scatter(x, 0, longs({3, 0}, {1, 2}), ops::ones({1, 2})),
               "index 3 is out of bounds for dimension 0 with size 3");
  EXPECT_ERROR(ops::scatter(x, 0, longs({1, 0}, {1, 2}).to(ScalarType::Int), ops::ones({1, 2})),
               "scatter(): Expected dtype int64 for index");
  EXPECT_ERROR(ops::scatter(x, 0, longs({1, 0}, {1, 2}), ops::ones({1, 2}, ScalarType::Double)),
               "scatter(): Expected self.dtype to be equal to src.dtype");
  EXPECT_ERROR(ops::scatter(x, 0, longs({1, 0, 0, 0, 0}, {1, 5}), ops::ones({1, 5})),
               "Expected index [1, 5] to be smaller than self [3, 4] apart from dimension 0 and to "
               "be smaller "
               "size than src [1, 5]");
  EXPECT_ERROR(ops::scatter(x, 0, longs({1, 0}, {2}), ops::ones({1, 2})),
               "Index tensor must have the same number of dimensions as self tensor");
  EXPECT_ERROR(ops::scatterReduceFromString("foo", true),
               "reduce argument must be either sum, prod, mean, amax or amin.");
  EXPECT_ERROR(ops::scatterReduceFromString("sum", false),
               "reduce argument must be either add or multiply.");
}

// Training-mode dropout and rrelu draw random numbers: refused with what to do, except dropout
// with p = 0, which is the input (ATen's _dropout_impl).
TEST(KernelExtra, RandomTrainingModesAreRefused) {
  initKernels();
  auto run = [](const char* text, const Tensor& x) {
    auto g = std::make_shared<Graph>();
    parseIR(text, g.get());
    Code code(g, "training");
    Stack stack{IValue(x)};
    code.run(stack);
    return stack.at(0).toTensor();
  };
  Tensor x = ops::ones({2, 3});
  EXPECT_ERROR(run(R"IR(
graph(%x : Tensor):
  %p : float = prim::Constant[value=0.5]()
  %t : bool = prim::Constant[value=1]()
  %y : Tensor = aten::dropout(%x, %p, %t)
  return (%y)
)IR",
                   x),
               "dropout with training=True and p=0.5 is not supported");
  EXPECT_ERROR(run(R"IR(
graph(%x : Tensor):
  %l : float = prim::Constant[value=0.125]()
  %u : float = prim::Constant[value=0.25]()
  %t : bool = prim::Constant[value=1]()
  %g : NoneType = prim::Constant()
  %y : Tensor = aten::rrelu(%x, %l, %u, %t, %g)
  return (%y)
)IR",
                   x),
               "rrelu with training=True is not supported");
  Tensor same = run(R"IR(
graph(%x : Tensor):
  %p : float = prim::Constant[value=0.]()
  %t : bool = prim::Constant[value=1]()
  %y : Tensor = aten::dropout(%x, %p, %t)
  return (%y)
)IR",
                    x);
  EXPECT_EQ(same.doubleAt(5), 1.0);
}

// nn.LSTM with proj_size takes five weights per layer and direction (w_hr last): a list of
// another length says how many it expected; training with dropout between layers is refused.
TEST(KernelExtra, RecurrentParamsAndTrainingErrors) {
  const int64_t I = 3, H = 4, P = 2, B = 2, T = 5;
  Tensor x = ops::ones({T, B, I});
  Tensor h0 = ops::zeros({1, B, P}), c0 = ops::zeros({1, B, H});
  std::vector<Tensor> proj = {ops::ones({4 * H, I}), ops::ones({4 * H, P}), ops::zeros({4 * H}),
                              ops::zeros({4 * H}), ops::ones({P, H})};
  auto out = ops::rnn(ops::RnnMode::LSTM, x, h0, c0, proj, true, 1, false, false, false);
  EXPECT_EQ(out[0].sizes(), (IntList{T, B, P}));
  EXPECT_EQ(out[2].sizes(), (IntList{1, B, H}));
  std::vector<Tensor> four(proj.begin(), proj.begin() + 4);
  EXPECT_ERROR(ops::rnn(ops::RnnMode::LSTM, x, h0, c0, four, true, 1, false, false, false),
               "expected 5 weight tensors for 1 layers with projections, got 4");
  EXPECT_ERROR(ops::rnn(ops::RnnMode::LSTM, x, h0, c0, proj, true, 1, true, false, false),
               "recurrent layers in training mode with dropout between layers are not supported");
}

TEST(KernelExtra, IndexAndMaskedErrors) {
  Tensor x = ops::zeros({3, 4});
  EXPECT_ERROR(ops::indexAdd(x, 0, longs({-1}, {1}), ops::ones({1, 4})),
               "index out of range in self");
  EXPECT_ERROR(ops::indexAdd(x, 0, longs({5}, {1}), ops::ones({1, 4})),
               "index out of range in self");
  EXPECT_ERROR(ops::indexAdd(x, 0, ops::ones({1}), ops::ones({1, 4})),
               "index_add_(): Expected dtype int32/int64 for index but got: Float");
  EXPECT_ERROR(ops::maskedScatter(x, ops::ones({3, 4}, ScalarType::Bool), ops::ones({5})),
               "Number of elements of source < number of ones in mask");
  EXPECT_ERROR(
      ops::maskedScatter(x, ops::ones({4}, ScalarType::Bool), ops::ones({5}, ScalarType::Double)),
      "masked_scatter: expected self and source to have same dtypes but gotFloat and Double");
}

TEST(KernelExtra, SearchErrors) {
  Tensor seq = Tensor::fromVector(std::vector<float>{1, 2, 3}, {3});
  EXPECT_ERROR(ops::searchsorted(seq, ops::ones({2}), false, true, std::string("left")),
               "torch.searchsorted(): side and right can't be set to opposites, got side of left "
               "while right was True");
  EXPECT_ERROR(ops::searchsorted(seq, ops::ones({2}), false, false, std::string("middle")),
               "side can only be 'left' or 'right' but got middle");
  EXPECT_ERROR(ops::searchsorted(ops::zeros({2, 3}), ops::ones({3, 2})),
               "boundaries tensor should be 1 dimension or the first N-1 dimensions");
  EXPECT_ERROR(ops::bucketize(ops::ones({2}), ops::zeros({2, 3})),
               "boundaries tensor must be 1 dimension, but got dim(2)");
}

TEST(KernelExtra, EinsumErrors) {
  Tensor a = ops::ones({2, 3});
  EXPECT_ERROR(ops::einsum("ij", {a, a}),
               "einsum(): more operands were provided than specified in the equation");
  EXPECT_ERROR(ops::einsum("ij,jk", {a}),
               "einsum(): fewer operands were provided than specified in the equation");
  EXPECT_ERROR(
      ops::einsum("ij->ik", {a}),
      "einsum(): output subscript k does not appear in the equation for any input operand");
  EXPECT_ERROR(ops::einsum("ij->ii", {a}),
               "einsum(): output subscript i appears more than once in the output");
  EXPECT_ERROR(ops::einsum("i1->i", {a}),
               "einsum(): invalid subscript given at index 1 in the equation string, subscripts "
               "must be in [a-zA-Z]");
  EXPECT_ERROR(ops::einsum("ijk->i", {a}),
               "einsum(): the number of subscripts in the equation (3) does not match the number "
               "of dimensions (2) "
               "for operand 0 and no ellipsis was given");
  EXPECT_ERROR(ops::einsum("ii->i", {a}),
               "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 3 != 2");
  EXPECT_ERROR(ops::einsum("ij,jk", {a, ops::ones({4, 5})}),
               "einsum(): subscript j has size 4 for operand 1 which does not broadcast with "
               "previously seen size 3");
  EXPECT_ERROR(ops::einsum("ij,ij->", {a, ops::ones({2, 3}, ScalarType::Long)}),
               "expected scalar type Float but found Long");
}

TEST(KernelExtra, EmbeddingBagAndVisionErrors) {
  Tensor w = ops::ones({5, 3});
  EXPECT_ERROR(ops::embeddingBag(w, longs({1, 2}, {2}), longs({1}, {1}), 0, std::nullopt, false,
                                 std::nullopt),
               "offsets[0] has to be 0");
  EXPECT_ERROR(ops::embeddingBag(w, longs({1, 2}, {2}), longs({0, 3}, {2}), 0, std::nullopt, false,
                                 std::nullopt),
               "offsets[-1] can not be greater than input's length 2, but got 3");
  EXPECT_ERROR(ops::embeddingBag(w, longs({1, 2}, {2}), longs({0}, {1}), 1, ops::ones({2}), false,
                                 std::nullopt),
               "per_sample_weights only supported with mode='sum'");
  EXPECT_ERROR(ops::embeddingBag(w, longs({1, 7}, {2}), longs({0}, {1}), 0, std::nullopt, false,
                                 std::nullopt),
               "index out of range in self");
  EXPECT_ERROR(ops::embeddingBag(w, longs({1, 2}, {2}), longs({0}, {1}), 0, std::nullopt, false, 5),
               "padding_idx must be within the number of embeddings, -5 through 4, but got 5");
  EXPECT_ERROR(ops::nms(ops::ones({3, 5}), ops::ones({3}), 0.5),
               "boxes should have 4 elements in dimension 1, got 5");
  EXPECT_ERROR(ops::nms(ops::ones({3, 4}), ops::ones({2}), 0.5),
               "boxes and scores should have same number of elements in dimension 0, got 3 and 2");
  EXPECT_ERROR(ops::roiAlign(ops::ones({1, 2, 4, 4}), ops::ones({2, 4}), 1.0, 2, 2, 0, false),
               "rois must have shape as Tensor[K, 5]");
}

std::vector<IValue> runGraph(const char* text, std::vector<IValue> inputs) {
  initKernels();
  auto g = std::make_shared<Graph>();
  parseIR(text, g.get());
  Code code(g, "test");
  Stack stack = std::move(inputs);
  code.run(stack);
  return stack;
}

// aten::_nested_tensor_from_mask_left_aligned: true when each mask row is its trues then its
// falses (an all-false row too), as PyTorch 1.13 answers; a bad mask gets PyTorch's messages.
TEST(KernelExtra, NestedMaskLeftAligned) {
  const char* ir = R"IR(
graph(%x : Tensor, %m : Tensor):
  %a : bool = aten::_nested_tensor_from_mask_left_aligned(%x, %m)
  return (%a)
)IR";
  auto mask = [](std::vector<int64_t> v, IntList shape) {
    return Tensor::fromVector(v, shape).to(ScalarType::Bool);
  };
  const Tensor x = ops::zeros({2, 4, 3});
  auto aligned = [&](const Tensor& m) { return runGraph(ir, {IValue(x), IValue(m)})[0].toBool(); };
  EXPECT_TRUE(aligned(mask({1, 1, 0, 0, 1, 0, 0, 0}, {2, 4})));
  EXPECT_TRUE(aligned(mask({0, 0, 0, 0, 1, 1, 0, 0}, {2, 4})));
  EXPECT_FALSE(aligned(mask({0, 1, 1, 0, 1, 1, 1, 1}, {2, 4})));
  EXPECT_FALSE(aligned(mask({1, 0, 1, 0, 1, 1, 1, 1}, {2, 4})));
  EXPECT_ERROR(runGraph(ir, {IValue(x), IValue(ops::ones({2, 4}))}),
               "Expected mask to be of ScalarType Bool, but got Float instead.");
  EXPECT_ERROR(runGraph(ir, {IValue(x), IValue(mask({1, 1, 1, 1, 1, 1}, {2, 3}))}),
               "Mask size should match input size");
  EXPECT_ERROR(runGraph(ir, {IValue(x), IValue(mask({1, 1, 1, 1, 1, 1, 1, 1}, {2, 4, 1}))}),
               "Padding mask should be 2D");
  EXPECT_ERROR(
      runGraph(ir, {IValue(ops::zeros({4, 3})), IValue(mask({1, 1, 1, 1, 1, 1, 1, 1}, {2, 4}))}),
      "Input should be a 3D tensor, N * L * D");
}

TEST(KernelExtra, PackedSequenceErrors) {
  const char* pack = R"IR(
graph(%x : Tensor, %lengths : Tensor):
  %bf : bool = prim::Constant[value=0]()
  %data : Tensor, %sizes : Tensor = aten::_pack_padded_sequence(%x, %lengths, %bf)
  return (%data, %sizes)
)IR";
  EXPECT_ERROR(runGraph(pack, {IValue(ops::ones({4, 2, 3})), IValue(longs({2, 3}, {2}))}),
               "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True");
  EXPECT_ERROR(runGraph(pack, {IValue(ops::ones({4, 2, 3})), IValue(longs({2, 0}, {2}))}),
               "Length of all samples has to be greater than 0, but found an element in 'lengths' "
               "that is <= 0");
  EXPECT_ERROR(runGraph(pack, {IValue(ops::ones({4, 2, 3})), IValue(longs({2, 2, 1}, {3}))}),
               "Expected `len(lengths)` to be equal to batch_size, but got 3 (batch_size=2)");
  auto out = runGraph(pack, {IValue(ops::ones({4, 3, 2})), IValue(longs({3, 2, 2}, {3}))});
  EXPECT_EQ(out.at(0).toTensor().sizes(), (IntList{7, 2}));
  EXPECT_EQ(out.at(1).toTensor().intAt(1), 3);  // lengths 3, 2, 2: batch_sizes 3, 3, 1
  EXPECT_EQ(out.at(1).toTensor().intAt(2), 1);

  const char* pad = R"IR(
graph(%data : Tensor, %sizes : Tensor):
  %bf : bool = prim::Constant[value=0]()
  %pv : float = prim::Constant[value=0.]()
  %total : int = prim::Constant[value=2]()
  %out : Tensor, %lens : Tensor = aten::_pad_packed_sequence(%data, %sizes, %bf, %pv, %total)
  return (%out, %lens)
)IR";
  EXPECT_ERROR(
      runGraph(pad, {IValue(ops::ones({5, 2})), IValue(longs({2, 2, 1}, {3}))}),
      "Expected total_length to be at least the length of the longest sequence in input, but got "
      "total_length=2 and max sequence length being 3");
  EXPECT_ERROR(runGraph(pad, {IValue(ops::ones({4, 2})), IValue(longs({2, 2, 1}, {3}))}),
               "batch_sizes sum to 5 but the packed data has 4 rows");
  EXPECT_ERROR(runGraph(pad, {IValue(ops::ones({5, 2})), IValue(longs({1, 2, 2}, {3}))}),
               "batch_sizes must be positive and non-increasing, got 2 at step 1");

  const char* lstm = R"IR(
graph(%data : Tensor, %sizes : Tensor, %h : Tensor, %w1 : Tensor, %w2 : Tensor):
  %t : bool = prim::Constant[value=1]()
  %f : bool = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %p : float = prim::Constant[value=0.]()
  %hx : Tensor[] = prim::ListConstruct(%h, %h)
  %ws : Tensor[] = prim::ListConstruct(%w1, %w2)
  %o : Tensor, %hn : Tensor, %cn : Tensor = aten::lstm(%data, %sizes, %hx, %ws, %f, %one, %p, %f, %f)
  return (%o, %hn, %cn)
)IR";
  EXPECT_ERROR(runGraph(lstm, {IValue(ops::ones({5, 3})), IValue(longs({3, 2}, {2})),
                               IValue(ops::zeros({1, 2, 4})), IValue(ops::ones({16, 3})),
                               IValue(ops::ones({16, 4}))}),
               "Expected hidden size [1, 3, *], got [1, 2, 4]");
}

}  // namespace
}  // namespace torchless
