/* custom_call.c: a custom-call target implemented in C, as XLA's FFI lets
 * an embedder do. The program registers "softsign" on a libtpucc session,
 * compiles softsign.hlo (whose root is a custom-call of that target), runs
 * it on the reference evaluator and on the CPU, and checks both against
 * plain C. The TPU targets cannot call host functions: they refuse such a
 * module at compile time, naming the target.
 *
 *   custom_call path/to/softsign.hlo */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tpucc.h>

/* results[0] = scale * v / (1 + |v|) elementwise; scale from
 * backend_config "scale=K". */
static tpucc_status_t softsign(void *user_data, const tpucc_tensor_t *operands, int32_t noperands,
                               tpucc_tensor_t *results, int32_t nresults,
                               const char *backend_config, char *err, size_t errlen) {
  int *calls = user_data;
  if (noperands != 1 || nresults != 1 || operands[0].dtype != TPUCC_F32 ||
      results[0].nbytes != operands[0].nbytes) {
    snprintf(err, errlen, "softsign takes one f32 array and returns one of its shape");
    return TPUCC_INVALID_ARGUMENT;
  }
  float scale = 1.0f;
  if (strncmp(backend_config, "scale=", 6) == 0) scale = strtof(backend_config + 6, NULL);
  const float *v = operands[0].data;
  float *y = results[0].data;
  for (size_t i = 0; i < operands[0].nbytes / sizeof(float); i++)
    y[i] = scale * v[i] / (1.0f + fabsf(v[i]));
  (*calls)++;
  return TPUCC_OK;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s softsign.hlo\n", argv[0]);
    return 2;
  }
  tpucc_session_t *s = NULL;
  tpucc_module_t *m = NULL;
  int calls = 0, bad = 0;
  if (tpucc_session_create(NULL, &s) != TPUCC_OK ||
      tpucc_session_register_custom_call(s, "softsign", softsign, &calls) != TPUCC_OK ||
      tpucc_compile_file(s, NULL, argv[1], &m) != TPUCC_OK) {
    fprintf(stderr, "error: %s\n", s ? tpucc_session_message(s) : "no session");
    tpucc_session_destroy(s);
    return 1;
  }
  float x[6] = {1, -2, 0.5f, 3, 0, -1};
  float w[12] = {0.5f, -1, 2, 0, 1, 1, -0.5f, 0.25f, -2, 0, 1, 4};
  tpucc_tensor_t in[2] = {{.dtype = TPUCC_F32, .rank = 2, .dims = {2, 3}, .data = x, .nbytes = sizeof x},
                          {.dtype = TPUCC_F32, .rank = 2, .dims = {3, 4}, .data = w, .nbytes = sizeof w}};
  const char *targets[] = {"interp", "cpu"};
  int ran = 0;
  for (int t = 0; t < 2; t++) {
    bool built = false; /* the cpu target needs LLVM at build time */
    for (int32_t i = 0; i < tpucc_target_count(); i++) built |= !strcmp(tpucc_target_name(i), targets[t]);
    if (!built) continue;
    ran++;
    tpucc_execute_options_t o;
    tpucc_execute_options_init(&o);
    o.target = targets[t];
    tpucc_result_t *r = NULL;
    if (tpucc_execute(m, &o, in, 2, &r) != TPUCC_OK) {
      fprintf(stderr, "%s: %s\n", targets[t], tpucc_session_message(s));
      bad++;
      continue;
    }
    const float *y = tpucc_result_tensor(r, 0)->data;
    printf("%-6s y =", targets[t]);
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 4; j++) {
        float v = 0;
        for (int k = 0; k < 3; k++) v += x[i * 3 + k] * w[k * 4 + j];
        float want = v / (1.0f + fabsf(v));
        if (fabsf(y[i * 4 + j] - want) > 1e-6f) bad++;
        printf(" %.4f", (double)y[i * 4 + j]);
      }
    printf("\n");
    tpucc_result_destroy(r);
  }
  printf("softsign called %d times; %s\n", calls, bad ? "MISMATCH" : "both match plain C");
  tpucc_module_destroy(m);
  tpucc_session_destroy(s);
  return bad || calls != ran;
}
