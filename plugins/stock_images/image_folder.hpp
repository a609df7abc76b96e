// data_source "image_folder": one subfolder per class, as torchvision's ImageFolder and Keras's
// image_dataset_from_directory read them.
//
//   root/cat/001.png        classes = sorted subfolder names ("cat" -> 0, "dog" -> 1)
//   root/dog/a/002.jpg      files are found recursively, sorted by path within their class
//
// Config: root (path, required), extensions (["png", "jpg", "jpeg"], case-insensitive), decode (true),
//         channels (0 = as stored, 1, 3), image_key ("image"), label_key ("label").
// Elements: image as uint8 [H, W, C] (decode = true) or the file's raw bytes as uint8 [N] (decode = false, for
//           a later decode_image); label as an int32 scalar. Names starting with '.' are skipped.
// Random access: the file list is fixed at construction; get(i) reads and decodes file i.
#pragma once

#include <ramjet/sdk.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace stock_images {

class ImageFolder {
 public:
  static ramjet::Fields fields();
  static void check_files(const ramjet::Config& config, ramjet::Problems& problems);  // root is a folder
  explicit ImageFolder(const ramjet::Config& config);
  int64_t cardinality() const { return static_cast<int64_t>(files_.size()); }
  nlohmann::json element_spec() const;
  void get(int64_t index, ramjet::Example& out) const;

 private:
  struct File {
    std::filesystem::path path;
    int32_t label;
  };
  std::vector<std::string> classes_;
  std::vector<File> files_;
  bool decode_;
  int channels_;
  std::string image_key_, label_key_;
};

}  // namespace stock_images
