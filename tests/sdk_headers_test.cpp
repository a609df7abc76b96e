// Every public SDK header compiles first and alone, and provides what it promises.
//
// tests/CMakeLists.txt compiles this file once per header under sdk/include/ramjet/, from a generated unit that
// defines RAMJET_TEST_HEADER (the header, included below before anything else, so it must include what it uses),
// RAMJET_TEST_HEADER_NAME and RAMJET_TEST_HEADER_IS_<identifier>. That unit's tests use the header's own names
// only, which instantiates its templates with nothing else in scope. Compiled once more without RAMJET_TEST_HEADER,
// it checks that every header has such a unit and that the umbrella ramjet/sdk.hpp includes every part.
#ifdef RAMJET_TEST_HEADER
#include RAMJET_TEST_HEADER
#include RAMJET_TEST_HEADER  // twice: the include guard holds

#include <gtest/gtest.h>

#include <set>
#include <string>

std::set<std::string>& sdk_headers_compiled_alone();
namespace {
[[maybe_unused]] const bool registered = sdk_headers_compiled_alone().insert(RAMJET_TEST_HEADER_NAME).second;
}  // namespace

// ---- ramjet/abi.h ---------------------------------------------------------------------------------------------
#ifdef RAMJET_TEST_HEADER_IS_ramjet_abi_h
#include <cstring>
extern "C" int ramjet_test_abi_h_as_c(void);  // the same header compiled as C11 (sdk_headers_abi_h.c)

TEST(SdkHeaders, AbiHeaderAloneInCxxAndInC) {
  EXPECT_EQ(RAMJET_ABI_VERSION, 3u);
  EXPECT_STREQ(RAMJET_ENTRY_SYMBOL, "ramjet_plugin_entry");
  EXPECT_EQ(ramjet_test_abi_h_as_c(), static_cast<int>(sizeof(ramjet_backend_vtable)));
}
#endif

// ---- ramjet/sdk.hpp -------------------------------------------------------------------------------------------
#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_hpp
#ifdef RAMJET_SDK_OPTIONAL_SLOT
#error "the umbrella must not leave RAMJET_SDK_OPTIONAL_SLOT defined"
#endif
#ifndef RAMJET_PLUGIN
#error "the umbrella must define RAMJET_PLUGIN"
#endif

namespace {
struct Scale {
  explicit Scale(const ramjet::Config& config) : factor(config.get_or("factor", 2.0)) {}
  void apply(ramjet::Example&, uint64_t) const {}
  double factor;
};
}  // namespace

TEST(SdkHeaders, UmbrellaBringsEveryPart) {
  const ramjet_component c = ramjet::transform<Scale>("scale");
  EXPECT_EQ(c.kind, RAMJET_KIND_TRANSFORM);
  ramjet::SeededRandom random(1);
  EXPECT_LT(random.uniform(), 1.0);
  EXPECT_EQ(ramjet::dtype_name(ramjet::dtype_of<float>()), "float32");
  EXPECT_TRUE(ramjet::Fields{ramjet::Field::integer("n")}.check(nlohmann::json{{"n", 1}}).empty());
  EXPECT_EQ(ramjet::Error(RAMJET_ERR_IO, "x").status(), RAMJET_ERR_IO);
  static_assert(!std::is_copy_constructible_v<ramjet::AtomicFile>);
}
#endif

// ---- ramjet/sdk/error.hpp -------------------------------------------------------------------------------------
#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_error_hpp
TEST(SdkHeaders, ErrorCarriesItsStatusAndMessage) {
  try {
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, "bad byte at 12");
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "bad byte at 12");
    EXPECT_EQ(dynamic_cast<const ramjet::Error&>(e).status(), RAMJET_ERR_CORRUPT_DATA);
  }
}
#endif

