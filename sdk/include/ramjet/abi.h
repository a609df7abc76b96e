/*
 * ramjet plugin ABI — the one stable boundary between the host (libramjet_core) and plugins.
 *
 * Rules (docs/architecture.md shows where the host side of each lives; the rules themselves are all here):
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
 *
 * Every function below says who owns what and for how long, and what each object needs from threads, in these
 * words (after ONNX Runtime's C API):
 *
 * Ownership
 *  - borrowed: valid only until the call returns; copy what you keep. Every pointer argument is borrowed unless its
 *    comment says otherwise, and so is every host object passed in (ramjet_create_info and its strings,
 *    ramjet_error, ramjet_buffer, ramjet_example, the *_args structs).
 *  - adopts: ownership passes to the callee, which frees the object with the object's own deleter.
 *  - copies: the callee copies the bytes or the tensor data; the caller still owns and frees what it passed.
 *  - Out-parameters are written on RAMJET_OK. On any other status the caller ignores them and frees nothing they
 *    point to, so a failing call frees whatever it had made.
 *  - Static data: the plugin descriptor, its components, their names and vtables live in the plugin library's
 *    static storage. The host reads them in place, never copies them, and they must not change after the entry
 *    call, until the library is unloaded.
 *  - The host keeps a plugin library loaded while anything that may run its code exists: an instance, a program,
 *    or a tensor whose deleter the plugin supplied (see example_set).
 *
 * Threads
 *  - thread-safe: may be called concurrently, from any threads, on the same object.
 *  - serialised: the host never overlaps two such calls on the same object, so the object needs no lock for them;
 *    they may still come from different threads over time (keep no thread-local state between calls).
 *  - Instances are independent: the host may use two instances of one component at the same time, so they share
 *    no unsynchronised state. create and destroy of an instance overlap no other call on that instance.
 *
 * Errors: on failure a call writes its message with error_set on the `error` it was given, before returning, and
 * returns the status; the host acts on the returned status (a non-OK status without a message is reported as
 * "status N without a message"). Text is UTF-8 and NUL-terminated; JSON is UTF-8 text.
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
 * host now calls ramjet_precision_policy_vtable.layer_dtypes for every graph node. Version 3 appended
 * ramjet_backward_args.grad_rows_ready (optional). Version 1 and 2 plugins still load. */
#define RAMJET_ABI_VERSION 3u

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

/* Host-owned error object, one per call, borrowed by that call. Plugins never read it; they fill it with
 * ramjet_host_api.error_set, from the thread running the call. */
typedef struct ramjet_error ramjet_error;

/* Host-owned byte buffer, borrowed by the call it is passed to. Plugins hand text or binary state to the host by
 * copying into it (buffer_assign); the host reads it after the call returns. */
typedef struct ramjet_buffer ramjet_buffer;

/* Host-owned ordered set of named tensors: one example, one batch, a set of parameters or gradients. Borrowed by
 * the call it is passed to; it owns its tensors. Not thread-safe: one thread at a time per example (different
 * examples are independent). */
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
 * Functions the host offers to plugins. The table is the host's: valid from the entry call until the library is
 * unloaded; keep the pointer, never a copy (later versions append slots). Every function is thread-safe and may be
 * called from any thread; none throws. The objects they act on are not thread-safe: a
 * ramjet_error, ramjet_buffer or ramjet_example is used only by the call it was passed to. Check struct_size
 * before using a slot added after version 1.
 */
