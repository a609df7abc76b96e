/*
 * ramjet plugin ABI — the one stable boundary between the host (libramjet_core) and plugins.
 *
 * Rules (see DESIGN.md):
 *  - Plain C11. Nothing of C++ crosses: no exceptions, no std types. sdk.hpp is an optional header-only layer.
 *  - One undecorated entry point per plugin, RAMJET_ENTRY_SYMBOL, of type ramjet_plugin_entry_fn. It receives the
 *    host's API table and the ABI range the host speaks, and returns the plugin descriptor.
 *  - Every struct that one side fills for the other starts with `uint32_t struct_size; uint32_t abi_version;`.
 *    The reader checks both before touching a field, and checks an optional slot is non-null before calling it.
 *  - Structs only grow at the end. Layouts of a released ABI version are frozen by the static asserts at the end
 *    of this file; a changed behaviour gets a new slot, never an edited signature.
 *  - Errors: every call returns ramjet_status and, on failure, writes a UTF-8 message into the host-owned
 *    ramjet_error through ramjet_host_api.error_set.
 *  - Ownership: memory that changes hands carries its deleter (DLManagedTensor); strings and blobs returned to
 *    the host are copied into host-owned ramjet_buffer objects, so no plugin allocation ever crosses.
 */
#ifndef RAMJET_ABI_H
#define RAMJET_ABI_H

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this header describes. A host speaks a range of versions; a plugin picks one in it.
 * Version 2 appended ramjet_component.check_config and ramjet_backend_vtable.check_options (both optional), and the
 * host now calls ramjet_precision_policy_vtable.layer_dtypes for every graph node. Version 1 plugins still load. */
#define RAMJET_ABI_VERSION 2u

/* The single exported symbol of every plugin library. */
#define RAMJET_ENTRY_SYMBOL "ramjet_plugin_entry"

#if defined(_WIN32)
#define RAMJET_EXPORT __declspec(dllexport)
#else
#define RAMJET_EXPORT __attribute__((visibility("default")))
#endif

/* ---- status and errors ------------------------------------------------------------------------------------ */

/* Fixed-width integers cross the boundary; the enums below only name their values (an enum's size is up to the
 * compiler, and a newer peer may send a value this side has no name for). */
typedef int32_t ramjet_status;
enum {
  RAMJET_OK = 0,
  RAMJET_ERR_INVALID_ARGUMENT = 1, /* bad configuration or call arguments */
  RAMJET_ERR_OUT_OF_RANGE = 2,     /* index or value outside what is valid */
  RAMJET_ERR_UNSUPPORTED = 3,      /* the component cannot do what was asked (dtype, layer, mode) */
  RAMJET_ERR_IO = 4,               /* a file could not be opened, read or written */
  RAMJET_ERR_CORRUPT_DATA = 5,     /* input data is malformed; the message names file and offset */
  RAMJET_ERR_OUT_OF_MEMORY = 6,
  RAMJET_ERR_VERSION_MISMATCH = 7, /* no common ABI version, or a struct too small for its version */
  RAMJET_ERR_INTERNAL = 8,         /* a bug: an exception or invariant failure caught at the boundary */
  RAMJET_ERR_DEVICE = 9            /* the accelerator or its runtime failed */
};

/* Host-owned error object. Plugins never read it; they fill it with ramjet_host_api.error_set. */
typedef struct ramjet_error ramjet_error;

/* Host-owned byte buffer. Plugins hand text or binary state to the host by copying into it (buffer_assign). */
typedef struct ramjet_buffer ramjet_buffer;

/* Host-owned ordered set of named tensors: one example, one batch, a set of parameters or gradients. */
typedef struct ramjet_example ramjet_example;

typedef int32_t ramjet_log_level;
enum { RAMJET_LOG_DEBUG = 0, RAMJET_LOG_INFO = 1, RAMJET_LOG_WARNING = 2, RAMJET_LOG_ERROR = 3 };

