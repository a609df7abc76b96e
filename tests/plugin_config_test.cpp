// Configuration judged by the plugin that owns the words (issue 9): every shipped SDK-built component answers its
// check_config slot with the pointers of what is wrong (unknown key with a did-you-mean, wrong type, out of range,
// bad enum, missing required), create() refuses the same, and the onednn backend's check_options judges the compile
// options (optimizer fields, layer_dtypes). Needs only abi.h and the built plugins: each is dlopen'ed from the build
// tree and handed a minimal host table defined here, exactly as a host would.
#include <ramjet/abi.h>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

using nlohmann::json;

// ---- a minimal host -------------------------------------------------------------------------------------------

struct ramjet_error {
  ramjet_status status = RAMJET_OK;
  std::string message;
};
struct ramjet_buffer {
  std::string bytes;
};
struct ramjet_example {
  std::vector<std::pair<std::string, DLManagedTensor*>> entries;
  ~ramjet_example() {
    for (auto& [name, t] : entries)
      if (t->deleter) t->deleter(t);
  }
};

namespace {

struct OwnedTensor {
  DLManagedTensor managed{};
  std::vector<int64_t> shape;
  std::vector<unsigned char> bytes;
};

DLManagedTensor* tensor_new(DLDataType dtype, int32_t ndim, const int64_t* shape) {
  auto* t = new OwnedTensor;
  t->shape.assign(shape, shape + ndim);
  size_t count = 1;
  for (int64_t d : t->shape) count *= static_cast<size_t>(d);
  t->bytes.assign(count * ((dtype.bits * dtype.lanes + 7u) / 8u) + 64, 0);
  DLTensor& dl = t->managed.dl_tensor;
  dl.data = t->bytes.data();
  dl.device = {kDLCPU, 0};
  dl.ndim = ndim;
  dl.dtype = dtype;
  dl.shape = t->shape.data();
  dl.strides = nullptr;
  dl.byte_offset = 0;
  t->managed.manager_ctx = t;
  t->managed.deleter = [](DLManagedTensor* self) { delete static_cast<OwnedTensor*>(self->manager_ctx); };
  return &t->managed;
}

ramjet_status example_set(ramjet_example* e, const char* name, DLManagedTensor* tensor) {
  for (auto& [n, t] : e->entries)
    if (n == name) {
      if (t->deleter) t->deleter(t);
      t = tensor;
      return RAMJET_OK;
    }
  e->entries.emplace_back(name, tensor);
  return RAMJET_OK;
}

const ramjet_host_api kHost = {
    sizeof(ramjet_host_api),
    RAMJET_ABI_VERSION,
    [](ramjet_log_level, const char*, const char*) {},
    [](ramjet_error* error, ramjet_status status, const char* message) {
      if (error) *error = {status, message ? message : ""};
    },
    [](size_t size, size_t alignment) -> void* { return std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment); },
    [](void* p) { std::free(p); },
    tensor_new,
    [](ramjet_buffer* b, const void* data, size_t size) -> ramjet_status {
      b->bytes.assign(static_cast<const char*>(data), size);
      return RAMJET_OK;
    },
    [](const ramjet_example* e) { return e->entries.size(); },
    [](const ramjet_example* e, size_t i) -> const char* { return i < e->entries.size() ? e->entries[i].first.c_str() : nullptr; },
    [](ramjet_example* e, size_t i) -> DLTensor* { return i < e->entries.size() ? &e->entries[i].second->dl_tensor : nullptr; },
    [](ramjet_example* e, const char* name) -> DLTensor* {
      for (auto& [n, t] : e->entries)
        if (n == name) return &t->dl_tensor;
      return nullptr;
    },
    example_set,
    [](ramjet_example* e, const char* name) -> ramjet_status {
      for (auto it = e->entries.begin(); it != e->entries.end(); ++it)
        if (it->first == name) {
          if (it->second->deleter) it->second->deleter(it->second);
          e->entries.erase(it);
          return RAMJET_OK;
        }
      return RAMJET_OK;
    }};

// The plugin libraries stay loaded for the whole run, as a host keeps a library while its components live.
const ramjet_plugin& plugin(const std::string& name) {
  static std::map<std::string, const ramjet_plugin*> loaded;
  if (auto it = loaded.find(name); it != loaded.end()) return *it->second;
  const std::filesystem::path path = std::filesystem::path(RAMJET_TEST_PLUGIN_DIR) / ("libramjet_" + name + ".so");
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw std::runtime_error(path.string() + ": " + dlerror());
  auto entry = reinterpret_cast<ramjet_plugin_entry_fn>(dlsym(handle, RAMJET_ENTRY_SYMBOL));
  if (entry == nullptr) throw std::runtime_error(path.string() + ": no entry symbol");
  const ramjet_plugin* out = nullptr;
  ramjet_error error;
  if (entry(&kHost, RAMJET_ABI_VERSION, RAMJET_ABI_VERSION, &out, &error) != RAMJET_OK || out == nullptr)
    throw std::runtime_error(path.string() + ": entry failed: " + error.message);
  return *(loaded[name] = out);
}

// Whether this configuration builds the plugin (the optional ones switch off when a dependency is missing).
bool built(const std::string& name) {
  return std::string(RAMJET_TEST_BUILT_PLUGINS).find(" " + name + " ") != std::string::npos;
}

const ramjet_component& component(const std::string& plugin_name, ramjet_component_kind kind, const std::string& name) {
  const ramjet_plugin& p = plugin(plugin_name);
  for (size_t i = 0; i < p.component_count; ++i) {
    const ramjet_component& c = *p.components[i];
    if (c.kind == kind && name == c.name) return c;
  }
  throw std::runtime_error("plugin " + plugin_name + " has no component " + name);
}

ramjet_create_info create_info(const std::string& config_text, const char* where) {
  return {sizeof(ramjet_create_info), RAMJET_ABI_VERSION, config_text.c_str(), "/nonexistent", where, 1, 1, 0};
}

