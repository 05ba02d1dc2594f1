/* onyx's C API: load an ONNX model, inspect it, run it. For other languages and for C
 * programs; the C++ API (onyx/session.h) is the same runtime.
 *
 * Conventions:
 * - Every object is an opaque handle created by an onyx_*_create function (or handed out
 *   by one) and released by the matching onyx_*_free; the free functions accept NULL.
 * - A function that can fail returns an OnyxStatus*: NULL means success; otherwise the
 *   caller owns the status (its code and message say what went wrong) and frees it with
 *   onyx_status_free. No C++ exception crosses this API.
 * - Strings handed out by onyx (names, messages) are NUL-terminated UTF-8 and live as long
 *   as the object they came from.
 * - Thread safety: onyx_session_run may be called from any number of threads at once on
 *   one session; every other function reads or writes only the objects passed to it, so
 *   distinct objects may be used from distinct threads freely. A session must not be freed
 *   while a run on it is in progress.
 */
#ifndef ONYX_ONYX_C_H_
#define ONYX_ONYX_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Version of this API: bumped when a function is added (never changed or removed). */
#define ONYX_C_API_VERSION 1

/** The library's version string ("0.1.0"). */
const char* onyx_version(void);

/* ---- Status ---------------------------------------------------------------------- */

/** What went wrong; the codes after ONYX_OK mirror onyx::ErrorCode. */
typedef enum OnyxErrorCode {
  ONYX_OK = 0,
  ONYX_INVALID_MODEL = 1,    /**< not a valid ONNX model (malformed protobuf, bad graph) */
  ONYX_UNSUPPORTED = 2,      /**< valid model, but an op/opset/dtype onyx cannot run */
  ONYX_INVALID_ARGUMENT = 3, /**< bad argument: input name, dtype, shape, NULL handle */
  ONYX_IO = 4,               /**< a file could not be read */
  ONYX_RUNTIME = 5,          /**< failure while executing a node */
  ONYX_LIMIT = 6,            /**< a resource limit of the session options was reached */
  ONYX_CANCELLED = 7,        /**< the run was stopped through onyx_run_options_set_terminate */
  ONYX_OUT_OF_MEMORY = 8,    /**< an allocation failed */
  ONYX_INTERNAL = 9          /**< anything else (a bug in onyx: please report it) */
} OnyxErrorCode;

typedef struct OnyxStatus OnyxStatus;

OnyxErrorCode onyx_status_code(const OnyxStatus* status); /**< ONYX_OK for NULL */
const char* onyx_status_message(const OnyxStatus* status); /**< "" for NULL */
void onyx_status_free(OnyxStatus* status);

/* ---- Element types (codes equal ONNX TensorProto.DataType) ------------------------ */

typedef enum OnyxDType {
  ONYX_DTYPE_UNDEFINED = 0,
  ONYX_DTYPE_FLOAT = 1,
  ONYX_DTYPE_UINT8 = 2,
  ONYX_DTYPE_INT8 = 3,
  ONYX_DTYPE_UINT16 = 4,
  ONYX_DTYPE_INT16 = 5,
  ONYX_DTYPE_INT32 = 6,
  ONYX_DTYPE_INT64 = 7,
  ONYX_DTYPE_STRING = 8,
  ONYX_DTYPE_BOOL = 9,
  ONYX_DTYPE_FLOAT16 = 10,
  ONYX_DTYPE_DOUBLE = 11,
  ONYX_DTYPE_UINT32 = 12,
  ONYX_DTYPE_UINT64 = 13,
  ONYX_DTYPE_COMPLEX64 = 14,
  ONYX_DTYPE_COMPLEX128 = 15,
  ONYX_DTYPE_BFLOAT16 = 16,
  ONYX_DTYPE_FLOAT8E4M3FN = 17,
  ONYX_DTYPE_FLOAT8E4M3FNUZ = 18,
  ONYX_DTYPE_FLOAT8E5M2 = 19,
  ONYX_DTYPE_FLOAT8E5M2FNUZ = 20,
  ONYX_DTYPE_UINT4 = 21,
  ONYX_DTYPE_INT4 = 22,
  ONYX_DTYPE_FLOAT4E2M1 = 23,
  ONYX_DTYPE_FLOAT8E8M0 = 24,
  ONYX_DTYPE_UINT2 = 25,
  ONYX_DTYPE_INT2 = 26
} OnyxDType;

/** Lower-case ONNX name ("float", "int64"), or "" for an unknown code. */
const char* onyx_dtype_name(int32_t dtype);
/** Bytes per element in memory (sub-byte types take one byte each, unpacked); 0 for
 *  strings and unknown codes. */
size_t onyx_dtype_size(int32_t dtype);

/* ---- Session options ------------------------------------------------------------- */

typedef struct OnyxSessionOptions OnyxSessionOptions;

