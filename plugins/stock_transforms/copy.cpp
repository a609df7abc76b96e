#include "copy.hpp"

#include "image_layout.hpp"

#include <cstring>

namespace stock_transforms {

ramjet::Fields Copy::fields() {
  using ramjet::Field;
  return {Field::string("from").required().doc("the tensor to copy"),
          Field::string("to").required().doc("the new tensor's name; must not exist yet")};
}

void Copy::check(const nlohmann::json& config, ramjet::Problems& problems) {
  if (config.at("from") == config.at("to"))
    problems.push_back({"/to", "must differ from from (" + config.at("from").dump() + ")"});
}

// create() has checked the configuration against fields() and check(); here it is only read.
Copy::Copy(const ramjet::Config& config) {
  from_ = config.get<std::string>("from");
  to_ = config.get<std::string>("to");
}

void Copy::apply(ramjet::Example& example, uint64_t) const {
  const DLTensor* in = example.find(from_);
  if (in == nullptr)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "copy: the example has no tensor named '" + from_ + "' (from)");
  if (example.find(to_) != nullptr)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "copy: the example already has a tensor named '" + to_ +
                                                         "' (to); copy refuses to overwrite it");
  require_contiguous_cpu(*in, from_);
  ramjet::Tensor out = ramjet::Tensor::zeros(in->dtype, std::span<const int64_t>(in->shape, static_cast<size_t>(in->ndim)));
  const size_t bytes = static_cast<size_t>(ramjet::element_count(*in)) * ramjet::dtype_bytes(in->dtype);
  if (bytes) std::memcpy(out.dl().data, static_cast<const uint8_t*>(in->data) + in->byte_offset, bytes);
  example.set(to_, std::move(out));
}

}  // namespace stock_transforms
