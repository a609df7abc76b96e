#include "step_graph.hpp"

#include "cuda_check.hpp"

#include <ramjet/sdk/host.hpp>

#include <utility>

namespace cuda_plugin {

StepGraph::~StepGraph() { drop(); }

void StepGraph::drop() {
  if (exec_ != nullptr) cudaGraphExecDestroy(std::exchange(exec_, nullptr));
}

void StepGraph::run(Device& device, const std::function<void()>& enqueue, const HostBookkeeping* bookkeeping,
                    const std::string& what) {
  if (!device.settings().graphs || given_up_ || runs_++ == 0) {
    enqueue();
    return;
  }
  if (exec_ != nullptr && workspace_moves_ != device.workspace_moves()) drop();  // it holds the old workspace
  if (exec_ == nullptr) {
    capture(device, enqueue, bookkeeping, what);
    if (exec_ == nullptr) return;  // given up: capture() enqueued the run as it is
  }
  if (const cudaError_t launched = cudaGraphLaunch(exec_, device.stream()); launched != cudaSuccess) {
    // A graph the device will not run (a memory node it cannot take, say): the kernels one by one from now on,
    // where a real fault of the device is thrown by the first launch.
    (void)cudaGetLastError();
    give_up(what, std::string("cudaGraphLaunch: ") + cudaGetErrorString(launched));
    enqueue();
    return;
  }
  if (bookkeeping != nullptr) bookkeeping->restore(after_);
}

void StepGraph::give_up(const std::string& what, const std::string& why) {
  drop();
  given_up_ = true;
  ramjet::log(RAMJET_LOG_WARNING, "cuda", "could not replay the " + what + " from a CUDA graph (" + why +
                                              "); launching its kernels one by one from now on");
}

void StepGraph::capture(Device& device, const std::function<void()>& enqueue, const HostBookkeeping* bookkeeping,
                        const std::string& what) {
  const std::vector<char> before = bookkeeping != nullptr ? bookkeeping->save() : std::vector<char>();
  const cudaStream_t stream = device.stream();
  std::string failure;
  // Relaxed: a lazy allocation the first run did not make may still happen here; what must not (a wait on the
  // stream) fails the capture, and the run is then enqueued as it is.
  if (const cudaError_t began = cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed); began != cudaSuccess) {
    failure = std::string("cudaStreamBeginCapture: ") + cudaGetErrorString(began);
  } else {
    try {
      enqueue();
    } catch (const std::exception& e) {
      failure = e.what();  // enqueued again below, where a real failure is thrown for real
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    if (failure.empty() && ended != cudaSuccess) failure = std::string("cudaStreamEndCapture: ") + cudaGetErrorString(ended);
    if (failure.empty()) {
      if (const cudaError_t made = cudaGraphInstantiate(&exec_, graph, 0); made != cudaSuccess) {
        exec_ = nullptr;
        failure = std::string("cudaGraphInstantiate: ") + cudaGetErrorString(made);
      }
    }
    if (graph != nullptr) cudaGraphDestroy(graph);
  }
  if (exec_ == nullptr) {
    (void)cudaGetLastError();  // the failed capture's error is not the next call's
    give_up(what, failure);
    if (bookkeeping != nullptr) bookkeeping->restore(before);
    enqueue();
    return;
  }
  workspace_moves_ = device.workspace_moves();
  if (bookkeeping != nullptr) after_ = bookkeeping->save();
  ramjet::log(RAMJET_LOG_DEBUG, "cuda", "captured the " + what + " as a CUDA graph; replaying it every step");
}

}  // namespace cuda_plugin