// ---- ramjet/sdk/host.hpp --------------------------------------------------------------------------------------
#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_host_hpp
TEST(SdkHeaders, HostTableBeforeTheEntryCall) {
  ASSERT_EQ(ramjet::detail::host_table.load(), nullptr);
  try {
    ramjet::host();
    ADD_FAILURE() << "host() returned without a host table";
  } catch (const ramjet::Error& e) {
    EXPECT_EQ(e.status(), RAMJET_ERR_INTERNAL);
    EXPECT_NE(std::string(e.what()).find("before the entry call"), std::string::npos) << e.what();
  }
  ramjet::log(RAMJET_LOG_INFO, "test", "dropped without a host");  // a no-op, not a crash
}
#endif

// ---- ramjet/sdk/dtype.hpp -------------------------------------------------------------------------------------
#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_dtype_hpp
TEST(SdkHeaders, DtypeNamesSizesAndParsing) {
  EXPECT_EQ(ramjet::dtype_name(ramjet::dtype_of<uint8_t>()), "uint8");
  EXPECT_EQ(ramjet::dtype_name(DLDataType{kDLBfloat, 16, 1}), "bfloat16");
  EXPECT_EQ(ramjet::dtype_name(DLDataType{kDLFloat, 32, 4}), "float32x4");
  EXPECT_EQ(ramjet::dtype_bytes(ramjet::dtype_of<int64_t>()), 8u);
  DLDataType parsed{};
  ASSERT_TRUE(ramjet::parse_dtype("int16", parsed));
  EXPECT_TRUE(ramjet::same_dtype(parsed, ramjet::dtype_of<int16_t>()));
  EXPECT_FALSE(ramjet::parse_dtype("float8", parsed));
}
#endif

// ---- ramjet/sdk/tensor.hpp ------------------------------------------------------------------------------------
#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_tensor_hpp
namespace {
int deleted = 0;
void count_delete(DLManagedTensor*) { ++deleted; }
}  // namespace

TEST(SdkHeaders, TensorHelpersAndOwnership) {
  float values[6] = {0, 1, 2, 3, 4, 5};
  int64_t shape[2] = {2, 3};
  int64_t transposed[2] = {1, 2};
  DLManagedTensor managed{};
  managed.dl_tensor = DLTensor{values, {kDLCPU, 0}, 2, ramjet::dtype_of<float>(), shape, nullptr, 0};
  managed.deleter = &count_delete;
  EXPECT_EQ(ramjet::element_count(managed.dl_tensor), 6);
  EXPECT_TRUE(ramjet::is_contiguous(managed.dl_tensor));
  EXPECT_EQ(ramjet::data_as<float>(managed.dl_tensor)[4], 4.0f);
  EXPECT_THROW(ramjet::data_as<int32_t>(managed.dl_tensor), ramjet::Error);
  DLTensor strided = managed.dl_tensor;
  strided.strides = transposed;
  EXPECT_FALSE(ramjet::is_contiguous(strided));

  deleted = 0;
  {
    ramjet::Tensor owner(&managed);
    ramjet::Tensor moved(std::move(owner));
    EXPECT_FALSE(owner);
    EXPECT_TRUE(moved);
  }
  EXPECT_EQ(deleted, 1);  // exactly once, by the last owner
  {
    ramjet::Tensor owner(&managed);
    EXPECT_EQ(owner.release(), &managed);
  }
  EXPECT_EQ(deleted, 1);  // released: not deleted
}
#endif

// ---- ramjet/sdk/example.hpp -----------------------------------------------------------------------------------
#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_example_hpp
TEST(SdkHeaders, ExampleIsAViewThatNeedsTheHost) {
  ramjet::Example example(nullptr);
  EXPECT_EQ(example.raw(), nullptr);
  EXPECT_THROW(example.size(), ramjet::Error);  // no host table in this process
}
#endif

// ---- ramjet/sdk/random.hpp ------------------------------------------------------------------------------------
#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_random_hpp
TEST(SdkHeaders, SeededRandomIsDeterministic) {
  ramjet::SeededRandom a(42), b(42);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(a.next_u64(), b.next_u64());
  EXPECT_EQ(a.normal(), b.normal());
}
#endif