typedef struct ramjet_host_api {
  uint32_t struct_size;
  uint32_t abi_version;

  /* Log a UTF-8 line. `source` names the component (may be NULL); both strings are borrowed, and the line is
   * written (or dropped, below the host's log level) before log returns. */
  void (*log)(ramjet_log_level level, const char* source, const char* message);

  /* Record a failure in `error` (the one passed to the current call; NULL: ignored). Copies `message` (NULL:
   * empty); a second call replaces the first. The plugin still returns `status` from the failing call. */
  void (*error_set)(ramjet_error* error, ramjet_status status, const char* message);

  /* At least `size` bytes aligned to `alignment` (a power of two; smaller than alignof(max_align_t) is raised to
   * it; size 0 still gives a unique pointer), owned by the caller. Free with `free_aligned`, from any thread.
   * NULL for a bad alignment or when memory runs out. The host never takes such memory over. */
  void* (*alloc_aligned)(size_t size, size_t alignment);
  /* Frees what alloc_aligned returned, nothing else; NULL is a no-op. */
  void (*free_aligned)(void* pointer);

  /* A new zero-filled, C-contiguous CPU tensor (strides NULL, byte_offset 0, data aligned to at least 64 bytes),
   * owned by the caller: call its deleter (from any thread) or hand it to example_set, which adopts it. `shape` is
   * borrowed (copied into the tensor). NULL when ndim < 0, shape is NULL with ndim > 0, a dimension is negative,
   * the size overflows or passes 2^48 bytes, or memory runs out. */
  DLManagedTensor* (*tensor_new)(DLDataType dtype, int32_t ndim, const int64_t* shape);

  /* Copy `size` bytes from `data` (borrowed; may be NULL when size is 0) into `buffer`, replacing what it held:
   * the last call wins. RAMJET_ERR_INVALID_ARGUMENT for a NULL buffer or NULL data with size > 0;
   * RAMJET_ERR_OUT_OF_MEMORY. */
  ramjet_status (*buffer_assign)(ramjet_buffer* buffer, const void* data, size_t size);

  /* Named tensors. Names are UTF-8, unique within an example, kept in insertion order. Every tensor belongs to
   * the example; what these functions return points into it and never outlives the call that lent the example. */
  /* The number of tensors (0 for NULL). */
  size_t (*example_size)(const ramjet_example* example);
  /* The name of tensor `index`, NULL if out of range. The string is the example's: valid until the next
   * example_set or example_remove on this example. */
  const char* (*example_name)(const ramjet_example* example, size_t index);
  /* Tensor `index` (NULL if out of range) or the tensor named `name` (NULL if absent), the example's: valid until
   * that name is replaced or removed. Its data may be written in place; to change its shape, dtype or device,
   * replace it with example_set. */
  DLTensor* (*example_at)(ramjet_example* example, size_t index);
  DLTensor* (*example_find)(ramjet_example* example, const char* name);
  /* Adopts `tensor`, even on failure (it is then deleted at once); copies `name`. Replaces a tensor of the same
   * name, deleting it at once (its deleter runs now, and pointers to it dangle). The tensor may come from
   * tensor_new or carry the plugin's own deleter, which the host may call on any thread, after the component that
   * made it is gone; put such a tensor only into examples the host receives back from the call (data_source
   * get/next, transform apply, forward's outputs, get_state, quantize's out_params), and the host keeps the
   * library loaded until it is deleted. A NULL deleter marks a view the example never frees: its lender keeps the
   * memory valid as long as the call that lent it says (get_state). RAMJET_ERR_INVALID_ARGUMENT for a NULL
   * example, name or tensor or an empty name; RAMJET_ERR_OUT_OF_MEMORY. */
  ramjet_status (*example_set)(ramjet_example* example, const char* name, DLManagedTensor* tensor);
  /* Removes the tensor named `name` and deletes it at once. RAMJET_ERR_INVALID_ARGUMENT when absent. */
  ramjet_status (*example_remove)(ramjet_example* example, const char* name);
} ramjet_host_api;

/* ---- what every component's create() receives ------------------------------------------------------------ */

/* Borrowed, with every string in it, for the duration of create (or check_config): copy what the instance keeps. */
typedef struct ramjet_create_info {
  uint32_t struct_size;
  uint32_t abi_version;
  const char* config_json; /* the component's manifest object as JSON text, UTF-8, NUL-terminated */
  const char* base_dir;    /* directory that relative paths in the config are relative to */
  const char* where;       /* human-readable location of the config, e.g. "pipeline.json#/data/train/source" */
  uint64_t seed;           /* run seed; per-element randomness is derived from it by the host (transform apply) */
  uint32_t num_threads;    /* threads the component may use of its own (0: decide yourself) */
  uint32_t reserved_;
} ramjet_create_info;

