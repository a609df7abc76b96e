#include "ramjet/train/checkpoint.hpp"

#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/log.hpp"
#include "ramjet/train/safetensors.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

namespace ramjet::core {
namespace {

constexpr const char* kFormat = "ramjet-checkpoint-1";
constexpr const char* kParam = "param/";
constexpr const char* kOptimizer = "optimizer/";
constexpr const char* kBest = "best/";
constexpr size_t kMaxLossScalerHex = 1 << 20;
// Far beyond any real run, and far enough below INT64_MAX that step arithmetic (step + 1, schedules) cannot overflow.
constexpr int64_t kMaxStep = 1'000'000'000'000'000;

// "ckpt-<decimal step>.safetensors", nothing else: a sign, spaces or a step past int64 do not name a checkpoint.
std::optional<int64_t> step_in_name(const std::string& name, const std::string& prefix, const std::string& suffix) {
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  const char* first = name.data() + prefix.size();
  const char* last = name.data() + name.size() - suffix.size();
  int64_t step = 0;
  if (!std::all_of(first, last, [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  const auto [end, ec] = std::from_chars(first, last, step);
  if (ec != std::errc() || end != last) return std::nullopt;
  return step;
}

std::vector<std::pair<int64_t, std::filesystem::path>> checkpoints_in(const std::filesystem::path& dir) {
  std::vector<std::pair<int64_t, std::filesystem::path>> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (auto step = step_in_name(entry.path().filename().string(), "ckpt-", ".safetensors"))
      found.emplace_back(*step, entry.path());
  std::sort(found.begin(), found.end());
  return found;
}

void add_prefixed(Example& out, const char* prefix, const Example& in) {
  for (const auto& e : in.entries) {
    const DLTensor& t = e.tensor->dl_tensor;
    TensorPtr copy = make_tensor(t.dtype, std::span<const int64_t>(t.shape, static_cast<size_t>(t.ndim)), false);
    std::memcpy(copy->dl_tensor.data, first_byte(t), byte_size(t));
    out.set(prefix + e.name, std::move(copy));
  }
}

std::string shape_and_dtype(const DLTensor& t) {
  std::string s = "[";
  for (int i = 0; i < t.ndim; ++i) s += (i ? "," : "") + std::to_string(t.shape[i]);
  return s + "] " + dtype_to_string(t.dtype);
}

bool same_layout(const DLTensor& a, const DLTensor& b) {
  return a.dtype.code == b.dtype.code && a.dtype.bits == b.dtype.bits && a.dtype.lanes == b.dtype.lanes &&
         a.ndim == b.ndim && std::equal(a.shape, a.shape + a.ndim, b.shape);
}

// The metadata of one checkpoint file, each field checked where it is read; every failure names the file and the
// field as a JSON pointer under __metadata__.
class MetadataReader {
 public:
  MetadataReader(const std::filesystem::path& file, const std::map<std::string, std::string>& metadata)
      : file_(file), metadata_(metadata) {}

  InvalidInput error(const std::string& pointer, const std::string& what) const {
    return InvalidInput(file_.string() + ": checkpoint metadata /__metadata__/" + pointer + ": " + what);
  }

  const std::string& text(const std::string& key) const {
    auto it = metadata_.find(key);
    if (it == metadata_.end()) throw error(key, "missing (not a ramjet checkpoint, or a damaged one)");
    return it->second;
  }

  // A decimal count, as the writer spells it: digits only.
  int64_t count(const std::string& key) const {
    const std::string& s = text(key);
    int64_t value = -1;
    const bool digits = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (!digits || ec != std::errc() || end != s.data() + s.size())
      throw error(key, "must be a non-negative decimal integer below 2^63, got '" + shortened(s, 40) + "'");
    return value;
  }

  nlohmann::json json(const std::string& key) const {
    return parse_bounded_json(text(key), 0, [&](uint64_t at, const std::string& what) {
      return error(key, what + " (at character " + std::to_string(at) + " of the field)");
    });
  }

 private:
  const std::filesystem::path& file_;
  const std::map<std::string, std::string>& metadata_;
};

// Checks of JSON values at a pointer, the pointer carried along for the message.
class JsonField {
 public:
  JsonField(const MetadataReader& reader, std::string pointer, const nlohmann::json& value)
      : reader_(reader), pointer_(std::move(pointer)), value_(value) {}

  InvalidInput error(const std::string& what) const { return reader_.error(pointer_, what); }
  std::string got() const { return std::string(value_.type_name()) + " " + shortened(value_.dump(), 40); }
  const nlohmann::json& value() const { return value_; }

  const JsonField& object() const {
    if (!value_.is_object()) throw error("must be an object, got " + got());
    return *this;
  }
  // Every member one of `known`, each of `required` present.
  const JsonField& members(std::initializer_list<const char*> required, std::initializer_list<const char*> optional) const {
    object();
    for (const char* key : required)
      if (!value_.contains(key)) throw reader_.error(pointer_ + "/" + key, "missing");
    for (const auto& item : value_.items()) {
      const std::string& key = item.key();  // a named reference, not a structured binding: clang 14 cannot capture those
      const auto is = [&](const char* k) { return key == k; };
      if (std::none_of(required.begin(), required.end(), is) && std::none_of(optional.begin(), optional.end(), is))
        throw reader_.error(pointer_ + "/" + shortened(key, 40), "unknown field");
    }
    return *this;
  }
  JsonField at(const std::string& key) const { return JsonField(reader_, pointer_ + "/" + key, value_.at(key)); }
  JsonField at(size_t index) const { return JsonField(reader_, pointer_ + "/" + std::to_string(index), value_.at(index)); }

  int64_t integer(int64_t at_least) const {
    if (!value_.is_number_integer()) throw error("must be an integer, got " + got());
    if (value_.is_number_unsigned() && value_.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      throw error("is too large: " + shortened(value_.dump(), 40));
    const int64_t v = value_.get<int64_t>();
    if (v < at_least) throw error("must be >= " + std::to_string(at_least) + ", got " + std::to_string(v));
    return v;
  }
  double number() const {
    if (!value_.is_number()) throw error("must be a number, got " + got());
    return value_.get<double>();
  }
  void number_or_null() const {
    if (!value_.is_number() && !value_.is_null()) throw error("must be a number, got " + got());
  }
  void boolean() const {
    if (!value_.is_boolean()) throw error("must be true or false, got " + got());
  }
  const std::string& string() const {
    if (!value_.is_string()) throw error("must be a string, got " + got());
    return value_.get_ref<const std::string&>();
  }
  void array() const {
    if (!value_.is_array()) throw error("must be an array, got " + got());
  }

 private:
  const MetadataReader& reader_;
  std::string pointer_;
  const nlohmann::json& value_;
};

PipelineState read_pipeline(const MetadataReader& reader) {
  const nlohmann::json value = reader.json("pipeline");
  const JsonField pipeline(reader, "pipeline", value);
  pipeline.members({"epoch", "position"}, {});
  return {pipeline.at("epoch").integer(0), pipeline.at("position").integer(0)};
}

// The trainer's state, as Trainer::checkpoint() writes it and resume() reads it back (training_callbacks.hpp for
// the callbacks' counters).
nlohmann::json read_trainer(const MetadataReader& reader) {
  nlohmann::json value = reader.json("trainer");
  const JsonField trainer(reader, "trainer", value);
  // replicas: how many ranks wrote it (absent before data-parallel training existed: 1).
  // skipped_updates: steps a loss-scaling policy dropped (the optimizer's own step count is step − skipped).
  trainer.members({"lr_scale", "history"}, {"plateau", "early_stopping", "loss_scaler", "replicas", "skipped_updates"});
  if (value.contains("replicas")) trainer.at("replicas").integer(1);
  if (value.contains("skipped_updates")) trainer.at("skipped_updates").integer(0);
  const double lr_scale = trainer.at("lr_scale").number();
  if (!(lr_scale > 0) || !std::isfinite(lr_scale)) throw trainer.at("lr_scale").error("must be a finite number > 0");
  const JsonField history = trainer.at("history");
  history.array();
  for (size_t i = 0; i < history.value().size(); ++i) {
    const JsonField entry = history.at(i);
    entry.object();
    if (!entry.value().contains("epoch") || !entry.value().contains("loss"))
      throw entry.error("an epoch's history needs 'epoch' and 'loss'");
    entry.at("epoch").integer(1);
    entry.at("loss").number();
    for (const auto& [key, v] : entry.value().items()) entry.at(key).number_or_null();
  }
  if (value.contains("plateau")) {
    const JsonField plateau = trainer.at("plateau");
    plateau.members({"have_best", "best", "wait", "cooldown"}, {});
    plateau.at("have_best").boolean();
    plateau.at("best").number();
    plateau.at("wait").integer(0);
    plateau.at("cooldown").integer(0);
  }
  if (value.contains("early_stopping")) {
    const JsonField early = trainer.at("early_stopping");
    early.members({"have_best", "best", "best_epoch", "wait"}, {});
    early.at("have_best").boolean();
    early.at("best").number();
    early.at("best_epoch").integer(-1);
    early.at("wait").integer(0);
  }
  if (value.contains("loss_scaler")) {
    const JsonField scaler = trainer.at("loss_scaler");
    const std::string& hex = scaler.string();
    if (hex.size() % 2 != 0 || hex.size() > kMaxLossScalerHex ||
        !std::all_of(hex.begin(), hex.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }))
      throw scaler.error("must be an even number of hexadecimal digits");
  }
  return value;
}

// param/, optimizer/ or best/ (checked by check_checkpoint_fits); anything else is not ours to ignore.
void sort_tensors(const std::filesystem::path& path, Example& tensors, Checkpoint& c) {
  for (auto& e : tensors.entries) {
    auto starts_with = [&](const char* prefix) -> bool {
      const size_t n = std::strlen(prefix);
      return e.name.size() > n && e.name.compare(0, n, prefix) == 0;
    };
    if (starts_with(kParam)) c.parameters.set(e.name.substr(std::strlen(kParam)), std::move(e.tensor));
    else if (starts_with(kOptimizer)) c.optimizer.set(e.name.substr(std::strlen(kOptimizer)), std::move(e.tensor));
    else if (starts_with(kBest)) c.best_parameters.set(e.name.substr(std::strlen(kBest)), std::move(e.tensor));
    else
      throw InvalidInput(path.string() + ": tensor '" + shortened(e.name) +
                         "' is not a checkpoint tensor (names start with param/, optimizer/ or best/)");
  }
}

// `found` (under `prefix` in the file) holds exactly the tensors of `expected`, each with its shape and dtype.
void check_group(const std::filesystem::path& file, const char* prefix, const Example& found, const Example& expected) {
  for (const auto& e : expected.entries) {
    const DLTensor* t = found.find(e.name);
    if (t == nullptr)
      throw InvalidInput(file.string() + ": tensor '" + prefix + shortened(e.name) + "' is missing (the model has it, " +
                         shape_and_dtype(e.tensor->dl_tensor) + ")");
    if (!same_layout(*t, e.tensor->dl_tensor))
      throw InvalidInput(file.string() + ": tensor '" + prefix + shortened(e.name) + "' is " + shape_and_dtype(*t) +
                         ", the model's is " + shape_and_dtype(e.tensor->dl_tensor));
  }
  for (const auto& e : found.entries)
    if (expected.find(e.name) == nullptr)
      throw InvalidInput(file.string() + ": tensor '" + prefix + shortened(e.name) +
                         "' is not in the model (a checkpoint of another model?)");
}

bool same_bytes(const Example& written, const Example& read) {
  if (written.entries.size() != read.entries.size()) return false;
  for (const auto& e : written.entries) {
    const DLTensor* t = read.find(e.name);
    if (t == nullptr || !same_layout(*t, e.tensor->dl_tensor) ||
        std::memcmp(first_byte(*t), first_byte(e.tensor->dl_tensor), byte_size(*t)) != 0)
      return false;
  }
  return true;
}

// The newest `keep` regular files stay, and always `newest` (the one just written, whatever its step).
void rotate(const std::filesystem::path& dir, const std::filesystem::path& newest, int64_t keep) {
  std::vector<std::filesystem::path> others;
  for (const auto& [step, path] : checkpoints_in(dir)) {
    std::error_code ec;
    if (path != newest && std::filesystem::is_regular_file(std::filesystem::symlink_status(path, ec))) others.push_back(path);
  }
  const size_t kept_others = static_cast<size_t>(std::max<int64_t>(keep - 1, 0));
  for (size_t i = 0; i + kept_others < others.size(); ++i) {
    std::error_code ec;
    std::filesystem::remove(others[i], ec);
  }
}

}  // namespace

std::filesystem::path save_checkpoint(const std::filesystem::path& dir, const Checkpoint& c, int64_t keep) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw RuntimeFailure(dir.string() + ": cannot create the checkpoint directory: " + ec.message());
  Example tensors;
  add_prefixed(tensors, kParam, c.parameters);
  add_prefixed(tensors, kOptimizer, c.optimizer);
  add_prefixed(tensors, kBest, c.best_parameters);
  char name[64];
  std::snprintf(name, sizeof name, "ckpt-%012lld.safetensors", static_cast<long long>(c.step));
  const auto path = dir / name;
  write_safetensors(path, tensors,
                    {{"format", kFormat},
                     {"step", std::to_string(c.step)},
                     {"pipeline", c.pipeline.to_json().dump()},
                     {"trainer", c.trainer.dump()}});
  // Read back before the rotation may delete anything: a write the disk garbled must not cost the good ones.
  try {
    Checkpoint back = load_checkpoint(path);
    if (back.step != c.step || !same_bytes(c.parameters, back.parameters) || !same_bytes(c.optimizer, back.optimizer) ||
        !same_bytes(c.best_parameters, back.best_parameters))
      throw InvalidInput(path.string() + ": reads back different from what was written");
  } catch (const InvalidInput& e) {
    std::filesystem::path corrupt = path;
    corrupt += ".corrupt";
    std::filesystem::rename(path, corrupt, ec);
    throw RuntimeFailure(std::string(e.what()) + " (the new checkpoint is kept aside as " + corrupt.filename().string() +
                         "; no older checkpoint was deleted)");
  }
  rotate(dir, path, keep);
  return path;
}

std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& dir) {
  auto all = checkpoints_in(dir);
  if (all.empty()) return std::nullopt;
  return all.back().second;
}

Checkpoint load_checkpoint(const std::filesystem::path& path) {
  TensorFile file = read_safetensors(path);
  const MetadataReader reader(path, file.metadata);
  if (reader.text("format") != kFormat)
    throw reader.error("format", "'" + shortened(reader.text("format"), 40) + "' is not " + kFormat);
  Checkpoint c;
  c.step = reader.count("step");
  if (c.step > kMaxStep) throw reader.error("step", std::to_string(c.step) + " is beyond any real run (at most 10^15)");
  c.pipeline = read_pipeline(reader);
  c.trainer = read_trainer(reader);
  sort_tensors(path, file.tensors, c);
  return c;
}

void check_checkpoint_fits(const Checkpoint& c, const std::filesystem::path& file, const Example& parameters,
                           const Example* optimizer_slots) {
  check_group(file, kParam, c.parameters, parameters);
  if (!c.best_parameters.entries.empty()) check_group(file, kBest, c.best_parameters, parameters);
  if (optimizer_slots == nullptr) return;
  if (c.optimizer.entries.empty() && !optimizer_slots->entries.empty())
    throw InvalidInput(file.string() + ": the checkpoint has no optimizer state (no optimizer/ tensors); resuming needs the " +
                       std::to_string(optimizer_slots->entries.size()) + " optimizer slots the model keeps, e.g. 'optimizer/" +
                       shortened(optimizer_slots->entries.front().name) + "'");
  check_group(file, kOptimizer, c.optimizer, *optimizer_slots);
}

int remove_stale_checkpoint_temporaries(const std::filesystem::path& dir) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    // AtomicFile's temporaries: ".<target>.tmp<random>" (sdk/include/ramjet/sdk/atomic_file.hpp).
    const auto tmp = name.find(".safetensors.tmp");
    if (tmp == std::string::npos || !step_in_name(name.substr(0, tmp + 12), ".ckpt-", ".safetensors")) continue;
    const std::string digits = name.substr(tmp + 16);
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    std::error_code kind_ec;
    if (!std::filesystem::is_regular_file(entry.symlink_status(kind_ec))) continue;
    if (std::filesystem::remove(entry.path(), kind_ec)) {
      log(RAMJET_LOG_INFO, "checkpoint", "removed " + entry.path().string() + ", left by a run that was killed while writing");
      ++removed;
    }
  }
  return removed;
}

}  // namespace ramjet::core