typedef int32_t ramjet_component_kind;
enum {
  RAMJET_KIND_DATA_SOURCE = 0,
  RAMJET_KIND_TRANSFORM = 1,
  RAMJET_KIND_PRECISION_POLICY = 2,
  RAMJET_KIND_STRATEGY = 3,
  RAMJET_KIND_QUANTIZER = 4,
  RAMJET_KIND_EXPORTER = 5,
  RAMJET_KIND_BACKEND = 6
};

/* ---- the host API table ----------------------------------------------------------------------------------- */

/*
 * Functions the host offers to plugins. Valid from the entry call until the library is unloaded.
 * Thread-safe unless noted. Check struct_size before using a slot added after version 1.
 */
typedef struct ramjet_host_api {
  uint32_t struct_size;
  uint32_t abi_version;

  /* Log a UTF-8 line. `source` names the component (may be NULL). */
  void (*log)(ramjet_log_level level, const char* source, const char* message);

  /* Record a failure. The plugin still returns `status` from the failing call. */
  void (*error_set)(ramjet_error* error, ramjet_status status, const char* message);

  /* Aligned host allocation (alignment a power of two). Free with `free_aligned`. NULL on failure. */
  void* (*alloc_aligned)(size_t size, size_t alignment);
  void (*free_aligned)(void* pointer);

  /* A new zero-filled, C-contiguous CPU tensor owned by the caller; its deleter frees it. NULL on failure. */
  DLManagedTensor* (*tensor_new)(DLDataType dtype, int32_t ndim, const int64_t* shape);

  /* Copy `size` bytes into a host buffer, replacing what it held. */
  ramjet_status (*buffer_assign)(ramjet_buffer* buffer, const void* data, size_t size);

  /* Named tensors. Names are UTF-8, unique within an example, kept in insertion order. */
  size_t (*example_size)(const ramjet_example* example);
  const char* (*example_name)(const ramjet_example* example, size_t index); /* NULL if out of range */
  DLTensor* (*example_at)(ramjet_example* example, size_t index);           /* NULL if out of range */
  DLTensor* (*example_find)(ramjet_example* example, const char* name);     /* NULL if absent */
  /* Takes ownership of `tensor` (even on failure); replaces and deletes a tensor of the same name. */
  ramjet_status (*example_set)(ramjet_example* example, const char* name, DLManagedTensor* tensor);
  ramjet_status (*example_remove)(ramjet_example* example, const char* name);
} ramjet_host_api;

/* ---- what every component's create() receives ------------------------------------------------------------ */

typedef struct ramjet_create_info {
  uint32_t struct_size;
  uint32_t abi_version;
  const char* config_json; /* the component's manifest object as JSON text, UTF-8, NUL-terminated */
  const char* base_dir;    /* directory that relative paths in the config are relative to */
  const char* where;       /* human-readable location of the config, e.g. "pipeline.json#/data/train/source" */
  uint64_t seed;           /* run seed; per-element randomness is derived from it by the host */
  uint32_t num_threads;    /* threads the component may use of its own (0: decide yourself) */
  uint32_t reserved_;
} ramjet_create_info;

/* Common head of every component vtable. */
#define RAMJET_VTABLE_HEAD                                                                           \
  uint32_t struct_size;                                                                              \
  uint32_t abi_version;                                                                              \
  /* Create an instance from its configuration. */                                                  \
  ramjet_status (*create)(const ramjet_create_info* info, void** out_self, ramjet_error* error);     \
  /* Destroy an instance. Never fails. */                                                           \
  void (*destroy)(void* self)

/* ---- data_source ------------------------------------------------------------------------------------------ */

/*
 * Produces examples as named tensors. Random-access sources implement `get` (thread-safe for concurrent calls)
 * and report a cardinality >= 0; sequential sources implement `next` and report -1.
 */
