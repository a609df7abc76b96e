#include "idx_source.hpp"

#include <cstring>

namespace stock_sources {
namespace {

int64_t label_at(const IdxFile& f, int64_t i) {
  const uint8_t* p = f.item(i);
  switch (f.dtype.code) {
    case kDLUInt: return *p;
    case kDLInt:
      if (f.dtype.bits == 8) return static_cast<int8_t>(*p);
      if (f.dtype.bits == 16) { int16_t v; std::memcpy(&v, p, 2); return v; }
      { int32_t v; std::memcpy(&v, p, 4); return v; }
    default: return -1;
  }
}

}  // namespace

ramjet::Fields IdxSource::fields() {
  using ramjet::Field;
  return {Field::string("images").required().doc("IDX file, raw or gzipped; relative to the manifest"),
          Field::string("labels").doc("1-D integer IDX file with one label per image"),
          Field::string("image_key").fallback("image"),
          Field::string("label_key").fallback("label"),
          Field::integer("num_classes").at_least(1).doc("labels outside [0, num_classes) are corrupt data")};
}

void IdxSource::check_files(const ramjet::Config& config, ramjet::Problems& problems) {
  for (const char* key : {"images", "labels"}) ramjet::check_paths(config, key, ramjet::PathKind::kFile, false, problems);
}

// create() has checked the configuration against fields(); here it is read, and the files opened.
IdxSource::IdxSource(const ramjet::Config& config) : images_(read_idx(config.path("images"))) {
  const nlohmann::json c = fields().with_defaults(config.json());
  // A 1-D file is a list of scalars (a labels file): used as images it would train on labels, so it is refused.
  if (images_.dims.size() < 2)
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA,
                        config.where("images") + ": " + images_.path.string() + " has 1 dimension (" +
                            std::to_string(images_.dims[0]) + " scalars, like a labels file); an images file " +
                            "has at least 2: the item count, then each item's shape");
  image_key_ = c.at("image_key").get<std::string>();
  label_key_ = c.at("label_key").get<std::string>();
  image_shape_.assign(images_.dims.begin() + 1, images_.dims.end());
  if (image_shape_.size() == 2) image_shape_.push_back(1);  // [H, W] -> [H, W, 1], as Keras expects

  if (!c.contains("labels")) return;
  labels_ = read_idx(config.path("labels"));
  const IdxFile& labels = *labels_;
  const std::string name = labels.path.string();
  if (labels.dims.size() != 1 || labels.dtype.code == kDLFloat)
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, config.where("labels") + ": " + name + " has " +
                                                     std::to_string(labels.dims.size()) + " dimensions of " +
                                                     ramjet::dtype_name(labels.dtype) +
                                                     "; labels must be a 1-D integer IDX file");
  if (labels.dims[0] != images_.dims[0])
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, config.where("labels") + ": " + name + " holds " +
                                                     std::to_string(labels.dims[0]) + " labels but " +
                                                     images_.path.string() + " holds " +
                                                     std::to_string(images_.dims[0]) + " images");
  num_classes_ = c.value("num_classes", int64_t{-1});
}

nlohmann::json IdxSource::element_spec() const {
  nlohmann::json spec;
  spec[image_key_] = {{"dtype", ramjet::dtype_name(images_.dtype)}, {"shape", image_shape_}};
  if (labels_) spec[label_key_] = {{"dtype", "int32"}, {"shape", nlohmann::json::array()}};
  return spec;
}

void IdxSource::get(int64_t index, ramjet::Example& out) const {
  if (index < 0 || index >= cardinality())
    throw ramjet::Error(RAMJET_ERR_OUT_OF_RANGE, "idx: element " + std::to_string(index) + " is outside [0, " +
                                                     std::to_string(cardinality()) + ")");
  ramjet::Tensor image = ramjet::Tensor::zeros(images_.dtype, image_shape_);
  std::memcpy(image.dl().data, images_.item(index), images_.item_bytes);
  out.set(image_key_, std::move(image));
  if (labels_) {
    const int64_t value = label_at(*labels_, index);
    if (value < 0 || (num_classes_ > 0 && value >= num_classes_))
      throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA,
                          labels_->path.string() + ": label " + std::to_string(value) + " of element " +
                              std::to_string(index) + " (byte " +
                              std::to_string(labels_->data_offset + static_cast<size_t>(index) * labels_->item_bytes) +
                              ") is outside [0, " + (num_classes_ > 0 ? std::to_string(num_classes_) : "inf") + ")");
    ramjet::Tensor label = ramjet::Tensor::zeros(ramjet::dtype_of<int32_t>(), std::span<const int64_t>());
    *label.data<int32_t>() = static_cast<int32_t>(value);
    out.set(label_key_, std::move(label));
  }
}

}  // namespace stock_sources
