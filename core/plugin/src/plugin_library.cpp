#include "ramjet/plugin/plugin_library.hpp"

#include "ramjet/plugin/elf_check.hpp"
#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/host_api.hpp"
#include "ramjet/plugin/log.hpp"

#include <algorithm>
#include <cstring>
#include <set>

namespace ramjet::core {
namespace {

struct VtableHead {
  uint32_t struct_size;
  uint32_t abi_version;
  void* create;
  void* destroy;
};

// The frozen v1 sizes: a plugin built against any later header is at least this large.
size_t v1_size(ramjet_component_kind kind) {
  switch (kind) {
    case RAMJET_KIND_DATA_SOURCE: return RAMJET_DATA_SOURCE_VTABLE_V1_SIZE;
    case RAMJET_KIND_TRANSFORM: return RAMJET_TRANSFORM_VTABLE_V1_SIZE;
    case RAMJET_KIND_PRECISION_POLICY: return RAMJET_PRECISION_POLICY_VTABLE_V1_SIZE;
    case RAMJET_KIND_STRATEGY: return RAMJET_STRATEGY_VTABLE_V1_SIZE;
    case RAMJET_KIND_QUANTIZER: return RAMJET_QUANTIZER_VTABLE_V1_SIZE;
    case RAMJET_KIND_EXPORTER: return RAMJET_EXPORTER_VTABLE_V1_SIZE;
    case RAMJET_KIND_BACKEND: return RAMJET_BACKEND_VTABLE_V1_SIZE;
    default: return 0;
  }
}

// Names of required slots that are null. Optional slots (documented "Optional" in abi.h) are not listed.
std::vector<std::string> missing_required_slots(ramjet_component_kind kind, const void* vtable) {
  std::vector<std::string> missing;
  auto need = [&](const void* slot, const char* name) {
    if (slot == nullptr) missing.emplace_back(name);
  };
  auto head = static_cast<const VtableHead*>(vtable);
  need(head->create, "create");
  need(head->destroy, "destroy");
  switch (kind) {
    case RAMJET_KIND_DATA_SOURCE: {
      auto v = static_cast<const ramjet_data_source_vtable*>(vtable);
      need(reinterpret_cast<const void*>(v->cardinality), "cardinality");
      if (v->get == nullptr && v->next == nullptr) missing.emplace_back("get or next");
      break;
    }
    case RAMJET_KIND_TRANSFORM:
      need(reinterpret_cast<const void*>(static_cast<const ramjet_transform_vtable*>(vtable)->apply), "apply");
      break;
    case RAMJET_KIND_PRECISION_POLICY: {
      auto v = static_cast<const ramjet_precision_policy_vtable*>(vtable);
      need(reinterpret_cast<const void*>(v->layer_dtypes), "layer_dtypes");
      need(reinterpret_cast<const void*>(v->loss_scale), "loss_scale");
      need(reinterpret_cast<const void*>(v->update), "update");
      break;
    }
    case RAMJET_KIND_STRATEGY: {
      auto v = static_cast<const ramjet_strategy_vtable*>(vtable);
      need(reinterpret_cast<const void*>(v->rank), "rank");
      need(reinterpret_cast<const void*>(v->world_size), "world_size");
      need(reinterpret_cast<const void*>(v->broadcast), "broadcast");
      need(reinterpret_cast<const void*>(v->all_reduce), "all_reduce");
      need(reinterpret_cast<const void*>(v->barrier), "barrier");
      break;
    }
    case RAMJET_KIND_QUANTIZER: {
      auto v = static_cast<const ramjet_quantizer_vtable*>(vtable);
      need(reinterpret_cast<const void*>(v->observe), "observe");
      need(reinterpret_cast<const void*>(v->quantize), "quantize");
      break;
    }
    case RAMJET_KIND_EXPORTER:
      need(reinterpret_cast<const void*>(static_cast<const ramjet_exporter_vtable*>(vtable)->export_model),
           "export_model");
      break;
    case RAMJET_KIND_BACKEND: {
      auto v = static_cast<const ramjet_backend_vtable*>(vtable);
      need(reinterpret_cast<const void*>(v->compile), "compile");
      need(reinterpret_cast<const void*>(v->program_destroy), "program_destroy");
      need(reinterpret_cast<const void*>(v->forward), "forward");
      need(reinterpret_cast<const void*>(v->backward), "backward");
      need(reinterpret_cast<const void*>(v->optimizer_update), "optimizer_update");
      need(reinterpret_cast<const void*>(v->get_state), "get_state");
      need(reinterpret_cast<const void*>(v->set_state), "set_state");
      break;
    }
    default: break;
  }
  return missing;
}

std::string range(uint32_t lo, uint32_t hi) { return std::to_string(lo) + ".." + std::to_string(hi); }

// The loader's own words from a Boost.DLL load error, without Boost's wrapping ("boost::dll::shared_library::load()
// failed (dlerror system message: ...): <errno text> [system:N]"), and short: a library can make dlerror long.
std::string dlopen_reason(const std::exception& e) {
  constexpr std::string_view kOpen = "(dlerror system message: ";
  constexpr size_t kLimit = 400;
  std::string text = e.what();
  if (auto at = text.find(kOpen); at != std::string::npos) {
    const auto close = text.rfind(')');
    text = text.substr(at + kOpen.size(), close > at + kOpen.size() ? close - at - kOpen.size() : std::string::npos);
  }
  if (text.size() > kLimit) text = text.substr(0, kLimit) + "...";
  return text;
}

}  // namespace

std::string elide(std::string_view text, size_t limit) {
  if (text.size() <= limit) return std::string(text);
  const size_t keep = limit / 2;
  return std::string(text.substr(0, keep)) + "...(" + std::to_string(text.size() - 2 * keep) + " characters cut)..." +
         std::string(text.substr(text.size() - keep));
}

std::string validate_vtable(ramjet_component_kind kind, const void* vtable) {
  if (vtable == nullptr) return "vtable is null";
  auto head = static_cast<const VtableHead*>(vtable);
  const size_t required = v1_size(kind);
  if (head->struct_size < required)
    return "vtable struct_size is " + std::to_string(head->struct_size) + " bytes, this host requires at least " +
           std::to_string(required) + " for " + std::string(kind_name(kind)) + " ABI v1";
  if (head->abi_version < kHostAbiMin || head->abi_version > kHostAbiMax)
    return "vtable abi_version " + std::to_string(head->abi_version) + " is outside the host's " +
           range(kHostAbiMin, kHostAbiMax);
  auto missing = missing_required_slots(kind, vtable);
  if (!missing.empty()) {
    std::string s = "required slots are null:";
    for (const auto& m : missing) s += " " + m;
    return s;
  }
  return {};
}

PluginLibrary::PluginLibrary(PluginManifest manifest, boost::dll::shared_library library,
                             const ramjet_plugin* descriptor)
    : manifest_(std::move(manifest)), library_(std::move(library)), descriptor_(descriptor) {}

PluginLibrary::~PluginLibrary() { loader_debug("unloading " + manifest_.library.string()); }

const ramjet_component* PluginLibrary::find(ramjet_component_kind kind, std::string_view name) const {
  for (size_t i = 0; i < descriptor_->component_count; ++i) {
    const ramjet_component* c = descriptor_->components[i];
    if (c->kind == kind && name == c->name) return c;
  }
  return nullptr;
}

std::shared_ptr<PluginLibrary> PluginLibrary::load(const PluginManifest& manifest) {
  const std::string where = "plugin '" + elide(manifest.name) + "' (manifest " + elide(manifest.path.string()) +
                            ", library " + elide(manifest.library.string()) + ")";
  auto fail = [&](const std::string& why) -> std::shared_ptr<PluginLibrary> {
    loader_debug("load failed: " + where + ": " + why);
    throw RuntimeFailure("cannot load " + where + ": " + why);
  };

  // Both before dlopen: the loader maps segments straight from the file, and a file cut short (or a FIFO named
  // like the library) would end this process with a signal or a hang instead of an error.
  if (std::string why = library_file_problem(manifest.library); !why.empty()) return fail(why);
  if (std::string why = check_elf_compatible(manifest.library); !why.empty()) return fail(why);
  if (manifest.abi_max < kHostAbiMin || manifest.abi_min > kHostAbiMax)
    return fail("ABI range " + range(manifest.abi_min, manifest.abi_max) + " does not overlap the host's " +
                range(kHostAbiMin, kHostAbiMax));

  loader_debug("dlopen(RTLD_NOW | RTLD_LOCAL) " + manifest.library.string());
  boost::dll::shared_library library;
  try {
    library.load(manifest.library.string(),
                 boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    return fail("dlopen failed: " + dlopen_reason(e));
  }
  if (!library.has(RAMJET_ENTRY_SYMBOL))
    return fail(std::string("the library does not export the entry symbol '") + RAMJET_ENTRY_SYMBOL + "'");
  auto entry = library.get<std::remove_pointer_t<ramjet_plugin_entry_fn>>(RAMJET_ENTRY_SYMBOL);

  ramjet_error error;
  const ramjet_plugin* descriptor = nullptr;
  const uint32_t lo = std::max(kHostAbiMin, manifest.abi_min), hi = std::min(kHostAbiMax, manifest.abi_max);
  loader_debug("calling " + std::string(RAMJET_ENTRY_SYMBOL) + " with ABI range " + range(lo, hi));
  ramjet_status status = entry(host_api(), lo, hi, &descriptor, &error);
  if (status != RAMJET_OK)
    return fail("the entry point returned " + describe_status(status) +
                (error.message.empty() ? std::string(" without a message") : ": " + error.message));
  if (descriptor == nullptr) return fail("the entry point returned no descriptor");
  if (descriptor->struct_size < RAMJET_PLUGIN_V1_SIZE)
    return fail("descriptor struct_size is " + std::to_string(descriptor->struct_size) + ", host requires at least " +
                std::to_string(RAMJET_PLUGIN_V1_SIZE));
  if (descriptor->abi_version < lo || descriptor->abi_version > hi)
    return fail("the plugin chose ABI " + std::to_string(descriptor->abi_version) + ", outside the offered " +
                range(lo, hi));
  if (descriptor->name == nullptr || manifest.name != descriptor->name)
    return fail("the library calls itself '" + elide(descriptor->name ? descriptor->name : "(null)") +
                "', the manifest says '" + elide(manifest.name) + "'");
  if (descriptor->component_count > 0 && descriptor->components == nullptr)
    return fail("the descriptor lists components but the array is null");

  std::set<std::pair<int, std::string>> offered;
  for (size_t i = 0; i < descriptor->component_count; ++i) {
    std::string label = "component #" + std::to_string(i);
    if (descriptor->components[i] == nullptr) return fail(label + ": null");
    const ramjet_component& c = *descriptor->components[i];
    if (c.struct_size < RAMJET_COMPONENT_V1_SIZE) return fail(label + ": struct_size too small");
    if (c.name == nullptr || *c.name == '\0') return fail(label + ": no name");
    if (c.kind < 0 || c.kind >= kKindCount)
      return fail(label + " '" + elide(c.name) + "': unknown kind " + std::to_string(static_cast<int>(c.kind)));
    label = std::string(kind_name(c.kind)) + " '" + elide(c.name) + "'";
    if (std::string why = validate_vtable(c.kind, c.vtable); !why.empty()) return fail(label + ": " + why);
    offered.insert({c.kind, c.name});
  }
  for (const auto& [kind, names] : manifest.provides) {
    for (const auto& n : names) {
      if (!offered.count({kind, n}))
        return fail("the manifest lists " + std::string(kind_name(kind)) + " '" + elide(n) +
                    "' but the library does not provide it");
    }
  }
  for (const auto& [kind, n] : offered) {
    const auto& listed = manifest.provides.count(static_cast<ramjet_component_kind>(kind))
                             ? manifest.provides.at(static_cast<ramjet_component_kind>(kind))
                             : std::vector<std::string>{};
    if (std::find(listed.begin(), listed.end(), n) == listed.end())
      log(RAMJET_LOG_WARNING, "loader",
          where + " provides " + std::string(kind_name(static_cast<ramjet_component_kind>(kind))) + " '" + elide(n) +
              "' which its manifest does not list; it cannot be selected");
  }
  loader_debug("loaded " + where + " at ABI " + std::to_string(descriptor->abi_version));
  return std::shared_ptr<PluginLibrary>(new PluginLibrary(manifest, std::move(library), descriptor));
}

}  // namespace ramjet::core
