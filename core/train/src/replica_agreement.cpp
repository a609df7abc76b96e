#include "replica_agreement.hpp"

#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/tensor.hpp"

#include <array>

namespace ramjet::core {
namespace {

constexpr DLDataType kInt64{kDLInt, 64, 1};

int64_t* values_of(TensorPtr& t) { return static_cast<int64_t*>(t->dl_tensor.data); }

}  // namespace

int64_t agreement_hash(const std::string& text) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001B3ull;
  return static_cast<int64_t>(h >> 1);
}

void check_replicas_agree(const Strategy& strategy, int32_t rank, int32_t world, const std::vector<AgreementItem>& items) {
  const std::array<int64_t, 1> count{static_cast<int64_t>(items.size())};
  TensorPtr rank0 = make_tensor(kInt64, count);
  for (size_t i = 0; i < items.size(); ++i) values_of(rank0)[i] = items[i].value;
  strategy.broadcast(rank0->dl_tensor, 0);
  int64_t mine = 0;  // 1 + the first item this rank has otherwise than rank 0; 0 when it agrees
  for (size_t i = 0; i < items.size() && mine == 0; ++i)
    if (values_of(rank0)[i] != items[i].value) mine = static_cast<int64_t>(i) + 1;

  const std::array<int64_t, 1> ranks{world};
  TensorPtr firsts = make_tensor(kInt64, ranks);
  values_of(firsts)[rank] = mine;
  strategy.all_reduce(firsts->dl_tensor, RAMJET_REDUCE_SUM);

  int64_t first_item = 0;
  std::string differing;
  for (int32_t r = 0; r < world; ++r) {
    const int64_t f = values_of(firsts)[r];
    if (f <= 0 || f > static_cast<int64_t>(items.size())) continue;
    if (first_item == 0 || f < first_item) first_item = f;
    differing += (differing.empty() ? "" : ", ") + std::to_string(r);
  }
  if (first_item == 0) return;
  const size_t i = static_cast<size_t>(first_item - 1);
  const AgreementItem& item = items[i];
  std::string message = "train.strategy: the ranks disagree on " + item.what + ": rank " + differing +
                        (differing.find(',') == std::string::npos ? " differs" : " differ") + " from rank 0";
  if (item.numeric) {
    message += " (rank 0: " + std::to_string(values_of(rank0)[i]);
    if (mine == first_item) message += ", rank " + std::to_string(rank) + ": " + std::to_string(item.value);
    message += ")";
  }
  throw InvalidInput(message + "; every rank must run the same manifest, with the same data");
}

}  // namespace ramjet::core
