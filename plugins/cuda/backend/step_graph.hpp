// A run of launches that is the same every step (the same kernels, arguments and buffers), enqueued by the host
// once and replayed from a CUDA graph after that: one cudaGraphLaunch instead of a cuDNN, cuBLASLt or kernel launch
// per layer, so that a small step is bound by the GPU rather than by the host's launches.
//
// The first run is enqueued as it is (it makes what runs lazily: a second reader's gradient buffer, a parameter's
// scratch); the second is captured and then launched; later ones replay it. A run is captured again after the
// device's convolution workspace moved (a later plan needed more), since the graph holds the old address. Where a
// capture or a replay fails (a launch that cannot be captured, a wait inside, a graph the device will not run), the
// run is enqueued as it is from then on, with a warning.
#pragma once

#include "device.hpp"

#include <cuda_runtime_api.h>

#include <functional>
#include <string>
#include <vector>

namespace cuda_plugin {

// What the host remembers of a run (which gradients are written, say): saved after the capture and put back after
// every replay, since a replay runs none of the host's code; and put back as it was before a failed capture, which
// ran the host's code without launching anything, so that the run can be enqueued for real.
struct HostBookkeeping {
  std::function<std::vector<char>()> save;
  std::function<void(const std::vector<char>&)> restore;
};

class StepGraph {
 public:
  StepGraph() = default;
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  // Runs `enqueue` on `device`'s stream as above (or always as it is where the device's settings turn graphs
  // off). `what` names the run in an error and in the log: a debug line when captured, a warning when given up.
  void run(Device& device, const std::function<void()>& enqueue, const HostBookkeeping* bookkeeping,
           const std::string& what);

  bool replaying() const { return exec_ != nullptr; }
  bool given_up() const { return given_up_; }

 private:
  void capture(Device& device, const std::function<void()>& enqueue, const HostBookkeeping* bookkeeping,
               const std::string& what);
  void drop();
  // Logs a warning naming `what` and `why`; from now on run() enqueues as it is.
  void give_up(const std::string& what, const std::string& why);

  cudaGraphExec_t exec_ = nullptr;
  int runs_ = 0;
  uint64_t workspace_moves_ = 0;  // the device's count when captured
  std::vector<char> after_;       // the host's bookkeeping after the captured run
  bool given_up_ = false;
};

}  // namespace cuda_plugin
