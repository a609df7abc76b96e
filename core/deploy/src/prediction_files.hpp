// `ramjet eval --predictions DIR`: what the model predicted, as files other tools read. predictions.npy holds every
// scored output (float32 [samples, ...]), inputs.npy and targets.npy the model's first input and the labels where
// they are float32; a classifier's top classes go to classes.npy (int32 [samples]); an image output
// ([height, width, 1|3|4]) is also written as one PNG per example, its values mapped from [0, max_val] to [0, 255]
// and clamped.
#pragma once

#include "ramjet/train/evaluation.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace ramjet::core {

// The files written, in order. Each appears whole or not at all.
std::vector<std::filesystem::path> write_prediction_files(const std::filesystem::path& dir, const Evaluation& result,
                                                          double max_val);

// A NumPy .npy file (format 1.0, little-endian, C order) of `count` values of `descr` ("<f4", "<i4").
std::string npy_bytes(const std::string& descr, const std::vector<int64_t>& shape, const void* data, size_t bytes);

// An 8-bit PNG (gray, RGB or RGBA by `channels`) of an HWC float image, value v stored as round(v / max_val × 255).
std::string png_bytes(const float* image, int64_t height, int64_t width, int64_t channels, double max_val);

}  // namespace ramjet::core
