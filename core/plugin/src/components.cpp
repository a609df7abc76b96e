#include "ramjet/plugin/components.hpp"

#include "ramjet/plugin/failure.hpp"

#include <cstddef>
#include <utility>

namespace ramjet::core {

namespace {

// A plugin that read a configuration value without checking it first reports the JSON library's exception text
// ("[json.exception.type_error.302] type must be string, but is number"). `what` already names the component and
// its place in the manifest; the library's tag is replaced by words a user can act on.
std::string without_json_library_tag(std::string message) {
  const std::string tag = "[json.exception.";
  for (size_t at = message.find(tag); at != std::string::npos; at = message.find(tag, at)) {
    const size_t end = message.find("] ", at);
    if (end == std::string::npos) break;
    const std::string kind = message.substr(at + tag.size(), end - at - tag.size());
    const char* words = kind.rfind("type_error", 0) == 0     ? "a configuration value of the wrong type: "
                        : kind.rfind("out_of_range", 0) == 0 ? "a configuration field missing or out of range: "
                        : kind.rfind("parse_error", 0) == 0  ? "text that is not valid JSON: "
                                                             : "a configuration value it cannot use: ";
    message.replace(at, end + 2 - at, words);
  }
  return message;
}

}  // namespace

void throw_on_error(ramjet_status status, const ramjet_error& error, const std::string& what) {
  if (status == RAMJET_OK) return;
  std::string message = what + ": " + (error.message.empty() ? describe_status(status) + " without a message"
                                                             : without_json_library_tag(error.message));
  switch (status) {
    case RAMJET_ERR_INVALID_ARGUMENT:
    case RAMJET_ERR_OUT_OF_RANGE:
    case RAMJET_ERR_UNSUPPORTED:
    case RAMJET_ERR_IO:
    case RAMJET_ERR_CORRUPT_DATA:
      throw InvalidInput(message);
    default:
      throw RuntimeFailure(message);
  }
}

namespace {
struct VTableHead {
  uint32_t struct_size;
  uint32_t abi_version;
  ramjet_status (*create)(const ramjet_create_info*, void**, ramjet_error*);
  void (*destroy)(void*);
};
}  // namespace

ComponentInstance::ComponentInstance(ComponentRef ref, const CreateArgs& args)
    : ref_(std::move(ref)), where_(args.where) {
  const auto& head = ref_.vtable<VTableHead>();
  const std::string config = args.config.dump();
  const std::string base_dir = args.base_dir.string();
  ramjet_create_info info{sizeof(ramjet_create_info), RAMJET_ABI_VERSION, config.c_str(), base_dir.c_str(),
                          where_.c_str(), args.seed, args.num_threads, 0};
  ramjet_error error;
  ramjet_status status = head.create(&info, &self_, &error);
  if (status == RAMJET_OK && self_ == nullptr) {
    status = RAMJET_ERR_INTERNAL;
    error.message = "create() succeeded but returned no instance";
  }
  // A plugin that names the place itself (the SDK's Config::where) is not told it twice.
  const bool placed = !where_.empty() && error.message.rfind(where_, 0) == 0;
  throw_on_error(status, error, placed ? ref_.label() : ref_.label() + " at " + where_);
}

namespace {

// Reads the {"pointer", "message"} array a check slot wrote.
std::vector<Problem> read_problems(const std::string& text, const std::string& prefix, const std::string& label) {
  std::vector<Problem> problems;
  if (text.empty()) return problems;
  nlohmann::json list = nlohmann::json::parse(text, nullptr, false);
  if (!list.is_array()) throw RuntimeFailure(label + ": its configuration check returned malformed JSON");
  for (const auto& p : list) {
    if (!p.is_object() || !p.contains("message") || !p["message"].is_string())
      throw RuntimeFailure(label + ": its configuration check returned a malformed problem");
    const std::string pointer = p.value("pointer", std::string());
    problems.push_back({prefix + pointer, p["message"].get<std::string>()});
  }
  return problems;
}

}  // namespace

std::vector<Problem> check_component_config(const ComponentRef& ref, const CreateArgs& args, const std::string& pointer) {
  const ramjet_component& c = *ref.component;
  const size_t end = offsetof(ramjet_component, check_config) + sizeof(c.check_config);
  if (c.struct_size < end || c.check_config == nullptr) return {};
  const std::string config = args.config.dump();
  const std::string base_dir = args.base_dir.string();
  ramjet_create_info info{sizeof(ramjet_create_info), RAMJET_ABI_VERSION, config.c_str(), base_dir.c_str(),
                          args.where.c_str(), args.seed, args.num_threads, 0};
  ramjet_buffer out;
  ramjet_error error;
  throw_on_error(c.check_config(&info, &out, &error), error, ref.label() + ": check_config");
  return read_problems(out.bytes, pointer, ref.label());
}

std::vector<Problem> check_backend_options(const ComponentRef& ref, const nlohmann::json& options) {
  const auto& vt = ref.vtable<ramjet_backend_vtable>();
  const size_t end = offsetof(ramjet_backend_vtable, check_options) + sizeof(vt.check_options);
  if (vt.struct_size < end || vt.check_options == nullptr) return {};
  const std::string text = options.dump();
  ramjet_buffer out;
  ramjet_error error;
  throw_on_error(vt.check_options(text.c_str(), &out, &error), error, ref.label() + ": check_options");
  return read_problems(out.bytes, "", ref.label());
}

ComponentInstance::ComponentInstance(ComponentInstance&& other) noexcept
    : ref_(std::move(other.ref_)), where_(std::move(other.where_)), self_(std::exchange(other.self_, nullptr)) {}

ComponentInstance::~ComponentInstance() {
  if (self_ != nullptr) ref_.vtable<VTableHead>().destroy(self_);
}

void ComponentInstance::retain_if_foreign(Example& example) const {
  for (const auto& e : example.entries) {
    if (!is_host_tensor(e.tensor.get())) {
      example.keep_alive(ref_.library);
      return;
    }
  }
}

std::string ComponentInstance::what(const char* operation) const {
  return ref_.label() + " at " + where_ + ": " + operation;
}

int64_t DataSource::cardinality() const {
  ramjet_error error;
  int64_t n = -1;
  throw_on_error(vt<ramjet_data_source_vtable>().cardinality(self_, &n, &error), error, what("cardinality"));
  return n;
}

DataSource::DataSource(ComponentRef ref, const CreateArgs& args) : ComponentInstance(std::move(ref), args) {
  // A get() slot alone is not enough: without a known cardinality there is nothing to index.
  random_access_ = has_slot(&ramjet_data_source_vtable::get) && cardinality() >= 0;
}

bool DataSource::random_access() const { return random_access_; }

std::optional<nlohmann::json> DataSource::element_spec() const {
  if (!has_slot(&ramjet_data_source_vtable::element_spec)) return std::nullopt;
  ramjet_error error;
  ramjet_buffer buffer;
  throw_on_error(vt<ramjet_data_source_vtable>().element_spec(self_, &buffer, &error), error, what("element_spec"));
  try {
    return nlohmann::json::parse(buffer.bytes);
  } catch (const std::exception& e) {
    throw RuntimeFailure(what("element_spec") + ": returned invalid JSON: " + e.what());
  }
}

void DataSource::get(int64_t index, Example& out) const {
  if (!random_access_) throw RuntimeFailure(what("get") + ": the source is sequential");
  ramjet_error error;
  ramjet_status status = vt<ramjet_data_source_vtable>().get(self_, index, &out, &error);
  retain_if_foreign(out);
  if (status != RAMJET_OK) throw_on_error(status, error, what("get") + " element " + std::to_string(index));
}

bool DataSource::next(Example& out) {
  if (!has_slot(&ramjet_data_source_vtable::next)) throw RuntimeFailure(what("next") + ": the source has no next()");
  ramjet_error error;
  int32_t has = 0;
  const ramjet_status status = vt<ramjet_data_source_vtable>().next(self_, &out, &has, &error);
  retain_if_foreign(out);
  throw_on_error(status, error, what("next"));
  return has != 0;
}

void DataSource::reset(uint64_t epoch) {
  if (!has_slot(&ramjet_data_source_vtable::reset)) return;
  ramjet_error error;
  throw_on_error(vt<ramjet_data_source_vtable>().reset(self_, epoch, &error), error, what("reset"));
}

void Transform::apply(Example& example, uint64_t seed) const {
  ramjet_error error;
  ramjet_status status = vt<ramjet_transform_vtable>().apply(self_, &example, seed, &error);
  retain_if_foreign(example);
  if (status != RAMJET_OK) throw_on_error(status, error, what("apply"));
}

}  // namespace ramjet::core