/** Graph rewriting before planning (onyx::GraphOptimization). */
typedef enum OnyxGraphOptimization {
  ONYX_OPTIMIZE_NONE = 0,
  ONYX_OPTIMIZE_BASIC = 1,
  ONYX_OPTIMIZE_ALL = 2
} OnyxGraphOptimization;

/** Options with onyx's defaults (1 thread, ONYX_OPTIMIZE_ALL, the default limits). */
OnyxStatus* onyx_session_options_create(OnyxSessionOptions** out);
void onyx_session_options_free(OnyxSessionOptions* options);
/** Threads of the session's pool, the calling thread included (>= 1). */
OnyxStatus* onyx_session_options_set_threads(OnyxSessionOptions* options, int threads);
OnyxStatus* onyx_session_options_set_optimization(OnyxSessionOptions* options, OnyxGraphOptimization level);
/** Nonzero: every node runs on its reference kernel. */
OnyxStatus* onyx_session_options_set_reference_kernels(OnyxSessionOptions* options, int on);
/** Limits (0 turns one off): largest tensor one node may create, bytes one run may hold
 *  at once, iterations of one Loop/Scan/SequenceMap execution. */
OnyxStatus* onyx_session_options_set_max_tensor_bytes(OnyxSessionOptions* options, uint64_t bytes);
OnyxStatus* onyx_session_options_set_max_run_bytes(OnyxSessionOptions* options, uint64_t bytes);
OnyxStatus* onyx_session_options_set_max_loop_iterations(OnyxSessionOptions* options, int64_t iterations);

/* ---- Session --------------------------------------------------------------------- */

typedef struct OnyxSession OnyxSession;

/** Loads, checks and plans a model file; `options` may be NULL (defaults). */
OnyxStatus* onyx_session_create(const char* path, const OnyxSessionOptions* options, OnyxSession** out);
/** The same from a serialized ModelProto in memory (copied: it need not outlive the call).
 *  A model whose tensors live in external files is refused. */
OnyxStatus* onyx_session_create_from_bytes(const void* data, size_t size, const OnyxSessionOptions* options,
                                           OnyxSession** out);
void onyx_session_free(OnyxSession* session);

/** Graph inputs or outputs, for the onyx_session_io_* functions. */
typedef enum OnyxIoSide { ONYX_INPUTS = 0, ONYX_OUTPUTS = 1 } OnyxIoSide;

/** Number of graph inputs or outputs (0 for a NULL session). */
size_t onyx_session_io_count(const OnyxSession* session, OnyxIoSide side);
/* The functions below take the position `index` of an input or output; out of range (or
 * a NULL session) they return NULL / "" / ONYX_DTYPE_UNDEFINED / -1. */
const char* onyx_session_io_name(const OnyxSession* session, OnyxIoSide side, size_t index);
/** Declared type as text: "float[N, 3, 224, 224]", "seq(tensor(int64))". */
const char* onyx_session_io_type(const OnyxSession* session, OnyxIoSide side, size_t index);
/** The type as onnxruntime spells it: "tensor(float)", "seq(tensor(int64))". */
const char* onyx_session_io_onnx_type(const OnyxSession* session, OnyxIoSide side, size_t index);
/** Element type (of the tensor, or of the tensors of a sequence). */
int32_t onyx_session_io_dtype(const OnyxSession* session, OnyxIoSide side, size_t index);
/** 1 for a tensor, 0 for a sequence or optional. */
int onyx_session_io_is_tensor(const OnyxSession* session, OnyxIoSide side, size_t index);
/** Rank of the declared shape, or -1 when the model declares none. */
int64_t onyx_session_io_rank(const OnyxSession* session, OnyxIoSide side, size_t index);
/** Extent of axis `axis`, or -1 where symbolic or unknown. */
int64_t onyx_session_io_dim(const OnyxSession* session, OnyxIoSide side, size_t index, size_t axis);
/** Symbol of axis `axis` ("N"), or "" where the extent is fixed or unnamed. */
const char* onyx_session_io_dim_name(const OnyxSession* session, OnyxIoSide side, size_t index, size_t axis);
/** 1 when an initializer gives the input a default (it may be left out of a run). */
int onyx_session_io_has_default(const OnyxSession* session, OnyxIoSide side, size_t index);

/** Text fields of the model (ModelProto and its main graph). */
typedef enum OnyxModelField {
  ONYX_MODEL_PRODUCER_NAME = 0,
  ONYX_MODEL_PRODUCER_VERSION = 1,
  ONYX_MODEL_DOMAIN = 2,
  ONYX_MODEL_DOC_STRING = 3,
  ONYX_MODEL_GRAPH_NAME = 4,
  ONYX_MODEL_GRAPH_DOC_STRING = 5 /**< empty today: the loader drops the graph's doc string */
} OnyxModelField;

