// ramjet plugin SDK — header-only C++20 helpers over abi.h.
//
// A plugin author writes one C++ class per component and one RAMJET_PLUGIN(...) line:
//
//   struct Invert {
//     explicit Invert(const ramjet::Config& config) : peak_(config.get_or("peak", 255.0)) {}
//     void apply(ramjet::Example& example, uint64_t /*seed*/) const { ... }
//     double peak_;
//   };
//   RAMJET_PLUGIN("my_plugin", "0.1.0", ramjet::transform<Invert>("invert"))
//
// Everything thrown inside a component becomes a status + message at the boundary; nothing C++ crosses it.
// What each kind's class must provide is listed at the top of its adapter header (required members first, then
// optional ones the adapter detects).
//
// This header includes the whole SDK. Each part is also a header of its own, with one job, that compiles alone:
//   ramjet/sdk/error.hpp             ramjet::Error, the exception that chooses the status
//   ramjet/sdk/host.hpp              the host's API table: host(), log(), assign() into a host buffer
//   ramjet/sdk/dtype.hpp             DLPack dtypes: dtype_of<T>, same_dtype, dtype_bytes, dtype_name, parse_dtype
//   ramjet/sdk/tensor.hpp            DLTensor helpers (element_count, is_contiguous, data_as) and ramjet::Tensor
//   ramjet/sdk/example.hpp           ramjet::Example, a view of a host example's named tensors
//   ramjet/sdk/random.hpp            ramjet::SeededRandom, deterministic per-element randomness
//   ramjet/sdk/config.hpp            ramjet::Config, a component's JSON configuration with located errors
//   ramjet/sdk/fields.hpp            declared configuration fields (ramjet::Fields) and their checks
//   ramjet/sdk/atomic_file.hpp       files that appear whole or not at all
//   ramjet/sdk/boundary.hpp          exceptions to statuses, create/destroy/check_config, ABI negotiation
//   ramjet/sdk/file_check.hpp        check_files helpers: the files a configuration names exist (validate finds them)
//   ramjet/sdk/data_source.hpp       ramjet::data_source<T>      ramjet/sdk/transform.hpp   ramjet::transform<T>
//   ramjet/sdk/precision_policy.hpp  ramjet::precision_policy<T> ramjet/sdk/strategy.hpp    ramjet::strategy<T>
//   ramjet/sdk/quantizer.hpp         ramjet::quantizer<T>        ramjet/sdk/exporter.hpp    ramjet::exporter<T>
//   ramjet/sdk/backend.hpp           ramjet::backend<T>
//   ramjet/sdk/graph_ir.hpp          ramjet::ir::parse_graph, the graph IR a backend compiles, read and checked
//   ramjet/sdk/optimizer_options.hpp the "optimizer" compile option: Keras's optimizers, judged and read alike
//   ramjet/sdk/collective_queue.hpp  ramjet::CollectiveQueue, a strategy's collectives on one thread, in issue order
//   ramjet/sdk/raised_priority.hpp   ramjet::RaisedPriority, a strategy's communication threads served first
//   ramjet/sdk/gradient_pieces.hpp   the rows a large gradient is sent in while backward runs (host and backend agree)
//   ramjet/sdk/rendezvous.hpp        a strategy's rank, world size, store address and timeout (manifest or env://)
//   ramjet/sdk/socket_io.hpp         blocking sockets for a rendezvous (POSIX)
//   ramjet/sdk/tcp_store.hpp         the key-value store rank 0 serves for a rendezvous
//   ramjet/sdk/cuda_driver.hpp       whether an NVIDIA driver is installed, for GPU plugins' "no CUDA device"
//   ramjet/sdk/vocabulary.hpp        ramjet::Vocabulary, character- or byte-level token IDs in a tokenizer.json
//   ramjet/sdk/plugin.hpp            RAMJET_PLUGIN, the entry point
#ifndef RAMJET_SDK_HPP
#define RAMJET_SDK_HPP

#include <ramjet/abi.h>

// The standard headers this file has always brought in, kept so plugins that lean on them still build.
#include <array>
#include <atomic>
#include <concepts>
#include <cstring>
#include <limits>
#include <system_error>
#include <filesystem>
#include <memory>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <ramjet/sdk/atomic_file.hpp>
#include <ramjet/sdk/error.hpp>
#include <ramjet/sdk/fields.hpp>

#include <ramjet/sdk/host.hpp>
#include <ramjet/sdk/dtype.hpp>
#include <ramjet/sdk/tensor.hpp>
#include <ramjet/sdk/random.hpp>
#include <ramjet/sdk/example.hpp>
#include <ramjet/sdk/config.hpp>
#include <ramjet/sdk/boundary.hpp>
#include <ramjet/sdk/file_check.hpp>

#include <ramjet/sdk/data_source.hpp>
#include <ramjet/sdk/transform.hpp>
#include <ramjet/sdk/precision_policy.hpp>
#include <ramjet/sdk/loss_scaler.hpp>
#include <ramjet/sdk/strategy.hpp>
#include <ramjet/sdk/quantizer.hpp>
#include <ramjet/sdk/exporter.hpp>
#include <ramjet/sdk/backend.hpp>
#include <ramjet/sdk/graph_ir.hpp>
#include <ramjet/sdk/optimizer_options.hpp>
#include <ramjet/sdk/collective_queue.hpp>
#include <ramjet/sdk/raised_priority.hpp>
#include <ramjet/sdk/gradient_pieces.hpp>
#include <ramjet/sdk/rendezvous.hpp>
#include <ramjet/sdk/socket_io.hpp>
#include <ramjet/sdk/tcp_store.hpp>
#include <ramjet/sdk/cuda_driver.hpp>
#include <ramjet/sdk/vocabulary.hpp>

#include <ramjet/sdk/plugin.hpp>

// Defined by boundary.hpp for the adapters; never part of a plugin's namespace of macros through this header.
#undef RAMJET_SDK_OPTIONAL_SLOT

#endif  // RAMJET_SDK_HPP