// The component's check_config answer: {pointer: message}, in its order.
std::vector<std::pair<std::string, std::string>> problems_of(const ramjet_component& c, const json& config) {
  EXPECT_GE(c.struct_size, RAMJET_COMPONENT_V2_SIZE) << c.name;
  EXPECT_NE(c.check_config, nullptr) << c.name << " has no check_config slot";
  if (c.struct_size < RAMJET_COMPONENT_V2_SIZE || c.check_config == nullptr) return {};
  const std::string text = config.dump();
  const ramjet_create_info info = create_info(text, "t.json#/x");
  ramjet_buffer out;
  ramjet_error error;
  EXPECT_EQ(c.check_config(&info, &out, &error), RAMJET_OK) << error.message;
  std::vector<std::pair<std::string, std::string>> problems;
  for (const auto& p : json::parse(out.bytes.empty() ? "[]" : out.bytes)) problems.emplace_back(p.at("pointer"), p.at("message"));
  return problems;
}

std::string dump(const std::vector<std::pair<std::string, std::string>>& problems) {
  std::string text;
  for (const auto& [p, m] : problems) text += "  " + p + ": " + m + "\n";
  return text.empty() ? "  (none)\n" : text;
}

// Expects exactly one problem per pointer in `pointers` (and no other), each message holding its fragment.
void expect_problems(const ramjet_component& c, const json& config,
                     const std::vector<std::pair<std::string, std::string>>& expected) {
  const auto problems = problems_of(c, config);
  EXPECT_EQ(problems.size(), expected.size()) << c.name << " " << config.dump() << "\n" << dump(problems);
  for (const auto& [pointer, fragment] : expected) {
    bool found = false;
    for (const auto& [p, m] : problems) found |= p == pointer && m.find(fragment) != std::string::npos;
    EXPECT_TRUE(found) << c.name << " " << config.dump() << ": no problem at '" << pointer << "' saying '" << fragment
                       << "'; got\n" << dump(problems);
  }
}

void expect_fine(const ramjet_component& c, const json& config) { expect_problems(c, config, {}); }

// create() refuses what check_config reports, naming the location the host gave.
void expect_create_refuses(const ramjet_component& c, const json& config, const std::string& where_fragment) {
  struct Head {
    uint32_t struct_size, abi_version;
    ramjet_status (*create)(const ramjet_create_info*, void**, ramjet_error*);
    void (*destroy)(void*);
  };
  const auto& head = *static_cast<const Head*>(c.vtable);
  const std::string text = config.dump();
  const ramjet_create_info info = create_info(text, "t.json#/x");
  void* self = nullptr;
  ramjet_error error;
  EXPECT_EQ(head.create(&info, &self, &error), RAMJET_ERR_INVALID_ARGUMENT) << c.name << " " << text;
  EXPECT_EQ(self, nullptr);
  EXPECT_NE(error.message.find("t.json#/x" + where_fragment), std::string::npos) << error.message;
}

}  // namespace

// ---- stock_sources ---------------------------------------------------------------------------------------------

TEST(PluginConfig, IdxSource) {
  const auto& idx = component("stock_sources", RAMJET_KIND_DATA_SOURCE, "idx");
  // No file is opened to judge, but the files must be there (check_files): any existing file will do.
  const std::string file = std::string(RAMJET_TEST_PLUGIN_DIR) + "/stock_sources.json";
  expect_fine(idx, {{"images", file}, {"labels", file}, {"num_classes", 10}, {"image_key", "x"}, {"label_key", "y"}});
  expect_problems(idx, {{"images", "train-images.gz"}, {"labels", RAMJET_TEST_PLUGIN_DIR}},
                  {{"/images", "/nonexistent/train-images.gz: no such file"}, {"/labels", "is a folder, not a file"}});
  expect_problems(idx, {{"imagez", "a.gz"}}, {{"/imagez", "unknown field 'imagez' (did you mean 'images'?)"},
                                              {"/images", "required field is missing"}});
  expect_problems(idx, {{"images", 3}}, {{"/images", "must be a string"}});
  expect_problems(idx, {{"images", "a"}, {"num_classes", 0}}, {{"/num_classes", "must be >= 1"}});
  expect_problems(idx, {{"images", "a"}, {"num_classes", 2.5}}, {{"/num_classes", "must be an integer"}});
  expect_create_refuses(idx, {{"images", "a"}, {"num_classes", 0}}, "/num_classes");
}

TEST(PluginConfig, SyntheticSource) {
  const auto& synthetic = component("stock_sources", RAMJET_KIND_DATA_SOURCE, "synthetic");
  expect_fine(synthetic, {{"count", 4}, {"tensors", {{"x", {{"shape", {2, 3}}}},
                                                      {"y", {{"shape", json::array()}, {"dtype", "int32"}, {"low", 0}, {"high", 5}}}}}});
  expect_problems(synthetic, json::object(), {{"/count", "required"}, {"/tensors", "required"}});
  expect_problems(synthetic, {{"count", -1}, {"tensors", json::object()}},
                  {{"/count", "must be >= 0"}, {"/tensors", "at least one tensor"}});
  expect_problems(synthetic, {{"count", 1}, {"tensors", {{"x", {{"shape", {2}}, {"dtype", "float16"}}}}}},
                  {{"/tensors/x/dtype", "must be one of float32, float64, uint8, int32, int64"}});
  expect_problems(synthetic, {{"count", 1}, {"tensors", {{"a/b", {{"shape", {-2}}, {"hihg", 3}}}}}},
                  {{"/tensors/a~1b/shape", "dimensions >= 0"}, {"/tensors/a~1b/hihg", "did you mean 'high'?"}});
  expect_problems(synthetic, {{"count", 1}, {"tensors", {{"x", {{"shape", {1}}, {"low", 2}, {"high", 2}}}}}},
                  {{"/tensors/x", "low (2) must be below high (2)"}});
}

// ---- stock_transforms ------------------------------------------------------------------------------------------

