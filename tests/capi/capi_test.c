/* The C API in plain C11: models/tiny-cnn through onyx_c.h, from a path and from bytes,
 * compared with PyTorch's probabilities (probs.torch.npy, within 1e-5) and bit for bit
 * with what the C++ Session wrote through `onyx run` (given as --cli-output), plus the
 * error paths: a missing file, truncated bytes, an unknown input or output name, a
 * channels-last image, a terminated run, NULL handles.
 *
 * usage: onyx_capi_test MODEL.onnx IMAGE.npy TORCH_PROBS.npy CLI_PROBS.npy
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onyx/onyx_c.h"

static int failures = 0;

#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) {                                         \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fprintf(stderr, "\n");                               \
      ++failures;                                          \
    }                                                      \
  } while (0)

/* A status that must be NULL; prints its message otherwise. */
#define CHECK_OK(expr)                                                                        \
  do {                                                                                        \
    OnyxStatus* st_ = (expr);                                                                 \
    if (st_) {                                                                                \
      fprintf(stderr, "FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #expr, onyx_status_message(st_)); \
      ++failures;                                                                             \
      onyx_status_free(st_);                                                                  \
    }                                                                                         \
  } while (0)

/* A status that must carry `code` and a message containing `needle`. */
static void expect_error(OnyxStatus* st, OnyxErrorCode code, const char* needle, const char* what) {
  if (!st) {
    fprintf(stderr, "FAIL %s: succeeded, expected error %d\n", what, (int)code);
    ++failures;
    return;
  }
  if (onyx_status_code(st) != code || !strstr(onyx_status_message(st), needle)) {
    fprintf(stderr, "FAIL %s: got code %d message '%s', expected code %d containing '%s'\n", what,
            (int)onyx_status_code(st), onyx_status_message(st), (int)code, needle);
    ++failures;
  }
  onyx_status_free(st);
}

static unsigned char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char* buf = malloc(n > 0 ? (size_t)n : 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return buf;
}

/* A little-endian float32 C-order .npy file: its data and element count. */
typedef struct {
  unsigned char* file;
  const float* data;
  size_t count;
} Npy;

static int read_npy_f32(const char* path, Npy* out) {
  size_t size = 0;
  out->file = read_file(path, &size);
  if (!out->file || size < 10 || memcmp(out->file, "\x93NUMPY", 6) != 0) return 0;
  size_t header = out->file[6] == 1 ? (size_t)out->file[8] | ((size_t)out->file[9] << 8)
                                    : (size_t)out->file[8] | ((size_t)out->file[9] << 8) |
                                          ((size_t)out->file[10] << 16) | ((size_t)out->file[11] << 24);
  size_t start = (out->file[6] == 1 ? 10 : 12) + header;
  if (start > size) return 0;
  char* h = malloc(header + 1);
  memcpy(h, out->file + (out->file[6] == 1 ? 10 : 12), header);
  h[header] = 0;
  int ok = strstr(h, "'<f4'") && strstr(h, "'fortran_order': False");
  free(h);
  out->data = (const float*)(out->file + start);
  out->count = (size - start) / 4;
  return ok;
}

/* Runs `s` on `image` (1x1x28x28) viewed in place; returns the single output or NULL. */
static OnyxValue* run_image(OnyxSession* s, const char* input_name, float* image, size_t count) {
  int64_t dims[4] = {1, 1, 28, 28};
  OnyxValue* in = NULL;
  OnyxValue* out = NULL;
  CHECK_OK(onyx_tensor_create_view(ONYX_DTYPE_FLOAT, dims, 4, image, count * sizeof(float), &in));
  const char* names[1] = {input_name};
  const OnyxValue* ins[1] = {in};
  CHECK_OK(onyx_session_run(s, NULL, names, ins, 1, NULL, 1, &out));
  onyx_value_free(in);
  return out;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s MODEL.onnx IMAGE.npy TORCH_PROBS.npy CLI_PROBS.npy\n", argv[0]);
    return 2;
  }
  const char* model_path = argv[1];
  Npy image, torch_probs, cli_probs;
  if (!read_npy_f32(argv[2], &image) || image.count != 28 * 28 || !read_npy_f32(argv[3], &torch_probs) ||
      torch_probs.count != 10 || !read_npy_f32(argv[4], &cli_probs) || cli_probs.count != 10) {
    fprintf(stderr, "cannot read the .npy files (float32, 784 / 10 / 10 elements)\n");
    return 1;
  }
  float* pixels = malloc(image.count * sizeof(float));
  memcpy(pixels, image.data, image.count * sizeof(float));

  /* From a path, with options. */
  OnyxSessionOptions* opts = NULL;
  CHECK_OK(onyx_session_options_create(&opts));
  CHECK_OK(onyx_session_options_set_threads(opts, 2));
  expect_error(onyx_session_options_set_threads(opts, 0), ONYX_INVALID_ARGUMENT, "at least 1", "threads 0");
  OnyxSession* s = NULL;
  CHECK_OK(onyx_session_create(model_path, opts, &s));
  if (!s) return 1;

  /* What the model declares (checked against tiny-cnn's MODEL.md: image float[N, 1, 28, 28],
   * probs float[N, 10], exported by PyTorch at opset 17). */
  CHECK(onyx_session_io_count(s, ONYX_INPUTS) == 1, "one input");
  CHECK(onyx_session_io_count(s, ONYX_OUTPUTS) == 1, "one output");
  const char* in_name = onyx_session_io_name(s, ONYX_INPUTS, 0);
  CHECK(in_name && strcmp(in_name, "image") == 0, "input name '%s'", in_name ? in_name : "(null)");
  CHECK(strcmp(onyx_session_io_name(s, ONYX_OUTPUTS, 0), "probs") == 0, "output name");
  CHECK(onyx_session_io_name(s, ONYX_INPUTS, 1) == NULL, "out of range name is NULL");
  CHECK(onyx_session_io_dtype(s, ONYX_INPUTS, 0) == ONYX_DTYPE_FLOAT, "input dtype");
  CHECK(onyx_session_io_is_tensor(s, ONYX_INPUTS, 0) == 1, "input is a tensor");
  CHECK(strcmp(onyx_session_io_onnx_type(s, ONYX_INPUTS, 0), "tensor(float)") == 0, "onnx type '%s'",
        onyx_session_io_onnx_type(s, ONYX_INPUTS, 0));
  CHECK(onyx_session_io_rank(s, ONYX_INPUTS, 0) == 4, "input rank");
  CHECK(onyx_session_io_dim(s, ONYX_INPUTS, 0, 0) == -1, "batch dim symbolic");
  CHECK(strcmp(onyx_session_io_dim_name(s, ONYX_INPUTS, 0, 0), "N") == 0, "batch dim named N, got '%s'",
        onyx_session_io_dim_name(s, ONYX_INPUTS, 0, 0));
  CHECK(onyx_session_io_dim(s, ONYX_INPUTS, 0, 2) == 28, "height 28");
  CHECK(onyx_session_io_dim(s, ONYX_OUTPUTS, 0, 1) == 10, "10 classes");
  CHECK(strcmp(onyx_session_model_string(s, ONYX_MODEL_PRODUCER_NAME), "pytorch") == 0, "producer '%s'",
        onyx_session_model_string(s, ONYX_MODEL_PRODUCER_NAME));
  int found_default = 0;
  for (size_t i = 0; i < onyx_session_opset_count(s); ++i) {
    const char* domain = NULL;
    int64_t version = 0;
    CHECK_OK(onyx_session_opset(s, i, &domain, &version));
    if (domain && domain[0] == 0) found_default = version == 17;
  }
  CHECK(found_default, "default opset 17");
  expect_error(onyx_session_opset(s, 99, NULL, NULL), ONYX_INVALID_ARGUMENT, "out of range", "opset 99");
  CHECK(strcmp(onyx_dtype_name(ONYX_DTYPE_FLOAT), "float") == 0, "dtype name");
  CHECK(onyx_dtype_size(ONYX_DTYPE_INT64) == 8, "int64 size");

  /* Run, input viewed in place. */
  OnyxValue* out = run_image(s, in_name, pixels, image.count);
  CHECK(out != NULL, "run from path");
  if (out) {
    CHECK(onyx_value_kind(out) == ONYX_VALUE_TENSOR, "output is a tensor");
    CHECK(onyx_tensor_dtype(out) == ONYX_DTYPE_FLOAT, "output dtype");
    CHECK(onyx_tensor_rank(out) == 2 && onyx_tensor_dims(out)[0] == 1 && onyx_tensor_dims(out)[1] == 10,
          "output shape [1, 10]");
    CHECK(onyx_tensor_nbytes(out) == 40, "output bytes");
    const float* p = onyx_tensor_data(out);
    double worst = 0;
    for (int i = 0; i < 10; ++i) worst = fmax(worst, fabs((double)p[i] - (double)torch_probs.data[i]));
    CHECK(worst <= 1e-5, "max |onyx - torch| = %g > 1e-5", worst);
    CHECK(memcmp(p, cli_probs.data, 40) == 0, "C API output differs from the C++ Session's (onyx run)");
  }
  CHECK(memcmp(pixels, image.data, image.count * sizeof(float)) == 0, "the run wrote into its input");

  /* From bytes: outputs by name, an input tensor owned by onyx. */
  size_t nbytes = 0;
  unsigned char* bytes = read_file(model_path, &nbytes);
  CHECK(bytes != NULL, "read the model file");
  OnyxSession* sb = NULL;
  CHECK_OK(onyx_session_create_from_bytes(bytes, nbytes, NULL, &sb));
  if (sb && out) {
    int64_t dims[4] = {1, 1, 28, 28};
    OnyxValue* in = NULL;
    CHECK_OK(onyx_tensor_create(ONYX_DTYPE_FLOAT, dims, 4, &in));
    memcpy(onyx_tensor_data(in), pixels, image.count * sizeof(float));
    const char* names[1] = {"image"};
    const OnyxValue* ins[1] = {in};
    const char* want[2] = {"probs", "probs"};
    OnyxValue* outs[2] = {NULL, NULL};
    CHECK_OK(onyx_session_run(sb, NULL, names, ins, 1, want, 2, outs));
    CHECK(outs[0] && outs[1], "two outputs by name");
    if (outs[0] && outs[1]) {
      CHECK(memcmp(onyx_tensor_data(outs[0]), onyx_tensor_data(out), 40) == 0, "bytes vs path: same output");
      CHECK(onyx_tensor_data(outs[0]) != onyx_tensor_data(outs[1]), "a repeated output is its own copy");
      CHECK(memcmp(onyx_tensor_data(outs[1]), onyx_tensor_data(out), 40) == 0, "repeat holds the same values");
    }
    onyx_value_free(outs[0]);
    onyx_value_free(outs[1]);

    /* Error paths of run. */
    OnyxValue* bad = (OnyxValue*)1;
    const char* wrong[1] = {"imag"};
    expect_error(onyx_session_run(sb, NULL, wrong, ins, 1, NULL, 1, &bad), ONYX_INVALID_ARGUMENT,
                 "unknown input 'imag'; the model's inputs are: image", "wrong input name");
    CHECK(bad == (OnyxValue*)1, "a failed run writes no output");
    const char* nope[1] = {"logits"};
    expect_error(onyx_session_run(sb, NULL, names, ins, 1, nope, 1, &bad), ONYX_INVALID_ARGUMENT,
                 "unknown output 'logits'", "wrong output name");
    expect_error(onyx_session_run(sb, NULL, names, ins, 1, NULL, 2, outs), ONYX_INVALID_ARGUMENT,
                 "output_count is 2 but the model has 1 outputs", "output count");
    expect_error(onyx_session_run(sb, NULL, names, ins, 0, NULL, 1, &bad), ONYX_INVALID_ARGUMENT,
                 "missing input 'image'", "missing input");
    int64_t nhwc[4] = {1, 28, 28, 1};
    OnyxValue* in_nhwc = NULL;
    CHECK_OK(onyx_tensor_create_view(ONYX_DTYPE_FLOAT, nhwc, 4, pixels, image.count * sizeof(float), &in_nhwc));
    const OnyxValue* ins_nhwc[1] = {in_nhwc};
    expect_error(onyx_session_run(sb, NULL, names, ins_nhwc, 1, NULL, 1, &bad), ONYX_INVALID_ARGUMENT,
                 "looks like NHWC", "channels-last input");
    onyx_value_free(in_nhwc);
    int64_t i64dims[1] = {784};
    OnyxValue* in_i64 = NULL;
    CHECK_OK(onyx_tensor_create(ONYX_DTYPE_INT64, i64dims, 1, &in_i64));
    const OnyxValue* ins_i64[1] = {in_i64};
    expect_error(onyx_session_run(sb, NULL, names, ins_i64, 1, NULL, 1, &bad), ONYX_INVALID_ARGUMENT,
                 "expected dtype float, got int64", "wrong dtype");
    onyx_value_free(in_i64);

    OnyxRunOptions* ro = NULL;
    CHECK_OK(onyx_run_options_create(&ro));
    onyx_run_options_set_terminate(ro, 1);
    expect_error(onyx_session_run(sb, ro, names, ins, 1, NULL, 1, &bad), ONYX_CANCELLED, "", "terminated run");
    onyx_run_options_set_terminate(ro, 0);
    OnyxValue* again = NULL;
    CHECK_OK(onyx_session_run(sb, ro, names, ins, 1, NULL, 1, &again));
    CHECK(again && memcmp(onyx_tensor_data(again), onyx_tensor_data(out), 40) == 0, "run after clearing terminate");
    onyx_value_free(again);
    onyx_run_options_free(ro);
    onyx_value_free(in);
  }

  /* Error paths of creation and values. */
  OnyxSession* none = (OnyxSession*)1;
  expect_error(onyx_session_create("/nonexistent/model.onnx", NULL, &none), ONYX_IO, "/nonexistent/model.onnx",
               "missing file");
  CHECK(none == NULL, "a failed create writes NULL");
  if (bytes) {
    expect_error(onyx_session_create_from_bytes(bytes, nbytes / 2, NULL, &none), ONYX_INVALID_MODEL, "",
                 "truncated bytes");
    expect_error(onyx_session_create_from_bytes(bytes, 7, NULL, &none), ONYX_INVALID_MODEL, "", "7 bytes");
  }
  expect_error(onyx_session_create(NULL, NULL, &none), ONYX_INVALID_ARGUMENT, "path is NULL", "NULL path");
  expect_error(onyx_session_run(NULL, NULL, NULL, NULL, 0, NULL, 0, NULL), ONYX_INVALID_ARGUMENT,
               "session is NULL", "NULL session");
  OnyxValue* v = NULL;
  int64_t d2[2] = {2, 3};
  expect_error(onyx_tensor_create_view(ONYX_DTYPE_FLOAT, d2, 2, pixels, 20, &v), ONYX_INVALID_ARGUMENT,
               "tensor needs 24", "view of the wrong size");
  expect_error(onyx_tensor_create(99, d2, 2, &v), ONYX_INVALID_ARGUMENT, "unknown element type code 99",
               "bad dtype");
  int64_t neg[1] = {-2};
  expect_error(onyx_tensor_create(ONYX_DTYPE_FLOAT, neg, 1, &v), ONYX_INVALID_ARGUMENT, "negative", "negative dim");

  /* Strings and sequences round-trip through values. */
  OnyxValue* str = NULL;
  CHECK_OK(onyx_tensor_create(ONYX_DTYPE_STRING, d2, 2, &str));
  CHECK_OK(onyx_tensor_set_string(str, 5, "h\0i", 3));
  const char* sp = NULL;
  size_t sn = 0;
  CHECK_OK(onyx_tensor_get_string(str, 5, &sp, &sn));
  CHECK(sn == 3 && memcmp(sp, "h\0i", 3) == 0, "string with a NUL round-trips");
  CHECK(onyx_tensor_data(str) == NULL && onyx_tensor_nbytes(str) == 0, "strings have no raw data");
  expect_error(onyx_tensor_get_string(str, 6, &sp, &sn), ONYX_INVALID_ARGUMENT, "out of range", "string index");
  const OnyxValue* items[1] = {str};
  OnyxValue* seq = NULL;
  CHECK_OK(onyx_sequence_create(ONYX_DTYPE_STRING, items, 1, &seq));
  CHECK(onyx_value_kind(seq) == ONYX_VALUE_SEQUENCE && onyx_sequence_length(seq) == 1, "sequence of one");
  OnyxValue* item = NULL;
  CHECK_OK(onyx_sequence_item(seq, 0, &item));
  CHECK(onyx_tensor_numel(item) == 6, "sequence item numel");
  expect_error(onyx_sequence_create(ONYX_DTYPE_FLOAT, items, 1, &v), ONYX_INVALID_ARGUMENT,
               "is string, the sequence holds float", "sequence dtype");
  onyx_value_free(item);
  onyx_value_free(seq);
  onyx_value_free(str);

  CHECK(onyx_status_code(NULL) == ONYX_OK && strcmp(onyx_status_message(NULL), "") == 0, "NULL status is OK");
  onyx_status_free(NULL);
  onyx_value_free(NULL);
  onyx_session_free(NULL);

  onyx_value_free(out);
  onyx_session_free(sb);
  onyx_session_free(s);
  onyx_session_options_free(opts);
  free(bytes);
  free(pixels);
  free(image.file);
  free(torch_probs.file);
  free(cli_probs.file);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("capi_test: all checks passed\n");
  return 0;
}