typedef struct ramjet_data_source_vtable {
  RAMJET_VTABLE_HEAD;
  /* Number of elements after sharding, or -1 when unknown (sequential). */
  ramjet_status (*cardinality)(void* self, int64_t* out_count, ramjet_error* error);
  /* JSON describing each tensor: {"image": {"dtype": "uint8", "shape": [28, 28, 1]}, ...}. Optional. */
  ramjet_status (*element_spec)(void* self, ramjet_buffer* out_json, ramjet_error* error);
  /* Random access: fill `out` with element `index` (0 <= index < cardinality). Optional. */
  ramjet_status (*get)(void* self, int64_t index, ramjet_example* out, ramjet_error* error);
  /* Sequential: fill `out` and set *out_has_element to 1, or set it to 0 at the end. Optional. */
  ramjet_status (*next)(void* self, ramjet_example* out, int32_t* out_has_element, ramjet_error* error);
  /* Start epoch `epoch` of a sequential source (rewind, reshuffle files). Optional. */
  ramjet_status (*reset)(void* self, uint64_t epoch, ramjet_error* error);
  /* Keep only elements i with i % count == index. Optional: the host shards random-access sources itself. */
  ramjet_status (*shard)(void* self, int64_t count, int64_t index, ramjet_error* error);
  /* Opaque position of a sequential source, for checkpoints. Optional. */
  ramjet_status (*save_state)(void* self, ramjet_buffer* out_state, ramjet_error* error);
  ramjet_status (*restore_state)(void* self, const void* state, size_t size, ramjet_error* error);
} ramjet_data_source_vtable;

/* ---- transform -------------------------------------------------------------------------------------------- */

/*
 * A pure, thread-safe function of (example, seed) -> example, applied in place: it may change tensor data or
 * replace tensors with example_set. The host derives `seed` from (run seed, epoch, element index) so parallel
 * random augmentation is deterministic.
 */
typedef struct ramjet_transform_vtable {
  RAMJET_VTABLE_HEAD;
  ramjet_status (*apply)(void* self, ramjet_example* example, uint64_t seed, ramjet_error* error);
} ramjet_transform_vtable;

/* ---- precision_policy ------------------------------------------------------------------------------------- */

/* Out-structs (filled by the callee): the caller sets struct_size to what it allocated; the callee writes at most
 * that many bytes and sets abi_version. */
typedef struct ramjet_layer_dtypes {
  uint32_t struct_size;
  uint32_t abi_version;
  DLDataType compute;  /* dtype the layer computes in */
  DLDataType variable; /* dtype its weights are kept in (master weights) */
} ramjet_layer_dtypes;

typedef struct ramjet_precision_policy_vtable {
  RAMJET_VTABLE_HEAD;
  /* Dtypes for one layer, given its graph-IR JSON object (type, name, attributes). */
  ramjet_status (*layer_dtypes)(void* self, const char* layer_json, ramjet_layer_dtypes* out,
                                ramjet_error* error);
  /* Current loss scale (1 when the policy does not scale). */
  ramjet_status (*loss_scale)(void* self, float* out_scale, ramjet_error* error);
  /* After each step: whether any gradient was inf/NaN. Sets *out_skip_step to 1 if the update must be skipped. */
  ramjet_status (*update)(void* self, int32_t found_nonfinite, int32_t* out_skip_step, ramjet_error* error);
  /* Loss-scaler state for checkpoints. Optional. */
  ramjet_status (*save_state)(void* self, ramjet_buffer* out_state, ramjet_error* error);
  ramjet_status (*restore_state)(void* self, const void* state, size_t size, ramjet_error* error);
} ramjet_precision_policy_vtable;

/* ---- strategy --------------------------------------------------------------------------------------------- */

typedef int32_t ramjet_reduce_op;
enum { RAMJET_REDUCE_SUM = 0, RAMJET_REDUCE_MEAN = 1, RAMJET_REDUCE_MAX = 2, RAMJET_REDUCE_MIN = 3 };

/* Arguments of every collective. `stream` is the backend's queue (a cudaStream_t for the cuda backend, NULL on
 * CPU) so a GPU strategy can enqueue on it instead of synchronising the device. */
typedef struct ramjet_collective_args {
  uint32_t struct_size;
  uint32_t abi_version;
  ramjet_reduce_op op; /* all-reduce only */
  int32_t root;        /* broadcast only */
  void* stream;
} ramjet_collective_args;