TEST(PluginConfig, StockTransforms) {
  auto transform = [](const char* name) -> const ramjet_component& {
    return component("stock_transforms", RAMJET_KIND_TRANSFORM, name);
  };
  expect_fine(transform("normalize"), {{"key", "image"}, {"scale", 0.5}, {"mean", {1, 2, 3}}, {"std", 2}});
  expect_fine(transform("normalize"), json::object());
  expect_problems(transform("normalize"), {{"std", {1, 0}}, {"mena", 1}},
                  {{"/std", "must be positive"}, {"/mena", "did you mean 'mean'?"}});
  expect_problems(transform("normalize"), {{"mean", "zero"}, {"scale", "1"}},
                  {{"/mean", "a number or an array of numbers"}, {"/scale", "must be a finite number"}});
  expect_create_refuses(transform("normalize"), {{"std", 0}}, "/std: must be positive");

  expect_fine(transform("random_flip"), {{"horizontal", false}, {"vertical", true}, {"probability", 1}});
  expect_problems(transform("random_flip"), {{"probability", 1.5}, {"horizontal", "yes"}},
                  {{"/probability", "must be <= 1"}, {"/horizontal", "must be true or false"}});

  expect_fine(transform("cast"), {{"dtype", "uint8"}});
  expect_problems(transform("cast"), json::object(), {{"/dtype", "required field is missing"}});
  expect_problems(transform("cast"), {{"dtype", "flaot32"}}, {{"/dtype", "did you mean 'float32'?"}});

  expect_fine(transform("random_crop"), {{"size", {24, 20}}, {"padding", 4}});
  expect_fine(transform("random_crop"), {{"size", 24}});
  expect_problems(transform("random_crop"), {{"size", "big"}, {"padding", -1}},
                  {{"/size", "an integer or an array [height, width]"}, {"/padding", "must be >= 0"}});
  expect_problems(transform("random_crop"), {{"size", {4, 0}}}, {{"/size", "must be positive"}});

  expect_fine(transform("random_brightness"), {{"max_delta", 0.2}});
  expect_problems(transform("random_brightness"), json::object(), {{"/max_delta", "required field is missing"}});
  expect_fine(transform("random_contrast"), {{"lower", 0.5}, {"upper", 1.5}});
  expect_problems(transform("random_contrast"), {{"lower", 1.5}, {"upper", 0.5}}, {{"/upper", "must be >= lower"}});
  expect_problems(transform("random_contrast"), {{"lower", -1}, {"upper", 0.5}}, {{"/lower", "must be >= 0"}});

  expect_fine(transform("resize"), {{"size", {32, 32}}});
  expect_problems(transform("resize"), {{"size", {4}}}, {{"/size", "[height, width]"}});
  expect_problems(transform("resize"), {{"size", 4}}, {{"/size", "must be an array"}});

  expect_fine(transform("one_hot"), {{"depth", 10}, {"dtype", "int64"}, {"key", "label"}});
  expect_problems(transform("one_hot"), {{"depth", 0}, {"dtype", "complex64"}},
                  {{"/depth", "must be >= 1"}, {"/dtype", "must be one of"}});
}

// The sources and transforms for image-to-image pairs, judged without opening a file or creating anything (the
// answer `ramjet validate` prints).
TEST(PluginConfig, ArraySourcesAndPairTransforms) {
  const auto& npy = component("stock_sources", RAMJET_KIND_DATA_SOURCE, "npy");
  expect_fine(npy, {{"files", {{"image", "x.npy"}, {"label", "y.npy"}}}});
  expect_problems(npy, {{"files", json::object()}}, {{"/files", "at least one tensor"}});
  expect_problems(npy, {{"files", {{"image", 3}}}}, {{"/files/image", "must be a .npy file path"}});
  expect_problems(npy, {{"file", "x.npy"}}, {{"/file", "did you mean 'files'?"}, {"/files", "required"}});
  const auto& csv = component("stock_sources", RAMJET_KIND_DATA_SOURCE, "csv");
  expect_fine(csv, {{"file", "t.csv"}, {"columns", {{"x", {"a", 2}}, {"y", "b"}}}, {"dtypes", {{"y", "float32"}}}});
  expect_problems(csv, {{"file", "t.csv"}, {"header", false}, {"columns", {{"x", {"a", -1}}}}},
                  {{"/columns/x/0", "header is false"}, {"/columns/x/1", "0-based index"}});
  expect_problems(csv, {{"file", "t.csv"}, {"columns", {{"x", 0}}}, {"dtypes", {{"x", "int8"}, {"z", "int32"}}}},
                  {{"/dtypes/x", "\"float32\" or \"int32\""}, {"/dtypes/z", "names no tensor"}});

  auto transform = [](const char* name) -> const ramjet_component& {
    return component("stock_transforms", RAMJET_KIND_TRANSFORM, name);
  };
  expect_fine(transform("copy"), {{"from", "image"}, {"to", "target"}});
  expect_problems(transform("copy"), {{"from", "image"}, {"to", "image"}}, {{"/to", "must differ"}});
  expect_fine(transform("blur"), {{"kind", "gaussian"}, {"size", 5}, {"sigma", 1.2}});
  expect_problems(transform("blur"), {{"kind", "box"}, {"size", 2}}, {{"/size", "must be odd"}});
  expect_problems(transform("blur"), {{"kind", "box"}, {"size", 3}, {"sigma", 1}}, {{"/sigma", "only to kind \"gaussian\""}});
  expect_fine(transform("noise"), {{"kind", "salt_and_pepper"}, {"amount", 0.05}, {"clip", {0, 1}}});
  expect_problems(transform("noise"), {{"kind", "gaussian"}, {"amount", 0.1}},
                  {{"/stddev", "required"}, {"/amount", "does not apply"}});
  expect_problems(transform("noise"), {{"kind", "gaussian"}, {"stddev", 1}, {"clip", {2, 1}}}, {{"/clip", "low <= high"}});
  expect_fine(transform("downscale"), {{"factor", 4}, {"restore", "bilinear"}});
  expect_problems(transform("downscale"), {{"factor", 0}, {"restore", "bicubic"}},
                  {{"/factor", "must be >= 1"}, {"/restore", "must be one of"}});
  expect_create_refuses(transform("noise"), {{"kind", "gaussian"}}, "/stddev");
}

// ---- stock_images and stock_records (optional plugins) -----------------------------------------------------------

