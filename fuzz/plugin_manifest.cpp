// The plugin manifest reader (core/plugin): every problem is returned as a list, so nothing may throw.
#include "fuzz_support.hpp"

#include "ramjet/plugin/plugin_manifest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ramjet::fuzz::write_scratch("plugin.json", data, size);
  const ramjet::core::ManifestParse parse = ramjet::core::read_plugin_manifest(path);
  if (!parse.manifest && parse.problems.empty()) __builtin_trap();  // neither a manifest nor a reason
  (void)parse.describe();
  return 0;
}
