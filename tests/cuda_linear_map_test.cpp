// The cuda backend's data-movement layers are linear maps built on the host (plugins/cuda/backend/linear_map.hpp).
// Here, with no GPU needed, each map is applied on the CPU and compared with the cpu backend's layer of the same
// node (forward), and its transpose, which the backward runs, is checked as the adjoint: <A x, g> = <x, Aᵀ g>.
#include "linear_map.hpp"
#include "onednn_harness.hpp"
#include "onednn_models.hpp"

#include <gtest/gtest.h>

#include <random>

using namespace ramjet::test::cpu_backend;
using cuda_plugin::LinearMap;

namespace {

std::vector<float> uniform(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

// The cpu backend's forward of node "op" (inputs "x0", "x1", ... of `shapes`) on `batch` random examples, against
// the map's; then the adjoint identity for each input.
void expect_map_matches_cpu(const LinearMap& map, const std::vector<Shape>& shapes, const std::string& op,
                            const Shape& out, const json& attrs) {
  const int64_t batch = 3;
  Ir ir;
  std::vector<std::string> names;
  for (size_t i = 0; i < shapes.size(); ++i) ir.input(names.emplace_back("x" + std::to_string(i)), shapes[i]);
  ir.node("op", op, names, out, attrs);
  Harness h(kOneThread, "cpu");
  const Status compiled = h.compile(ir.inference("op"), {{"batch", batch}, {"optimizer", {{"type", "sgd"}}}});
  ASSERT_TRUE(compiled.ok()) << compiled.message;
  Example inputs, outputs;
  std::vector<std::vector<float>> data;
  std::vector<const float*> pointers;
  for (size_t i = 0; i < shapes.size(); ++i) {
    Shape full{batch};
    full.insert(full.end(), shapes[i].begin(), shapes[i].end());
    data.push_back(uniform(count_of(full), static_cast<uint32_t>(10 + i)));
    put(inputs, names[i], full, data.back());
  }
  for (const auto& d : data) pointers.push_back(d.data());
  const Status ran = h.forward(inputs, outputs, false);
  ASSERT_TRUE(ran.ok()) << ran.message;
  expect_near_all(map.apply(pointers, batch), values(outputs, "op"), 1e-6, op.c_str());

  const std::vector<float> g = uniform(map.rows, 99);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::vector<float> x = uniform(map.source_elements[i], static_cast<uint32_t>(20 + i));
    std::vector<std::vector<float>> only(shapes.size());
    std::vector<const float*> ptrs;
    for (size_t j = 0; j < shapes.size(); ++j) {
      only[j] = j == i ? x : std::vector<float>(static_cast<size_t>(map.source_elements[j]), 0.0f);
      ptrs.push_back(only[j].data());
    }
    const std::vector<float> ax = map.apply(ptrs, 1), atg = map.transposed(static_cast<int32_t>(i)).apply({g.data()}, 1);
    double left = 0, right = 0;
    for (size_t k = 0; k < g.size(); ++k) left += static_cast<double>(ax[k]) * g[k];
    for (size_t k = 0; k < x.size(); ++k) right += static_cast<double>(x[k]) * atg[k];
    EXPECT_NEAR(left, right, 1e-4 * (1 + std::fabs(left))) << op << " input " << i;
  }
}

}  // namespace

TEST(CudaLinearMap, ConcatOnEachAxisMatchesTheCpuBackend) {
  expect_map_matches_cpu(cuda_plugin::concat_map({{4, 3, 2}, {4, 3, 5}}, 2), {{4, 3, 2}, {4, 3, 5}}, "concat",
                         {4, 3, 7}, {{"axis", -1}});
  expect_map_matches_cpu(cuda_plugin::concat_map({{2, 3, 2}, {1, 3, 2}, {3, 3, 2}}, 0),
                         {{2, 3, 2}, {1, 3, 2}, {3, 3, 2}}, "concat", {6, 3, 2}, {{"axis", 0}});
  expect_map_matches_cpu(cuda_plugin::concat_map({{5, 2}, {5, 4}}, 1), {{5, 2}, {5, 4}}, "concat", {5, 6},
                         {{"axis", 1}});
}

TEST(CudaLinearMap, TransposeMatchesTheCpuBackend) {
  expect_map_matches_cpu(cuda_plugin::transpose_map({4, 3, 5}, {2, 0, 1}), {{4, 3, 5}}, "transpose", {5, 4, 3},
                         {{"perm", {2, 0, 1}}});
  expect_map_matches_cpu(cuda_plugin::transpose_map({6, 7}, {1, 0}), {{6, 7}}, "transpose", {7, 6},
                         {{"perm", {1, 0}}});
}

TEST(CudaLinearMap, PaddingCroppingAndDepthToSpaceMatchTheCpuBackend) {
  expect_map_matches_cpu(cuda_plugin::zero_padding_map({4, 5, 3}, 1, 2, 0, 3), {{4, 5, 3}}, "zero_padding2d",
                         {7, 8, 3}, {{"padding", {1, 2, 0, 3}}});
  expect_map_matches_cpu(cuda_plugin::cropping_map({7, 6, 2}, 2, 1, 1, 3), {{7, 6, 2}}, "cropping2d", {4, 2, 2},
                         {{"cropping", {2, 1, 1, 3}}});
  expect_map_matches_cpu(cuda_plugin::depth_to_space_map({3, 2, 8}, 2), {{3, 2, 8}}, "depth_to_space", {6, 4, 2},
                         {{"block_size", 2}});
}

TEST(CudaLinearMap, ResizeUpAndDownMatchesTheCpuBackend) {
  for (const bool nearest : {true, false}) {
    const json how = nearest ? "nearest" : "bilinear";
    SCOPED_TRACE(how.get<std::string>());
    expect_map_matches_cpu(cuda_plugin::resize_map({4, 3, 2}, 8, 6, nearest), {{4, 3, 2}}, "resize", {8, 6, 2},
                           {{"height", 8}, {"width", 6}, {"interpolation", how}});
    expect_map_matches_cpu(cuda_plugin::resize_map({5, 7, 3}, 3, 11, nearest), {{5, 7, 3}}, "resize", {3, 11, 3},
                           {{"height", 3}, {"width", 11}, {"interpolation", how}});
  }
}
