/* fuzz_tg.c: fuzz target for the .tg lexer, parser and lowering.
 *
 * LLVMFuzzerTestOneInput compiles the bytes as a .tg file: anything may be
 * rejected, nothing may crash, hang, leak or trip the sanitizers, and a
 * module that comes out must verify (fe_parse_tg runs ir_verify and
 * reports an "internal error" when the lowering made invalid IR).
 *
 * Built with -DTG_FUZZ_LIBFUZZER and -fsanitize=fuzzer it is a libFuzzer
 * target. Otherwise main() is a deterministic driver for CI: for every file
 * named on the command line it runs the file itself and `rounds` mutations
 * of it (byte flips, deletions, insertions of bytes and of .tg tokens,
 * truncations, duplicated spans), seeded from the file's content; and
 * --generate=N runs N generated well-formed programs (see gen_program). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tg/tg_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An "internal error" diagnostic, as opposed to that text quoted in the
 * source lines diag prints (those are indented by two spaces). */
static bool internal_error(const char *t) {
  for (const char *l = t; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
    if (l[0] == ' ') continue;
    const char *nl = strchr(l, '\n');
    const char *e = strstr(l, ": error: internal error");
    if (e && (!nl || e < nl)) return true;
  }
  return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  diag *d = diag_create();
  diag_set_max_errors(d, 20);
  ir_module *m = fe_parse_tg("fuzz.tg", (const char *)data, size, NULL, d);
  if (getenv("TG_FUZZ_VERBOSE")) fprintf(stderr, "%s%s", diag_text(d), m ? "compiled\n" : "");
  if (m && diag_error_count(d) != 0) abort(); /* a module means no errors */
  if (!m && diag_error_count(d) == 0) abort(); /* no module means an error */
  if (internal_error(diag_text(d))) { /* the lowering made invalid IR */
    fputs(diag_text(d), stderr);
    abort();
  }
  ir_module_destroy(m);
  diag_destroy(d);
  return 0;
}

#ifndef TG_FUZZ_LIBFUZZER
static const char *const tokens[] = {
    "graph ", "let ", "return ", "(", ")", "[", "]", "{", "}", ",", ";", ":", "=", "->", "**", "@",
    "==", "&&", "||", "!", "-", "/*", "*/", "//", "\"", "f32", "s32[2,3]", "pred", "bf16[4]", "1e999",
    "99999999999999999999", "0", "-1", "x", "matmul(", "conv2d(", "softmax(", "reduce_sum(", "axes=",
    "[1:2, ::2]", "inf", "nan", "true", "\n", "\t", "\xff", "\0",
    "var ", "while ", "for ", " in ", "..", " step ", "if ", " then ", " else ", "+=", "break;",
};

static void run(const char *buf, size_t n) { LLVMFuzzerTestOneInput((const uint8_t *)buf, n); }

/* ---- generated programs -------------------------------------------------
 * Random but well-formed programs: random parameter types and small
 * shapes, then lets built from operation templates over earlier names.
 * Most fail to type-check (exercising the semantic errors); those that
 * compile must also evaluate. */
