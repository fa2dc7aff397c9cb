/* The C API from C99: load, forward on a borrowed buffer, read the result, errors.
 * Usage: c_smoke [MODEL.pt]   (the classifier of tests/sdk/gen_models.py: [1,3,32,32] -> [1,10]) */
#include <torchless/c_api.h>

#include <stdio.h>
#include <string.h>

static int fail(const char* what) {
  fprintf(stderr, "c_smoke: %s: %s\n", what, tl_last_error());
  return 1;
}

int main(int argc, char** argv) {
  tl_module* m = NULL;
  tl_tensor* x = NULL;
  tl_tensor* y = NULL;
  tl_value* in = NULL;
  tl_value* out = NULL;
  static float buf[3 * 32 * 32];
  int64_t sizes[4] = {1, 3, 32, 32};
  size_t i;
  printf("torchless %s\n", tl_version());
  if (argc < 2) return 0;
  if (tl_module_load("/nonexistent/model.pt", &m) != TL_ERROR || strlen(tl_last_error()) == 0) {
    fprintf(stderr, "c_smoke: loading a missing file did not fail with a message\n");
    return 1;
  }
  if (tl_module_load(argv[1], &m) != TL_OK) return fail("load");
  for (i = 0; i < 3 * 32 * 32; ++i) buf[i] = -1.0f + 2.0f * (float)i / (3 * 32 * 32 - 1);
  if (tl_tensor_from_buffer(buf, TL_FLOAT32, sizes, 4, NULL, NULL, NULL, &x) != TL_OK) return fail("from_buffer");
  in = tl_value_from_tensor(x);
  if (tl_module_forward(m, &in, 1, &out) != TL_OK) return fail("forward");
  if (tl_value_to_tensor(out, &y) != TL_OK) return fail("to_tensor");
  printf("output dtype %d dim %zu sizes [%lld, %lld]\n", (int)tl_tensor_dtype(y), tl_tensor_dim(y),
         (long long)tl_tensor_sizes(y)[0], (long long)tl_tensor_sizes(y)[1]);
  if (tl_tensor_dtype(y) != TL_FLOAT32 || tl_tensor_numel(y) != 10) {
    fprintf(stderr, "c_smoke: unexpected output\n");
    return 1;
  }
  tl_tensor_free(y);
  tl_value_free(out);
  tl_value_free(in);
  tl_tensor_free(x);
  tl_module_free(m);
  printf("ok\n");
  return 0;
}
