#include "ramjet/plugin/backend.hpp"

#include "ramjet/plugin/failure.hpp"

namespace ramjet::core {

std::unique_ptr<Program> Backend::compile(const nlohmann::json& graph, const nlohmann::json& options) const {
  const std::string graph_text = graph.dump();
  const std::string options_text = options.dump();
  ramjet_error error;
  ramjet_program* program = nullptr;
  const auto& v = ref_.vtable<ramjet_backend_vtable>();
  throw_on_error(v.compile(self_, graph_text.c_str(), options_text.c_str(), &program, &error), error, what("compile"));
  if (program == nullptr) throw RuntimeFailure(what("compile") + ": returned no program");
  return std::make_unique<Program>(*this, program);
}

Program::Program(const Backend& backend, ramjet_program* program) : backend_(backend), program_(program) {}

Program::~Program() { vt().program_destroy(backend_.self(), program_); }

std::string Program::what(const char* operation) const { return backend_.ref().label() + ": " + operation; }

void Program::forward(const ramjet_forward_args& args, Example& inputs, Example& outputs) {
  ramjet_error error;
  // The message is built only on failure: a steady-state step allocates nothing on the host side either.
  const ramjet_status status = vt().forward(backend_.self(), program_, &args, &inputs, &outputs, &error);
  if (status != RAMJET_OK) throw_on_error(status, error, what("forward"));
  backend_.retain_if_foreign(outputs);
}

void Program::backward(const ramjet_backward_args& args) {
  ramjet_error error;
  const ramjet_status status = vt().backward(backend_.self(), program_, &args, &error);
  if (status != RAMJET_OK) throw_on_error(status, error, what("backward"));
}

void Program::optimizer_update(const ramjet_update_args& args) {
  ramjet_error error;
  const ramjet_status status = vt().optimizer_update(backend_.self(), program_, &args, &error);
  if (status != RAMJET_OK) throw_on_error(status, error, what("optimizer_update"));
}

Example Program::get_state(const char* which) {
  Example out;
  ramjet_error error;
  throw_on_error(vt().get_state(backend_.self(), program_, which, &out, &error), error,
                 what("get_state") + std::string(" ") + which);
  backend_.retain_if_foreign(out);
  return out;
}

void Program::set_state(const char* which, Example& values) {
  ramjet_error error;
  throw_on_error(vt().set_state(backend_.self(), program_, which, &values, &error), error,
                 what("set_state") + std::string(" ") + which);
}

namespace {
ramjet_status call_tap(void* user, const char* name, const DLTensor* value, ramjet_error* error) {
  try {
    (*static_cast<Program::Tap*>(user))(name, *value);
    return RAMJET_OK;
  } catch (const std::exception& e) {
    error->status = RAMJET_ERR_INTERNAL;
    error->message = e.what();
  } catch (...) {
    error->status = RAMJET_ERR_INTERNAL;
    error->message = "unknown exception in a tap";
  }
  return error->status;
}
}  // namespace

void Program::set_taps(const std::vector<std::string>& names, Tap tap) {
  const auto& v = vt();
  if (v.struct_size < offsetof(ramjet_backend_vtable, set_taps) + sizeof(v.set_taps) || v.set_taps == nullptr)
    throw InvalidInput(what("set_taps") + ": this backend cannot tap activations (needed for calibration)");
  const std::string list = nlohmann::json(names).dump();
  auto next = names.empty() ? nullptr : std::make_unique<Tap>(std::move(tap));
  ramjet_error error;
  throw_on_error(v.set_taps(backend_.self(), program_, list.c_str(), next ? call_tap : nullptr, next.get(), &error),
                 error, what("set_taps"));
  tap_ = std::move(next);
}

}  // namespace ramjet::core
