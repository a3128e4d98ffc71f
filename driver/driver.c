/* driver.c: parsing module text, the pass pipeline for a target, and the
 * cpu target spec (driver.h). */
#include "driver/driver.h"

#include <stdlib.h>
#include <unistd.h>

#include "frontend/frontend.h"
#include "passes/passes.h"
#include "runtime/isa/target.h"
#ifdef HAVE_TPU
#include "backend/tpu/tpu.h" /* tpu_pass_target_for: the TPU's answers to the passes */
#endif

/* ---- text -> module ------------------------------------------------------ */

static bool has_suffix(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n >= m && strcmp(s + n - m, suf) == 0;
}

static bool contains(const char *text, size_t len, const char *word) {
  size_t w = strlen(word);
  for (size_t i = 0; i + w <= len; i++)
    if (memcmp(text + i, word, w) == 0) return true;
  return false;
}

tpucc_language_t drv_language_of(const char *name, const char *text, size_t len,
                               tpucc_language_t fallback) {
  if (has_suffix(name, ".hlo") || has_suffix(name, ".txt")) return TPUCC_LANGUAGE_HLO;
  if (has_suffix(name, ".tg")) return TPUCC_LANGUAGE_TG;
  if (contains(text, len, "HloModule") || contains(text, len, "ENTRY")) return TPUCC_LANGUAGE_HLO;
  return fallback;
}

base_status drv_parse(const char *name, const char *text, size_t len, tpucc_language_t lang,
                      const char *entry, diag *d, ir_module **out) {
  *out = NULL;
#ifndef HAVE_HLO
  if (lang == TPUCC_LANGUAGE_HLO) return ST_UNSUPPORTED;
#endif
#ifndef HAVE_TG
  if (lang == TPUCC_LANGUAGE_TG) return ST_UNSUPPORTED;
#endif
  /* The frontends get a NUL-terminated copy and d the text for carets. */
  char *copy = base_xmalloc(len + 1);
  if (len) memcpy(copy, text, len);
  copy[len] = 0;
  diag_add_source(d, name, copy, len);
  ir_module *m = NULL;
#ifdef HAVE_HLO
  if (lang == TPUCC_LANGUAGE_HLO) m = fe_parse_hlo(name, copy, len, d);
#endif
#ifdef HAVE_TG
  if (lang == TPUCC_LANGUAGE_TG) m = fe_parse_tg(name, copy, len, entry, d);
#endif
  (void)entry;
  free(copy);
  if (!m || diag_error_count(d) > 0) {
    ir_module_destroy(m);
    return ST_PARSE_ERROR;
  }
  /* Expanders of ops no target runs as written, at every -O level. */
  pass_ctx ctx = {d, 0, false, NULL, NULL};
  pass_expand(m, &ctx);
  *out = m;
  return ST_OK;
}

base_status drv_optimize(ir_module *m, const drv_opt *o, const char *target, diag *d) {
  pass_ctx ctx = {d, o->opt_level, o->verify_each, o->explain, NULL};
  pass_target pt;
  memset(&pt, 0, sizeof pt);
#ifdef HAVE_TPU
  tgt_target tt;
  tpu_pass_target_for(target && !drv_is_cpu_spec(target) ? target : NULL, &tt, &pt);
#else
  (void)target;
#endif
  if (o->all_reduce_combine) pt.all_reduce_combine_bytes = o->all_reduce_combine > 0 ? o->all_reduce_combine : 0;
  ctx.target = &pt;
  pass_run_options ro = {o->dump_dir, o->dump_after, o->time_passes, stderr};
  return pass_run(m, &ctx, o->passes, &ro);
}

void drv_diag_message(diag *d, const char *fallback, char *err, size_t errlen) {
  snprintf(err, errlen, "%s", diag_error_count(d) ? diag_text(d) : fallback);
  size_t n = strlen(err);
  while (n && err[n - 1] == '\n') err[--n] = 0;
}

