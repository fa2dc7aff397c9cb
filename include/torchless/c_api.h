#ifndef TORCHLESS_C_API_H
#define TORCHLESS_C_API_H
/* torchless's C API: load a TorchScript archive, call its methods, move tensors in and out.
 * For bindings (Rust, Go, Java, C#, Python ctypes) and C programs. Link -ltorchless.
 *
 *   tl_module* m;
 *   if (tl_module_load("model.pt", &m) != TL_OK) { fprintf(stderr, "%s\n", tl_last_error()); ... }
 *   int64_t sizes[2] = {1, 4};
 *   float buf[4] = {1, 2, 3, 4};
 *   tl_tensor* x;  tl_tensor_from_buffer(buf, TL_FLOAT32, sizes, 2, NULL, NULL, NULL, &x);
 *   tl_value* in = tl_value_from_tensor(x);
 *   tl_value* out;
 *   tl_module_forward(m, &in, 1, &out);
 *   tl_tensor* y;  tl_value_to_tensor(out, &y);  ... tl_tensor_data(y) ...
 *   tl_tensor_free(y); tl_value_free(out); tl_value_free(in); tl_tensor_free(x); tl_module_free(m);
 *
 * Conventions
 * - Every handle is opaque and owned by the caller: each tl_*_free releases one handle
 *   (NULL is accepted). Handles share their objects as PyTorch's do: a tensor taken out of a
 *   value, or a value made from a tensor, refers to the same elements.
 * - Functions that can fail return tl_status; TL_OK is 0. On failure nothing is written to the
 *   out parameters, and tl_last_error() returns the message (what and where, as the CLI prints
 *   it) until the next failing call on the same thread.
 * - Strings are UTF-8, NUL-terminated. Returned `const char*` stay valid as long as the handle
 *   they came from.
 *
 * Thread safety
 * - The error message is per thread.
 * - Different handles may be used from different threads at once.
 * - One module may be called (forward, run_method) from several threads at once: the
 *   execution plan of a method is built once under a lock, and each call has its own state.
 *   Loading and freeing must not overlap other calls on the same handle.
 * - Operators (tl_op_find / tl_op_call) may be looked up and called from several threads at
 *   once: a found operator is immutable, as the interpreter's kernels are.
 * - A tensor's elements are not synchronized: writing a buffer that another thread reads
 *   (or that a running forward reads) is the caller's race, as in libtorch.
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tl_module tl_module;
typedef struct tl_tensor tl_tensor;
typedef struct tl_value tl_value;
typedef struct tl_op tl_op;

typedef enum tl_status {
  TL_OK = 0,
  TL_ERROR = 1,                 /* bad file, bad input, any user error */
  TL_ERROR_MODEL = 2,           /* the model raised (TorchScript `raise`) */
  TL_ERROR_UNSUPPORTED = 3,     /* operators without a kernel */
  TL_ERROR_INVALID_ARGUMENT = 4 /* NULL handle, wrong kind of value, index out of range */
} tl_status;

/* Element types, numbered as c10::ScalarType (torch.uint8 = 0 ... torch.bfloat16 = 15). */
typedef enum tl_dtype {
  TL_UINT8 = 0,
  TL_INT8 = 1,
  TL_INT16 = 2,
  TL_INT32 = 3,
  TL_INT64 = 4,
  TL_FLOAT16 = 5,
  TL_FLOAT32 = 6,
  TL_FLOAT64 = 7,
  TL_BOOL = 11,
  TL_BFLOAT16 = 15
} tl_dtype;

/* What a value holds. */
typedef enum tl_value_kind {
  TL_VALUE_NONE = 0,
  TL_VALUE_TENSOR = 1,
  TL_VALUE_DOUBLE = 2,
  TL_VALUE_INT = 3,
  TL_VALUE_BOOL = 4,
  TL_VALUE_STRING = 5,
  TL_VALUE_LIST = 6,
  TL_VALUE_TUPLE = 7,
  TL_VALUE_DICT = 8,
  TL_VALUE_OTHER = 9 /* objects, devices, ... (printable, not convertible) */
} tl_value_kind;

/* ---- errors and library ---- */