TEST(PluginConfig, StockImages) {
  if (!built("stock_images")) GTEST_SKIP() << "stock_images is not built here (libpng or libjpeg missing)";
  const auto& folder = component("stock_images", RAMJET_KIND_DATA_SOURCE, "image_folder");
  expect_fine(folder, {{"root", RAMJET_TEST_PLUGIN_DIR}, {"extensions", {".PNG", "jpg"}}, {"decode", false}, {"channels", 3}});
  expect_problems(folder, {{"root", "photos"}}, {{"/root", "/nonexistent/photos: no such folder"}});
  expect_problems(folder, json::object(), {{"/root", "required field is missing"}});
  expect_problems(folder, {{"root", "r"}, {"channels", 2}, {"extensions", json::array()}},
                  {{"/channels", "must be 0 (as stored), 1 (gray) or 3 (RGB)"}, {"/extensions", "must not be empty"}});
  const auto& decode = component("stock_images", RAMJET_KIND_TRANSFORM, "decode_image");
  expect_fine(decode, {{"channels", 1}});
  expect_problems(decode, {{"chanels", 1}}, {{"/chanels", "did you mean 'channels'?"}});
}

TEST(PluginConfig, StockRecords) {
  if (!built("stock_records")) GTEST_SKIP() << "stock_records is not built here (protobuf missing)";
  const auto& tfrecord = component("stock_records", RAMJET_KIND_DATA_SOURCE, "tfrecord");
  const json label = {{"type", "int64"}, {"shape", json::array()}, {"dtype", "int32"}};
  const json features = {{"label", label}, {"image", {{"type", "bytes"}}}};
  expect_fine(tfrecord, {{"files", std::string(RAMJET_TEST_PLUGIN_DIR) + "/*.json"}, {"features", features}});
  expect_problems(tfrecord, {{"files", "data/*.tfrecord"}, {"features", features}}, {{"/files", "matches no files"}});
  expect_problems(tfrecord, {{"files", 42}, {"features", json::object()}},
                  {{"/files", "a path, a glob pattern"}, {"/features", "at least one feature"}});
  expect_problems(tfrecord, {{"files", {"a"}}, {"features", {{"label", {{"type", "string"}}}}}},
                  {{"/features/label/type", "must be one of bytes, int64, float"}});
  expect_problems(tfrecord, {{"files", {"a"}}, {"features", {{"label", {{"type", "float"}, {"dtype", "int32"}}}}}},
                  {{"/features/label/dtype", "'int32' is not a dtype a float feature can produce"}});
  expect_problems(tfrecord, {{"files", {"a"}}, {"features", {{"a/b", {{"type", "int64"}, {"shape", {-1, -1}}}}}}},
                  {{"/features/a~1b/shape", "at most one dimension may be -1"}});
}

// ---- tflite ----------------------------------------------------------------------------------------------------

TEST(PluginConfig, TfliteQuantizerAndExporter) {
  if (!built("tflite")) GTEST_SKIP() << "tflite is not built here (flatc or libflatbuffers-dev missing)";
  const auto& int8 = component("tflite", RAMJET_KIND_QUANTIZER, "int8");
  // The manifest's /export less the core's keys; every field optional.
  expect_fine(int8, json::object());
  expect_fine(int8, {{"calibration", json::object()}});
  expect_fine(int8, {{"mode", "full_integer"}, {"input_type", "int8"}, {"output_type", "uint8"},
                     {"calibration", {{"method", "percentile"}, {"percentile", 99.9}}}});
  expect_fine(int8, {{"mode", "dynamic_range"}, {"input_type", "float32"}});
  expect_problems(int8, {{"calibration", {{"method", "entropy"}, {"percentile", 50}}}},
                  {{"/calibration/method", "must be one of minmax, percentile, mse"},
                   {"/calibration/percentile", "must be > 50"}});
  expect_problems(int8, {{"mode", "dynamic_rang"}, {"output_type", 8}},
                  {{"/mode", "did you mean 'dynamic_range'?"}, {"/output_type", "must be a string"}});
  expect_problems(int8, {{"mode", "dynamic_range"}, {"input_type", "int8"}},
                  {{"/mode", "dynamic_range keeps float32 inputs and outputs; drop input_type/output_type"}});
  // The core keeps these: the quantizer does not know them.
  expect_problems(int8, {{"calibration", {{"batches", 10}}}, {"quantizer", "int8"}},
                  {{"/calibration/batches", "unknown field 'batches'"}, {"/quantizer", "unknown field 'quantizer'"}});
  expect_create_refuses(int8, {{"calibration", {{"method", "entropy"}}}}, "/calibration/method: must be one of");

  const auto& exporter = component("tflite", RAMJET_KIND_EXPORTER, "tflite");
  expect_fine(exporter, json::object());
  expect_problems(exporter, {{"type", "tflite"}}, {{"/type", "unknown field 'type'; the fields are: none"}});
}

// ---- onednn ----------------------------------------------------------------------------------------------------

namespace {

const ramjet_backend_vtable& backend_vtable(const std::string& plugin, const std::string& name) {
  return *static_cast<const ramjet_backend_vtable*>(component(plugin, RAMJET_KIND_BACKEND, name).vtable);
}

// The backend's check_options answer: {pointer, message} pairs.
std::vector<std::pair<std::string, std::string>> option_problems(const json& options, const std::string& plugin = "onednn",
                                                                 const std::string& name = "cpu") {
  const ramjet_backend_vtable& vt = backend_vtable(plugin, name);
  EXPECT_GE(vt.struct_size, RAMJET_BACKEND_VTABLE_V2_SIZE);
  EXPECT_NE(vt.check_options, nullptr);
  if (vt.check_options == nullptr) return {};
  const std::string text = options.dump();
  ramjet_buffer out;
  ramjet_error error;
  EXPECT_EQ(vt.check_options(text.c_str(), &out, &error), RAMJET_OK) << error.message;
  std::vector<std::pair<std::string, std::string>> problems;
  for (const auto& p : json::parse(out.bytes)) problems.emplace_back(p.at("pointer"), p.at("message"));
  return problems;
}

void expect_option_problems(const json& options, const std::vector<std::pair<std::string, std::string>>& expected,
                            const std::string& plugin = "onednn", const std::string& name = "cpu") {
  const auto problems = option_problems(options, plugin, name);
  EXPECT_EQ(problems.size(), expected.size()) << options.dump() << "\n" << dump(problems);
  for (const auto& [pointer, fragment] : expected) {
    bool found = false;
    for (const auto& [p, m] : problems) found |= p == pointer && m.find(fragment) != std::string::npos;
    EXPECT_TRUE(found) << options.dump() << ": no problem at '" << pointer << "' saying '" << fragment << "'; got\n"
                       << dump(problems);
  }
}

}  // namespace