/* Common head of every component vtable. */
#define RAMJET_VTABLE_HEAD                                                                            \
  uint32_t struct_size;                                                                               \
  uint32_t abi_version;                                                                               \
  /* Create an instance from its configuration (`info`, borrowed). On RAMJET_OK *out_self is the new, \
   * non-NULL instance (NULL counts as a failure), owned by the host until it calls destroy(self)     \
   * exactly once. On failure the host never calls destroy: free what you made. */                    \
  ramjet_status (*create)(const ramjet_create_info* info, void** out_self, ramjet_error* error);      \
  /* Destroy an instance. Never fails. Called once, after every other call on the instance has        \
   * returned; tensors it put into host examples may outlive it (their deleters must not need it). */ \
  void (*destroy)(void* self)

/* ---- data_source ------------------------------------------------------------------------------------------ */

/*
 * Produces examples as named tensors. Random-access sources implement `get` and report a cardinality >= 0;
 * sequential sources implement `next` and report -1. The host uses get when the slot is there and the cardinality
 * is >= 0, otherwise next: never both on one instance.
 *
 * Threads: cardinality, element_spec and get are thread-safe: the host's pipeline threads call get on one instance
 * at once, each with its own `out`. next, reset, shard, save_state and restore_state are serialised with each
 * other and never overlap a get; consecutive next calls may come from different threads (the host reads ahead).
 * Filling `out`: add tensors with example_set, which adopts them; `out` is empty on entry.
 */
typedef struct ramjet_data_source_vtable {
  RAMJET_VTABLE_HEAD;
  /* Number of elements after sharding, or -1 when unknown (sequential). Constant between shard calls. */
  ramjet_status (*cardinality)(void* self, int64_t* out_count, ramjet_error* error);
  /* JSON describing each tensor, copied into out_json: {"image": {"dtype": "uint8", "shape": [28, 28, 1]}, ...}.
   * Optional. */
  ramjet_status (*element_spec)(void* self, ramjet_buffer* out_json, ramjet_error* error);
  /* Random access: fill `out` with element `index` (0 <= index < cardinality). The same index always gives the
   * same element: the host may read an element more than once. Optional. */
  ramjet_status (*get)(void* self, int64_t index, ramjet_example* out, ramjet_error* error);
  /* Sequential: fill `out` and set *out_has_element to 1, or set it to 0 at the end (leaving `out` empty).
   * Optional. */
  ramjet_status (*next)(void* self, ramjet_example* out, int32_t* out_has_element, ramjet_error* error);
  /* Start epoch `epoch` (rewind, reshuffle files): called before each epoch's first next, the first epoch's too.
   * Optional. */
  ramjet_status (*reset)(void* self, uint64_t epoch, ramjet_error* error);
  /* Keep only elements i with i % count == index (0 <= index < count); called, if at all, before the first get
   * or next. Optional: the host shards random-access sources itself. */
  ramjet_status (*shard)(void* self, int64_t count, int64_t index, ramjet_error* error);
  /* Opaque position of a sequential source, for checkpoints, copied into out_state. Optional. */
  ramjet_status (*save_state)(void* self, ramjet_buffer* out_state, ramjet_error* error);
  /* Return to a position save_state wrote, perhaps in another process; `state` is borrowed (copy it). Optional. */
  ramjet_status (*restore_state)(void* self, const void* state, size_t size, ramjet_error* error);
} ramjet_data_source_vtable;

/* ---- transform -------------------------------------------------------------------------------------------- */

/*
 * A pure function of (example, seed) -> example, applied in place to `example` (borrowed): it may write the data
 * of its tensors, replace them with example_set (the old one is deleted at once) or remove them. The tensors may
 * come from the host or from a data source (any deleter). The same (example, seed) always gives the same result:
 * the host may apply a transform to an element more than once. The host derives `seed` from (run seed, epoch,
 * element index, stage) so parallel random augmentation is deterministic.
 *
 * Threads: apply is thread-safe: the host's pipeline threads call it on one instance at once, each with its own
 * example.
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

/*
 * Threads: layer_dtypes is thread-safe and changes nothing. loss_scale, update, save_state and restore_state are
 * serialised: the training loop calls them in step order.
 */
