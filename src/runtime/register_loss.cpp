// Kernels of the loss functions (ops/loss.h) and torch.cosine_similarity: what
// torch.nn.functional's losses call in a scripted or traced graph.

#include "ops/loss.h"
#include "runtime/register_utils.h"

namespace torchless {

using namespace kreg;

void registerLossKernels(KernelRegistry& r) {
  defFamily(r, "aten::mse_loss", [](const IValue* a) {
    return ops::mseLoss(a[0].toTensor(), a[1].toTensor(), a[2].toInt());
  });
  defFamily(r, "aten::l1_loss", [](const IValue* a) {
    return ops::l1Loss(a[0].toTensor(), a[1].toTensor(), a[2].toInt());
  });
  defFamily(r, "aten::smooth_l1_loss", [](const IValue* a) {
    return ops::smoothL1Loss(a[0].toTensor(), a[1].toTensor(), a[2].toInt(), a[3].toDouble());
  });
  defFamily(r, "aten::huber_loss", [](const IValue* a) {
    return ops::huberLoss(a[0].toTensor(), a[1].toTensor(), a[2].toInt(), a[3].toDouble());
  });
  defFamily(r, "aten::binary_cross_entropy", [](const IValue* a) {
    return ops::binaryCrossEntropy(a[0].toTensor(), a[1].toTensor(), toOptTensor(a[2]),
                                   a[3].toInt());
  });
  defFamily(r, "aten::binary_cross_entropy_with_logits", [](const IValue* a) {
    return ops::binaryCrossEntropyWithLogits(a[0].toTensor(), a[1].toTensor(), toOptTensor(a[2]),
                                             toOptTensor(a[3]), a[4].toInt());
  });
  defFamily(r, "aten::soft_margin_loss", [](const IValue* a) {
    return ops::softMarginLoss(a[0].toTensor(), a[1].toTensor(), a[2].toInt());
  });
  defFamily(r, "aten::kl_div", [](const IValue* a) {
    return ops::klDiv(a[0].toTensor(), a[1].toTensor(), a[2].toInt(), a[3].toBool());
  });
  defFamily(r, "aten::margin_ranking_loss", [](const IValue* a) {
    return ops::marginRankingLoss(a[0].toTensor(), a[1].toTensor(), a[2].toTensor(),
                                  a[3].toDouble(), a[4].toInt());
  });
  defFamily(r, "aten::hinge_embedding_loss", [](const IValue* a) {
    return ops::hingeEmbeddingLoss(a[0].toTensor(), a[1].toTensor(), a[2].toDouble(), a[3].toInt());
  });
  for (const char* name : {"aten::nll_loss", "aten::nll_loss2d", "aten::nll_loss_nd"})
    defFamily(r, name, [](const IValue* a) {
      return ops::nllLoss(a[0].toTensor(), a[1].toTensor(), toOptTensor(a[2]), a[3].toInt(),
                          a[4].toInt());
    });
  defFamily(r, "aten::cross_entropy_loss", [](const IValue* a) {
    return ops::crossEntropyLoss(a[0].toTensor(), a[1].toTensor(), toOptTensor(a[2]), a[3].toInt(),
                                 a[4].toInt(), a[5].toDouble());
  });
  defFamily(r, "aten::cosine_similarity", [](const IValue* a) {
    return ops::cosineSimilarity(a[0].toTensor(), a[1].toTensor(), a[2].toInt(), a[3].toDouble());
  });
}

}  // namespace torchless
