// Gradients averaged across replicas in buckets while backward still runs, as PyTorch DDP's reducer does: the
// gradients are grouped in reverse parameter order (the order backward finishes them) into buckets of about
// `cap_bytes`, the first smaller (1 MiB, or half the gradients if less) so that communication starts early; the
// backend's grad_ready callback marks each gradient final, and a bucket whose gradients are all final starts its
// non-blocking all-reduce at once. Buckets always start in plan order, so every rank issues the same collectives in
// the same order whatever order its backend's threads finish in; with a fixed world size the result is the same from
// run to run.
//
// A gradient larger than ramjet::kGradientPieceBytes is planned as pieces of whole rows (ramjet/sdk/
// gradient_pieces.hpp), each closing a bucket: a backend that reports rows as it finishes them (grad_rows_ready)
// gets each piece on the wire while it computes the next, where the whole matrix would wait for its last row.
// Unlike DDP, whose smallest unit is a parameter, the unit here is a piece; a backend that does not report rows
// makes all of a gradient's pieces ready at its grad_ready.
//
// A bucket is a view of the gradients, never a copy: when its pieces lie end to end in one buffer (the cpu backend
// packs them so) it is all-reduced as one flat view of that memory, else one call per piece.
#pragma once

#include "ramjet/plugin/model_components.hpp"
#include "ramjet/plugin/tensor.hpp"

#include <array>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace ramjet::core {

class GradientBuckets {
 public:
  static constexpr size_t kFirstBucketBytes = size_t{1} << 20;

  // `gradients` are the backend's views, valid for the program's life; both they and `strategy` are borrowed and
  // must outlive this object. `model_order` names the parameters in the order the model uses them (backward
  // finishes them in reverse); gradients it leaves out come first, in the order the backend lists them.
  GradientBuckets(Strategy& strategy, Example& gradients, const std::vector<std::string>& model_order,
                  size_t cap_bytes);
  // The parameters in the order the graph's nodes use them (the IR's "nodes", each node's "params").
  static std::vector<std::string> model_order_of(const nlohmann::json& graph_ir);
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // Whether buckets start during backward (the strategy has the non-blocking slots); else reduce() does it all.
  bool overlaps() const { return overlaps_; }
  // Before a backward that makes the gradients final: clears what the last step marked ready.
  void arm();
  // The backend's grad_ready and grad_rows_ready: thread-safe, and never throw (they run inside the backend, across
  // the C ABI); a failure to start is kept for reduce() to throw.
  static void on_grad_ready(void* self, const char* parameter_name, DLTensor* gradient);
  static void on_grad_rows_ready(void* self, const char* parameter_name, DLTensor* gradient, int64_t rows_final);
  // After backward: starts what grad_ready did not, waits for every bucket in order. Every gradient then holds the
  // mean over the replicas. Returns the seconds spent here (the all-reduce time backward did not hide).
  double reduce();
  // Times `rounds` all-reduces of every bucket with nothing to hide behind, after one round to warm up: the
  // all-reduce time of a step without overlap, which makes the hidden fraction measurable. All ranks call it
  // together (it is a collective); the gradients' values afterwards are meaningless until the next backward.
  double measure_unhidden_seconds(int rounds);

  size_t bucket_count() const { return buckets_.size(); }
  // Gradients planned as more than one piece.
  size_t split_gradient_count() const;
  size_t bytes() const { return bytes_; }
  // Buckets reduced as one flat view (the rest take one call per gradient).
  size_t flat_bucket_count() const;
  // The gradients' names (and a piece's rows), bucket by bucket, in plan order: what every rank must agree on.
  std::string plan_text() const;

 private:
  // Rows [row_begin, row_end) of one gradient (all of it when the gradient is not split), and a tensor of them.
  struct Piece {
    size_t gradient = 0;  // index into the gradients
    int64_t row_begin = 0, row_end = 0;
    size_t bucket = 0;
    bool whole = true;
    std::vector<int64_t> shape;
    DLTensor view{};
  };

  struct Bucket {
    std::vector<size_t> members;  // indices into pieces_, in plan order
    size_t bytes = 0;
    size_t pending = 0;           // members not yet final in this backward
    bool started = false;
    std::vector<uint64_t> handles;  // in flight, waited for in order
    bool flat = false;              // reduced as `flat_view`
    std::array<int64_t, 1> flat_shape{};
    DLTensor flat_view{};
  };

  void plan_pieces(size_t gradient);
  void make_flat_view_if_contiguous(Bucket& bucket);
  void mark_rows_final(size_t gradient, int64_t rows_final);  // under mutex_
  void start(Bucket& bucket);  // under mutex_
  void start_ready_buckets();  // under mutex_: in plan order, as far as buckets are complete

  Strategy& strategy_;
  Example& gradients_;
  bool overlaps_;
  size_t bytes_ = 0;
  std::vector<Piece> pieces_;  // in plan order
  std::vector<Bucket> buckets_;
  std::unordered_map<std::string, size_t> index_;  // gradient name -> index into the gradients
  std::vector<std::vector<size_t>> pieces_of_;      // by gradient: its pieces, in row order
  std::mutex mutex_;  // grad_ready arrives on the backend's threads
  size_t next_to_start_ = 0;
  std::vector<int64_t> rows_final_;  // by gradient: its rows known final in this backward
  std::vector<size_t> pieces_final_;  // by gradient: how many of its pieces (in row order) are counted final
  std::exception_ptr start_failure_;
};

}  // namespace ramjet::core
