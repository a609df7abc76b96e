#include "plan.hpp"

#include "layers/registry.hpp"
#include "layout.hpp"

#include <algorithm>
#include <cstring>
#include <set>

namespace onednn {

namespace {

// Which values hold which blocks of the arena (a reshape's output holds its input's): a block is placed again
// when the last value holding it lets go.
class Holdings {
 public:
  explicit Holdings(ArenaCursor& cursor) : cursor_(cursor) {}

  void hold(const Value& v, const dnnl::memory& m, ArenaCursor::Side side) {
    size_t block = 0;
    if (!m || !cursor_.block_of(m.get_data_handle(), block)) return;
    auto& mine = held_[{&v, side}];
    if (std::find(mine.begin(), mine.end(), block) != mine.end()) return;
    mine.push_back(block);
    ++holders_[block];
  }
  bool held(size_t block) const { return holders_.count(block) > 0; }
  void let_go(const Value& v, ArenaCursor::Side side) {
    auto it = held_.find({&v, side});
    if (it == held_.end()) return;
    for (size_t block : it->second)
      if (--holders_[block] == 0) {
        holders_.erase(block);
        cursor_.release(block);
      }
    held_.erase(it);
  }

 private:
  ArenaCursor& cursor_;
  std::map<std::pair<const Value*, ArenaCursor::Side>, std::vector<size_t>> held_;
  std::map<size_t, int> holders_;
};

// Each node whose value one other node reads, and nothing else (a graph output, the loss's input or a kept
// value): that reader.
std::map<size_t, size_t> sole_readers(const Graph& graph, const std::vector<std::string>& kept) {
  std::map<std::string, std::vector<size_t>> readers;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const std::string& in : graph.nodes[i].inputs) readers[in].push_back(i);
  std::set<std::string> read_elsewhere(kept.begin(), kept.end());
  read_elsewhere.insert(graph.outputs.begin(), graph.outputs.end());
  if (graph.loss) read_elsewhere.insert(graph.loss->input);
  std::map<size_t, size_t> sole;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const auto& r = readers[graph.nodes[i].name];
    if (r.size() == 1 && graph.nodes[r.front()].inputs.size() == 1 && !read_elsewhere.count(graph.nodes[i].name))
      sole[i] = r.front();
  }
  return sole;
}

// batch_norm nodes, and add nodes of two inputs, whose one reader is a relu or a relu6, and that activation: the
// pair runs as one layer, which saves the activation's passes over memory forward and backward. A batch norm runs
// it on our own kernels (norm_clip.hpp: about a tenth of a ResNet's step for relu, a fifth of a float32
// MobileNet's for relu6); an add (a residual block's) as a post-op of oneDNN's binary primitive.
std::map<size_t, size_t> activation_pairs(const Graph& graph, const std::map<size_t, size_t>& sole) {
  std::map<size_t, size_t> pairs;
  for (const auto& [i, reader] : sole) {
    const NodeSpec& node = graph.nodes[i];
    const bool fuses = node.op == "batch_norm" || (node.op == "add" && node.inputs.size() == 2);
    if (!fuses || graph.nodes[reader].op != "activation") continue;
    const std::string activation = graph.nodes[reader].attr_string("activation", "");
    if (activation == "relu" || activation == "relu6") pairs[i] = reader;
  }
  return pairs;
}

// conv2d nodes whose one reader is a max_pool, and that pool: the layer may run both on each chunk of the batch
// (make_conv2d_max_pool, chunk_max_pool.hpp), or say it cannot and leave them apart.
std::map<size_t, size_t> conv_max_pool_pairs(const Graph& graph, const std::map<size_t, size_t>& sole) {
  std::map<size_t, size_t> pairs;
  for (const auto& [i, reader] : sole)
    if (graph.nodes[i].op == "conv2d" && graph.nodes[reader].op == "max_pool") pairs[i] = reader;
  return pairs;
}

// conv2d nodes whose one reader is a batch_norm, and that batch norm: the convolution may sum the batch norm's
// statistics on its chunks of the batch (norm_link.hpp).
std::map<size_t, size_t> conv_norm_pairs(const Graph& graph, const std::map<size_t, size_t>& sole) {
  std::map<size_t, size_t> pairs;
  for (const auto& [i, reader] : sole)
    if (graph.nodes[i].op == "conv2d" && graph.nodes[reader].op == "batch_norm") pairs[i] = reader;
  return pairs;
}

}  // namespace

