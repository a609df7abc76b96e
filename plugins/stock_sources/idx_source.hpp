// data_source "idx": images and (optionally) labels from IDX files, gzipped or raw — Fashion-MNIST and MNIST.
// Config: images (path), labels (path, optional), image_key ("image"), label_key ("label"),
//         num_classes (optional: get() refuses a label outside [0, num_classes), naming its element and byte,
//         so `on_error: skip` can drop just that element).
// Elements: image as uint8 [H, W, 1] for 3-D files (a channel axis is added) or the file's own item shape;
//           label as an int32 scalar.
#pragma once

#include "idx_file.hpp"

#include <ramjet/sdk.hpp>

#include <optional>
#include <string>

namespace stock_sources {

class IdxSource {
 public:
  static ramjet::Fields fields();
  static void check_files(const ramjet::Config& config, ramjet::Problems& problems);  // images, labels exist
  explicit IdxSource(const ramjet::Config& config);
  int64_t cardinality() const { return images_.dims[0]; }
  nlohmann::json element_spec() const;
  void get(int64_t index, ramjet::Example& out) const;

 private:
  IdxFile images_;
  std::optional<IdxFile> labels_;
  std::string image_key_;
  std::string label_key_;
  std::vector<int64_t> image_shape_;
  int64_t num_classes_ = -1;
};

}  // namespace stock_sources