// ---- ramjet/sdk/config.hpp ------------------------------------------------------------------------------------
#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_config_hpp
TEST(SdkHeaders, ConfigReadsTypedFieldsAndNamesItsPlace) {
  const ramjet_create_info info{sizeof(ramjet_create_info), RAMJET_ABI_VERSION, R"({"n": 3, "big": 300, "file": "a.bin"})",
                                "/data", "p.json#/source", 7, 2, 0};
  const ramjet::Config config(info);
  EXPECT_EQ(config.get<int>("n"), 3);
  EXPECT_EQ(config.get_or<int>("absent", 9), 9);
  EXPECT_EQ(config.path("file"), std::filesystem::path("/data/a.bin"));
  EXPECT_EQ(config.seed(), 7u);
  try {
    config.get<uint8_t>("big");
    ADD_FAILURE() << "300 fit in a uint8";
  } catch (const ramjet::Error& e) {
    EXPECT_EQ(std::string(e.what()), "p.json#/source/big: 300 is out of range");
  }
}
#endif

// ---- ramjet/sdk/fields.hpp ------------------------------------------------------------------------------------
#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_fields_hpp
TEST(SdkHeaders, FieldsCheckAlone) {
  const ramjet::Problems problems = ramjet::Fields{ramjet::Field::integer("n").at_least(1)}.check({{"n", 0}});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].pointer, "/n");
}
#endif

// ---- ramjet/sdk/atomic_file.hpp -------------------------------------------------------------------------------
#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_atomic_file_hpp
TEST(SdkHeaders, AtomicFileAlone) {
  try {
    ramjet::write_file_atomically("/dev/null/cannot/exist", "x");
    ADD_FAILURE() << "wrote under /dev/null";
  } catch (const ramjet::Error& e) {
    EXPECT_EQ(e.status(), RAMJET_ERR_IO);
  }
}
#endif

// ---- ramjet/sdk/raised_priority.hpp ---------------------------------------------------------------------------
#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_raised_priority_hpp
#include <thread>

namespace {
int nice_now() { return ::getpriority(PRIO_PROCESS, 0); }  // 0: the calling thread, on Linux
}  // namespace

TEST(SdkHeaders, RaisedPriorityIsInheritedByTheThreadsStartedUnderItAndThenPutBack) {
  const auto field = ramjet::Fields{ramjet::priority_boost_field()};
  EXPECT_EQ(field.with_defaults(nlohmann::json::object()).at("priority_boost"), 10);
  EXPECT_FALSE(field.check({{"priority_boost", 40}}).empty());
  EXPECT_FALSE(field.check({{"priority_boost", -1}}).empty());
  EXPECT_TRUE(field.check({{"priority_boost", 0}}).empty());

  const int base = nice_now();
  {
    const ramjet::RaisedPriority none(0);
    EXPECT_FALSE(none.raised());
    EXPECT_TRUE(none.why_not().empty());
    EXPECT_EQ(nice_now(), base);
  }
  int in_thread = 99;
  bool raised = false;
  {
    const ramjet::RaisedPriority boost(5);
    raised = boost.raised();
    if (!raised && base > -20) {
      EXPECT_NE(boost.why_not().find("CAP_SYS_NICE"), std::string::npos) << boost.why_not();
    }
    std::thread([&] { in_thread = nice_now(); }).join();
  }
  EXPECT_EQ(nice_now(), base) << "the caller's own priority is put back";
  if (!raised) GTEST_SKIP() << "this process may not lower a nice value (needs CAP_SYS_NICE)";
  EXPECT_LT(in_thread, base) << "a thread started under the raise inherits it";
  EXPECT_GE(in_thread, std::max(-20, base - 5)) << "no more than 5 levels";
}
#endif

// ---- ramjet/sdk/collective_queue.hpp --------------------------------------------------------------------------
#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_collective_queue_hpp
#include <stdexcept>
#include <vector>