// ---- gloo -------------------------------------------------------------------------------------------------------

TEST(PluginConfig, GlooStrategy) {
  if (!built("gloo")) GTEST_SKIP() << "the gloo plugin is not built (libgloo-dev was not found at configure time)";
  const auto& gloo = component("gloo", RAMJET_KIND_STRATEGY, "gloo");
  expect_fine(gloo, json::object());  // rank, world size and the store's address may all come from the environment
  expect_fine(gloo, {{"rendezvous", "tcp"}, {"master_addr", "10.0.0.1"}, {"master_port", 29500}, {"rank", 1},
                     {"world_size", 2}, {"timeout_s", 2.5}, {"interface", "eth0"}});
  expect_fine(gloo, {{"rendezvous", "file"}, {"dir", "store"}, {"hostname", "10.0.0.2"}});
  expect_problems(gloo, {{"rendezvous", "file"}}, {{"/dir", "required with rendezvous \"file\""}});
  expect_problems(gloo, {{"rendezvous", "pigeon"}}, {{"/rendezvous", "must be one of tcp, file"}});
  expect_problems(gloo, {{"rank", 2}, {"world_size", 2}}, {{"/rank", "must be below world_size (2), got 2"}});
  expect_problems(gloo, {{"timeout_s", 0}, {"master_port", 70000}, {"rendezvouz", "tcp"}},
                  {{"/timeout_s", "must be > 0"}, {"/master_port", "must be <= 65535"},
                   {"/rendezvouz", "did you mean 'rendezvous'?"}});
  expect_problems(gloo, {{"hostname", "a"}, {"interface", "b"}}, {{"/interface", "not both"}});
  expect_create_refuses(gloo, {{"rank", 3}, {"world_size", 2}}, "/rank");
}

TEST(PluginConfig, MpiStrategy) {
  if (!built("mpi")) GTEST_SKIP() << "the mpi plugin is not built (libopenmpi-dev was not found at configure time)";
  const auto& mpi = component("mpi", RAMJET_KIND_STRATEGY, "mpi");
  expect_fine(mpi, json::object());
  expect_fine(mpi, {{"timeout_s", 2.5}});
  expect_problems(mpi, {{"timeout_s", 0}}, {{"/timeout_s", "must be > 0"}});
  // Rank and world size are MPI's: the manifest cannot give them.
  expect_problems(mpi, {{"world_size", 2}}, {{"/world_size", "unknown field 'world_size'; the fields are: timeout_s"}});
}

TEST(PluginConfig, OnednnComponents) {
  if (!built("onednn")) GTEST_SKIP() << "onednn is not built here (libdnnl-dev 2.x missing)";
  const auto& cpu = component("onednn", RAMJET_KIND_BACKEND, "cpu");
  expect_fine(cpu, {{"threads", 2}});
  expect_problems(cpu, {{"thread", 2}}, {{"/thread", "did you mean 'threads'?"}});
  expect_problems(cpu, {{"threads", -1}}, {{"/threads", "must be >= 0"}});
  const auto& policy = component("onednn", RAMJET_KIND_PRECISION_POLICY, "mixed_bfloat16");
  expect_fine(policy, json::object());
  expect_problems(policy, {{"loss_scale", 1}}, {{"/loss_scale", "unknown field 'loss_scale'; the fields are: none"}});
}

