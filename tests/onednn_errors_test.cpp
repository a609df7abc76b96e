// The oneDNN "cpu" backend's compile and forward errors: unsupported ops, options and activations, malformed
// graphs and bad inputs, each naming the node or input at fault.
#include "ramjet/plugin/example.hpp"
#include "onednn_harness.hpp"
#include "onednn_models.hpp"

#include <gtest/gtest.h>

#include "ramjet/plugin/host_api.hpp"

#include <functional>
#include <string>
#include <utility>
#include <vector>

using namespace ramjet::core;
using namespace ramjet::test::cpu_backend;

TEST(OnednnErrors, UnsupportedOpNamesTheNode) {
  json g = Ir().input("x", {4}).dense("d", "x", 4, 2).classifier("d");
  g["nodes"].push_back({{"name", "memory"}, {"op", "lstm"}, {"inputs", {"d"}}, {"shape", {2}}});
  Harness h;
  const Status s = h.compile(g, adam_options(2));
  EXPECT_EQ(s.code, RAMJET_ERR_UNSUPPORTED);
  EXPECT_NE(s.message.find("'memory'"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("lstm"), std::string::npos) << s.message;
  EXPECT_EQ(h.compile(small_cnn(), {{"batch", 2}, {"precision", "mixed_float16"}}).code, RAMJET_ERR_UNSUPPORTED);
  EXPECT_EQ(h.compile(small_cnn(), {{"batch", 2}, {"optimizer", {{"type", "lamb"}}}}).code, RAMJET_ERR_UNSUPPORTED);
  json act = Ir().input("x", {4}).dense("d", "x", 4, 2, "hard_swish").classifier("d");
  const Status a = h.compile(act, adam_options(2));
  EXPECT_EQ(a.code, RAMJET_ERR_UNSUPPORTED);
  EXPECT_NE(a.message.find("'d'"), std::string::npos) << a.message;
}

TEST(OnednnErrors, MalformedGraphsNameTheNode) {
  struct Case {
    const char* what;
    std::function<void(json&)> spoil;
    const char* fragment;
  };
  const std::vector<Case> cases = {
      {"undefined input", [](json& g) { g["nodes"][1]["inputs"] = {"nowhere"}; }, "'pool'"},
      {"wrong declared shape", [](json& g) { g["nodes"][0]["shape"] = {7, 7, 4}; }, "'conv'"},
      {"kernel of the wrong shape", [](json& g) { g["params"]["conv/kernel"]["shape"] = {3, 3, 2, 4}; }, "'conv'"},
      {"undeclared parameter", [](json& g) { g["nodes"][3]["params"]["kernel"] = "ghost"; }, "'fc'"},
      {"missing attribute", [](json& g) { g["nodes"][0]["attrs"].erase("filters"); }, "'conv'"},
      {"out of order", [](json& g) { std::swap(g["nodes"][1], g["nodes"][2]); }, "'flat'"},
      {"duplicate name", [](json& g) { g["nodes"][2]["name"] = "conv"; }, "'conv'"},
      {"no inputs", [](json& g) { g.erase("inputs"); }, "inputs"},
      {"bad loss input", [](json& g) { g["loss"]["input"] = "nothing"; }, "nothing"},
      {"bad padding", [](json& g) { g["nodes"][1]["attrs"]["padding"] = {1, 2}; }, "'pool'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    json g = small_cnn();
    c.spoil(g);
    Harness h;
    const Status s = h.compile(g, adam_options(2));
    EXPECT_EQ(s.code, RAMJET_ERR_INVALID_ARGUMENT) << s.message;
    EXPECT_NE(s.message.find(c.fragment), std::string::npos) << s.message;
  }
}

TEST(OnednnErrors, BadForwardInputs) {
  Harness h;
  ASSERT_TRUE(h.compile(small_cnn(), adam_options(4)).ok());
  Example out;
  Example missing;
  EXPECT_EQ(h.forward(missing, out, false).code, RAMJET_ERR_INVALID_ARGUMENT);
  Example wrong;
  put(wrong, "x", {4, 8, 8, 2}, std::vector<float>(512));
  const Status s = h.forward(wrong, out, false);
  EXPECT_EQ(s.code, RAMJET_ERR_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("'x'"), std::string::npos) << s.message;
  Example bad_label;
  put(bad_label, "x", {2, 8, 8, 1}, std::vector<float>(128));
  put_labels(bad_label, {0, 2});
  const Status l = h.forward(bad_label, out, true);
  EXPECT_EQ(l.code, RAMJET_ERR_OUT_OF_RANGE);
  EXPECT_NE(l.message.find("label"), std::string::npos) << l.message;
}