TEST(SdkHeaders, CollectiveQueueRunsJobsInIssueOrderAndNeverHangsAWaiter) {
  std::vector<int> order;
  {
    ramjet::CollectiveQueue queue;
    std::mutex gate;
    gate.lock();  // holds the first job until every job is queued
    const uint64_t first = queue.submit([&] { std::lock_guard held(gate); order.push_back(1); });
    const uint64_t second = queue.submit([&] { order.push_back(2); throw std::runtime_error("peer lost"); });
    const uint64_t third = queue.submit([&] { order.push_back(3); });
    EXPECT_TRUE(queue.knows(second));
    gate.unlock();
    EXPECT_TRUE(queue.wait(third, std::chrono::seconds(30)));  // waited out of order: still run in order
    try {
      queue.wait(second, std::chrono::seconds(30));
      ADD_FAILURE() << "the job's exception must reach its waiter";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "peer lost");
    }
    EXPECT_TRUE(queue.wait(first, std::chrono::seconds(30)));
    EXPECT_FALSE(queue.knows(first));
    EXPECT_FALSE(queue.stuck());
  }
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));

  // A job that outlasts the wait: the waiter gets false, and the queue's end does not wait for the job.
  auto release = std::make_shared<std::mutex>();
  release->lock();
  {
    ramjet::CollectiveQueue queue;
    const uint64_t stuck = queue.submit([release] { std::lock_guard held(*release); });
    EXPECT_FALSE(queue.wait(stuck, std::chrono::milliseconds(20)));
    EXPECT_TRUE(queue.stuck());
  }
  release->unlock();  // lets the thread left behind finish before the test binary exits
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

TEST(SdkHeaders, CollectiveQueueWaitEndsWhenTheLivenessCheckThrows) {
  // A job the library never wakes (a send to a peer that died): the check, run between slices of the wait, is
  // what notices; its error reaches the waiter long before the limit, and the queue is stuck from then on.
  auto release = std::make_shared<std::mutex>();
  release->lock();
  {
    ramjet::CollectiveQueue queue;
    const uint64_t never = queue.submit([release] { std::lock_guard held(*release); });
    int checks = 0;
    const auto start = std::chrono::steady_clock::now();
    try {
      queue.wait(never, std::chrono::seconds(30), [&] {
        if (++checks == 3) throw std::runtime_error("lost rank 1");
      }, std::chrono::milliseconds(10));
      ADD_FAILURE() << "the check's error must reach the waiter";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "lost rank 1");
    }
    EXPECT_EQ(checks, 3);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    EXPECT_TRUE(queue.stuck());
  }
  release->unlock();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));

  // A check that never throws changes nothing: the job's own outcome comes back.
  ramjet::CollectiveQueue queue;
  const uint64_t slow = queue.submit([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    throw std::runtime_error("timed out");
  });
  int checks = 0;
  EXPECT_THROW(queue.wait(slow, std::chrono::seconds(30), [&] { ++checks; }, std::chrono::milliseconds(5)),
               std::runtime_error);
  EXPECT_GT(checks, 0);
  EXPECT_FALSE(queue.stuck());
}
#endif

// ---- ramjet/sdk/boundary.hpp ----------------------------------------------------------------------------------
#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_boundary_hpp
#include <new>
#include <stdexcept>

namespace {
int alive = 0;
struct Counted {
  static ramjet::Fields fields() { return {ramjet::Field::integer("n").at_least(0)}; }
  explicit Counted(const ramjet::Config&) { ++alive; }
  ~Counted() { --alive; }
};
struct Unchecked {
  explicit Unchecked(const ramjet::Config&) {}
};
}  // namespace