TEST(PluginConfig, OnednnCheckOptions) {
  if (!built("onednn")) GTEST_SKIP() << "onednn is not built here (libdnnl-dev 2.x missing)";
  expect_option_problems(json::object(), {});
  expect_option_problems({{"batch", 128}, {"threads", 2}, {"optimizer", {{"type", "adam"}, {"learning_rate", 0.001}}},
                          {"layer_dtypes", {{"conv2d", {{"compute", "bfloat16"}, {"variable", "float32"}}},
                                            {"softmax", {{"compute", "float32"}, {"variable", "float32"}}}}}},
                         {});
  expect_option_problems({{"optimizer", {{"type", "sgd"}, {"momentum", 0.9}, {"nesterov", true}, {"weight_decay", 0.01}}}},
                         {});
  expect_option_problems({{"precision", "int8"}, {"batch", 8}}, {});
  // The acceptance examples of issue 9.
  expect_option_problems({{"optimizer", {{"type", "adam"}, {"beta_9", 0.9}}}},
                         {{"/optimizer/beta_9", "unknown field 'beta_9' (did you mean 'beta_1'?)"}});
  expect_option_problems({{"optimizer", {{"type", "adamw"}, {"beta_1", 1.5}}}}, {{"/optimizer/beta_1", "must be < 1"}});
  expect_option_problems({{"layer_dtypes", {{"dense", {{"compute", "float16"}, {"variable", "float32"}}}}}},
                         {{"/layer_dtypes/dense", "node 'dense' computes in float16; the cpu backend computes in "
                                                  "float32, or in bfloat16 over float32 variables"}});
  // Each optimizer has its own fields.
  expect_option_problems({{"optimizer", {{"type", "sgd"}, {"beta_1", 0.9}, {"momentum", 1}}}},
                         {{"/optimizer/beta_1", "unknown field"}, {"/optimizer/momentum", "must be < 1"}});
  expect_option_problems({{"optimizer", {{"type", "adam"}, {"epsilon", 0}, {"weight_decay", -1}, {"learning_rate", "fast"}}}},
                         {{"/optimizer/epsilon", "must be > 0"}, {"/optimizer/weight_decay", "must be >= 0"},
                          {"/optimizer/learning_rate", "must be a finite number"}});
  expect_option_problems({{"optimizer", {{"type", "lamb"}}}}, {{"/optimizer/type", "not supported by the onednn cpu backend"}});
  // rmsprop's words, and adamw's decay_all (adamw's alone).
  expect_option_problems({{"optimizer", {{"type", "rmsprop"}, {"rho", 0.95}, {"momentum", 0.9}, {"epsilon", 1e-6},
                                         {"centered", true}, {"weight_decay", 0.01}}}},
                         {});
  expect_option_problems({{"optimizer", {{"type", "rmsprop"}, {"rho", 1}, {"momentum", -1}, {"centered", 1}, {"beta_1", 0.9}}}},
                         {{"/optimizer/rho", "must be < 1"}, {"/optimizer/momentum", "must be >= 0"},
                          {"/optimizer/centered", "must be true or false"}, {"/optimizer/beta_1", "unknown field"}});
  expect_option_problems({{"optimizer", {{"type", "adamw"}, {"decay_all", true}}}}, {});
  expect_option_problems({{"optimizer", {{"type", "adam"}, {"decay_all", true}}}},
                         {{"/optimizer/decay_all", "unknown field 'decay_all'"}});
  expect_option_problems({{"batch", 0}, {"bacth", 1}}, {{"/batch", "must be >= 1"}, {"/bacth", "did you mean 'batch'?"}});
  expect_option_problems({{"precision", "mixed_float16"}}, {{"/precision", "'mixed_float16' is not supported"}});
  expect_option_problems({{"precision", "float32"}, {"layer_dtypes", json::object()}},
                         {{"/layer_dtypes", "either precision or layer_dtypes, not both"}});
  expect_option_problems({{"layer_dtypes", {{"conv2d", {{"compute", "bfloat16"}, {"variable", "bfloat16"}}},
                                            {"dense", {{"compute", "bfloat17"}, {"variable", "float32"}}},
                                            {"dense_1", {{"compute", "float32"}, {"varaible", "float32"}}}}}},
                         {{"/layer_dtypes/conv2d", "node 'conv2d' keeps its variables in bfloat16"},
                          {"/layer_dtypes/dense/compute", "'bfloat17' is not a dtype name"},
                          {"/layer_dtypes/dense_1/varaible", "did you mean 'variable'?"},
                          {"/layer_dtypes/dense_1/variable", "required field is missing"}});
}

// ---- onednn: layer_dtypes at compile -------------------------------------------------------------------------------

