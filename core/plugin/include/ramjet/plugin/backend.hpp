// Host-side owners of a backend instance and the programs it compiles. Every call checks its status and turns
// a failure into the core's exceptions, naming the backend.
#pragma once

#include "ramjet/plugin/components.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ramjet::core {

class Program;

class Backend : public ComponentInstance {
 public:
  using ComponentInstance::ComponentInstance;
  // Compiles the graph IR once; the program keeps this backend (and its library) alive.
  std::unique_ptr<Program> compile(const nlohmann::json& graph, const nlohmann::json& options) const;
};

class Program {
 public:
  Program(const Backend& backend, ramjet_program* program);
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  void forward(const ramjet_forward_args& args, Example& inputs, Example& outputs);
  void backward(const ramjet_backward_args& args);
  void optimizer_update(const ramjet_update_args& args);
  Example get_state(const char* which);
  void set_state(const char* which, Example& values);
  // Calls `tap` with each named tensor on every forward (calibration, debugging); an exception thrown by `tap`
  // aborts that forward. An empty list clears the taps.
  using Tap = std::function<void(const char* name, const DLTensor& value)>;
  void set_taps(const std::vector<std::string>& names, Tap tap);

 private:
  const ramjet_backend_vtable& vt() const { return backend_.ref().vtable<ramjet_backend_vtable>(); }
  std::string what(const char* operation) const;

  const Backend& backend_;
  ramjet_program* program_;
  std::unique_ptr<Tap> tap_;
};

}  // namespace ramjet::core
