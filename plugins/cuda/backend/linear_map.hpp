// The layers that only move, repeat or blend values — concat, transpose, zero_padding2d, cropping2d,
// depth_to_space, resize — each as one linear map per example from its inputs to its output: forward is
// out = A · x, backward is dx = Aᵀ · dout. The maps are built here on the host, once per plan; linear_map.cu runs
// them on the device. Being plain C++, the builders are checked on the CPU against the cpu backend's layers
// (tests/cuda_linear_map_test.cpp), so a GPU only has to prove the two small kernels.
#pragma once

#include <ramjet/sdk/graph_ir.hpp>

#include <cstdint>
#include <vector>

namespace cuda_plugin {

using ramjet::ir::Shape;

// Output element `row` of an example is the sum of weight · input[source][offset] over the row's terms
// (row_start[row] to row_start[row + 1]); offsets are within one example of that input. A row without terms is 0.
struct LinearMap {
  struct Term {
    int32_t source;
    int64_t offset;
    float weight;
  };
  int64_t rows = 0;
  std::vector<int64_t> source_elements;  // per example, for each input
  std::vector<int64_t> row_start;        // rows + 1
  std::vector<Term> terms;

  // The transpose for input `source`: for each of its elements, the output rows it reaches (Term::offset) and
  // their weights, in row order, so the backward's sums have a fixed order.
  LinearMap transposed(int32_t source) const;
  // Out of `inputs` (one pointer per source, `batch` examples each): what forward computes, on the host.
  std::vector<float> apply(const std::vector<const float*>& inputs, int64_t batch) const;
};

// The shapes are per example, channels last; each builder assumes the caller has checked its arguments.
LinearMap concat_map(const std::vector<Shape>& inputs, size_t axis);
LinearMap transpose_map(const Shape& input, const std::vector<size_t>& perm);
LinearMap zero_padding_map(const Shape& image, int64_t top, int64_t bottom, int64_t left, int64_t right);
LinearMap cropping_map(const Shape& image, int64_t top, int64_t bottom, int64_t left, int64_t right);
LinearMap depth_to_space_map(const Shape& image, int64_t block);
// tf.image.resize with half-pixel centres (Keras's Resizing and UpSampling2D): output pixel o of an axis samples
// input coordinate (o + 0.5) · in / out − 0.5, the nearest pixel (rounded half away from zero) or the two around it
// (clamped to the image), as the cpu backend's oneDNN resampling does.
LinearMap resize_map(const Shape& image, int64_t height, int64_t width, bool nearest);

}  // namespace cuda_plugin
