#include "decode_image.hpp"

#include "image_codec.hpp"

namespace stock_images {

ramjet::Fields DecodeImage::fields() { return {ramjet::Field::string("key").fallback("image"), channels_field()}; }

// create() has checked the configuration against fields(); here it is only read.
DecodeImage::DecodeImage(const ramjet::Config& config) {
  const nlohmann::json c = fields().with_defaults(config.json());
  key_ = c.at("key").get<std::string>();
  channels_ = c.at("channels").get<int>();
}

void DecodeImage::apply(ramjet::Example& example, uint64_t) const {
  DLTensor& in = example.get(key_);
  if (!ramjet::same_dtype(in.dtype, ramjet::dtype_of<uint8_t>()) || in.ndim != 1 ||
      in.device.device_type != kDLCPU || !ramjet::is_contiguous(in))
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "decode_image: tensor '" + key_ +
                                                         "' must hold encoded bytes as a contiguous uint8 [N] CPU "
                                                         "tensor, got " + ramjet::dtype_name(in.dtype) + " with " +
                                                         std::to_string(in.ndim) + " dimensions");
  const uint8_t* bytes = ramjet::data_as<uint8_t>(in);
  ramjet::Tensor image = decode_image(bytes, static_cast<size_t>(in.shape[0]), channels_, "tensor '" + key_ + "'");
  example.set(key_, std::move(image));
}

}  // namespace stock_images