Plan::Plan(const Graph& graph, const CompileOptions& options, ParameterStore& params, const dnnl::engine& engine,
           int64_t batch, bool backward, Arena& arena, const std::vector<std::string>& kept)
    : batch_(batch), backward_(backward && graph.loss.has_value()), engine_(engine) {
  const auto reused = backward_ ? ArenaCursor::Side::backward : ArenaCursor::Side::forward;
  ArenaCursor cursor(arena, engine, reused);
  LayerBuilder builder(engine, batch, options, backward_, params, cursor);
  // Values: which need a gradient (a parameter lies upstream) and how many readers each has in backward.
  for (const TensorSpec& in : graph.inputs) {
    auto v = std::make_unique<Value>();
    v->name = in.name;
    v->shape = in.shape;
    v->mem = builder.transient(canonical_md(batch, in.shape, in.dtype.code == kDLInt ? dt::s32 : dt::f32));
    inputs_.push_back(v.get());
    by_name_[v->name] = v.get();
    values_.push_back(std::move(v));
  }
  for (const NodeSpec& node : graph.nodes) {
    auto v = std::make_unique<Value>();
    v->name = node.name;
    v->shape = node.shape;
    v->needs_grad = !node.params.empty();
    for (const std::string& in : node.inputs) {
      Value& source = value(in);
      v->needs_grad = v->needs_grad || source.needs_grad;
      ++source.consumers;
    }
    by_name_[v->name] = v.get();
    values_.push_back(std::move(v));
  }
  if (graph.loss) ++value(graph.loss->input).consumers;

  // Lifetimes. Steps run in this order in forward and in the reverse order in backward, so a gradient read for
  // the last time at step i (by the backward of the value's producer) and one first written at step j > i (by a
  // later reader's backward) never live at once; in an inference plan, the same holds for values.
  const auto last_read = last_reads(graph, kept);
  std::map<size_t, std::vector<const Value*>> ending;
  for (const auto& [v, step] : last_read) ending[step].push_back(v);
  Holdings holdings(cursor);
  for (const Value* in : inputs_) holdings.hold(*in, in->mem, ArenaCursor::Side::forward);
  cursor.take_recent();

  const std::map<size_t, size_t> sole = sole_readers(graph, kept);
  const std::map<size_t, size_t> fused = activation_pairs(graph, sole);
  const std::map<size_t, size_t> pools = conv_max_pool_pairs(graph, sole);
  const std::map<size_t, size_t> norms = conv_norm_pairs(graph, sole);
  std::map<size_t, NormLink*> links;  // by node, for both of a pair
  for (const auto& [conv, norm] : norms) {
    norm_links_.push_back(std::make_unique<NormLink>());
    links[conv] = links[norm] = norm_links_.back().get();
  }
  std::set<size_t> absorbed;  // activation (or pool) nodes whose batch norm or add (convolution) made their value
  for (const auto& [norm, activation] : fused) {
    absorbed.insert(activation);
    absorbed_.insert(graph.nodes[norm].name);
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const NodeSpec& node = graph.nodes[i];
    if (absorbed.count(i)) {
      for (const Value* v : ending[i]) holdings.let_go(*v, reused);
      continue;
    }
    std::vector<Value*> inputs;
    for (const std::string& in : node.inputs) inputs.push_back(&value(in));
    const auto pair = fused.find(i);
    const auto pool = pools.find(i);
    Value* out = &value(pair == fused.end() ? node.name : graph.nodes[pair->second].name);
    try {
      std::unique_ptr<Layer> layer;
      if (pool != pools.end()) {
        const NodeSpec& pool_node = graph.nodes[pool->second];
        builder.begin_node(node, inputs, value(pool_node.name), "", &pool_node);
        if ((layer = make_conv2d_max_pool(node, builder))) {
          out = &value(pool_node.name);
          absorbed.insert(pool->second);
          absorbed_.insert(node.name);
        }
      }
      if (!layer) {
        builder.begin_node(node, std::move(inputs), *out,
                           pair == fused.end() ? "" : graph.nodes[pair->second].attr_string("activation", ""));
        if (const auto link = links.find(i); link != links.end()) builder.link_norm(link->second);
        layer = find_layer(node.op)(node, builder);
      }
      steps_.push_back({std::move(layer), out});
      if (const auto link = links.find(i); link != links.end() && node.op == "batch_norm" && link->second->taken())
        norms_in_chunks_.push_back(node.name);
    } catch (const dnnl::error& e) {
      node.fail(RAMJET_ERR_UNSUPPORTED, std::string("oneDNN cannot build it: ") + e.what());
    }
    if (!out->mem) node.fail(RAMJET_ERR_INTERNAL, "the layer defined no output");
    holdings.hold(*out, out->mem, ArenaCursor::Side::forward);
    holdings.hold(*out, out->diff, ArenaCursor::Side::backward);
    holdings.hold(*out, out->diff_scratch, ArenaCursor::Side::backward);
    // What the layer placed for itself lives within its step: a training plan keeps the forward side for backward.
    for (const auto& placed : cursor.take_recent())
      if (!holdings.held(placed.block) && placed.side == reused) cursor.release(placed.block);
    for (const Value* v : ending[i]) holdings.let_go(*v, reused);
  }
  if (graph.loss) loss_ = std::make_unique<Loss>(*graph.loss, builder, value(graph.loss->input));
  for (const std::string& name : graph.outputs) outputs_.push_back(host_copy(value(name), false));

  // One scratchpad for every primitive: they run one at a time, and at any step.
  scratchpad_ = cursor.place_apart(md({static_cast<int64_t>(std::max<size_t>(builder.scratchpad_bytes(), 1))}, dt::u8, tag::a));
  for (Args* args : builder.scratchpad_users()) (*args)[DNNL_ARG_SCRATCHPAD] = scratchpad_;
  // And one for each thread that runs a chunk of the batch beside the others (batch_chunks.hpp).
  if (!builder.lane_scratchpad_users().empty()) {
    const md lane_desc({static_cast<int64_t>(std::max<size_t>(builder.lane_scratchpad_bytes(), 1))}, dt::u8, tag::a);
    for (int lane = 0; lane < builder.threads(); ++lane) lane_scratchpads_.push_back(cursor.place_apart(lane_desc));
    for (const auto& [args, lane] : builder.lane_scratchpad_users())
      (*args)[DNNL_ARG_SCRATCHPAD] = lane_scratchpads_.at(static_cast<size_t>(lane));
  }
  arena_bytes_ = cursor.used();
}

