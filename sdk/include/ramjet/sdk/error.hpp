// The one exception type of the SDK: component code throws it to choose the status the boundary reports.
#ifndef RAMJET_SDK_ERROR_HPP
#define RAMJET_SDK_ERROR_HPP

#include <ramjet/abi.h>

#include <stdexcept>
#include <string>

namespace ramjet {

// Throw this from component code to choose the status; any other exception becomes RAMJET_ERR_INTERNAL.
class Error : public std::runtime_error {
 public:
  Error(ramjet_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  ramjet_status status() const noexcept { return status_; }

 private:
  ramjet_status status_;
};

}  // namespace ramjet

#endif  // RAMJET_SDK_ERROR_HPP