typedef struct ramjet_precision_policy_vtable {
  RAMJET_VTABLE_HEAD;
  /* Dtypes for one graph node, given its graph-IR JSON object (type, name, attributes; borrowed). `out` is the
   * caller's (see the out-struct rule above). The host asks for every node before compiling and hands the answers
   * to the backend as the "layer_dtypes" compile option. */
  ramjet_status (*layer_dtypes)(void* self, const char* layer_json, ramjet_layer_dtypes* out,
                                ramjet_error* error);
  /* Current loss scale (1 when the policy does not scale). Asked before each backward, whose
   * ramjet_backward_args.loss_scale it becomes. */
  ramjet_status (*loss_scale)(void* self, float* out_scale, ramjet_error* error);
  /* After each step's backward: whether any gradient was inf/NaN (what backward reported through
   * out_found_nonfinite). Sets *out_skip_step to 1 if the optimizer update must be skipped, and adjusts the scale
   * for the steps that follow. */
  ramjet_status (*update)(void* self, int32_t found_nonfinite, int32_t* out_skip_step, ramjet_error* error);
  /* Loss-scaler state for checkpoints, copied into out_state; restore_state's `state` is borrowed (copy it).
   * Optional. */
  ramjet_status (*save_state)(void* self, ramjet_buffer* out_state, ramjet_error* error);
  ramjet_status (*restore_state)(void* self, const void* state, size_t size, ramjet_error* error);
} ramjet_precision_policy_vtable;

/* ---- strategy --------------------------------------------------------------------------------------------- */

typedef int32_t ramjet_reduce_op;
enum { RAMJET_REDUCE_SUM = 0, RAMJET_REDUCE_MEAN = 1, RAMJET_REDUCE_MAX = 2, RAMJET_REDUCE_MIN = 3 };

/* Arguments of every collective, borrowed for the call. `stream` is the backend's queue (a cudaStream_t for the
 * cuda backend, NULL on CPU) so a GPU strategy can enqueue on it instead of synchronising the device. */
typedef struct ramjet_collective_args {
  uint32_t struct_size;
  uint32_t abi_version;
  ramjet_reduce_op op; /* all-reduce only */
  int32_t root;        /* broadcast only */
  void* stream;
} ramjet_collective_args;

/*
 * Collectives: every rank makes the same calls, on tensors of the same dtype and shape, in the same order. A rank
 * that dies or stalls makes the others fail with an error (a timeout), never hang. Tensors are borrowed from the
 * host (its own or a backend's views), read and written in place.
 *
 * Threads: rank and world_size are thread-safe and constant for the instance's life. broadcast, all_reduce,
 * barrier, all_reduce_start and all_reduce_wait are serialised: the host issues collectives from one thread at a
 * time.
 */
typedef struct ramjet_strategy_vtable {
  RAMJET_VTABLE_HEAD;
  ramjet_status (*rank)(void* self, int32_t* out_rank, ramjet_error* error);
  ramjet_status (*world_size)(void* self, int32_t* out_size, ramjet_error* error);
  /* In place: every rank ends with args->root's values. */
  ramjet_status (*broadcast)(void* self, DLTensor* tensor, const ramjet_collective_args* args, ramjet_error* error);
  /* In place, complete on return (or, with a stream, complete in stream order). */
  ramjet_status (*all_reduce)(void* self, DLTensor* tensor, const ramjet_collective_args* args, ramjet_error* error);
  ramjet_status (*barrier)(void* self, ramjet_error* error);
  /* Non-blocking all-reduce for overlapping with backward; finish with all_reduce_wait. Here `tensor` stays
   * borrowed until the matching wait returns: neither side touches its data or frees it before. Every handle that
   * start returned with RAMJET_OK is waited for exactly once. Optional (both or neither). */
  ramjet_status (*all_reduce_start)(void* self, DLTensor* tensor, const ramjet_collective_args* args,
                                    uint64_t* out_handle, ramjet_error* error);
  ramjet_status (*all_reduce_wait)(void* self, uint64_t handle, ramjet_error* error);
} ramjet_strategy_vtable;

/* ---- quantizer and exporter ------------------------------------------------------------------------------- */