std::map<const Value*, size_t> Plan::last_reads(const Graph& graph, const std::vector<std::string>& kept) {
  const size_t never = graph.nodes.size();  // past the last step: released by no step
  std::map<const Value*, size_t> last;
  for (const auto& v : values_) last[v.get()] = 0;  // a graph input nobody reads
  for (size_t i = 0; i < graph.nodes.size(); ++i) {  // topological: a value's readers come after its producer
    last[&value(graph.nodes[i].name)] = i;
    for (const std::string& in : graph.nodes[i].inputs) last[&value(in)] = i;
  }
  if (backward_) {
    if (graph.loss) last[&value(graph.loss->input)] = never;  // the loss writes its gradient first of all
  } else {
    // Read after the steps: by the host copies, the loss and the taps.
    for (const std::string& name : graph.outputs) last[&value(name)] = never;
    if (graph.loss) last[&value(graph.loss->input)] = never;
    for (const std::string& name : kept) last[&value(name)] = never;
  }
  return last;
}

Value& Plan::value(const std::string& name) {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) fail(RAMJET_ERR_INTERNAL, "no value named '" + name + "'");
  return *it->second;
}

Plan::HostCopy Plan::host_copy(Value& v, bool own_buffer) {
  HostCopy c{&v, {batch_}, {}, {}};
  c.shape.insert(c.shape.end(), v.shape.begin(), v.shape.end());
  const md canonical = canonical_md(batch_, v.shape);
  c.host = own_buffer ? dnnl::memory(canonical, engine_) : dnnl::memory(canonical, engine_, DNNL_MEMORY_NONE);
  c.copy = Relayout(v.mem, c.host);
  return c;
}

void Plan::load_input(size_t index, const DLTensor& t) {
  Value& v = *inputs_.at(index);
  std::memcpy(v.mem.get_data_handle(), static_cast<const char*>(t.data) + t.byte_offset, v.mem.get_desc().get_size());
}

void Plan::forward(const Exec& exec) {
  for (Step& step : steps_) step.layer->forward(exec);
}

void Plan::write_outputs(const Exec& exec, ramjet::Example& outputs) {
  for (HostCopy& out : outputs_) {
    DLTensor* t = outputs.find(out.value->name);
    const bool reusable = t != nullptr && t->device.device_type == kDLCPU &&
                          ramjet::same_dtype(t->dtype, ramjet::dtype_of<float>()) &&
                          t->ndim == static_cast<int32_t>(out.shape.size()) &&
                          std::equal(out.shape.begin(), out.shape.end(), t->shape) && ramjet::is_contiguous(*t);
    if (!reusable) {
      outputs.set(out.value->name, ramjet::Tensor::zeros(ramjet::dtype_of<float>(), out.shape));
      t = outputs.find(out.value->name);
    }
    out.host.set_data_handle(static_cast<char*>(t->data) + t->byte_offset);
    out.copy.run(exec);
  }
}

void Plan::backward(const Exec& exec, float scale) {
  for (auto& v : values_) {
    v->diff_written = false;
    v->using_scratch = false;
  }
  loss_->backward(exec, scale);
  for (auto it = steps_.rbegin(); it != steps_.rend(); ++it)
    if (it->output->needs_grad) it->layer->backward(exec);
}

bool Plan::can_tap(const std::vector<std::string>& names) const {
  return std::none_of(names.begin(), names.end(), [&](const std::string& n) { return absorbed_.count(n) > 0; });
}

void Plan::set_taps(const std::vector<std::string>& names) {
  taps_.clear();
  for (const std::string& name : names) taps_.emplace_back(name, host_copy(value(name), true));
}

void Plan::run_taps(const Exec& exec, ramjet_tap_fn fn, void* user) {
  for (auto& [name, tap] : taps_) {
    tap.copy.run(exec);
    exec.stream.wait();
    DLTensor view{};
    view.data = tap.host.get_data_handle();
    view.device = {kDLCPU, 0};
    view.ndim = static_cast<int32_t>(tap.shape.size());
    view.dtype = ramjet::dtype_of<float>();
    view.shape = tap.shape.data();
    // The host's tap keeps its own error details (through `user`); a failure still stops the forward here.
    const ramjet_status status = fn(user, name.c_str(), &view, nullptr);
    if (status != RAMJET_OK) fail(status, "forward: the tap on '" + name + "' failed");
  }
}

}  // namespace onednn
