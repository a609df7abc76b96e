// safetensors reading and checkpoint metadata (core/train): the input is written as a checkpoint file, read with
// read_safetensors and then load_checkpoint. Both refuse bad files with InvalidInput only.
#include "fuzz_support.hpp"

#include "ramjet/plugin/failure.hpp"
#include "ramjet/train/checkpoint.hpp"
#include "ramjet/train/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ramjet::fuzz::write_scratch("ckpt-000000000001.safetensors", data, size);
  try {
    (void)ramjet::core::read_safetensors(path);
  } catch (const ramjet::core::InvalidInput&) {
    return 0;
  }
  try {
    (void)ramjet::core::load_checkpoint(path);
  } catch (const ramjet::core::InvalidInput&) {
  }
  return 0;
}