typedef struct ramjet_strategy_vtable {
  RAMJET_VTABLE_HEAD;
  ramjet_status (*rank)(void* self, int32_t* out_rank, ramjet_error* error);
  ramjet_status (*world_size)(void* self, int32_t* out_size, ramjet_error* error);
  /* In place: every rank ends with args->root's values. */
  ramjet_status (*broadcast)(void* self, DLTensor* tensor, const ramjet_collective_args* args, ramjet_error* error);
  /* In place, complete on return (or, with a stream, complete in stream order). */
  ramjet_status (*all_reduce)(void* self, DLTensor* tensor, const ramjet_collective_args* args, ramjet_error* error);
  ramjet_status (*barrier)(void* self, ramjet_error* error);
  /* Non-blocking all-reduce for overlapping with backward; finish with all_reduce_wait. Optional (both). */
  ramjet_status (*all_reduce_start)(void* self, DLTensor* tensor, const ramjet_collective_args* args,
                                    uint64_t* out_handle, ramjet_error* error);
  ramjet_status (*all_reduce_wait)(void* self, uint64_t handle, ramjet_error* error);
} ramjet_strategy_vtable;

/* ---- quantizer and exporter ------------------------------------------------------------------------------- */

typedef struct ramjet_quantizer_vtable {
  RAMJET_VTABLE_HEAD;
  /* Calibration: see one activation of the named graph tensor (called for every tapped tensor and batch). */
  ramjet_status (*observe)(void* self, const char* tensor_name, const DLTensor* value, ramjet_error* error);
  /* Produce the quantized graph (graph-IR JSON with quantization parameters) and its quantized tensors. */
  ramjet_status (*quantize)(void* self, const char* graph_json, ramjet_example* params, ramjet_buffer* out_graph,
                            ramjet_example* out_params, ramjet_error* error);
} ramjet_quantizer_vtable;

typedef struct ramjet_exporter_vtable {
  RAMJET_VTABLE_HEAD;
  /* Write the graph and its tensors to `path`; the file appears only when complete. */
  ramjet_status (*export_model)(void* self, const char* graph_json, ramjet_example* params, const char* path,
                                ramjet_error* error);
} ramjet_exporter_vtable;

/* ---- backend ---------------------------------------------------------------------------------------------- */

/* A compiled graph, owned by the backend instance that made it. */
typedef struct ramjet_program ramjet_program;

/* Called for each tapped activation during forward (calibration, debugging), on the thread that called forward.
 * The tensor is CPU-readable (a device backend copies it to the host first) and valid only during the call. A
 * non-OK return aborts the forward, which returns that status and message. */
typedef ramjet_status (*ramjet_tap_fn)(void* user, const char* tensor_name, const DLTensor* value,
                                       ramjet_error* error);

/* Called during backward as each parameter's gradient becomes final (reverse layer order), so the host can start
 * all-reducing a bucket while the rest of backward runs. */
typedef void (*ramjet_grad_ready_fn)(void* user, const char* parameter_name, DLTensor* gradient);

typedef struct ramjet_forward_args {
  uint32_t struct_size;
  uint32_t abi_version;
  int32_t training; /* keep what backward needs; dropout and batch-norm statistics in training mode */
  uint32_t reserved_;
  uint64_t seed;    /* per-step seed for dropout, derived by the host from (run seed, step) */
  int64_t step;
} ramjet_forward_args;

typedef struct ramjet_backward_args {
  uint32_t struct_size;
  uint32_t abi_version;
  float loss_scale;  /* multiply the loss by this before back-propagating (dynamic loss scaling) */
  int32_t accumulate; /* add into the gradient buffers instead of overwriting them (gradient accumulation) */
  ramjet_grad_ready_fn grad_ready; /* optional */
  void* grad_ready_user;
  int32_t* out_found_nonfinite; /* optional: set to 1 when any gradient is inf or NaN, else 0 */
} ramjet_backward_args;

typedef struct ramjet_update_args {
  uint32_t struct_size;
  uint32_t abi_version;
  int64_t step;          /* optimizer step, 1-based */
  float learning_rate;   /* for this step, after schedules */
  float gradient_scale;  /* multiply gradients by this before the update (1/loss_scale × clip factor) */
} ramjet_update_args;

