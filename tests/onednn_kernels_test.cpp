// Which oneDNN kernels a training step runs on this CPU. oneDNN silently falls back to its reference kernels
// (plain C++ loops, tens of times slower) when no JIT kernel accepts a primitive's layouts; a fallback costs far
// more than any tuning wins, and nothing but ONEDNN_VERBOSE shows it. The Keras tutorial CNN (a one-channel first
// convolution, pooling, dense layers) trains in float32 here, on every CPU the suite runs on.
#include "cpu_features.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

using namespace ramjet::test;

namespace {

// The oneDNN primitive executions ONEDNN_VERBOSE printed while `ramjet run` trained the example at `example`
// (without its export) with `sets` ("--set P=V ..."); fails the test when the run does.
std::vector<std::string> executions_of(const char* example, const std::string& sets) {
  TempDir dir;
  auto manifest = nlohmann::json::parse(read_file(source_dir() / example));
  manifest.erase("export");
  manifest["train"]["checkpoint"]["dir"] = (dir / "checkpoints").string();
  write_file(dir / "train.json", manifest.dump());
  const auto r = run("env ONEDNN_VERBOSE=1 RAMJET_PLUGIN_PATH=" + quote(stock_plugin_dir().string()) + " " +
                     quote(host_binary().string()) + " run " + quote((dir / "train.json").string()) + " --quiet " +
                     sets);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::istringstream lines(r.output);
  std::vector<std::string> executed;
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("onednn_verbose,", 0) == 0 && line.find(",exec,") != std::string::npos) executed.push_back(line);
  EXPECT_GT(executed.size(), 20u) << "ONEDNN_VERBOSE printed no executions; the check saw nothing:\n" << r.output;
  return executed;
}

}  // namespace

TEST(OnednnKernels, TheTutorialCnnTrainsOnJitKernelsOnly) {
  // The example as shipped, trained briefly, without the int8 export (a different question).
  std::string reference;
  for (const std::string& line : executions_of("examples/fashion_mnist/train.json",
                                               "--set /train/precision=float32 --set /train/epochs=1 "
                                               "--set /data/train/take=256 --set /data/eval/take=256"))
    if (line.find(",ref:") != std::string::npos) reference += line + "\n";
  EXPECT_EQ(reference, "") << "primitives on oneDNN's reference kernels";
}

// The deblurring U-Net in mixed bfloat16: its one-channel tensors (the input image, the `correction` layer's output,
// the residual sum the loss reads) move between float32 and bf16 as flat runs of values, never through oneDNN's
// 4-D reorder (which walked them one value at a time) and never padded to a 16-channel block; and its one-channel
// convolution, kept in nhwc, still runs on a JIT kernel.
TEST(OnednnKernels, TheDeblurUNetsOneChannelTensorsNeedNoOnednnReorderInBf16) {
  std::string reference, one_channel_reorders;
  for (const std::string& line : executions_of("examples/deblur/pipeline.json",
                                               "--set /train/precision=mixed_bfloat16 --set /train/epochs=1 "
                                               "--set /data/train/take=128 --set /data/eval/take=64")) {
    if (line.find(",ref:") != std::string::npos) reference += line + "\n";
    if (line.find(",reorder,") != std::string::npos && line.find("x1x28x28,") != std::string::npos)
      one_channel_reorders += line + "\n";
  }
  EXPECT_EQ(reference, "") << "primitives on oneDNN's reference kernels";
  EXPECT_EQ(one_channel_reorders, "") << "one-channel images reordered by oneDNN";
}

// The bench's MobileNet, trained briefly in float32: its batch norm → relu6 pairs run as one layer each
// (plugins/onednn/norm_clip.hpp), leaving no clip for oneDNN's eltwise primitive to run.
TEST(OnednnKernels, AFloat32MobileNetRunsNoClipOfItsOwn) {
  const std::vector<std::string> executed =
      executions_of("bench/train/models/mobilenet.json",
                    "--set /train/precision=float32 --set /train/epochs=1 --set /data/train/take=256 "
                    "--set /data/eval/take=256");
  std::string clips;
  for (const std::string& line : executed)
    if (line.find(",eltwise,") != std::string::npos && line.find("clip") != std::string::npos) clips += line + "\n";
  EXPECT_GT(executed.size(), 100u) << "too few executions for a MobileNet's training steps";
  EXPECT_EQ(clips, "") << "relu6 run by oneDNN's eltwise primitive";
}

// The bench's ResNet, trained briefly: every relu runs inside the batch norm or the residual add it reads
// (activation_pairs in plugins/onednn/plan.cpp), and every batch norm on the backend's own kernels, so oneDNN runs
// no eltwise forward (only the add's relu backward, from the sum) and no batch-norm primitive. In bf16 where AMX runs the convolutions, the stem writes the
// channels-last map they read (conv2d_choice.hpp's channels_last_stem): no bf16 activation is reordered, forward
// or backward, and none is copied to float32 for a weight gradient.
TEST(OnednnKernels, AResNetRunsItsRelusInsideItsBatchNormsAndAddsAndReordersNoBf16Activation) {
  const std::vector<const char*> precisions =
      cpu_has_avx512() ? std::vector<const char*>{"float32", "mixed_bfloat16"} : std::vector<const char*>{"float32"};
  for (const char* precision : precisions) {
    SCOPED_TRACE(precision);
    const std::vector<std::string> executed =
        executions_of("bench/train/models/resnet.json", std::string("--set /train/precision=") + precision +
                                                            " --set /train/epochs=1 --set /data/train/take=256 "
                                                            "--set /data/eval/take=256");
    std::string apart, activation_reorders, widened;
    int amx_matmuls = 0;
    for (const std::string& line : executed) {
      if (line.find(",reorder,") != std::string::npos && line.find("src_bf16") != std::string::npos &&
          line.find("dst_f32") != std::string::npos && line.find(",128x") != std::string::npos)
        widened += line + "\n";
      if (line.find(",matmul,") != std::string::npos && line.find("amx") != std::string::npos) ++amx_matmuls;
      const bool eltwise_forward =
          line.find(",eltwise,") != std::string::npos && line.find(",forward_") != std::string::npos;
      if (eltwise_forward || line.find(",batch_normalization,") != std::string::npos) apart += line + "\n";
      if (line.find(",reorder,") != std::string::npos && line.find("src_bf16") != std::string::npos &&
          line.find("dst_bf16") != std::string::npos && line.find(",128x") != std::string::npos)
        activation_reorders += line + "\n";
    }
    EXPECT_GT(executed.size(), 100u) << "too few executions for a ResNet's training steps";
    EXPECT_EQ(apart, "") << "an activation or a batch norm run by oneDNN";
    if (precision == std::string("mixed_bfloat16") && cpu_has_amx_bf16()) {
      EXPECT_EQ(activation_reorders, "") << "bf16 activations reordered between layers";
      // The three convolutions with 7x7 outputs (block3's two and its projection) take their weight gradients as
      // AMX matmuls on each chunk of 16 (conv2d_gemm_weights.hpp): no float32 copy of a map for a float32 kernel.
      EXPECT_EQ(widened, "") << "bf16 activations copied to float32";
      EXPECT_GE(amx_matmuls, 2 * 3 * 8) << "two steps of three weight gradients in eight chunks";
    }
  }
}
