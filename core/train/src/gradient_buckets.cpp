#include "gradient_buckets.hpp"
#include "elapsed.hpp"

#include "ramjet/plugin/failure.hpp"

#include <ramjet/sdk/gradient_pieces.hpp>

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>

namespace ramjet::core {
namespace {

bool is_host_readable(const DLTensor& t) {
  return t.device.device_type == kDLCPU || t.device.device_type == kDLCUDAManaged;
}

bool is_dense_float32(const DLTensor& t) {
  return t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1 && is_c_contiguous(t);
}

}  // namespace

std::vector<std::string> GradientBuckets::model_order_of(const nlohmann::json& graph_ir) {
  std::vector<std::string> order;
  std::set<std::string> seen;
  if (!graph_ir.contains("nodes") || !graph_ir["nodes"].is_array()) return order;
  for (const auto& node : graph_ir["nodes"]) {
    if (!node.contains("params") || !node["params"].is_object()) continue;
    for (const auto& [role, name] : node["params"].items())
      if (name.is_string() && seen.insert(name.get<std::string>()).second) order.push_back(name.get<std::string>());
  }
  return order;
}

GradientBuckets::GradientBuckets(Strategy& strategy, Example& gradients, const std::vector<std::string>& model_order,
                                 size_t cap_bytes)
    : strategy_(strategy), gradients_(gradients), overlaps_(strategy.has_all_reduce_start()) {
  const size_t count = gradients_.entries.size();
  rows_final_.assign(count, 0);
  pieces_final_.assign(count, 0);
  pieces_of_.resize(count);
  // The order backward finishes the gradients: the reverse of the model's, after any the model order leaves out.
  for (size_t k = 0; k < count; ++k) index_[gradients_.entries[k].name] = k;
  std::vector<size_t> order;
  std::vector<bool> placed(count, false);
  for (auto it = model_order.rbegin(); it != model_order.rend(); ++it)
    if (auto found = index_.find(*it); found != index_.end() && !placed[found->second])
      order.push_back(found->second), placed[found->second] = true;
  std::vector<size_t> rest;
  for (size_t k = 0; k < count; ++k)
    if (!placed[k]) rest.push_back(k);
  order.insert(order.begin(), rest.begin(), rest.end());
  for (size_t k : order) plan_pieces(k);
  for (Piece& piece : pieces_)
    if (!piece.whole) piece.view.shape = piece.shape.data();
  // A bucket closes once it reaches its cap (so one gradient larger than the cap is a bucket of its own), and after
  // every piece of a split gradient: a piece goes out as soon as it is final, not when the cap's worth of pieces
  // after it are. The first cap is smaller: the last layers' gradients are on the wire while backward goes on. It
  // is also at most half the gradients, so a model that fits in one bucket still sends its last layers while
  // backward does the rest.
  size_t total = 0;
  for (size_t k : order) total += byte_size(gradients_.entries[k].tensor->dl_tensor);
  Bucket current;
  size_t cap = std::min({kFirstBucketBytes, cap_bytes, std::max<size_t>(total / 2, 1)});
  for (size_t i = 0; i < pieces_.size(); ++i) {
    const size_t size = byte_size(pieces_[i].view);
    current.members.push_back(i);
    current.bytes += size;
    bytes_ += size;
    if (current.bytes >= cap || !pieces_[i].whole) {
      buckets_.push_back(std::move(current));
      current = Bucket{};
      cap = cap_bytes;
    }
  }
  if (!current.members.empty()) buckets_.push_back(std::move(current));
  for (size_t b = 0; b < buckets_.size(); ++b) {
    for (size_t i : buckets_[b].members) pieces_[i].bucket = b;
    make_flat_view_if_contiguous(buckets_[b]);
  }
}

void GradientBuckets::plan_pieces(size_t gradient) {
  const DLTensor& t = gradients_.entries[gradient].tensor->dl_tensor;
  const int64_t rows = t.ndim > 0 ? t.shape[0] : 1;
  // Only a dense host tensor is cut: its rows are a contiguous tensor of their own.
  const bool cuttable = t.ndim > 0 && rows > 1 && is_dense_float32(t) && is_host_readable(t);
  const int64_t step =
      cuttable ? ramjet::gradient_piece_rows(rows, static_cast<int64_t>(byte_size(t)) / rows) : rows;
  if (step >= rows) {
    pieces_of_[gradient].push_back(pieces_.size());
    pieces_.push_back(Piece{gradient, 0, rows, 0, true, {}, t});
    return;
  }
  const uint64_t row_bytes = byte_size(t) / static_cast<uint64_t>(rows);
  for (int64_t begin = 0; begin < rows; begin += step) {
    Piece piece{gradient, begin, std::min(rows, begin + step), 0, false, {t.shape, t.shape + t.ndim}, t};
    piece.shape[0] = piece.row_end - piece.row_begin;
    piece.view.byte_offset = t.byte_offset + static_cast<uint64_t>(begin) * row_bytes;
    piece.view.strides = nullptr;  // view.shape is set once pieces_ stops moving (end of the constructor)
    pieces_of_[gradient].push_back(pieces_.size());
    pieces_.push_back(std::move(piece));
  }
}

void GradientBuckets::make_flat_view_if_contiguous(Bucket& bucket) {
  std::vector<const DLTensor*> parts;
  for (size_t i : bucket.members) {
    const DLTensor& t = pieces_[i].view;
    if (!is_dense_float32(t) || !is_host_readable(t)) return;
    parts.push_back(&t);
  }
  std::sort(parts.begin(), parts.end(),
            [](const DLTensor* a, const DLTensor* b) { return first_byte(*a) < first_byte(*b); });
  for (size_t i = 1; i < parts.size(); ++i)
    if (static_cast<const char*>(first_byte(*parts[i - 1])) + byte_size(*parts[i - 1]) != first_byte(*parts[i])) return;
  bucket.flat = true;
  bucket.flat_shape[0] = static_cast<int64_t>(bucket.bytes / sizeof(float));
  bucket.flat_view = *parts.front();
  bucket.flat_view.data = const_cast<void*>(first_byte(*parts.front()));
  bucket.flat_view.byte_offset = 0;
  bucket.flat_view.ndim = 1;
  bucket.flat_view.shape = bucket.flat_shape.data();
  bucket.flat_view.strides = nullptr;
}

size_t GradientBuckets::split_gradient_count() const {
  return static_cast<size_t>(
      std::count_if(pieces_of_.begin(), pieces_of_.end(), [](const std::vector<size_t>& p) { return p.size() > 1; }));
}

size_t GradientBuckets::flat_bucket_count() const {
  return static_cast<size_t>(std::count_if(buckets_.begin(), buckets_.end(), [](const Bucket& b) { return b.flat; }));
}

std::string GradientBuckets::plan_text() const {
  std::string out;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    out += "bucket " + std::to_string(b) + ":";
    for (size_t i : buckets_[b].members) {
      const Piece& piece = pieces_[i];
      out += " " + gradients_.entries[piece.gradient].name;
      if (!piece.whole) out += "[" + std::to_string(piece.row_begin) + ":" + std::to_string(piece.row_end) + "]";
    }
    out += "\n";
  }
  return out;
}