/* Names the backend and the host agree on. A training forward with labels writes RAMJET_OUTPUT_LOSS (float32
 * scalar, the batch mean) and, for classifiers, RAMJET_OUTPUT_CORRECT (int32 scalar, top-1 hits in the batch). */
#define RAMJET_OUTPUT_LOSS "loss"
#define RAMJET_OUTPUT_CORRECT "correct"
/* The `which` of get_state/set_state. */
#define RAMJET_STATE_PARAMETERS "parameters"
#define RAMJET_STATE_GRADIENTS "gradients"
#define RAMJET_STATE_OPTIMIZER "optimizer"
#define RAMJET_STATE_BUFFERS "buffers"

typedef struct ramjet_backend_vtable {
  RAMJET_VTABLE_HEAD;
  /* Compile a whole graph-IR JSON once. `options_json` carries precision, optimizer, batch size, threads. */
  ramjet_status (*compile)(void* self, const char* graph_json, const char* options_json, ramjet_program** out,
                           ramjet_error* error);
  void (*program_destroy)(void* self, ramjet_program* program);
  /* Run the graph on `inputs`; outputs (and the loss, when labels are among the inputs) go into `outputs`. */
  ramjet_status (*forward)(void* self, ramjet_program* program, const ramjet_forward_args* args,
                           ramjet_example* inputs, ramjet_example* outputs, ramjet_error* error);
  /* Back-propagate the loss of the last training forward into the gradient buffers. */
  ramjet_status (*backward)(void* self, ramjet_program* program, const ramjet_backward_args* args,
                            ramjet_error* error);
  /* Apply one optimizer step to the parameters from the current gradients. */
  ramjet_status (*optimizer_update)(void* self, ramjet_program* program, const ramjet_update_args* args,
                                    ramjet_error* error);
  /* Views or copies of named state: which = "parameters", "gradients", "optimizer" or "buffers". Views stay
     valid until the program is destroyed and may be written in place (e.g. all-reduce of gradients). */
  ramjet_status (*get_state)(void* self, ramjet_program* program, const char* which, ramjet_example* out,
                             ramjet_error* error);
  ramjet_status (*set_state)(void* self, ramjet_program* program, const char* which, ramjet_example* values,
                             ramjet_error* error);
  /* Tap the named tensors (JSON array of names; "[]" clears) on every forward. Optional. */
  ramjet_status (*set_taps)(void* self, ramjet_program* program, const char* names_json, ramjet_tap_fn fn,
                            void* user, ramjet_error* error);
  /* ABI 2. Optional. Judge compile options (the JSON compile() would receive, without the graph: "optimizer",
   * "layer_dtypes", "threads", "batch") without compiling anything, so `ramjet validate` reports a bad optimizer
   * option in the backend's own words. Writes into `out_problems` a JSON array of {"pointer", "message"} objects,
   * pointers relative to the options object ("/optimizer/beta_1"); an empty array when all is well. Returns non-OK
   * only when it could not judge at all. Needs no instance: `self` is not passed. Thread-safe. */
  ramjet_status (*check_options)(const char* options_json, ramjet_buffer* out_problems, ramjet_error* error);
} ramjet_backend_vtable;

/* ---- the plugin descriptor -------------------------------------------------------------------------------- */

typedef struct ramjet_component {
  uint32_t struct_size;
  uint32_t abi_version;
  ramjet_component_kind kind;
  int32_t reserved_;
  const char* name;   /* unique within its kind across loaded plugins (see README: duplicate rule) */
  const void* vtable; /* points to the vtable struct of `kind`, e.g. ramjet_transform_vtable */
  /* ABI 2. Optional. Judge a configuration without creating anything (what `ramjet validate` calls): `info` is
   * exactly what create() would receive. Writes into `out_problems` a JSON array of {"pointer", "message"}
   * objects, pointers relative to the configuration object ("/method"; "" for the object itself), messages in the
   * component's own words without the location (the host prefixes file and pointer); an empty array when all is
   * well. Returns non-OK only when it could not judge at all. No side effects: no file is opened. Thread-safe. */
  ramjet_status (*check_config)(const ramjet_create_info* info, ramjet_buffer* out_problems, ramjet_error* error);
} ramjet_component;

