// What tests of stock transforms share: a registry of the stock plugins, a transform made as a manifest would make
// it, tiny tensors in and out, and the refusal check.
#pragma once

#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/failure.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace ramjet::test {

class TransformFixture : public ::testing::Test {
 protected:
  core::PluginRegistry registry{core::DiscoveryOptions{{stock_plugin_dir()}, {}, {}}};

  core::Transform make(const std::string& name, const nlohmann::json& config) {
    core::CreateArgs args;
    args.config = config;
    args.where = "t.json#/map/0";
    return core::Transform(registry.component(RAMJET_KIND_TRANSFORM, name), args);
  }
  template <class T>
  static core::Example image(std::vector<int64_t> shape, std::vector<T> values, DLDataType dtype) {
    core::Example e;
    e.set("image", core::make_tensor(dtype, shape));
    std::copy(values.begin(), values.end(), static_cast<T*>(e.find("image")->data));
    return e;
  }
  template <class T>
  static std::vector<T> values(core::Example& e, const char* key = "image") {
    const DLTensor* t = e.find(key);
    return std::vector<T>(static_cast<const T*>(t->data), static_cast<const T*>(t->data) + core::element_count(*t));
  }
  static std::vector<int64_t> shape(core::Example& e, const char* key = "image") {
    const DLTensor* t = e.find(key);
    return std::vector<int64_t>(t->shape, t->shape + t->ndim);
  }
  // Expects fn() to throw InvalidInput whose message holds every fragment.
  template <class F>
  static void expect_invalid(F&& fn, std::vector<std::string> fragments) {
    try {
      fn();
      ADD_FAILURE() << "expected InvalidInput";
    } catch (const core::InvalidInput& e) {
      for (const auto& f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
    }
  }
};

}  // namespace ramjet::test