/* The message of the last failing call on this thread ("" if none). */
const char* tl_last_error(void);
/* The library's version, "MAJOR.MINOR.PATCH". */
const char* tl_version(void);
/* Threads used by kernels (OpenMP) for calls made from the calling thread; n <= 0 restores
   the default. Other threads keep their own setting. */
void tl_set_num_threads(int n);

/* ---- modules ---- */

/* Loads a torch.jit.save archive (PyTorch 1.x or 2.x). */
tl_status tl_module_load(const char* path, tl_module** out);
void tl_module_free(tl_module* m);
/* Calls `forward` with args (self excluded); *out receives the result. */
tl_status tl_module_forward(const tl_module* m, tl_value* const* args, size_t nargs,
                            tl_value** out);
/* Calls method `name`; missing trailing arguments take their declared defaults. */
tl_status tl_module_run_method(const tl_module* m, const char* name, tl_value* const* args,
                               size_t nargs, tl_value** out);
/* Number of methods of the root module and the i-th method's name (definition order). */
size_t tl_module_num_methods(const tl_module* m);
const char* tl_module_method_name(const tl_module* m, size_t i);
/* 1 if the root module has a method `name`. */
int tl_module_has_method(const tl_module* m, const char* name);
/* The attribute `name` of the root module (a submodule comes back as TL_VALUE_OTHER). */
tl_status tl_module_attr(const tl_module* m, const char* name, tl_value** out);
/* Parameters and buffers named as named_parameters() / named_buffers(): a list of
 * (name, tensor) tuples. which: 0 parameters, 1 buffers. */
tl_status tl_module_named_tensors(const tl_module* m, int which, tl_value** out);
/* Attributes as torch::jit::Module::named_attributes(recurse): a list of (name, value)
 * tuples, each module's attributes in definition order, a submodule followed by its own
 * attributes (dotted names) when recurse is non-zero. Submodules are TL_VALUE_OTHER values
 * that tl_value_to_module accepts. */
tl_status tl_module_named_attributes(const tl_module* m, int recurse, tl_value** out);
/* The submodule held by `v` (read with tl_module_attr or tl_module_named_attributes) as a
 * module handle of its own (free it with tl_module_free); it shares the parent's tensors.
 * TL_ERROR_INVALID_ARGUMENT for any other value. */
tl_status tl_value_to_module(const tl_value* v, tl_module** out);
/* 1 if `v` holds a module (a tl_value_to_module would succeed). */
int tl_value_is_module(const tl_value* v);
/* Module::to(dtype): every parameter and buffer of the module and its submodules becomes a
 * tensor of `dtype` (as torch::jit::Module::to, integer buffers too); the methods are planned
 * again on their next call. Handles made by tl_value_to_module before keep their plans. */
tl_status tl_module_to_dtype(tl_module* m, tl_dtype dtype);
/* Module::train(training): sets the `training` attribute of the module and every submodule;
 * the methods are planned again on their next call (training-mode kernels that torchless
 * lacks, dropout for one, then fail with TL_ERROR_UNSUPPORTED). */
tl_status tl_module_set_training(tl_module* m, int training);
/* The module's `training` attribute: 1 or 0 (1 when the module has none, as libtorch). */
int tl_module_is_training(const tl_module* m);

/* ---- tensors ---- */

/* A tensor over the caller's buffer, not copied (torch::from_blob). strides may be NULL
 * (contiguous). When the last handle to the tensor is gone, deleter(data, deleter_ctx) is
 * called if it is not NULL; the buffer must stay valid until then. */
tl_status tl_tensor_from_buffer(void* data, tl_dtype dtype, const int64_t* sizes, size_t ndim,
                                const int64_t* strides, void (*deleter)(void* data, void* ctx),
                                void* deleter_ctx, tl_tensor** out);
/* A contiguous tensor holding a copy of `data` (prod(sizes) elements, row-major). */
tl_status tl_tensor_copy_from(const void* data, tl_dtype dtype, const int64_t* sizes, size_t ndim,
                              tl_tensor** out);