/* Threads: observe, quantize and export_model are serialised. */
typedef struct ramjet_quantizer_vtable {
  RAMJET_VTABLE_HEAD;
  /* Calibration: see one activation of the named graph tensor (called for every tapped tensor and batch, from the
   * forward's tap). `tensor_name` and `value`, a CPU tensor, are borrowed: keep statistics, never the pointers. */
  ramjet_status (*observe)(void* self, const char* tensor_name, const DLTensor* value, ramjet_error* error);
  /* Produce the quantized graph (graph-IR JSON with quantization parameters) and its quantized tensors, after the
   * last observe. `graph_json` and `params` (the float parameters) are borrowed: read, never adopted, changed or
   * kept. The graph is copied into out_graph; the quantized tensors go into out_params (an empty host example)
   * with example_set, which adopts them. */
  ramjet_status (*quantize)(void* self, const char* graph_json, ramjet_example* params, ramjet_buffer* out_graph,
                            ramjet_example* out_params, ramjet_error* error);
} ramjet_quantizer_vtable;

typedef struct ramjet_exporter_vtable {
  RAMJET_VTABLE_HEAD;
  /* Write the graph and its tensors to `path`; the file appears only when complete (ramjet/sdk/atomic_file.hpp).
   * `graph_json`, `params` and `path` are borrowed: read, never adopted, changed or kept. */
  ramjet_status (*export_model)(void* self, const char* graph_json, ramjet_example* params, const char* path,
                                ramjet_error* error);
} ramjet_exporter_vtable;

/* ---- backend ---------------------------------------------------------------------------------------------- */

/* A compiled graph, owned by the backend instance that made it. The host destroys each program with
 * program_destroy, exactly once, before it destroys that instance. */
typedef struct ramjet_program ramjet_program;

/* Called for each tapped activation during forward (calibration, debugging), on the thread that called forward.
 * `tensor_name` and the tensor are borrowed: the tensor is CPU-readable (a device backend copies it to the host
 * first) and valid only during the call. A non-OK return aborts the forward, which returns that status and
 * message. */
typedef ramjet_status (*ramjet_tap_fn)(void* user, const char* tensor_name, const DLTensor* value,
                                       ramjet_error* error);

/* Called during backward as each parameter's gradient becomes final (reverse layer order), so the host can start
 * all-reducing a bucket while the rest of backward runs. Called before backward returns, possibly from any of the
 * backend's threads (so the host's function is thread-safe). `parameter_name` is borrowed; `gradient` is the view
 * get_state(RAMJET_STATE_GRADIENTS) returns, which the host may read and write until the next backward. */
typedef void (*ramjet_grad_ready_fn)(void* user, const char* parameter_name, DLTensor* gradient);

/* Called during backward, before grad_ready for the same parameter, when the first `rows_final` rows of a large
 * gradient (along its first dimension) are final while the rest is still being computed, so the host can send
 * them before the whole is done. For one parameter the calls come in increasing `rows_final`, from one thread at a
 * time; grad_ready still follows for the whole. A backend calls it where it computes a gradient in pieces, and may
 * never call it. The thread-safety, names and gradient view are grad_ready's. */
typedef void (*ramjet_grad_rows_ready_fn)(void* user, const char* parameter_name, DLTensor* gradient,
                                          int64_t rows_final);

/* The *_args structs are borrowed for the call, like every argument. */
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
  int32_t* out_found_nonfinite; /* optional (the host's): set to 1 when any gradient is inf or NaN, else 0 */
  /* Version 3. Read only where struct_size >= RAMJET_BACKWARD_ARGS_V3_SIZE. */
  ramjet_grad_rows_ready_fn grad_rows_ready; /* optional; called with grad_ready_user */
} ramjet_backward_args;

typedef struct ramjet_update_args {
  uint32_t struct_size;
  uint32_t abi_version;
  int64_t step;          /* optimizer step, 1-based */
  float learning_rate;   /* for this step, after schedules */
  float gradient_scale;  /* multiply gradients by this before the update (1/loss_scale × clip factor) */
} ramjet_update_args;