void GradientBuckets::arm() {
  std::lock_guard lock(mutex_);
  std::fill(rows_final_.begin(), rows_final_.end(), 0);
  std::fill(pieces_final_.begin(), pieces_final_.end(), 0);
  for (auto& b : buckets_) b.pending = b.members.size(), b.started = false, b.handles.clear();
  next_to_start_ = 0;
  start_failure_ = nullptr;
}

void GradientBuckets::on_grad_ready(void* self, const char* parameter_name, DLTensor* /*gradient*/) {
  on_grad_rows_ready(self, parameter_name, nullptr, std::numeric_limits<int64_t>::max());
}

void GradientBuckets::on_grad_rows_ready(void* self, const char* parameter_name, DLTensor* /*gradient*/,
                                         int64_t rows_final) {
  auto& me = *static_cast<GradientBuckets*>(self);
  if (parameter_name == nullptr) return;
  std::lock_guard lock(me.mutex_);
  auto it = me.index_.find(parameter_name);
  if (it == me.index_.end()) return;  // not a trained parameter (the host reduces only what get_state lists)
  me.mark_rows_final(it->second, rows_final);
  if (me.overlaps_) me.start_ready_buckets();
}

void GradientBuckets::mark_rows_final(size_t gradient, int64_t rows_final) {
  if (rows_final <= rows_final_[gradient]) return;
  rows_final_[gradient] = rows_final;
  const auto& pieces = pieces_of_[gradient];
  size_t& counted = pieces_final_[gradient];
  while (counted < pieces.size() && pieces_[pieces[counted]].row_end <= rows_final)
    --buckets_[pieces_[pieces[counted++]].bucket].pending;
}

void GradientBuckets::start(Bucket& bucket) {
  bucket.started = true;
  if (start_failure_) return;
  try {
    if (bucket.flat) {
      bucket.handles.push_back(strategy_.all_reduce_start(bucket.flat_view, RAMJET_REDUCE_MEAN));
    } else {
      for (size_t i : bucket.members)
        bucket.handles.push_back(strategy_.all_reduce_start(pieces_[i].view, RAMJET_REDUCE_MEAN));
    }
  } catch (...) {
    start_failure_ = std::current_exception();
  }
}

void GradientBuckets::start_ready_buckets() {
  while (next_to_start_ < buckets_.size() && buckets_[next_to_start_].pending == 0) start(buckets_[next_to_start_++]);
}

double GradientBuckets::reduce() {
  const auto begin = Clock::now();
  if (!overlaps_) {
    for (auto& bucket : buckets_) {
      if (bucket.flat) strategy_.all_reduce(bucket.flat_view, RAMJET_REDUCE_MEAN);
      else
        for (size_t i : bucket.members) strategy_.all_reduce(pieces_[i].view, RAMJET_REDUCE_MEAN);
    }
    return seconds_since(begin);
  }
  std::exception_ptr failure;
  {
    // Backward has returned: no grad_ready comes any more. What it did not mark (a parameter backward did not
    // reach, or a backend without the callback) starts now, still in plan order.
    std::lock_guard lock(mutex_);
    while (next_to_start_ < buckets_.size()) start(buckets_[next_to_start_++]);
    failure = start_failure_;
  }
  // Every started handle is waited for exactly once, even after a failure (the ABI's rule).
  for (auto& bucket : buckets_) {
    for (uint64_t handle : bucket.handles) {
      try {
        strategy_.all_reduce_wait(handle);
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
    }
    bucket.handles.clear();
  }
  if (failure) std::rethrow_exception(failure);
  return seconds_since(begin);
}

double GradientBuckets::measure_unhidden_seconds(int rounds) {
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r <= rounds; ++r) {
    arm();
    const double s = reduce();
    if (r > 0) best = std::min(best, s);  // round 0 warms the connections and the strategy's buffers
  }
  return rounds > 0 ? best : 0.0;
}

}  // namespace ramjet::core
