#include "writer/model_writer.hpp"

namespace tflite_plugin::writer {

void ModelWriter::add(const json& node) {
  if (node.at("inputs").size() != 2) fail(describe(node) + ": TFLite ADD takes exactly two inputs");
  const int32_t a = value(node, 0), b = value(node, 1);
  const auto act = fused_activation(node);
  const int32_t y = node_output(node);
  tables_.add_op(tfl::BuiltinOperator_ADD, plain_op_version(), {a, b}, {y}, tfl::BuiltinOptions_AddOptions,
                 tfl::CreateAddOptions(fbb(), act).Union());
}

void ModelWriter::softmax(const json& node) {
  const int32_t x = value(node, 0);
  const int32_t y = node_output(node);
  tables_.add_op(tfl::BuiltinOperator_SOFTMAX, plain_op_version(), {x}, {y}, tfl::BuiltinOptions_SoftmaxOptions,
                 tfl::CreateSoftmaxOptions(fbb(), 1.0f).Union());
}

// An activation the rewrites could not fuse into its producer.
void ModelWriter::activation(const json& node) {
  const std::string a = activation_of(node);
  if (a != "relu" && a != "relu6") fail(describe(node) + ": activation '" + a + "' has no TFLite form here");
  const int32_t x = value(node, 0);
  const int32_t y = node_output(node);
  tables_.add_op(a == "relu" ? tfl::BuiltinOperator_RELU : tfl::BuiltinOperator_RELU6, plain_op_version(), {x}, {y});
}

}  // namespace tflite_plugin::writer