/** The field's text ("" when the model leaves it empty; NULL for a bad field/session). */
const char* onyx_session_model_string(const OnyxSession* session, OnyxModelField field);
int64_t onyx_session_model_version(const OnyxSession* session);
int64_t onyx_session_ir_version(const OnyxSession* session);
/** Opset imports: count, then domain ("" is the default domain) and version of each. */
size_t onyx_session_opset_count(const OnyxSession* session);
OnyxStatus* onyx_session_opset(const OnyxSession* session, size_t index, const char** domain, int64_t* version);
/** metadata_props: count, then key and value of each, in file order. */
size_t onyx_session_metadata_count(const OnyxSession* session);
OnyxStatus* onyx_session_metadata(const OnyxSession* session, size_t index, const char** key, const char** value);

/* ---- Values ---------------------------------------------------------------------- */

/** A tensor, a sequence of tensors, or an empty optional. */
typedef struct OnyxValue OnyxValue;

typedef enum OnyxValueKind { ONYX_VALUE_NONE = 0, ONYX_VALUE_TENSOR = 1, ONYX_VALUE_SEQUENCE = 2 } OnyxValueKind;

/** A zero-filled tensor (strings: empty) that onyx owns; fill it through onyx_tensor_data
 *  or onyx_tensor_set_string. `dims` may be NULL when `rank` is 0 (a scalar). */
OnyxStatus* onyx_tensor_create(int32_t dtype, const int64_t* dims, size_t rank, OnyxValue** out);
/** A tensor that reads and writes `data` in place (no copy): `data_bytes` must equal the
 *  element count times onyx_dtype_size(dtype), and the memory must stay valid until the
 *  value is freed and no run that was given it is in progress. Not for strings. */
OnyxStatus* onyx_tensor_create_view(int32_t dtype, const int64_t* dims, size_t rank, void* data,
                                    size_t data_bytes, OnyxValue** out);
/** An empty optional (for an optional input left empty). */
OnyxStatus* onyx_value_create_none(OnyxValue** out);
/** A sequence of copies of the handles of `items` (tensors, all of `elem_dtype`). */
OnyxStatus* onyx_sequence_create(int32_t elem_dtype, const OnyxValue* const* items, size_t count,
                                 OnyxValue** out);
void onyx_value_free(OnyxValue* value);

OnyxValueKind onyx_value_kind(const OnyxValue* value);
/* Tensor accessors: for a value that is not a tensor they return ONYX_DTYPE_UNDEFINED,
 * 0 or NULL. */
int32_t onyx_tensor_dtype(const OnyxValue* value);
size_t onyx_tensor_rank(const OnyxValue* value);
/** The `rank` extents (valid as long as the value). */
const int64_t* onyx_tensor_dims(const OnyxValue* value);
int64_t onyx_tensor_numel(const OnyxValue* value);
/** Bytes at onyx_tensor_data (element count times onyx_dtype_size; 0 for strings). */
size_t onyx_tensor_nbytes(const OnyxValue* value);
/** The elements, densely in row-major order (NULL for strings: use the string calls). */
void* onyx_tensor_data(OnyxValue* value);
/** Element `index` of a string tensor: pointer and length (the bytes may hold NULs). */
OnyxStatus* onyx_tensor_get_string(const OnyxValue* value, size_t index, const char** data, size_t* size);
OnyxStatus* onyx_tensor_set_string(OnyxValue* value, size_t index, const char* data, size_t size);
/** Items of a sequence: count, and a new handle to item `index` (free it). */
size_t onyx_sequence_length(const OnyxValue* value);
OnyxStatus* onyx_sequence_item(const OnyxValue* value, size_t index, OnyxValue** out);

/* ---- Running --------------------------------------------------------------------- */

typedef struct OnyxRunOptions OnyxRunOptions;

OnyxStatus* onyx_run_options_create(OnyxRunOptions** out);
void onyx_run_options_free(OnyxRunOptions* options);
/** Nonzero (from any thread): a run given these options stops before its next node and
 *  returns ONYX_CANCELLED. Zero clears the flag for later runs. */
void onyx_run_options_set_terminate(OnyxRunOptions* options, int terminate);

/** Runs the model on `input_count` named inputs. With `output_names` NULL, writes all
 *  outputs in model order: `outputs` must hold onyx_session_io_count(session,
 *  ONYX_OUTPUTS) slots and `output_count` equal it; otherwise it writes the outputs named
 *  (`output_count` of them), in that order. The caller frees every output written. On
 *  failure no output is written. `run_options` may be NULL. */
OnyxStatus* onyx_session_run(OnyxSession* session, const OnyxRunOptions* run_options,
                             const char* const* input_names, const OnyxValue* const* inputs, size_t input_count,
                             const char* const* output_names, size_t output_count, OnyxValue** outputs);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ONYX_ONYX_C_H_