ir_module *drv_load(const char *name, const void *text, size_t len, const char *target, char *err,
                    size_t errlen) {
  diag *d = diag_create();
  tpucc_language_t lang = drv_language_of(name, text, len, TPUCC_LANGUAGE_TG);
  ir_module *m = NULL;
  drv_parse(name, text, len, lang, NULL, d, &m);
  if (m && m->entry == IR_NONE)
    diag_error(d, (src_loc){0}, "%s: the module has no entry computation", name);
  if (m && diag_error_count(d) == 0) {
    drv_opt o = {.opt_level = 2, .verify_each = true};
    if (drv_optimize(m, &o, target, d) != ST_OK && diag_error_count(d) == 0)
      diag_error(d, (src_loc){0}, "%s: the optimisation pipeline failed", name);
  }
  if (!m || diag_error_count(d) > 0) {
    drv_diag_message(d, "the frontend rejected the input", err, errlen);
    ir_module_destroy(m);
    m = NULL;
  }
  diag_destroy(d);
  return m;
}

/* ---- the cpu spec ------------------------------------------------------- */

static const char *const numerics_names[] = {"native", "strict", "tpu"};

const char *drv_numerics_name(int n) {
  return n >= 0 && n < 3 ? numerics_names[n] : "native";
}

static bool numerics_of(const char *s, int *out) {
  for (int i = 0; i < 3; i++)
    if (strcmp(s, numerics_names[i]) == 0) {
      *out = i;
      return true;
    }
  return false;
}

static bool threads_of(const char *s, int *out) {
  char *e;
  long v = strtol(s, &e, 10);
  if (!s[0] || *e || v < 1 || v > 1024) return false;
  *out = (int)v;
  return true;
}

/* cache=VALUE: "off" (out empty) or a directory; false when empty or
 * too long. */
static bool cache_of(const char *v, size_t n, char *out, size_t outlen) {
  if (!n || n >= outlen) return false;
  if (n == 3 && !memcmp(v, "off", 3)) {
    out[0] = 0;
    return true;
  }
  memcpy(out, v, n);
  out[n] = 0;
  return true;
}

/* The cache directory a spec does not name (driver.h); "" when off. */
static void default_cache(char *out, size_t outlen) {
  const char *off = getenv("TPUCC_NO_CACHE"), *dir = getenv("TPUCC_CACHE_DIR");
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  out[0] = 0;
  if (off && *off && strcmp(off, "0") != 0) return;
  int n = dir && *dir                 ? snprintf(out, outlen, "%s", dir)
          : xdg && xdg[0] == '/'      ? snprintf(out, outlen, "%s/tpucc", xdg)
          : home && home[0] == '/'    ? snprintf(out, outlen, "%s/.cache/tpucc", home)
                                      : 0;
  if (n < 0 || (size_t)n >= outlen) out[0] = 0; /* too long for a path here: off */
}

static bool progress_on;
void drv_set_progress(bool on) { progress_on = on; }

bool drv_is_cpu_spec(const char *s) { return strncmp(s, "cpu", 3) == 0 && (!s[3] || s[3] == ','); }

