// A plugin call's outcome as the tests check it: the ABI status and the message of its ramjet_error.
#pragma once

#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/host_api.hpp"

#include <string>

namespace ramjet::test {

struct Status {
  ramjet_status code = RAMJET_OK;
  std::string message;
  bool ok() const { return code == RAMJET_OK; }
};

// Runs one vtable call, `f(ramjet_error*)`, and keeps its status and message.
template <class F>
Status call(F&& f) {
  ramjet_error error;
  const ramjet_status code = f(&error);
  return {code, error.message};
}

// One created component, with the vtable of its kind.
template <class VTable>
class Instance : public core::ComponentInstance {
 public:
  using core::ComponentInstance::ComponentInstance;
  const VTable& table() const { return vt<VTable>(); }
};

}  // namespace ramjet::test
