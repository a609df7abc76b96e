// The cpu backend's program: the float graph's Program, or the int8 QuantizedProgram when compile's options ask
// for precision "int8". The SDK's backend adapter needs one program type; this forwards each call to the one held.
#pragma once

#include "../program.hpp"
#include "program.hpp"

#include <memory>

namespace onednn {

class RoutedProgram {
 public:
  explicit RoutedProgram(std::unique_ptr<Program> program) : float_(std::move(program)) {}
  explicit RoutedProgram(std::unique_ptr<int8::QuantizedProgram> program) : int8_(std::move(program)) {}

  void forward(const ramjet_forward_args& args, ramjet::Example& inputs, ramjet::Example& outputs) {
    float_ ? float_->forward(args, inputs, outputs) : int8_->forward(args, inputs, outputs);
  }
  void backward(const ramjet_backward_args& args) { float_ ? float_->backward(args) : int8_->backward(args); }
  void optimizer_update(const ramjet_update_args& args) {
    float_ ? float_->optimizer_update(args) : int8_->optimizer_update(args);
  }
  void get_state(std::string_view which, ramjet::Example& out) {
    float_ ? float_->get_state(which, out) : int8_->get_state(which, out);
  }
  void set_state(std::string_view which, ramjet::Example& values) {
    float_ ? float_->set_state(which, values) : int8_->set_state(which, values);
  }
  void set_taps(const std::vector<std::string>& names, ramjet_tap_fn fn, void* user) {
    float_ ? float_->set_taps(names, fn, user) : int8_->set_taps(names, fn, user);
  }

 private:
  std::unique_ptr<Program> float_;
  std::unique_ptr<int8::QuantizedProgram> int8_;
};

}  // namespace onednn
