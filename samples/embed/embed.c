/* embed.c: how to embed libtpurt, the tpucc runtime, in a C program.
 *
 * It builds a small program from assembly text with the runtime's own
 * assembler (a compiled .tpub file loads the same way with
 * tpurt_program_load_file), runs it on an emulated TPU v3 core, checks the
 * result against plain C, and prints what the run cost.
 *
 * The program computes y = relu(x @ w) for x f32[8,128] and w bf16[128,128]:
 * DMA brings both into VMEM, the MXU holds w as its stationary weights,
 * the vector unit feeds it x (rounded to bf16), pops the f32 result and
 * applies relu, and DMA writes y back to HBM.
 *
 * Build against an installed runtime:
 *     cc embed.c $(pkg-config --cflags --libs tpurt) -o embed */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <tpurt.h>

static const char program_text[] =
    ".target v3\n"
    ".hbm 40960\n"
    ".param x f32[8,128] @0\n"       /* 4 KiB of f32 */
    ".param w bf16[128,128] @4096\n" /* 32 KiB of bf16 */
    ".result y f32[8,128] @36864\n"
    /* DMA descriptors in SMEM: {run bytes, n1, n2, n3, strides...} */
    ".smem 0  4096, 1, 1, 1, 0, 0, 0, 0, 0, 0\n"
    ".smem 40 32768, 1, 1, 1, 0, 0, 0, 0, 0, 0\n"
    "  sli s1, 4096\n"
    "  sli s2, 40\n"
    "  dmald dma0, s0, s0, s0, sem0\n" /* x: HBM 0 -> VMEM 0 */
    "  dmald dma1, s1, s1, s2, sem1\n" /* w: HBM 4096 -> VMEM 4096 */
    "  sli s3, 256\n"                  /* bf16 row stride of w */
    "  wait mxu0, sem1, 1\n"           /* the MXU waits for w ... */
    "  mwt mxu0, s1, s3\n"             /* ... loads it into its shadow */
    "  mswap mxu0\n"                   /* ... and makes it active */
    "  wait vector, sem0, 1\n"         /* the vector unit waits for x */
    "  sli s4, 512\n"                  /* f32 row stride */
    "  vld v0, s0, 0, s4\n"
    "  mpushv mxu0, v0, s0\n"  /* acc rows 0..7 = bf16(x) @ w */
    "  mpop mxu0, v1, s0, 0\n" /* v1 = acc rows 0..7 */
    "  vimm v2, 0\n"
    "  vmaxf v1, v1, v2\n" /* relu */
    "  sli s5, 36864\n"
    "  vst v1, s5, 0, s4, m0\n"
    "  signal vector, sem2, 1\n" /* y is in VMEM ... */
    "  wait dma0, sem2, 1\n"     /* ... before DMA reads it */
    "  dmast dma0, s5, s5, s0, sem3\n"
    "  wait scalar, sem3, 1\n" /* the front end waits for the store */
    "  halt\n";

/* bf16 <-> f32 as the runtime defines them (round to nearest even). */
static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
static float from_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

int main(void) {
  printf("libtpurt %s\n", tpurt_version_string());

  /* 1. A device: one emulated core of the chosen target. */
  tpurt_device_options_t opts;
  tpurt_device_options_init(&opts);
  opts.target = "v3";
  tpurt_device_t *dev = NULL;
  if (tpurt_device_create(&opts, &dev) != TPURT_OK) {
    fprintf(stderr, "cannot create the device\n");
    return 1;
  }

  /* 2. A program: assembled and verified once. Errors come back as a
   *    status with the message on the device. */
  tpurt_program_t *prog = NULL;
  if (tpurt_program_assemble(dev, program_text, strlen(program_text), "embed.s", &prog) !=
      TPURT_OK) {
    fprintf(stderr, "%s\n", tpurt_device_message(dev));
    tpurt_device_destroy(dev);
    return 1;
  }

  /* 3. Inputs: buffers whose dtype and shape must match the signature. */
  static float x[8][128];
  static uint16_t w[128][128];
  for (int i = 0; i < 8; i++)
    for (int k = 0; k < 128; k++)
      x[i][k] = (float)((i + k) % 7) - 3.0f;
  for (int k = 0; k < 128; k++)
    for (int j = 0; j < 128; j++)
      w[k][j] = to_bf16(0.01f * (float)((k * j) % 13 - 6));
  int64_t xdims[2] = {8, 128}, wdims[2] = {128, 128};
  tpurt_buffer_t *in[2] = {NULL, NULL}, *out[1] = {NULL};
  int status = 1;
  if (tpurt_buffer_create(dev, TPURT_F32, 2, xdims, x, sizeof x, &in[0]) ||
      tpurt_buffer_create(dev, TPURT_BF16, 2, wdims, w, sizeof w, &in[1])) {
    fprintf(stderr, "%s\n", tpurt_device_message(dev));
    goto done;
  }

  /* 4. Run. Results are new buffers owned by the caller. */
  tpurt_stats_t st;
  if (tpurt_program_execute(prog, in, 2, out, 1, &st) != TPURT_OK) {
    fprintf(stderr, "%s\n", tpurt_device_message(dev));
    goto done;
  }
  static float y[8][128];
  tpurt_buffer_read(out[0], y, sizeof y);

  /* 5. Check against plain C with the documented MXU numerics: per
   *    output, products added in ascending k, one fused multiply-add each,
   *    starting from +0. */
  int bad = 0;
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 128; j++) {
      float acc = 0.0f;
      for (int k = 0; k < 128; k++)
        acc = fmaf(from_bf16(to_bf16(x[i][k])), from_bf16(w[k][j]), acc);
      float want = acc > 0.0f ? acc : 0.0f;
      if (memcmp(&want, &y[i][j], 4)) bad++;
    }
  printf("y[0][0..3] = %g %g %g %g; %s\n", y[0][0], y[0][1], y[0][2], y[0][3],
         bad ? "MISMATCH" : "matches C bit for bit");

  /* 6. What it cost. */
  printf("%llu cycles (%.3f us at the target clock), %llu MACs, "
         "%llu HBM bytes read, MXU weight-load stall %llu cycles\n",
         (unsigned long long)st.cycles, st.seconds * 1e6, (unsigned long long)st.mxu_macs,
         (unsigned long long)st.hbm_read_bytes, (unsigned long long)st.units[2].stall_weight_load);
  status = bad ? 1 : 0;

done:
  /* 7. Everything made from a device is destroyed before the device. */
  tpurt_buffer_destroy(out[0]);
  tpurt_buffer_destroy(in[0]);
  tpurt_buffer_destroy(in[1]);
  tpurt_program_destroy(prog);
  tpurt_device_destroy(dev);
  return status;
}