/* A new contiguous tensor, elements zeroed. */
tl_status tl_tensor_zeros(tl_dtype dtype, const int64_t* sizes, size_t ndim, tl_tensor** out);
/* A new handle to the same tensor. */
tl_tensor* tl_tensor_share(const tl_tensor* t);
void tl_tensor_free(tl_tensor* t);
tl_dtype tl_tensor_dtype(const tl_tensor* t);
size_t tl_tensor_dim(const tl_tensor* t);
/* sizes/strides (in elements), dim() entries, valid while t lives. */
const int64_t* tl_tensor_sizes(const tl_tensor* t);
const int64_t* tl_tensor_strides(const tl_tensor* t);
int64_t tl_tensor_numel(const tl_tensor* t);
/* Address of the first element (the storage offset applied); see tl_tensor_is_contiguous. */
void* tl_tensor_data(const tl_tensor* t);
int tl_tensor_is_contiguous(const tl_tensor* t);
/* A contiguous tensor with the same elements (t itself, shared, when it is contiguous). */
tl_status tl_tensor_contiguous(const tl_tensor* t, tl_tensor** out);
/* Copies the elements, row-major, into buf of nbytes (numel * element size). */
tl_status tl_tensor_copy_to(const tl_tensor* t, void* buf, size_t nbytes);
/* Size in bytes of one element of dtype (0 for an unknown dtype). */
size_t tl_dtype_size(tl_dtype dtype);
/* The tensor printed as libtorch's `std::cout << tensor` prints it; free with tl_string_free. */
char* tl_tensor_to_string(const tl_tensor* t);
void tl_string_free(char* s);

/* ---- values (IValue) ---- */

tl_value* tl_value_none(void);
tl_value* tl_value_from_tensor(const tl_tensor* t);
tl_value* tl_value_from_int(int64_t v);
tl_value* tl_value_from_double(double v);
tl_value* tl_value_from_bool(int v);
tl_value* tl_value_from_string(const char* s);
/* Containers. A list's element type is taken from its elements (all tensors: List[Tensor];
 * ints: List[int]; ...); an empty list is List[Tensor]. Dict keys are str, int or Tensor. */
tl_status tl_value_tuple(tl_value* const* elems, size_t n, tl_value** out);
tl_status tl_value_list(tl_value* const* elems, size_t n, tl_value** out);
tl_status tl_value_dict(tl_value* const* keys, tl_value* const* values, size_t n, tl_value** out);
tl_value* tl_value_share(const tl_value* v);
void tl_value_free(tl_value* v);

tl_value_kind tl_value_get_kind(const tl_value* v);
tl_status tl_value_to_tensor(const tl_value* v, tl_tensor** out);
tl_status tl_value_to_int(const tl_value* v, int64_t* out);
tl_status tl_value_to_double(const tl_value* v, double* out); /* also from an int */
tl_status tl_value_to_bool(const tl_value* v, int* out);
/* The string and its length in bytes; valid while v lives. */
tl_status tl_value_to_string(const tl_value* v, const char** out, size_t* len);
/* Elements of a tuple or list, entries of a dict. */
tl_status tl_value_length(const tl_value* v, size_t* out);
tl_status tl_value_element(const tl_value* v, size_t i, tl_value** out);
tl_status tl_value_dict_key(const tl_value* v, size_t i, tl_value** out);
tl_status tl_value_dict_value(const tl_value* v, size_t i, tl_value** out);
/* The value as the CLI and libtorch print it (tensors as tl_tensor_to_string); free with
 * tl_string_free. */
char* tl_value_to_string_repr(const tl_value* v);

/* ---- operators of the op table ---- */

/* The operator `name.overload` ("aten::softmax.int"; "aten::relu" for the default overload)
 * with a CPU kernel. The handle lives as long as the process (do not free); looking it up
 * once and calling it many times allocates no lookup per call. */
tl_status tl_op_find(const char* name_dot_overload, const tl_op** out);
/* Calls the operator with all its arguments in schema order (defaults must be given: see
 * tl_op_num_arguments). One return is *out itself; several come back as a tuple. */
tl_status tl_op_call(const tl_op* op, tl_value* const* args, size_t nargs, tl_value** out);
/* The operator's full schema string, and its number of arguments. */
const char* tl_op_schema(const tl_op* op);
size_t tl_op_num_arguments(const tl_op* op);

#ifdef __cplusplus
}
#endif

#endif /* TORCHLESS_C_API_H */
