#include "image_folder.hpp"

#include "image_codec.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>

namespace stock_images {
namespace {

namespace fs = std::filesystem;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// ".png"-style, lower case; fields() has checked the list.
std::set<std::string> extension_set(const nlohmann::json& list) {
  std::set<std::string> out;
  for (std::string e : list.get<std::vector<std::string>>()) {
    if (e[0] == '.') e.erase(0, 1);
    out.insert("." + lower(e));
  }
  return out;
}

bool hidden(const fs::path& p) { return !p.filename().empty() && p.filename().string()[0] == '.'; }

// Files under a class folder with a wanted extension, sorted by their path relative to it.
std::vector<fs::path> class_files(const fs::path& dir, const std::set<std::string>& extensions) {
  std::vector<fs::path> files;
  const auto options = fs::directory_options::follow_directory_symlink;
  for (auto it = fs::recursive_directory_iterator(dir, options); it != fs::recursive_directory_iterator(); ++it) {
    if (hidden(it->path())) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && extensions.count(lower(it->path().extension().string())))
      files.push_back(it->path());
  }
  std::sort(files.begin(), files.end(), [&](const fs::path& a, const fs::path& b) {
    return a.lexically_relative(dir).generic_string() < b.lexically_relative(dir).generic_string();
  });
  return files;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// Reads a whole file into a buffer made by make(size) (a vector, or a tensor to avoid a copy).
template <class Make>
auto read_file(const fs::path& path, Make&& make) {
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) throw ramjet::Error(RAMJET_ERR_IO, path.string() + ": cannot open: " + std::strerror(errno));
  if (std::fseek(f.get(), 0, SEEK_END) != 0)
    throw ramjet::Error(RAMJET_ERR_IO, path.string() + ": cannot seek: " + std::strerror(errno));
  const long size = std::ftell(f.get());
  if (size < 0) throw ramjet::Error(RAMJET_ERR_IO, path.string() + ": cannot tell its size: " + std::strerror(errno));
  std::rewind(f.get());
  auto [buffer, bytes] = make(static_cast<size_t>(size));
  if (size > 0 && std::fread(bytes, 1, static_cast<size_t>(size), f.get()) != static_cast<size_t>(size))
    throw ramjet::Error(RAMJET_ERR_IO, path.string() + ": read failed or the file shrank while being read");
  return std::move(buffer);
}

}  // namespace

ramjet::Fields ImageFolder::fields() {
  using ramjet::Field;
  return {Field::string("root").required().doc("one subfolder per class; relative to the manifest"),
          Field::array("extensions")
              .fallback({"png", "jpg", "jpeg"})
              .rule([](const nlohmann::json& v) -> std::optional<std::string> {
                if (v.empty()) return "must not be empty";
                for (const auto& e : v)
                  if (!e.is_string() || e.get<std::string>().empty() || e.get<std::string>() == ".")
                    return "must hold non-empty extension strings, got " + ramjet::quote_value(v);
                return std::nullopt;
              })
              .doc("case-insensitive, with or without the dot"),
          Field::boolean("decode").fallback(true).doc("false: the file's bytes as uint8 [N], for decode_image"),
          channels_field(),
          Field::string("image_key").fallback("image"),
          Field::string("label_key").fallback("label")};
}

void ImageFolder::check_files(const ramjet::Config& config, ramjet::Problems& problems) {
  ramjet::check_paths(config, "root", ramjet::PathKind::kFolder, false, problems);
}

// create() has checked the configuration against fields(); here it is read, and the folders listed.
ImageFolder::ImageFolder(const ramjet::Config& config) {
  const nlohmann::json c = fields().with_defaults(config.json());
  decode_ = c.at("decode").get<bool>();
  channels_ = c.at("channels").get<int>();
  image_key_ = c.at("image_key").get<std::string>();
  label_key_ = c.at("label_key").get<std::string>();
  const fs::path root = config.path("root");
  const std::set<std::string> extensions = extension_set(c.at("extensions"));
  try {
    if (!fs::is_directory(root))
      throw ramjet::Error(RAMJET_ERR_IO, config.where("root") + ": " + root.string() + " is not a directory");
    for (const auto& entry : fs::directory_iterator(root))
      if (entry.is_directory() && !hidden(entry.path())) classes_.push_back(entry.path().filename().string());
    std::sort(classes_.begin(), classes_.end());
    if (classes_.empty())
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT,
                          config.where("root") + ": " + root.string() + " has no class subfolders");
    for (size_t c = 0; c < classes_.size(); ++c)
      for (auto& path : class_files(root / classes_[c], extensions))
        files_.push_back({std::move(path), static_cast<int32_t>(c)});
  } catch (const fs::filesystem_error& e) {
    throw ramjet::Error(RAMJET_ERR_IO, config.where("root") + ": cannot list " + e.path1().string() + ": " +
                                           e.code().message());
  }
  if (files_.empty()) {
    std::string list;
    for (const auto& e : extensions) list += (list.empty() ? "" : ", ") + e;
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, config.where("root") + ": no " + list + " files in the " +
                                                         std::to_string(classes_.size()) + " class folders of " +
                                                         root.string());
  }
}

nlohmann::json ImageFolder::element_spec() const {
  const nlohmann::json unknown;  // null: a dimension that varies from file to file
  nlohmann::json image = {{"dtype", "uint8"}};
  if (decode_) image["shape"] = {unknown, unknown, channels_ == 0 ? unknown : nlohmann::json(channels_)};
  else image["shape"] = {unknown};
  return {{image_key_, image},
          {label_key_, {{"dtype", "int32"}, {"shape", nlohmann::json::array()}, {"classes", classes_}}}};
}

void ImageFolder::get(int64_t index, ramjet::Example& out) const {
  if (index < 0 || index >= cardinality())
    throw ramjet::Error(RAMJET_ERR_OUT_OF_RANGE, "image_folder: element " + std::to_string(index) +
                                                     " is outside [0, " + std::to_string(cardinality()) + ")");
  const File& file = files_[static_cast<size_t>(index)];
  if (decode_) {
    const auto bytes = read_file(file.path, [](size_t n) {
      std::vector<uint8_t> v(n);
      uint8_t* p = v.data();
      return std::pair{std::move(v), p};
    });
    out.set(image_key_, decode_image(bytes.data(), bytes.size(), channels_, file.path.string()));
  } else {
    out.set(image_key_, read_file(file.path, [](size_t n) {
              ramjet::Tensor t = ramjet::Tensor::zeros(ramjet::dtype_of<uint8_t>(), {static_cast<int64_t>(n)});
              uint8_t* p = t.data<uint8_t>();
              return std::pair{std::move(t), p};
            }));
  }
  ramjet::Tensor label = ramjet::Tensor::zeros(ramjet::dtype_of<int32_t>(), std::span<const int64_t>());
  *label.data<int32_t>() = file.label;
  out.set(label_key_, std::move(label));
}

}  // namespace stock_images