/* Names the backend and the host agree on: the outputs a forward writes besides the graph's own. A forward whose
 * inputs include the graph's labels (training or evaluation) writes:
 *  RAMJET_OUTPUT_LOSS     a float32 CPU scalar (ndim 0): the batch's mean loss, before any loss scaling. Required:
 *                         the host reads it after every training step (progress, history, the non-finite check)
 *                         and every evaluation batch.
 *  RAMJET_OUTPUT_CORRECT  an int32 CPU scalar, for classifiers only: how many of the batch's examples have their
 *                         label as the top-1 prediction (accuracy = correct / batch size).
 *  RAMJET_OUTPUT_COUNTED  an int32 CPU scalar, optional, beside RAMJET_OUTPUT_CORRECT: how many positions the loss
 *                         and `correct` count when that is not the batch size (a sequence model's tokens, less
 *                         those whose label is ignored). Then loss is the mean over them and accuracy = correct /
 *                         counted; a host weighs the batch's loss by it. */
#define RAMJET_OUTPUT_LOSS "loss"
#define RAMJET_OUTPUT_CORRECT "correct"
#define RAMJET_OUTPUT_COUNTED "counted"
/* The `which` of get_state/set_state, each an example of tensors named after the graph's parameters:
 *  RAMJET_STATE_PARAMETERS  every weight, trainable or not, in Keras layouts. get_state gives copies; set_state
 *                           copies them in (initial weights, checkpoints, early stopping's best weights, an int8
 *                           program's quantized weights).
 *  RAMJET_STATE_GRADIENTS   the gradient of every trainable parameter, as backward left it. get_state gives views
 *                           (NULL deleter) valid until program_destroy, which the host fetches once and reads and
 *                           writes in place between backward and optimizer_update (all-reduce, clipping).
 *  RAMJET_STATE_OPTIMIZER   the optimizer's slots (e.g. Adam's moments), as copies, for checkpoints.
 *  RAMJET_STATE_BUFFERS     running statistics that are not trained (batch-norm means and variances); may be empty.
 * A backend answers RAMJET_ERR_INVALID_ARGUMENT to a name it does not know. */
#define RAMJET_STATE_PARAMETERS "parameters"
#define RAMJET_STATE_GRADIENTS "gradients"
#define RAMJET_STATE_OPTIMIZER "optimizer"
#define RAMJET_STATE_BUFFERS "buffers"

/*
 * Threads: every call on one program (forward, backward, optimizer_update, get_state, set_state, set_taps) is
 * serialised, and so are compile and program_destroy on the instance: the host drives a backend from one thread at
 * a time. check_options is thread-safe and needs no instance.
 */
typedef struct ramjet_backend_vtable {
  RAMJET_VTABLE_HEAD;
  /* Compile a whole graph-IR JSON once. `graph_json` and `options_json` are borrowed; the options carry
   * precision, layer_dtypes, optimizer, batch size and threads. On RAMJET_OK *out is a new program owned by this
   * instance (see ramjet_program). */
  ramjet_status (*compile)(void* self, const char* graph_json, const char* options_json, ramjet_program** out,
                           ramjet_error* error);
  /* Destroy a program. Never fails; called once per program, after every other call on it has returned. */
  void (*program_destroy)(void* self, ramjet_program* program);
  /* Run the graph on `inputs` (borrowed, read only: the host's batch); outputs (and the loss, when labels are among
   * the inputs: see RAMJET_OUTPUT_LOSS) go into `outputs`, which may still hold this program's outputs from an
   * earlier forward: write into them in place or replace them with example_set, which adopts the new ones. A
   * training forward keeps what backward needs. */
  ramjet_status (*forward)(void* self, ramjet_program* program, const ramjet_forward_args* args,
                           ramjet_example* inputs, ramjet_example* outputs, ramjet_error* error);
  /* Back-propagate the loss of the last training forward (with labels) into the gradient buffers, calling
   * args->grad_ready, when set, as each gradient becomes final. */
  ramjet_status (*backward)(void* self, ramjet_program* program, const ramjet_backward_args* args,
                            ramjet_error* error);
  /* Apply one optimizer step to the parameters from the current gradients (times args->gradient_scale). */
  ramjet_status (*optimizer_update)(void* self, ramjet_program* program, const ramjet_update_args* args,
                                    ramjet_error* error);
  /* Views or copies of named state (`which`: a RAMJET_STATE_* name, borrowed) into `out`, an empty host example.
     Copies are adopted by the example. Views carry a NULL deleter, stay valid until the program is destroyed and
     may be written in place (e.g. all-reduce of gradients). */
  ramjet_status (*get_state)(void* self, ramjet_program* program, const char* which, ramjet_example* out,
                             ramjet_error* error);
  /* Copy `values` into the named state. `values` is borrowed: never adopted, changed or kept (the host may change
     or free it after the call). On failure the state should be unchanged. */
  ramjet_status (*set_state)(void* self, ramjet_program* program, const char* which, ramjet_example* values,
                             ramjet_error* error);
  /* Tap the named tensors (JSON array of names, borrowed; "[]" clears) on every later forward. The backend keeps
     `fn` and `user` until the next set_taps or program_destroy, and the host keeps what `user` points to alive
     that long. Optional. */
  ramjet_status (*set_taps)(void* self, ramjet_program* program, const char* names_json, ramjet_tap_fn fn,
                            void* user, ramjet_error* error);
  /* ABI 2. Optional. Judge compile options (the JSON compile() would receive, without the graph: "optimizer",
   * "layer_dtypes", "threads", "batch"; borrowed) without compiling anything, so `ramjet validate` reports a bad
   * optimizer option in the backend's own words. Copies into `out_problems` a JSON array of {"pointer",
   * "message"} objects, pointers relative to the options object ("/optimizer/beta_1"); an empty array when all is
   * well. Returns non-OK only when it could not judge at all. Needs no instance: `self` is not passed.
   * Thread-safe. */
  ramjet_status (*check_options)(const char* options_json, ramjet_buffer* out_problems, ramjet_error* error);
} ramjet_backend_vtable;