static const char *const templates[] = {
    "A + B", "A * 2", "A - B * 0.5", "A @ B", "matmul(A, B)", "relu(A)", "exp(A)", "-A",
    "softmax(A, axis=N)", "log_softmax(A)", "reduce_sum(A, axes=[N], keepdims=true)", "reduce_max(A)",
    "mean(A, axes=N)", "transpose(A)", "reshape(A, [-1])", "A[I:]", "A[::2]", "A[I]", "A[-1, I:]",
    "concat(A, B, axis=N)", "where(A > B, A, B)", "cast(A, bf16)", "cast(A, f32)", "cast(A, s32)",
    "layer_norm(A)", "rms_norm(A, B)", "gelu(A)", "gelu(A, approximate=true)", "sigmoid(A)",
    "pad(A, low=[1], high=[I])", "reverse(A, axes=[0])", "conv2d(A, B)",
    "conv2d(A, B, padding=\"SAME\", strides=2)", "conv(A, B, padding=1, groups=2)",
    "max_pool(A, window=2)", "avg_pool(A, window=2, padding=\"SAME\")", "attention(A, B, B, causal=true)",
    "cross_entropy(A, B)", "one_hot(A, 3)", "linear(A, B)", "broadcast_to(A, [2, 3])",
    "iota(s32[2,3], axis=N) + A", "clamp(A, 0, 1)", "A ** 2", "!(A > 0)", "dot(A, B)",
    "slice(A, start=[0], limit=[1])", "sum_pool(A, window=[1, 2])", "A / B", "A % 3", "erf(A)",
    "reduce_any(A > B)", "full(f32[2,3], 1.5) * A", "zeros_like(A) + B", "[1, 2, 3] * A",
    "select(A, B, B)", "A && B", "max(A, B)", "atan2(A, B)", "floor(A)", "shl(A, B)", "not(A)",
    "bitcast_convert(A, s32)", "constant([[1, 2], [3, 4]], f32) + A", "all_reduce(A)",
    "all_reduce(A, kind=\"and\")", "all_reduce(A, kind=\"max\")", "reduce_all(A)", "reduce_prod(A, axes=N)",
    "argmax(A, axis=N)", "argmin(A, keepdims=true)", "min_pool(A, window=[2, 1])", "leaky_relu(A)",
    "silu(A)", "one_hot(A, 2, dtype=pred)", "cross_entropy(A, B, reduction=\"none\")", "sign(A)",
    "is_finite(A)", "popcnt(A)", "clz(A)", "round(A)", "expm1(A)", "log1p(A)", "A[N:I, I]",
    "broadcast(A, [2, 3], dimensions=[1])", "dot(A, B, lhs_contracting=[0], rhs_contracting=[0])",
    "dot(A, B, lhs_batch=[0], rhs_batch=[0], lhs_contracting=[1], rhs_contracting=[1])",
    "conv2d(A, B, layout=\"NCHW\", kernel_layout=\"OIHW\")", "avg_pool(A, window=[1, 2], strides=1)",
    "matmul(A, B, preferred_type=f32)", "A - iota(f32[3], axis=0)", "ones(s32[2]) * A", "A > B || A < 0",
};
static const char *const gtypes[] = {"f32", "f32", "f32", "s32", "bf16", "pred", "f16", "s8"};

static size_t gen_program(uint64_t *seed, char *out, size_t cap) {
  size_t n = 0;
#define EMIT(...) n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, __VA_ARGS__)
  int np = 1 + (int)(tgu_rand(seed) % 3), rank0 = (int)(tgu_rand(seed) % 5);
  int64_t dims0[4];
  for (int i = 0; i < 4; i++) dims0[i] = 1 + (int64_t)(tgu_rand(seed) % 4);
  EMIT("graph g(");
  for (int p = 0; p < np; p++) {
    const char *t = tgu_rand(seed) % 3 ? "f32" : gtypes[tgu_rand(seed) % COUNTOF(gtypes)];
    int rank = tgu_rand(seed) % 2 ? rank0 : (int)(tgu_rand(seed) % 5);
    EMIT("%sp%d: %s[", p ? ", " : "", p, t);
    for (int i = 0; i < rank; i++)
      EMIT("%s%lld", i ? "," : "", (long long)(tgu_rand(seed) % 3 ? dims0[i] : 1 + (int64_t)(tgu_rand(seed) % 4)));
    EMIT("]");
  }
  EMIT(") {\n");
  int nl = 1 + (int)(tgu_rand(seed) % 4);
  for (int l = 0; l < nl; l++) {
    const char *t = templates[tgu_rand(seed) % COUNTOF(templates)];
    int names = np + l;
    EMIT("  let v%d = ", l);
    for (const char *c = t; *c; c++) {
      int k = (int)(tgu_rand(seed) % (uint64_t)names);
      if (*c == 'A' || *c == 'B') {
        if (k < np) EMIT("p%d", k);
        else EMIT("v%d", k - np);
      } else if (*c == 'N') {
        EMIT("%d", (int)(tgu_rand(seed) % 4) - 2);
      } else if (*c == 'I') {
        EMIT("%d", (int)(tgu_rand(seed) % 3));
      } else {
        EMIT("%c", *c);
      }
    }
    EMIT(";\n");
  }
  EMIT("  return v%d;\n}\n", nl - 1);
#undef EMIT
  return n < cap ? n : cap - 1;
}

