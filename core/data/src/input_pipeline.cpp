#include "ramjet/data/input_pipeline.hpp"

#include "ramjet/data/cache_fingerprint.hpp"
#include "ramjet/data/file_pattern.hpp"
#include "ramjet/data/example_io.hpp"
#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/log.hpp"
#include "ramjet/plugin/machine_limits.hpp"
#include "ramjet/plugin/seeds.hpp"
#include "ramjet/plugin/trace.hpp"



namespace ramjet::core {

namespace {

constexpr int64_t kTuneEveryBatches = 8;
constexpr int64_t kDefaultMemoryBudget = int64_t{1} << 30;

CreateArgs component_args(const Origin& origin, const ComponentSpec& spec, uint64_t seed) {
  CreateArgs args;
  args.config = spec.own_config();
  args.base_dir = origin.base_dir();
  args.where = origin.where(spec.pointer);
  args.seed = seed;
  return args;
}

std::vector<std::string> expand_files(const nlohmann::json& files, const std::filesystem::path& base_dir,
                                      const std::string& where) {
  std::vector<std::string> patterns;
  if (files.is_string()) patterns.push_back(files.get<std::string>());
  else if (files.is_array())
    for (const auto& f : files) {
      if (!f.is_string()) throw InvalidInput(where + "/files: must be a path, a glob or an array of paths");
      patterns.push_back(f.get<std::string>());
    }
  else throw InvalidInput(where + "/files: must be a path, a glob or an array of paths");
  std::vector<std::string> out;
  for (auto pattern : patterns) {
    if (std::filesystem::path(pattern).is_relative()) pattern = (base_dir / pattern).string();
    const std::vector<std::string> found = pattern_matches(pattern, where + "/files");
    if (found.empty()) throw InvalidInput(where + "/files: no file matches '" + pattern + "'");
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

}  // namespace

InputPipeline::InputPipeline(PipelineSpec spec, PluginRegistry& registry, uint64_t run_seed)
    : spec_(std::move(spec)), run_seed_(run_seed) {
  const Origin& manifest = spec_.origin;
  const std::string source_type = spec_.source.type();
  std::unique_ptr<SequentialReader> reader;
  int64_t random_access_count = -1;
  std::vector<const ComponentInstance*> upstream;
  if (spec_.interleave) {
    const std::string where = manifest.where(spec_.source.pointer);
    if (!spec_.source.config.contains("files"))
      throw InvalidInput(where + ": interleave needs the source to list its files in 'files'");
    auto files = expand_files(spec_.source.config["files"], manifest.base_dir(), where);
    if (spec_.shard_count > 1 && !spec_.even_shards && static_cast<int64_t>(files.size()) >= spec_.shard_count) {
      // Whole files per worker, as tf.data recommends: less reading than sharding elements.
      std::vector<std::string> mine;
      for (size_t i = static_cast<size_t>(spec_.shard_index); i < files.size(); i += static_cast<size_t>(spec_.shard_count))
        mine.push_back(files[i]);
      files = std::move(mine);
      spec_.shard_count = 1;
      spec_.shard_index = 0;
    }
    ComponentRef ref = registry.component(RAMJET_KIND_DATA_SOURCE, source_type);
    CreateArgs base = component_args(manifest, spec_.source, run_seed);
    reader = make_interleave_reader(std::move(files), *spec_.interleave, [ref, base](const std::string& file) {
      CreateArgs args = base;
      args.config["files"] = nlohmann::json::array({file});
      return std::make_shared<DataSource>(ref, args);
    });
  } else {
    auto source = std::make_shared<DataSource>(registry.component(RAMJET_KIND_DATA_SOURCE, source_type),
                                               component_args(manifest, spec_.source, run_seed));
    if (source->random_access()) {
      random_access_count = source->cardinality();
      source_ = source;
      upstream.push_back(source_.get());
    } else {
      reader = make_source_reader(source);
    }
  }
  map_.reserve(spec_.map.size());
  for (const auto& t : spec_.map)
    map_.emplace_back(registry.component(RAMJET_KIND_TRANSFORM, t.type()), component_args(manifest, t, run_seed));
  augment_.reserve(spec_.augment.size());
  for (const auto& t : spec_.augment)
    augment_.emplace_back(registry.component(RAMJET_KIND_TRANSFORM, t.type()), component_args(manifest, t, run_seed));
  for (const auto& t : map_) upstream.push_back(&t);

  if (spec_.cache) {
    if (*spec_.cache == "memory") {
      cache_ = make_memory_cache();
    } else {
      std::filesystem::path path = *spec_.cache;
      if (path.is_relative()) path = manifest.base_dir() / path;
      cache_ = make_file_cache(path, upstream_fingerprint(spec_, manifest.base_dir(), run_seed, upstream));
    }
  }
  SequencerConfig sc{spec_.epochs,      spec_.take, spec_.shuffle, spec_.shard_count, spec_.shard_index,
                     run_seed,          spec_.even_shards};
  sequencer_ = std::make_unique<Sequencer>(sc, random_access_count, std::move(reader), cache_.get());

  const int cpu = spec_.cpu_budget > 0 ? static_cast<int>(spec_.cpu_budget) : cpu_count();
  AutotuneLimits limits;
  limits.tune_parallelism = spec_.parallelism == 0;
  limits.tune_prefetch = spec_.prefetch < 0;
  limits.max_parallelism = limits.tune_parallelism ? cpu : static_cast<int>(spec_.parallelism);
  // From two threads up, the consumer is one of them: it produces instead of waiting (see ParallelMap).
  limits.min_parallelism = limits.tune_parallelism ? std::min(2, limits.max_parallelism) : limits.max_parallelism;
  limits.max_prefetch = 16;
  // Start with every thread the budget allows: idle workers block on the window and cost nothing, and the tuner
  // gives threads back when the consumer never waits.
  autotuner_ = std::make_unique<Autotuner>(limits, limits.max_parallelism,
                                           limits.tune_prefetch ? 2 : static_cast<int>(spec_.prefetch));
}

InputPipeline::~InputPipeline() {
  parallel_.reset();  // stop the threads before the state they use goes
}

int InputPipeline::background_threads(int parallelism) const {
  return consumer_helps_ ? std::max(1, parallelism - 1) : parallelism;
}

size_t InputPipeline::chunks_per_batch() const {
  const int64_t chunk = std::clamp<int64_t>(spec_.batch, 1, 512);
  return static_cast<size_t>((spec_.batch + chunk - 1) / chunk);
}

size_t InputPipeline::window_chunks() const {
  // One batch per running thread plus the prefetched batches.
  return static_cast<size_t>(autotuner_->parallelism() + autotuner_->prefetch()) * chunks_per_batch();
}

std::optional<nlohmann::json> InputPipeline::source_element_spec() const {
  return source_ ? source_->element_spec() : std::nullopt;
}

void InputPipeline::restore(const PipelineState& state) {
  if (started_) throw RuntimeFailure("an input pipeline can only be restored before its first batch");
  sequencer_->start_at(state.epoch, state.position);
  state_ = state;
}

WorkResult InputPipeline::process(WorkItem item) const {
  WorkResult r;
  r.epoch = item.epoch;
  r.position = item.position;
  r.id = item.id;
  try {
    Example ex;
    bool cached = false;
    if (cache_ && (item.from_cache || source_)) {
      if (auto hit = cache_->get(item.id)) {
        ex = std::move(*hit);
        cached = true;
      } else if (item.from_cache) {
        throw RuntimeFailure("the cache has no element " + std::to_string(item.id));
      }
    }
    if (!cached) {
      if (source_) source_->get(item.id, ex);
      else ex = std::move(*item.raw);
      const auto id = static_cast<uint64_t>(item.id);
      for (size_t s = 0; s < map_.size(); ++s) map_[s].apply(ex, element_seed(run_seed_, 0, id, s + 1));
      if (cache_) cache_->put(item.id, ex);
    }
    const auto epoch = static_cast<uint64_t>(item.epoch) + 1;
    for (size_t s = 0; s < augment_.size(); ++s)
      augment_[s].apply(ex, element_seed(run_seed_, epoch, static_cast<uint64_t>(item.id), 1000 + s));
    if (assembly_) {
      assembly_->place(item.epoch, item.position, ex);
      r.placed = true;
    } else {
      r.example = std::move(ex);
    }
  } catch (const InvalidInput& e) {
    std::string message = std::string(e.what()) + " (element " + std::to_string(item.id) + ", epoch " +
                          std::to_string(item.epoch + 1) + ")";
    if (spec_.on_error == OnError::kSkip) r.skipped = std::move(message);
    else r.error = std::make_exception_ptr(InvalidInput(message));
  } catch (...) {
    r.error = std::current_exception();
  }
  return r;
}

void InputPipeline::start() {
  started_ = true;
  auto on_epoch_end = [this](int64_t epoch, int64_t count) {
    if (cache_) cache_->finish_epoch(count);
    sequencer_->epoch_consumed(epoch);
  };
  const bool serial = autotuner_->parallelism() == 1 && autotuner_->prefetch() == 0 &&
                      !autotuner_->report()["tuned"]["parallelism"].get<bool>();
  // Elements are copied straight into their batches when each batch's members are fixed in advance: in order,
  // nothing skipped, and batches aligned with the position we start from.
  if (spec_.deterministic && spec_.on_error == OnError::kFail && state_.position % spec_.batch == 0)
    assembly_ = std::make_unique<BatchAssembly>(spec_.batch);
  Batcher::NextResult next;
  if (serial) {
    next = [this] {
      WorkItem item = sequencer_->next();
      if (item.kind != WorkItem::Kind::kElement) return WorkResult::marker(item);
      TraceSpan span("map element");
      return process(std::move(item));
    };
  } else {
    // A thread takes a whole batch of items at a time: one hand-off per batch, not per element. Finished chunks
    // wait in the window until the consumer reaches them, so the window beyond the running threads is the
    // prefetch buffer, and no separate prefetch thread is needed.
    const auto limits = autotuner_->report()["limits"];
    const int max_threads = limits["parallelism"].get<int>();
    const size_t chunk = static_cast<size_t>(std::clamp<int64_t>(spec_.batch, 1, 512));
    consumer_helps_ = max_threads >= 2;
    parallel_ = std::make_unique<ParallelMap>(
        [this] { return sequencer_->next(); }, [this](WorkItem item) { return process(std::move(item)); },
        background_threads(max_threads), background_threads(autotuner_->parallelism()), chunk, window_chunks(),
        static_cast<size_t>(max_threads + limits["prefetch"].get<int>()) * chunks_per_batch(), spec_.deterministic,
        consumer_helps_);
    next = [this] { return parallel_->next(); };
  }
  batcher_ = std::make_unique<Batcher>(spec_.batch, spec_.drop_remainder, std::move(next), on_epoch_end,
                                       assembly_.get());
  window_start_ = Clock::now();
}

std::optional<Example> InputPipeline::next_batch() {
  // The consumer's wait for its next batch: the prefetch wait of a parallel pipeline, all of the input work of a
  // serial one. The same interval is the input wait of the report (measured once, here).
  if (!started_) start();
  const auto t0 = Clock::now();
  std::optional<Batch> batch = batcher_->next();
  const auto t1 = Clock::now();
  if (Trace::on()) Trace::complete("input wait", t0, t1);
  const double waited = std::chrono::duration<double>(t1 - t0).count();
  wait_s_ += waited;
  window_wait_s_ += waited;
  if (!batch) {
    state_ = {spec_.epochs, 0};
    return std::nullopt;
  }
  state_ = {batch->epoch, batch->end_position};
  if (!batch_bytes_known_) {
    // The memory budget caps how many batches prefetching may hold.
    batch_bytes_known_ = true;
    const int64_t bytes = std::max<int64_t>(1, static_cast<int64_t>(example_bytes(batch->data)));
    const int64_t budget = spec_.memory_budget > 0 ? spec_.memory_budget : kDefaultMemoryBudget;
    autotuner_->limit_prefetch(static_cast<int>(std::clamp<int64_t>(budget / bytes, 1, 16)));
    if (parallel_) parallel_->set_window(window_chunks());
  }
  if (++window_batches_ >= kTuneEveryBatches) tune();
  return std::move(batch->data);
}

void InputPipeline::tune() {
  const auto now = Clock::now();
  AutotuneWindow w;
  w.wall_s = std::chrono::duration<double>(now - window_start_).count();
  w.wait_s = window_wait_s_;
  w.batches = window_batches_;
  if (parallel_) {
    const uint64_t busy = parallel_->busy_ns();
    w.worker_busy_s = static_cast<double>(busy - window_busy_ns_) * 1e-9;
    window_busy_ns_ = busy;
  }
  if (autotuner_->observe(w) && parallel_) {
    parallel_->set_active(background_threads(autotuner_->parallelism()));
    parallel_->set_window(window_chunks());
  }
  window_start_ = now;
  window_wait_s_ = 0;
  window_batches_ = 0;
}

nlohmann::json InputPipeline::report() const {
  nlohmann::json r = autotuner_->report();
  nlohmann::json out;
  out["parallelism"] = r["parallelism"];
  out["prefetch"] = parallel_ || !started_ ? r["prefetch"] : nlohmann::json(0);
  out["autotune"] = r;
  out["deterministic"] = spec_.deterministic;
  out["skipped"] = batcher_ ? batcher_->skipped() : 0;
  out["input_wait_s"] = wait_s_;
  if (cache_) out["cache"] = cache_->report();
  return out;
}

}  // namespace ramjet::core