typedef struct ramjet_plugin {
  uint32_t struct_size;
  uint32_t abi_version; /* the version this plugin chose within the host's range */
  const char* name;
  const char* version;
  size_t component_count;
  /* Pointers, not an array of structs, so ramjet_component can grow without changing the stride. Static storage:
     valid until the library is unloaded. */
  const ramjet_component* const* components;
} ramjet_plugin;

/*
 * The entry point, exported as RAMJET_ENTRY_SYMBOL. The plugin picks an ABI version within
 * [host_abi_min, host_abi_max], registers nothing globally, and returns its descriptor, or an error status with
 * a message (e.g. no common version, a missing runtime dependency).
 */
typedef ramjet_status (*ramjet_plugin_entry_fn)(const ramjet_host_api* host, uint32_t host_abi_min,
                                                uint32_t host_abi_max, const ramjet_plugin** out_plugin,
                                                ramjet_error* error);

/* ---- frozen layouts of ABI version 1 (LP64) --------------------------------------------------------------- */

/* The size of each struct as ABI version 1 defined it. A reader accepts any struct at least this large: later
 * versions only append. These never change; the static asserts below keep the header honest. */
#define RAMJET_HOST_API_V1_SIZE 104u
#define RAMJET_CREATE_INFO_V1_SIZE 48u
#define RAMJET_DATA_SOURCE_VTABLE_V1_SIZE 88u
#define RAMJET_TRANSFORM_VTABLE_V1_SIZE 32u
#define RAMJET_LAYER_DTYPES_V1_SIZE 16u
#define RAMJET_PRECISION_POLICY_VTABLE_V1_SIZE 64u
#define RAMJET_COLLECTIVE_ARGS_V1_SIZE 24u
#define RAMJET_STRATEGY_VTABLE_V1_SIZE 80u
#define RAMJET_QUANTIZER_VTABLE_V1_SIZE 40u
#define RAMJET_EXPORTER_VTABLE_V1_SIZE 32u
#define RAMJET_FORWARD_ARGS_V1_SIZE 32u
#define RAMJET_BACKWARD_ARGS_V1_SIZE 40u
#define RAMJET_UPDATE_ARGS_V1_SIZE 24u
#define RAMJET_BACKEND_VTABLE_V1_SIZE 88u
#define RAMJET_COMPONENT_V1_SIZE 32u
#define RAMJET_PLUGIN_V1_SIZE 40u
/* What version 2 appended. */
#define RAMJET_BACKEND_VTABLE_V2_SIZE 96u
#define RAMJET_COMPONENT_V2_SIZE 40u

#if defined(__cplusplus)
#define RAMJET_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define RAMJET_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* DLPack is part of this ABI: both sides must agree on its layout. */
#if !defined(DLPACK_VERSION) || DLPACK_VERSION < 60
#error "ramjet needs DLPack 0.6 or newer (Debian: libdlpack-dev)"
#endif
RAMJET_STATIC_ASSERT(sizeof(DLDataType) == 4, "DLDataType layout");
RAMJET_STATIC_ASSERT(sizeof(DLDevice) == 8, "DLDevice layout");
RAMJET_STATIC_ASSERT(sizeof(int32_t) == 4 && sizeof(ramjet_status) == 4, "fixed-width codes");

