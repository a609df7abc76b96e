// The host's ramjet_example: an ordered set of named tensors that plugins fill through the host API.
#pragma once

#include "ramjet/plugin/tensor.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

// Global namespace: this completes the opaque type declared in abi.h.
struct ramjet_example {
  struct Entry {
    std::string name;
    ramjet::core::TensorPtr tensor;
  };
  std::vector<Entry> entries;
  // Libraries whose code may run when these tensors are deleted (a plugin's own deleter). Held until the
  // example dies so a library never unloads under a live tensor.
  std::vector<std::shared_ptr<const void>> keepalive;

  ramjet_example() = default;
  ramjet_example(ramjet_example&&) = default;
  ramjet_example& operator=(ramjet_example&&) = default;
  ~ramjet_example() {
    entries.clear();  // tensors first, then the libraries their deleters live in
  }

  DLTensor* find(std::string_view name);
  const DLTensor* find(std::string_view name) const;
  void set(std::string name, ramjet::core::TensorPtr tensor);
  void keep_alive(const std::shared_ptr<const void>& library);
};

namespace ramjet::core {
using Example = ramjet_example;
}
