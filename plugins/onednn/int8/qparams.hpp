// The int8 program's parameters as the quantizer hands them over (docs/quantized-graph.md): int8 kernels and int32
// biases in the IR layouts, kept as host copies. Layers derive their oneDNN weights from them whenever `version`
// changes (set_state), never per call.
#pragma once

#include "../common.hpp"

#include <map>

namespace onednn::int8 {

struct QParam {
  std::string name;
  Shape shape;
  DLDataType dtype{};  // int8 (kernels) or int32 (biases)
  std::vector<int8_t> s8;
  std::vector<int32_t> s32;
  bool set = false;
  size_t count() const { return static_cast<size_t>(product(shape)); }
};

class QParamStore {
 public:
  // The qgraph's "params" object: every entry's shape and dtype ("int8" or "int32").
  explicit QParamStore(const nlohmann::json& params);

  // Checks every tensor (name, dtype, shape, CPU, contiguous) before copying any.
  void set(ramjet::Example& values);
  void copy_to(ramjet::Example& out) const;
  // Throws naming the first parameter never set.
  void require_complete(const std::string& what) const;

  const QParam& get(const std::string& name) const;
  bool has(const std::string& name) const { return by_name_.count(name) != 0; }
  uint64_t version() const { return version_; }

 private:
  std::vector<QParam> params_;
  std::map<std::string, size_t> by_name_;
  uint64_t version_ = 0;
};

}  // namespace onednn::int8
