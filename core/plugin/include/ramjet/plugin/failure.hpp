// Errors inside the core. Input problems (exit 2) and runtime failures (exit 1) are told apart by type so the
// host can map them to exit codes without parsing messages.
#pragma once

#include <stdexcept>
#include <string>

namespace ramjet::core {

// Something the user gave us is wrong: a manifest, a flag, a dataset file. The message names file and place.
class InvalidInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A problem at one place of a manifest: what() is "<file>#<pointer>: <message>", and the parts are kept so a
// validator can list it with the others.
class ManifestError : public InvalidInput {
 public:
  ManifestError(const std::string& where, std::string pointer, std::string message)
      : InvalidInput(where + ": " + message), pointer(std::move(pointer)), message(std::move(message)) {}
  std::string pointer;
  std::string message;
};

// Something failed while doing valid work: a plugin could not load, a component returned an error.
class RuntimeFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ramjet::core