/* Compiles and, when it compiles, evaluates one generated program. */
static int run_generated(const char *src, size_t n, int *compiled) {
  run(src, n);
  diag *d = diag_create();
  ir_module *m = fe_parse_tg("gen.tg", src, n, NULL, d);
  int bad = 0;
  if (m) {
    ++*compiled;
    arena *a = arena_create();
    int nargs;
    ir_literal **args = tgu_random_args(m, a, 11, &nargs);
    ir_eval_options o;
    ir_eval_options_init(&o);
    ir_literal *out;
    char err[256];
    if (ir_eval(m, &o, args, nargs, a, &out, err, sizeof err) != ST_OK) {
      printf("generated program compiles but does not evaluate: %s\n%s", err, src);
      bad = 1;
    }
    arena_destroy(a);
  }
  ir_module_destroy(m);
  diag_destroy(d);
  return bad;
}

int main(int argc, char **argv) {
  int rounds = 150, runs = 0, bad = 0;
  for (int f = 1; f < argc; f++) {
    if (strncmp(argv[f], "--rounds=", 9) == 0) {
      rounds = atoi(argv[f] + 9);
      continue;
    }
    if (strncmp(argv[f], "--generate=", 11) == 0) {
      int count = atoi(argv[f] + 11), compiled = 0;
      uint64_t seed = 0x9E3779B97F4A7C15ULL;
      char src[4096];
      for (int i = 0; i < count; i++) {
        size_t n = gen_program(&seed, src, sizeof src);
        bad |= run_generated(src, n, &compiled);
        runs++;
      }
      printf("%d generated programs, %d compiled and evaluated\n", count, compiled);
      continue;
    }
    size_t len;
    char *text = tgu_read_file(argv[f], &len);
    if (!text) {
      fprintf(stderr, "cannot read %s\n", argv[f]);
      return 2;
    }
    run(text, len);
    runs++;
    uint64_t seed = 88172645463325252ULL ^ len;
    for (size_t i = 0; i < len; i++) seed = (seed ^ (uint8_t)text[i]) * 1099511628211ULL;
    char *buf = malloc(2 * len + 256);
    for (int r = 0; r < rounds; r++) {
      memcpy(buf, text, len);
      size_t n = len;
      int edits = 1 + (int)(tgu_rand(&seed) % 4);
      for (int e = 0; e < edits; e++) {
        size_t at = n ? (size_t)(tgu_rand(&seed) % n) : 0;
        switch (tgu_rand(&seed) % 6) {
        case 0: if (n) buf[at] = (char)tgu_rand(&seed); break;
        case 1: if (n) { memmove(buf + at, buf + at + 1, n - at - 1); n--; } break;
        case 2: {
          const char *t = tokens[tgu_rand(&seed) % COUNTOF(tokens)];
          size_t tl = t[0] ? strlen(t) : 1;
          if (n + tl > 2 * len + 200) break;
          memmove(buf + at + tl, buf + at, n - at);
          memcpy(buf + at, t, tl);
          n += tl;
          break;
        }
        case 3: n = at; break;
        case 4: {
          size_t span = n ? (size_t)(tgu_rand(&seed) % (n - at + 1)) : 0;
          if (span > 64) span = 64;
          if (n + span > 2 * len + 200) break;
          memmove(buf + at + span, buf + at, n - at);
          n += span;
          break;
        }
        default: if (n) buf[at] ^= (char)(1 << (tgu_rand(&seed) % 8)); break;
        }
      }
      run(buf, n);
      runs++;
    }
    free(buf);
    free(text);
  }
  printf("%d inputs, no crash\n", runs);
  return bad;
}
#endif