#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
RAMJET_STATIC_ASSERT(sizeof(DLTensor) == 48, "DLTensor layout");
RAMJET_STATIC_ASSERT(sizeof(DLManagedTensor) == 64, "DLManagedTensor layout");
RAMJET_STATIC_ASSERT(offsetof(ramjet_host_api, log) == 8, "ramjet_host_api v1 layout is frozen");
RAMJET_STATIC_ASSERT(offsetof(ramjet_host_api, example_remove) == 96, "ramjet_host_api v1 layout is frozen");
RAMJET_STATIC_ASSERT(sizeof(ramjet_host_api) == RAMJET_HOST_API_V1_SIZE, "ramjet_host_api v1 layout is frozen");
RAMJET_STATIC_ASSERT(sizeof(ramjet_create_info) == RAMJET_CREATE_INFO_V1_SIZE, "ramjet_create_info v1 layout is frozen");
RAMJET_STATIC_ASSERT(offsetof(ramjet_data_source_vtable, cardinality) == 24, "data_source v1 layout is frozen");
RAMJET_STATIC_ASSERT(offsetof(ramjet_data_source_vtable, restore_state) == 80, "data_source v1 layout is frozen");
RAMJET_STATIC_ASSERT(sizeof(ramjet_data_source_vtable) == RAMJET_DATA_SOURCE_VTABLE_V1_SIZE, "data_source v1 layout is frozen");
RAMJET_STATIC_ASSERT(sizeof(ramjet_transform_vtable) == RAMJET_TRANSFORM_VTABLE_V1_SIZE, "transform v1 layout is frozen");
RAMJET_STATIC_ASSERT(sizeof(ramjet_layer_dtypes) == RAMJET_LAYER_DTYPES_V1_SIZE, "ramjet_layer_dtypes v1 layout is frozen");
RAMJET_STATIC_ASSERT(sizeof(ramjet_precision_policy_vtable) == RAMJET_PRECISION_POLICY_VTABLE_V1_SIZE,
                     "precision_policy v1 layout is frozen");
RAMJET_STATIC_ASSERT(sizeof(ramjet_collective_args) == RAMJET_COLLECTIVE_ARGS_V1_SIZE, "collective args v1 layout is frozen");
RAMJET_STATIC_ASSERT(sizeof(ramjet_strategy_vtable) == RAMJET_STRATEGY_VTABLE_V1_SIZE, "strategy v1 layout is frozen");
RAMJET_STATIC_ASSERT(sizeof(ramjet_quantizer_vtable) == RAMJET_QUANTIZER_VTABLE_V1_SIZE, "quantizer v1 layout is frozen");
RAMJET_STATIC_ASSERT(sizeof(ramjet_exporter_vtable) == RAMJET_EXPORTER_VTABLE_V1_SIZE, "exporter v1 layout is frozen");
RAMJET_STATIC_ASSERT(sizeof(ramjet_forward_args) == RAMJET_FORWARD_ARGS_V1_SIZE, "forward args v1 layout is frozen");
RAMJET_STATIC_ASSERT(sizeof(ramjet_backward_args) == RAMJET_BACKWARD_ARGS_V1_SIZE, "backward args v1 layout is frozen");
RAMJET_STATIC_ASSERT(sizeof(ramjet_update_args) == RAMJET_UPDATE_ARGS_V1_SIZE, "ramjet_update_args v1 layout is frozen");
RAMJET_STATIC_ASSERT(offsetof(ramjet_backend_vtable, compile) == 24, "backend v1 layout is frozen");
RAMJET_STATIC_ASSERT(offsetof(ramjet_backend_vtable, set_taps) == 80, "backend v1 layout is frozen");
RAMJET_STATIC_ASSERT(offsetof(ramjet_backend_vtable, check_options) == RAMJET_BACKEND_VTABLE_V1_SIZE,
                     "backend v1 layout is frozen");
RAMJET_STATIC_ASSERT(sizeof(ramjet_backend_vtable) == RAMJET_BACKEND_VTABLE_V2_SIZE, "backend v2 layout is frozen");
RAMJET_STATIC_ASSERT(offsetof(ramjet_component, check_config) == RAMJET_COMPONENT_V1_SIZE,
                     "ramjet_component v1 layout is frozen");
RAMJET_STATIC_ASSERT(sizeof(ramjet_component) == RAMJET_COMPONENT_V2_SIZE, "ramjet_component v2 layout is frozen");
RAMJET_STATIC_ASSERT(sizeof(ramjet_plugin) == RAMJET_PLUGIN_V1_SIZE, "ramjet_plugin v1 layout is frozen");
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RAMJET_ABI_H */
