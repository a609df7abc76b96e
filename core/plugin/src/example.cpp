#include "ramjet/plugin/example.hpp"

#include <algorithm>

DLTensor* ramjet_example::find(std::string_view name) {
  for (auto& e : entries)
    if (e.name == name) return &e.tensor->dl_tensor;
  return nullptr;
}

const DLTensor* ramjet_example::find(std::string_view name) const {
  return const_cast<ramjet_example*>(this)->find(name);
}

void ramjet_example::set(std::string name, ramjet::core::TensorPtr tensor) {
  for (auto& e : entries) {
    if (e.name == name) {
      e.tensor = std::move(tensor);
      return;
    }
  }
  entries.push_back({std::move(name), std::move(tensor)});
}

void ramjet_example::keep_alive(const std::shared_ptr<const void>& library) {
  if (!library) return;
  if (std::find(keepalive.begin(), keepalive.end(), library) == keepalive.end()) keepalive.push_back(library);
}