TEST(SdkHeaders, BoundaryTurnsExceptionsIntoStatuses) {
  using ramjet::detail::guard;
  EXPECT_EQ(guard(nullptr, [] {}), RAMJET_OK);
  EXPECT_EQ(guard(nullptr, [] { throw ramjet::Error(RAMJET_ERR_IO, "io"); }), RAMJET_ERR_IO);
  EXPECT_EQ(guard(nullptr, [] { throw ramjet::Error(RAMJET_OK, "ok is no failure"); }), RAMJET_ERR_INTERNAL);
  EXPECT_EQ(guard(nullptr, [] { const auto j = nlohmann::json::parse("{"); (void)j; }), RAMJET_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(guard(nullptr, [] { throw std::bad_alloc(); }), RAMJET_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(guard(nullptr, [] { throw std::runtime_error("x"); }), RAMJET_ERR_INTERNAL);
  EXPECT_EQ(guard(nullptr, [] { throw 7; }), RAMJET_ERR_INTERNAL);
}

TEST(SdkHeaders, BoundaryCreatesChecksAndDestroys) {
  ramjet_create_info info{sizeof(ramjet_create_info), RAMJET_ABI_VERSION, R"({"n": 1})", "", "t.json#/x", 0, 0, 0};
  void* self = nullptr;
  ASSERT_EQ(ramjet::detail::create<Counted>(&info, &self, nullptr), RAMJET_OK);
  ASSERT_NE(self, nullptr);
  EXPECT_EQ(alive, 1);
  ramjet::detail::destroy<Counted>(self);
  EXPECT_EQ(alive, 0);

  info.config_json = R"({"n": -1})";  // the declared fields refuse it before the constructor runs
  self = nullptr;
  EXPECT_EQ(ramjet::detail::create<Counted>(&info, &self, nullptr), RAMJET_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(self, nullptr);
  EXPECT_EQ(alive, 0);

  EXPECT_NE(ramjet::detail::check_config_slot<Counted>, nullptr);
  EXPECT_EQ(ramjet::detail::check_config_slot<Unchecked>, nullptr);
  const ramjet_component c = ramjet::detail::component<Counted>(RAMJET_KIND_TRANSFORM, "counted", nullptr);
  EXPECT_EQ(c.struct_size, sizeof(ramjet_component));
  EXPECT_EQ(c.abi_version, RAMJET_ABI_VERSION);
  EXPECT_EQ(c.check_config, ramjet::detail::check_config_slot<Counted>);
}
#endif

// ---- the adapters ---------------------------------------------------------------------------------------------
#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_data_source_hpp
namespace {
struct Indexed {
  explicit Indexed(const ramjet::Config&) {}
  int64_t cardinality() const { return 3; }
  void get(int64_t, ramjet::Example&) const {}
};
struct Stream {
  explicit Stream(const ramjet::Config&) {}
  bool next(ramjet::Example&) { return false; }
  void reset(uint64_t) {}
  std::string save_state() const { return {}; }
  void restore_state(std::string_view) {}
};
}  // namespace

TEST(SdkHeaders, DataSourceAdapterFillsOnlyTheSlotsAClassHas) {
  const ramjet_component indexed = ramjet::data_source<Indexed>("indexed");
  EXPECT_EQ(indexed.kind, RAMJET_KIND_DATA_SOURCE);
  const auto* v = static_cast<const ramjet_data_source_vtable*>(indexed.vtable);
  EXPECT_EQ(v->struct_size, sizeof(ramjet_data_source_vtable));
  EXPECT_NE(v->get, nullptr);
  EXPECT_EQ(v->next, nullptr);
  EXPECT_EQ(v->save_state, nullptr);
  const ramjet_create_info info{sizeof(ramjet_create_info), RAMJET_ABI_VERSION, "{}", "", "", 0, 0, 0};
  Indexed source{ramjet::Config(info)};
  int64_t count = 0;
  EXPECT_EQ(v->cardinality(&source, &count, nullptr), RAMJET_OK);
  EXPECT_EQ(count, 3);

  const auto* s = static_cast<const ramjet_data_source_vtable*>(ramjet::data_source<Stream>("stream").vtable);
  EXPECT_EQ(s->get, nullptr);
  EXPECT_NE(s->next, nullptr);
  EXPECT_NE(s->reset, nullptr);
  EXPECT_EQ(s->shard, nullptr);
  EXPECT_NE(s->save_state, nullptr);
  EXPECT_NE(s->restore_state, nullptr);
  Stream stream{ramjet::Config(info)};
  EXPECT_EQ(s->cardinality(&stream, &count, nullptr), RAMJET_OK);
  EXPECT_EQ(count, -1);  // sequential
}
#endif

#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_transform_hpp
namespace {
struct Noop {
  explicit Noop(const ramjet::Config&) {}
  void apply(ramjet::Example&, uint64_t) const {}
};
}  // namespace

TEST(SdkHeaders, TransformAdapterAlone) {
  const ramjet_component c = ramjet::transform<Noop>("noop");
  EXPECT_EQ(c.kind, RAMJET_KIND_TRANSFORM);
  EXPECT_STREQ(c.name, "noop");
  const auto* v = static_cast<const ramjet_transform_vtable*>(c.vtable);
  EXPECT_EQ(v->struct_size, sizeof(ramjet_transform_vtable));
  EXPECT_EQ(v->abi_version, RAMJET_ABI_VERSION);
  EXPECT_NE(v->apply, nullptr);
  EXPECT_EQ(c.check_config, nullptr);  // Noop declares no fields
}
#endif

#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_precision_policy_hpp
namespace {
struct Fixed {
  explicit Fixed(const ramjet::Config&) {}
  ramjet_layer_dtypes layer_dtypes(const nlohmann::json&) const {
    return {0, 0, DLDataType{kDLBfloat, 16, 1}, DLDataType{kDLFloat, 32, 1}};
  }
  float loss_scale() const { return 1.0f; }
  bool update(bool found_nonfinite) { return found_nonfinite; }
};
}  // namespace

TEST(SdkHeaders, PrecisionPolicyAdapterNeverWritesPastTheCallersStruct) {
  const auto* v = static_cast<const ramjet_precision_policy_vtable*>(ramjet::precision_policy<Fixed>("fixed").vtable);
  EXPECT_EQ(v->save_state, nullptr);
  Fixed policy{ramjet::Config(ramjet_create_info{sizeof(ramjet_create_info), RAMJET_ABI_VERSION, "{}", "", "", 0, 0, 0})};
  ramjet_layer_dtypes out{};
  out.struct_size = sizeof out;
  ASSERT_EQ(v->layer_dtypes(&policy, R"({"type": "dense"})", &out, nullptr), RAMJET_OK);
  EXPECT_EQ(out.compute.code, kDLBfloat);
  EXPECT_EQ(out.abi_version, RAMJET_ABI_VERSION);
  out.struct_size = 8;  // smaller than version 1: refused
  EXPECT_EQ(v->layer_dtypes(&policy, "{}", &out, nullptr), RAMJET_ERR_VERSION_MISMATCH);
  int32_t skip = 0;
  EXPECT_EQ(v->update(&policy, 1, &skip, nullptr), RAMJET_OK);
  EXPECT_EQ(skip, 1);
}
#endif

#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_strategy_hpp
namespace {
struct Single {
  explicit Single(const ramjet::Config&) {}
  int rank() const { return 0; }
  int world_size() const { return 1; }
  void broadcast(DLTensor&, const ramjet_collective_args&) {}
  void all_reduce(DLTensor&, const ramjet_collective_args&) {}
  void barrier() {}
};
}  // namespace

TEST(SdkHeaders, StrategyAdapterChecksTheCollectiveArguments) {
  const auto* v = static_cast<const ramjet_strategy_vtable*>(ramjet::strategy<Single>("single").vtable);
  EXPECT_EQ(v->all_reduce_start, nullptr);
  EXPECT_EQ(v->all_reduce_wait, nullptr);
  Single single{ramjet::Config(ramjet_create_info{sizeof(ramjet_create_info), RAMJET_ABI_VERSION, "{}", "", "", 0, 0, 0})};
  DLTensor t{};
  const ramjet_collective_args args{sizeof(ramjet_collective_args), RAMJET_ABI_VERSION, RAMJET_REDUCE_SUM, 0, nullptr};
  EXPECT_EQ(v->all_reduce(&single, &t, &args, nullptr), RAMJET_OK);
  EXPECT_EQ(v->all_reduce(&single, &t, nullptr, nullptr), RAMJET_ERR_VERSION_MISMATCH);
}
#endif

#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_quantizer_hpp
namespace {
struct Observer {
  explicit Observer(const ramjet::Config&) {}
  void observe(std::string_view, const DLTensor&) {}
  nlohmann::json quantize(const nlohmann::json& graph, ramjet::Example&, ramjet::Example&) { return graph; }
};
}  // namespace

TEST(SdkHeaders, QuantizerAdapterAlone) {
  const ramjet_component c = ramjet::quantizer<Observer>("observer");
  EXPECT_EQ(c.kind, RAMJET_KIND_QUANTIZER);
  const auto* v = static_cast<const ramjet_quantizer_vtable*>(c.vtable);
  EXPECT_NE(v->observe, nullptr);
  EXPECT_NE(v->quantize, nullptr);
}
#endif

#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_exporter_hpp
#include <filesystem>
namespace {
struct Writer {
  explicit Writer(const ramjet::Config&) {}
  void export_model(const nlohmann::json&, ramjet::Example&, const std::filesystem::path&) {}
};
}  // namespace

TEST(SdkHeaders, ExporterAdapterAlone) {
  const ramjet_component c = ramjet::exporter<Writer>("writer");
  EXPECT_EQ(c.kind, RAMJET_KIND_EXPORTER);
  EXPECT_NE(static_cast<const ramjet_exporter_vtable*>(c.vtable)->export_model, nullptr);
}
#endif

#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_backend_hpp
#include <memory>
#include <vector>
namespace {
struct Plain {
  struct Program {
    void forward(const ramjet_forward_args&, ramjet::Example&, ramjet::Example&) {}
    void backward(const ramjet_backward_args&) {}
    void optimizer_update(const ramjet_update_args&) {}
    void get_state(std::string_view, ramjet::Example&) {}
    void set_state(std::string_view, ramjet::Example&) {}
  };
  explicit Plain(const ramjet::Config&) {}
  std::unique_ptr<Program> compile(const nlohmann::json&, const nlohmann::json&) { return std::make_unique<Program>(); }
};
struct Tapping : Plain {
  struct Program : Plain::Program {
    void set_taps(const std::vector<std::string>&, ramjet_tap_fn, void*) {}
  };
  using Plain::Plain;
  std::unique_ptr<Program> compile(const nlohmann::json&, const nlohmann::json&) { return std::make_unique<Program>(); }
  static void check_options(const nlohmann::json&, ramjet::Problems&) {}
};
}  // namespace

TEST(SdkHeaders, BackendAdapterFillsOptionalSlotsFromTheClass) {
  const auto* plain = static_cast<const ramjet_backend_vtable*>(ramjet::backend<Plain>("plain").vtable);
  EXPECT_EQ(plain->struct_size, sizeof(ramjet_backend_vtable));
  EXPECT_EQ(plain->set_taps, nullptr);
  EXPECT_EQ(plain->check_options, nullptr);
  const auto* tapping = static_cast<const ramjet_backend_vtable*>(ramjet::backend<Tapping>("tapping").vtable);
  EXPECT_NE(tapping->set_taps, nullptr);
  EXPECT_NE(tapping->check_options, nullptr);
  const ramjet_forward_args old{8, 1, 0, 0, 0, 0};  // smaller than version 1
  EXPECT_EQ(plain->forward(nullptr, nullptr, &old, nullptr, nullptr, nullptr), RAMJET_ERR_VERSION_MISMATCH);
}
#endif

#ifdef RAMJET_TEST_HEADER_IS_ramjet_sdk_plugin_hpp
namespace {
struct Nothing {
  explicit Nothing(const ramjet::Config&) {}
};
const ramjet_transform_vtable nothing_vtable = {sizeof(ramjet_transform_vtable), RAMJET_ABI_VERSION,
                                                &ramjet::detail::create<Nothing>, &ramjet::detail::destroy<Nothing>,
                                                nullptr};
}  // namespace

RAMJET_PLUGIN("headers_test", "1.2.3",
              ramjet::detail::component<Nothing>(RAMJET_KIND_TRANSFORM, "nothing", &nothing_vtable))

TEST(SdkHeaders, PluginEntryNegotiatesTheNewestCommonVersion) {
  struct Forget {  // the table below dies with this test, whichever way it ends
    ~Forget() { ramjet::detail::host_table.store(nullptr); }
  } forget;
  ramjet_host_api host{};
  host.struct_size = sizeof host;
  host.abi_version = RAMJET_ABI_VERSION;
  const ramjet_plugin* plugin = nullptr;
  ASSERT_EQ(ramjet_plugin_entry(&host, 1, 9, &plugin, nullptr), RAMJET_OK);
  ASSERT_NE(plugin, nullptr);
  EXPECT_STREQ(plugin->name, "headers_test");
  EXPECT_STREQ(plugin->version, "1.2.3");
  EXPECT_EQ(plugin->abi_version, RAMJET_ABI_VERSION);
  ASSERT_EQ(plugin->component_count, 1u);
  EXPECT_STREQ(plugin->components[0]->name, "nothing");
  ASSERT_EQ(ramjet_plugin_entry(&host, 1, 1, &plugin, nullptr), RAMJET_OK);
  EXPECT_EQ(plugin->abi_version, 1u);  // an older host gets the version it speaks
  EXPECT_EQ(ramjet_plugin_entry(&host, RAMJET_ABI_VERSION + 1, RAMJET_ABI_VERSION + 2, &plugin, nullptr),
            RAMJET_ERR_VERSION_MISMATCH);
  host.struct_size = 16;  // too small to be a host table at all
  EXPECT_EQ(ramjet_plugin_entry(&host, 1, 2, &plugin, nullptr), RAMJET_ERR_VERSION_MISMATCH);
}
#endif

#else  // the checks across headers ---------------------------------------------------------------------------

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

std::set<std::string>& sdk_headers_compiled_alone() {
  static std::set<std::string> names;
  return names;
}

namespace {
namespace fs = std::filesystem;

const fs::path kInclude = RAMJET_TEST_SDK_INCLUDE_DIR;

// "ramjet/abi.h", "ramjet/sdk.hpp", "ramjet/sdk/fields.hpp", ...: every public header as it is included.
std::set<std::string> public_headers() {
  std::set<std::string> out;
  for (const fs::path& dir : {kInclude / "ramjet", kInclude / "ramjet" / "sdk"})
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.is_regular_file() && (entry.path().extension() == ".h" || entry.path().extension() == ".hpp"))
        out.insert(entry.path().lexically_relative(kInclude).generic_string());
  return out;
}
}  // namespace

TEST(SdkHeaders, EveryPublicHeaderHasAUnitOfItsOwn) {
  const std::set<std::string> headers = public_headers();
  ASSERT_GE(headers.size(), 20u) << "looked in " << kInclude;
  EXPECT_EQ(sdk_headers_compiled_alone(), headers) << "re-run cmake after adding a header";
}

TEST(SdkHeaders, TheUmbrellaIncludesEveryPart) {
  std::ifstream in(kInclude / "ramjet" / "sdk.hpp");
  std::stringstream text;
  text << in.rdbuf();
  int parts = 0;
  for (const auto& header : public_headers()) {
    if (header.rfind("ramjet/sdk/", 0) != 0) continue;
    ++parts;
    EXPECT_NE(text.str().find("#include <" + header + ">"), std::string::npos) << header;
  }
  EXPECT_GE(parts, 18);
}

#endif