base_status drv_cpu_spec_parse(const char *spec, bool env_defaults, drv_cpu_spec *out, char *err,
                               size_t errlen) {
  memset(out, 0, sizeof *out);
  if (!drv_is_cpu_spec(spec)) {
    snprintf(err, errlen, "'%s' is not a cpu device spec", spec);
    return ST_INVALID_ARGUMENT;
  }
  bool has_threads = false, has_numerics = false, has_cache = false;
  for (const char *p = spec + 3; *p == ',';) {
    const char *key = p + 1, *eq = strchr(key, '='), *end = strchr(key, ',');
    if (!end) end = key + strlen(key);
    if (!eq || eq > end) {
      snprintf(err, errlen, "cpu: '%.*s' is not key=value", (int)(end - key), key);
      return ST_INVALID_ARGUMENT;
    }
    char val[32];
    size_t vn = (size_t)(end - eq - 1);
    if (vn >= sizeof val) vn = sizeof val - 1;
    memcpy(val, eq + 1, vn);
    val[vn] = 0;
    size_t kn = (size_t)(eq - key);
    if (kn == 7 && memcmp(key, "threads", 7) == 0) {
      if (!threads_of(val, &out->threads)) {
        snprintf(err, errlen, "cpu: threads=%s: expected a count in 1..1024", val);
        return ST_INVALID_ARGUMENT;
      }
      has_threads = true;
    } else if (kn == 8 && memcmp(key, "numerics", 8) == 0) {
      if (!numerics_of(val, &out->numerics)) {
        snprintf(err, errlen, "cpu: numerics=%s: expected native, strict or tpu", val);
        return ST_INVALID_ARGUMENT;
      }
      has_numerics = true;
    } else if (kn == 8 && memcmp(key, "replicas", 8) == 0) {
      char *endp;
      long r = strtol(val, &endp, 10);
      if (!val[0] || *endp || r < 1 || r > 256) {
        snprintf(err, errlen, "cpu: replicas=%s: expected a count in 1..256", val);
        return ST_INVALID_ARGUMENT;
      }
      out->replicas = (int)r;
    } else if (kn == 5 && memcmp(key, "cache", 5) == 0) {
      if (!cache_of(eq + 1, (size_t)(end - eq - 1), out->cache_dir, sizeof out->cache_dir)) {
        snprintf(err, errlen, "cpu: cache=%.*s: expected a directory or off", (int)(end - eq - 1),
                 eq + 1);
        return ST_INVALID_ARGUMENT;
      }
      has_cache = true;
    } else {
      snprintf(err, errlen, "cpu: unknown option '%.*s' (threads, numerics, replicas, cache)", (int)kn,
               key);
      return ST_INVALID_ARGUMENT;
    }
    p = end;
  }
  if (!has_cache) default_cache(out->cache_dir, sizeof out->cache_dir);
  const char *t = env_defaults && !has_threads ? getenv("TPUCC_CPU_THREADS") : NULL;
  const char *n = env_defaults && !has_numerics ? getenv("TPUCC_CPU_NUMERICS") : NULL;
  if (t && *t && !threads_of(t, &out->threads)) {
    snprintf(err, errlen, "TPUCC_CPU_THREADS='%s': expected a count in 1..1024", t);
    return ST_INVALID_ARGUMENT;
  }
  if (n && *n && !numerics_of(n, &out->numerics)) {
    snprintf(err, errlen, "TPUCC_CPU_NUMERICS='%s': expected native, strict or tpu", n);
    return ST_INVALID_ARGUMENT;
  }
#ifdef TPUCC_HAVE_LLVM
  if (!out->threads) out->threads = cpu_default_threads();
#else
  if (!out->threads) out->threads = 1; /* no cpu target in this build */
#endif
  if (!out->replicas) out->replicas = 1;
  int k = snprintf(out->canonical, sizeof out->canonical, "cpu,threads=%d,numerics=%s", out->threads,
                   numerics_names[out->numerics]);
  if (out->replicas > 1)
    snprintf(out->canonical + k, sizeof out->canonical - (size_t)k, ",replicas=%d", out->replicas);
  return ST_OK;
}

#ifdef TPUCC_HAVE_LLVM
_Static_assert(CPU_NUMERICS_NATIVE == 0 && CPU_NUMERICS_STRICT == 1 && CPU_NUMERICS_TPU == 2,
               "numerics_names follows cpu_numerics");

void drv_cpu_options(const drv_cpu_spec *s, cpu_options *o) {
  o->threads = s->threads;
  o->numerics = (cpu_numerics)s->numerics;
  o->replicas = s->replicas;
  o->cache_dir = s->cache_dir[0] ? s->cache_dir : NULL;
  o->progress = progress_on && isatty(STDERR_FILENO) ? stderr : NULL;
  const char *ct = getenv("TPUCC_CPU_COMPILE_THREADS");
  int nct;
  if (ct && threads_of(ct, &nct)) o->compile_threads = nct;
  o->lib_kernels = getenv("TPUCC_CPU_KERNELS"); /* avx512, avx2, portable or off; unset: cpuid's choice */
  const char *tile = getenv("TPUCC_CONV_TILE");
  int px, ov;
  if (tile && sscanf(tile, "%dx%d", &px, &ov) == 2) o->conv_tile[0] = px, o->conv_tile[1] = ov;
}
#endif
