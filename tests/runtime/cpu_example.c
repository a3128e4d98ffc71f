/* cpu_example.c: the example of docs/runtime.md, "The cpu device": AXPY
 * from its HLO text on any device of libtpurt-cpu, with the same calls as
 * a .tpub on the emulator. Checks r = alpha * x + y against plain C and
 * exits nonzero on a mismatch (the runtime suite runs it on "cpu", "v3"
 * and "auto").
 *
 *   cpu_example AXPY.hlo [DEVICE]      DEVICE: auto (default), cpu, v3, ... */
#include <stdio.h>
#include <tpurt.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: cpu_example AXPY.hlo [DEVICE]\n");
    return 2;
  }
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = argc > 2 ? argv[2] : "auto";
  tpurt_device_t *dev;
  if (tpurt_device_create(&o, &dev) != TPURT_OK) {
    char why[256];
    tpurt_target_check(o.target, why, sizeof why);
    fprintf(stderr, "device %s: %s\n", o.target, why);
    return 2;
  }
  printf("device %s (%s)\n", tpurt_device_target(dev), tpurt_device_platform(dev));

  tpurt_program_t *prog = NULL;
  tpurt_buffer_t *in[3] = {0}, *out[1] = {0};
  int rc = 1;
  if (tpurt_program_load_file(dev, argv[1], &prog) != TPURT_OK) goto fail;
  float alpha = 2.0f, x[2][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}}, y[2][4], r[2][4];
  for (int i = 0; i < 8; i++) y[i / 4][i % 4] = 0.5f;
  int64_t dims[2] = {2, 4};
  if (tpurt_buffer_create(dev, TPURT_F32, 0, NULL, &alpha, sizeof alpha, &in[0]) ||
      tpurt_buffer_create(dev, TPURT_F32, 2, dims, x, sizeof x, &in[1]) ||
      tpurt_buffer_create(dev, TPURT_F32, 2, dims, y, sizeof y, &in[2]))
    goto fail;
  tpurt_stats_t st;
  if (tpurt_program_execute(prog, in, 3, out, 1, &st) != TPURT_OK) goto fail;
  if (tpurt_buffer_read(out[0], r, sizeof r) != TPURT_OK) goto fail;
  printf("r[0] = %g %g %g %g\n", r[0][0], r[0][1], r[0][2], r[0][3]);
  double compile_s = 0, host_s = 0;
  tpurt_program_metric(prog, "compile_seconds", &compile_s);
  tpurt_program_metric(prog, "host_seconds", &host_s);
  printf("%llu cycles, compiled in %.3f s, ran in %.6f s\n", (unsigned long long)st.cycles,
         compile_s, host_s);
  rc = 0;
  for (int i = 0; i < 8; i++)
    if (r[i / 4][i % 4] != alpha * x[i / 4][i % 4] + y[i / 4][i % 4]) rc = 1;
  if (rc) fprintf(stderr, "wrong result\n");
fail:
  if (rc && tpurt_device_message(dev)[0]) fprintf(stderr, "error: %s\n", tpurt_device_message(dev));
  tpurt_buffer_destroy(out[0]);
  for (int i = 0; i < 3; i++) tpurt_buffer_destroy(in[i]);
  tpurt_program_destroy(prog);
  tpurt_device_destroy(dev);
  return rc;
}