namespace {

// A small CNN in the graph IR, as `ramjet graph --json` writes it: conv2d (relu) → max_pool → flatten → dense (relu)
// → dense → softmax, with the loss.
json small_cnn() {
  auto conv = [](const char* name, const char* input, int filters, std::vector<int> shape) {
    return json{{"name", name}, {"op", "conv2d"}, {"inputs", {input}}, {"shape", shape},
                {"attrs", {{"activation", "relu"}, {"filters", filters}, {"kernel", {3, 3}}, {"strides", {1, 1}},
                           {"padding", {0, 0, 0, 0}}, {"dilation", {1, 1}}, {"groups", 1}, {"use_bias", true}}},
                {"params", {{"kernel", std::string(name) + "/kernel"}, {"bias", std::string(name) + "/bias"}}}};
  };
  auto dense = [](const char* name, const char* input, int units, const char* activation) {
    return json{{"name", name}, {"op", "dense"}, {"inputs", {input}}, {"shape", {units}},
                {"attrs", {{"activation", activation}, {"units", units}, {"use_bias", true}}},
                {"params", {{"kernel", std::string(name) + "/kernel"}, {"bias", std::string(name) + "/bias"}}}};
  };
  json nodes = json::array();
  nodes.push_back(conv("conv2d", "image", 4, {8, 8, 4}));
  nodes.push_back({{"name", "max_pool"}, {"op", "max_pool"}, {"inputs", {"conv2d"}}, {"shape", {4, 4, 4}},
                   {"attrs", {{"pool", {2, 2}}, {"strides", {2, 2}}, {"padding", {0, 0, 0, 0}}}}});
  nodes.push_back({{"name", "flatten"}, {"op", "flatten"}, {"inputs", {"max_pool"}}, {"shape", {64}}, {"attrs", json::object()}});
  nodes.push_back(dense("dense", "flatten", 16, "relu"));
  nodes.push_back(dense("dense_1", "dense", 3, "linear"));
  nodes.push_back({{"name", "softmax"}, {"op", "softmax"}, {"inputs", {"dense_1"}}, {"shape", {3}}, {"attrs", json::object()}});
  return {{"inputs", {{{"name", "image"}, {"shape", {10, 10, 1}}, {"dtype", "float32"}}}},
          {"outputs", {"softmax"}},
          {"nodes", nodes},
          {"params", {{"conv2d/kernel", {{"shape", {3, 3, 1, 4}}}}, {"conv2d/bias", {{"shape", {4}}}},
                      {"dense/kernel", {{"shape", {64, 16}}}}, {"dense/bias", {{"shape", {16}}}},
                      {"dense_1/kernel", {{"shape", {16, 3}}}}, {"dense_1/bias", {{"shape", {3}}}}}}};
}

struct Compiled {
  ramjet_status status = RAMJET_OK;
  std::string message;
  std::vector<float> output;  // forward's "softmax" on a fixed batch
};

// Creates the cpu backend, compiles `graph` with `options`, loads fixed random parameters and runs one inference.
Compiled compile_and_run(const json& graph, const json& options) {
  const auto& c = component("onednn", RAMJET_KIND_BACKEND, "cpu");
  const auto& vt = *static_cast<const ramjet_backend_vtable*>(c.vtable);
  const std::string config = json{{"threads", 1}}.dump();
  const ramjet_create_info info = create_info(config, "t.json#/train/backend");
  void* self = nullptr;
  ramjet_error error;
  EXPECT_EQ(vt.create(&info, &self, &error), RAMJET_OK) << error.message;
  Compiled result;
  const std::string graph_text = graph.dump(), options_text = options.dump();
  ramjet_program* program = nullptr;
  result.status = vt.compile(self, graph_text.c_str(), options_text.c_str(), &program, &error);
  if (result.status != RAMJET_OK) {
    result.message = error.message;
    vt.destroy(self);
    return result;
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
  auto random_tensor = [&](std::vector<int64_t> shape) {
    DLManagedTensor* t = tensor_new({kDLFloat, 32, 1}, static_cast<int32_t>(shape.size()), shape.data());
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    for (size_t i = 0; i < n; ++i) static_cast<float*>(t->dl_tensor.data)[i] = uniform(rng);
    return t;
  };
  ramjet_example params;
  for (const auto& [name, spec] : graph.at("params").items())
    example_set(&params, name.c_str(), random_tensor(spec.at("shape").get<std::vector<int64_t>>()));
  EXPECT_EQ(vt.set_state(self, program, RAMJET_STATE_PARAMETERS, &params, &error), RAMJET_OK) << error.message;
  ramjet_example inputs, outputs;
  example_set(&inputs, "image", random_tensor({2, 10, 10, 1}));
  const ramjet_forward_args args{sizeof(ramjet_forward_args), RAMJET_ABI_VERSION, 0, 0, 1, 0};
  EXPECT_EQ(vt.forward(self, program, &args, &inputs, &outputs, &error), RAMJET_OK) << error.message;
  for (auto& [name, t] : outputs.entries)
    if (name == "softmax") {
      const float* p = static_cast<const float*>(t->dl_tensor.data);
      result.output.assign(p, p + 6);
    }
  vt.program_destroy(self, program);
  vt.destroy(self);
  return result;
}

// What the mixed_bfloat16 policy says for every node, through its layer_dtypes slot, as the core sends it.
json policy_layer_dtypes(const json& graph) {
  const auto& c = component("onednn", RAMJET_KIND_PRECISION_POLICY, "mixed_bfloat16");
  const auto& vt = *static_cast<const ramjet_precision_policy_vtable*>(c.vtable);
  const std::string config = "{}";
  const ramjet_create_info info = create_info(config, "t.json#/train/precision");
  void* self = nullptr;
  ramjet_error error;
  EXPECT_EQ(vt.create(&info, &self, &error), RAMJET_OK) << error.message;
  auto name = [](DLDataType d) {
    return std::string(d.code == kDLBfloat ? "bfloat" : d.code == kDLFloat ? "float" : "other") + std::to_string(d.bits);
  };
  json out = json::object();
  for (const auto& node : graph.at("nodes")) {
    ramjet_layer_dtypes d{};
    d.struct_size = sizeof d;
    const std::string text = node.dump();
    EXPECT_EQ(vt.layer_dtypes(self, text.c_str(), &d, &error), RAMJET_OK) << error.message;
    out[node.at("name").get<std::string>()] = {{"compute", name(d.compute)}, {"variable", name(d.variable)}};
  }
  vt.destroy(self);
  return out;
}

}  // namespace

TEST(PluginConfig, OnednnLayerDtypesFromThePolicyMeanMixedBfloat16) {
  if (!built("onednn")) GTEST_SKIP() << "onednn is not built here (libdnnl-dev 2.x missing)";
  const json graph = small_cnn();
  const json layers = policy_layer_dtypes(graph);
  EXPECT_EQ(layers["conv2d"]["compute"], "bfloat16");
  EXPECT_EQ(layers["max_pool"]["compute"], "bfloat16");
  EXPECT_EQ(layers["softmax"]["compute"], "float32");  // kept float32 by the backend anyway
  for (const auto& [node, d] : layers.items()) EXPECT_EQ(d["variable"], "float32") << node;
  EXPECT_TRUE(option_problems({{"layer_dtypes", layers}}).empty());

  const Compiled by_word = compile_and_run(graph, {{"batch", 2}, {"precision", "mixed_bfloat16"}});
  const Compiled by_layers = compile_and_run(graph, {{"batch", 2}, {"layer_dtypes", layers}});
  const Compiled float32 = compile_and_run(graph, {{"batch", 2}});
  ASSERT_EQ(float32.status, RAMJET_OK) << float32.message;
  ASSERT_EQ(float32.output.size(), 6u);
  if (by_word.status == RAMJET_ERR_UNSUPPORTED) {
    // No AVX-512 here: both ask for mixed_bfloat16, so both are refused the same way.
    EXPECT_NE(by_word.message.find("needs a CPU with AVX-512"), std::string::npos) << by_word.message;
    EXPECT_EQ(by_layers.status, by_word.status);
    EXPECT_EQ(by_layers.message, by_word.message);
    return;
  }
  ASSERT_EQ(by_word.status, RAMJET_OK) << by_word.message;
  ASSERT_EQ(by_layers.status, RAMJET_OK) << by_layers.message;
  ASSERT_EQ(by_layers.output.size(), 6u);
  EXPECT_EQ(std::memcmp(by_layers.output.data(), by_word.output.data(), 6 * sizeof(float)), 0)
      << "layer_dtypes from the policy must run exactly what precision mixed_bfloat16 runs";
  EXPECT_NE(std::memcmp(by_layers.output.data(), float32.output.data(), 6 * sizeof(float)), 0)
      << "bfloat16 compute should differ from float32 in the last bits";
}

TEST(PluginConfig, OnednnLayerDtypesTheCpuBackendCannotRunAreRefusedAtCompile) {
  if (!built("onednn")) GTEST_SKIP() << "onednn is not built here (libdnnl-dev 2.x missing)";
  const json graph = small_cnn();
  auto entry = [](const char* compute, const char* variable) { return json{{"compute", compute}, {"variable", variable}}; };
  // All float32 is float32, the same numbers as no layer_dtypes at all.
  json f32 = json::object();
  for (const auto& node : graph["nodes"]) f32[node["name"].get<std::string>()] = entry("float32", "float32");
  const Compiled plain = compile_and_run(graph, {{"batch", 2}});
  ASSERT_EQ(plain.output.size(), 6u) << plain.message;
  const Compiled all_f32 = compile_and_run(graph, {{"batch", 2}, {"layer_dtypes", f32}});
  ASSERT_EQ(all_f32.status, RAMJET_OK) << all_f32.message;
  EXPECT_EQ(all_f32.output, plain.output);

  // A mix across layers with parameters: refused, naming the first node that differs.
  json mixed = f32;
  mixed["conv2d"] = entry("bfloat16", "float32");
  const Compiled mix = compile_and_run(graph, {{"batch", 2}, {"layer_dtypes", mixed}});
  EXPECT_EQ(mix.status, RAMJET_ERR_UNSUPPORTED);
  EXPECT_NE(mix.message.find("/layer_dtypes/dense: node 'dense' computes in float32 but node 'conv2d' in bfloat16"),
            std::string::npos) << mix.message;

  json half = f32;
  half["dense_1"] = entry("float16", "float32");
  const Compiled f16 = compile_and_run(graph, {{"batch", 2}, {"layer_dtypes", half}});
  EXPECT_EQ(f16.status, RAMJET_ERR_UNSUPPORTED);
  EXPECT_NE(f16.message.find("/layer_dtypes/dense_1: node 'dense_1' computes in float16"), std::string::npos)
      << f16.message;

  const Compiled beta = compile_and_run(graph, {{"batch", 2}, {"optimizer", {{"type", "adam"}, {"beta_9", 0.9}}}});
  EXPECT_EQ(beta.status, RAMJET_ERR_INVALID_ARGUMENT);
  EXPECT_NE(beta.message.find("/optimizer/beta_9: unknown field 'beta_9' (did you mean 'beta_1'?)"), std::string::npos)
      << beta.message;
}

// ---- cuda -------------------------------------------------------------------------------------------------------

// The cuda backend's words, judged without a GPU: its configuration and its compile options (the optimizer's
// settings are the SDK's, shared with the cpu backend; the optimizer types and dtypes are its own).
TEST(PluginConfig, CudaBackend) {
  if (!built("cuda")) GTEST_SKIP() << "the cuda plugin is not built";
  const ramjet_plugin& p = plugin("cuda");
  bool has_backend = false;
  for (size_t i = 0; i < p.component_count; ++i) has_backend |= p.components[i]->kind == RAMJET_KIND_BACKEND;
  if (!has_backend) GTEST_SKIP() << "the cuda plugin was built without its backend (no CUDA toolkit or cuDNN)";
  const auto& cuda = component("cuda", RAMJET_KIND_BACKEND, "cuda");
  expect_fine(cuda, json::object());
  expect_fine(cuda, {{"device", 1}, {"memory_limit_mb", 4096}, {"cudnn_workspace_mb", 64}, {"threads", 2}});
  expect_problems(cuda, {{"memory_limit_mb", -1}, {"devices", 0}},
                  {{"/memory_limit_mb", "must be >= 0"}, {"/devices", "did you mean 'device'?"}});
  auto expect_cuda = [](const json& options, const std::vector<std::pair<std::string, std::string>>& expected) {
    expect_option_problems(options, expected, "cuda", "cuda");
  };
  expect_cuda({{"batch", 256}, {"threads", 2}, {"optimizer", {{"type", "adamw"}, {"weight_decay", 0.01}}},
               {"layer_dtypes", {{"conv2d", {{"compute", "float16"}, {"variable", "float32"}}},
                                 {"softmax", {{"compute", "float32"}, {"variable", "float32"}}}}}},
              {});
  expect_cuda({{"precision", "mixed_float16"}, {"optimizer", {{"type", "sgd"}, {"momentum", 0.9}, {"nesterov", true}}}}, {});
  expect_cuda({{"optimizer", {{"type", "rmsprop"}}}},
              {{"/optimizer/type", "optimizer type 'rmsprop' is not supported by the cuda backend (sgd, adam, adamw)"}});
  expect_cuda({{"optimizer", {{"type", "adam"}, {"beta_1", 1.5}}}}, {{"/optimizer/beta_1", "must be < 1"}});
  expect_cuda({{"layer_dtypes", {{"dense", {{"compute", "bfloat16"}, {"variable", "float32"}}}}}},
              {{"/layer_dtypes/dense/compute", "node 'dense' computes in bfloat16; the cuda backend computes in float32 "
                                               "or float16"}});
  expect_cuda({{"layer_dtypes", {{"dense", {{"compute", "float16"}, {"variable", "float16"}}}}}},
              {{"/layer_dtypes/dense/variable", "keeps its variables in float16"}});
  expect_cuda({{"precision", "mixed_bfloat16"}}, {{"/precision", "must be one of float32, mixed_float16"}});
  expect_cuda({{"batch", 0}, {"batches", 2}}, {{"/batch", "must be >= 1"}, {"/batches", "did you mean 'batch'?"}});
}

// The nccl strategy's words: the rendezvous every strategy shares (the gloo strategy's fields and rules, from the
// SDK) and the GPU it drives. Judged without a GPU; creating it needs one (tests of that run on a GPU machine).
TEST(PluginConfig, NcclStrategy) {
  if (!built("nccl")) GTEST_SKIP() << "the nccl plugin is not built (no CUDA toolkit or NCCL at configure time)";
  const auto& nccl = component("nccl", RAMJET_KIND_STRATEGY, "nccl");
  expect_fine(nccl, json::object());  // rank, world size and the store's address may all come from the environment
  expect_fine(nccl, {{"master_addr", "10.0.0.1"}, {"master_port", 29500}, {"rank", 1}, {"world_size", 2},
                     {"timeout_s", 30}, {"device", 1}});
  expect_problems(nccl, {{"rank", 2}, {"world_size", 2}}, {{"/rank", "must be below world_size (2), got 2"}});
  expect_problems(nccl, {{"device", -1}, {"timeout_s", 0}, {"rendezvous", "file"}},
                  {{"/device", "must be >= 0"}, {"/timeout_s", "must be > 0"}, {"/rendezvous", "unknown field"}});
  expect_create_refuses(nccl, {{"rank", 3}, {"world_size", 2}}, "/rank");
}