/* ---- the plugin descriptor -------------------------------------------------------------------------------- */

/* Static data of the plugin library (see Ownership): the host reads it in place until it unloads the library. */
typedef struct ramjet_component {
  uint32_t struct_size;
  uint32_t abi_version;
  ramjet_component_kind kind;
  int32_t reserved_;
  const char* name;   /* unique within its kind across loaded plugins (see README: duplicate rule); static */
  const void* vtable; /* points to the vtable struct of `kind`, e.g. ramjet_transform_vtable; static */
  /* ABI 2. Optional. Judge a configuration without creating anything (what `ramjet validate` calls): `info` is
   * exactly what create() would receive (borrowed). Copies into `out_problems` a JSON array of {"pointer",
   * "message"} objects, pointers relative to the configuration object ("/method"; "" for the object itself),
   * messages in the component's own words without the location (the host prefixes file and pointer); an empty
   * array when all is well. Returns non-OK only when it could not judge at all. No side effects: no file is opened.
   * Thread-safe. */
  ramjet_status (*check_config)(const ramjet_create_info* info, ramjet_buffer* out_problems, ramjet_error* error);
} ramjet_component;

typedef struct ramjet_plugin {
  uint32_t struct_size;
  uint32_t abi_version; /* the version this plugin chose within the host's range */
  const char* name;    /* must equal the manifest's "name"; static */
  const char* version; /* static */
  size_t component_count;
  /* Pointers, not an array of structs, so ramjet_component can grow without changing the stride. Static storage:
     valid until the library is unloaded. */
  const ramjet_component* const* components;
} ramjet_plugin;

/*
 * The entry point, exported as RAMJET_ENTRY_SYMBOL. The host calls it once each time it loads the library, from one
 * thread, before anything else in the library. `host` is the host's table (keep the pointer: valid until the
 * library is unloaded); `error` is borrowed. The plugin picks an ABI version within [host_abi_min, host_abi_max],
 * registers nothing globally, and sets *out_plugin to its static descriptor (see ramjet_plugin), or returns an error
 * status with a message (e.g. no common version, a missing runtime dependency).
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
#define RAMJET_BACKWARD_ARGS_V3_SIZE 48u
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
RAMJET_STATIC_ASSERT(offsetof(ramjet_backward_args, grad_rows_ready) == RAMJET_BACKWARD_ARGS_V1_SIZE,
                     "backward args v1 layout is frozen");
RAMJET_STATIC_ASSERT(sizeof(ramjet_backward_args) == RAMJET_BACKWARD_ARGS_V3_SIZE, "backward args v3 layout is frozen");
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
