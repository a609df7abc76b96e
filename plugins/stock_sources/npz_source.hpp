// data_source "npz": arrays saved with numpy.savez (members stored) or numpy.savez_compressed (deflated) in one
// .npz archive; example i is row i of every named array. The archive is read with libzip (Debian libzip-dev).
// Config: file (the .npz, required), arrays ({"<tensor name>": "<array name>", ...}, required, at least one;
//         "x" names the member x.npy, as numpy.load(file)["x"] does).
// Elements and refusals as the npy source. Each named member is inflated into memory once, when the source is
// opened, after its header was judged and its size checked against the machine's memory; a member's errors name
// "<file>:<member>" and the byte inside the member.
#pragma once

#include "array_table.hpp"

#include <ramjet/sdk.hpp>

namespace stock_sources {

class NpzSource {
 public:
  static ramjet::Fields fields();
  static void check(const nlohmann::json& config, ramjet::Problems& problems);
  explicit NpzSource(const ramjet::Config& config);
  int64_t cardinality() const { return table_.cardinality(); }
  nlohmann::json element_spec() const { return table_.element_spec(); }
  void get(int64_t index, ramjet::Example& out) const { table_.get(index, out, "npz"); }

 private:
  ArrayTable table_;
};

}  // namespace stock_sources
