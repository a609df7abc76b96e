// TFRecord framing and tf.train.Example decoding of the stock_records plugin (record_reader.cpp, crc32c.cpp,
// tfrecord_source.cpp): the input is one TFRecord file, read record by record by the tfrecord source under one
// of three feature declarations (chosen from the input's size) so bytes reinterpretation, shape inference and
// integer narrowing are all reached. Bad data is refused with ramjet::Error only.
#include "fuzz_support.hpp"

#include "tfrecord_source.hpp"

#include "ramjet/plugin/example.hpp"

#include <ramjet/sdk.hpp>

namespace {

const char* const kFeatures[3] = {
    R"({"image": {"type": "bytes"}, "label": {"type": "int64", "shape": []}})",
    R"({"x": {"type": "float", "shape": [-1, 2]}, "y": {"type": "int64", "dtype": "uint8", "shape": [2, -1]}})",
    R"({"raw": {"type": "bytes", "shape": [-1, 2], "dtype": "int16"}, "label": {"type": "int64", "dtype": "int8"}})",
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ramjet::fuzz::install_host_api();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ramjet::fuzz::write_scratch("data.tfrecord", data, size);
  const std::string config = std::string(R"({"files": ")") + path.string() + R"(", "features": )" +
                             kFeatures[size % 3] + "}";
  const ramjet_create_info info{sizeof(ramjet_create_info), RAMJET_ABI_VERSION, config.c_str(), "", "fuzz.json#/source",
                                0, 1, 0};
  try {
    stock_records::TFRecordSource source{ramjet::Config(info)};
    ramjet::core::Example storage;
    ramjet::Example out(&storage);
    for (int records = 0; records < 64 && source.next(out); ++records) {
    }
  } catch (const ramjet::Error&) {
  }
  return 0;
}
