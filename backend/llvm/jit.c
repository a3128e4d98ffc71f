/* jit.c: compile to native code in process with ORC LLJIT, and run.
 *
 * The LLJIT gets the same target machine (host CPU name and features) the
 * optimiser used. Symbols the generated code calls (libm, libc, OpenBLAS)
 * are defined as absolute addresses taken here, so resolution does not
 * depend on how the executable was linked; anything else resolves through
 * the process's own symbol table. */
#include "backend/llvm/lower.h"
#include "backend/llvm/lk.h"
#include "backend/llvm/cache.h"

#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#ifdef TPUCC_HAVE_OPENBLAS
#include <cblas.h>
#endif

typedef void (*entry_fn)(void *const *inputs, void *const *outputs, void *scratch,
                         cpu_parfor_fn parfor, void *parctx, cpu_rep *rep);

struct cpu_exe {
  arena *a;
  LLVMOrcLLJITRef jit;
  entry_fn entry;
  int32_t nparams;
  ir_shape *params;   /* entry parameter shapes */
  ir_shape result;
  int32_t ninputs, noutputs;
  int32_t replicas;   /* >= 1 */
  void **scratch;     /* per replica */
  int64_t scratch_bytes;
  cpu_pool **pool;    /* per replica */
  cpu_ffi_call *ffi_calls; /* host-function bindings the code calls */
  cpu_coll *colls;         /* collectives the code calls */
  cpu_exe_info info;
};

void cpu_options_init(cpu_options *o) {
  memset(o, 0, sizeof *o);
  o->numerics = CPU_NUMERICS_NATIVE;
  o->opt_level = 3;
  o->use_blas = false; /* the emitted kernel matches OpenBLAS here (docs/performance.md) */
}

bool cpu_numerics_from_name(const char *s, cpu_numerics *out) {
  static const char *names[] = {"native", "strict", "tpu"};
  for (int i = 0; i < 3; i++)
    if (strcmp(s, names[i]) == 0) {
      *out = (cpu_numerics)i;
      return true;
    }
  return false;
}

int cpu_default_threads(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static base_status llvm_err(LLVMErrorRef er, const char *what, char *err, size_t errlen) {
  char *m = LLVMGetErrorMessage(er);
  snprintf(err, errlen, "%s: %s", what, m);
  LLVMDisposeErrorMessage(m);
  return ST_INTERNAL;
}

/* LLVM 15 renamed the C API's symbol pair (same members). */
#if TPUCC_LLVM_MAJOR >= 15
typedef LLVMOrcCSymbolMapPair symbol_pair;
#else
typedef LLVMJITCSymbolMapPair symbol_pair;
#endif

/* The library GEMM's two entry points (lk_call.c) as v's functions. */
static LLVMErrorRef define_lk_symbols(LLVMOrcLLJITRef jit, const lk_variant *v) {
  if (!v) return NULL;
  symbol_pair pairs[2];
  const char *names[2] = {"tpucc_lk_gemm_packb", "tpucc_lk_gemm_tiles"};
  lk_row_fn fns[2] = {v->packb, v->tiles};
  for (int i = 0; i < 2; i++) {
    pairs[i].Name = LLVMOrcLLJITMangleAndIntern(jit, names[i]);
    pairs[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)fns[i];
    pairs[i].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
    pairs[i].Sym.Flags.TargetFlags = 0;
  }
  return LLVMOrcJITDylibDefine(LLVMOrcLLJITGetMainJITDylib(jit), LLVMOrcAbsoluteSymbols(pairs, 2));
}

static LLVMErrorRef define_symbols(LLVMOrcLLJITRef jit) {
  static const struct {
    const char *name;
    void (*fn)(void);
  } syms[] = {
#define F(n) {#n, (void (*)(void))n}
      F(expf), F(expm1f), F(logf), F(log1pf), F(cbrtf), F(tanhf), F(sinf), F(cosf),
      F(powf), F(atan2f), F(fmodf), F(sqrtf), F(floorf), F(ceilf), F(roundf),
      /* TPU numerics: the vector unit's double functions (elem.c) */
      F(exp), F(expm1), F(log), F(log1p), F(cbrt), F(tanh), F(sin), F(cos), F(pow), F(atan2),
      F(memcpy), F(memset), F(memmove), F(cpu_ffi_invoke), F(cpu_coll_run),
      F(cpu_while_over),
#ifdef TPUCC_HAVE_OPENBLAS
      F(cblas_sgemm),
#endif
#undef F
  };
  symbol_pair pairs[COUNTOF(syms)];
  for (size_t i = 0; i < COUNTOF(syms); i++) {
    pairs[i].Name = LLVMOrcLLJITMangleAndIntern(jit, syms[i].name);
    pairs[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)syms[i].fn;
    pairs[i].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
    pairs[i].Sym.Flags.TargetFlags = 0;
  }
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(jit);
  LLVMErrorRef er = LLVMOrcJITDylibDefine(jd, LLVMOrcAbsoluteSymbols(pairs, COUNTOF(syms)));
  if (er) return er;
  LLVMOrcDefinitionGeneratorRef gen;
  er = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(jit), NULL, NULL);
  if (er) return er;
  LLVMOrcJITDylibAddGenerator(jd, gen);
  return NULL;
}

const char *cpu_cache_use_name(cpu_cache_use u) {
  static const char *names[] = {"off", "hit", "stored", "not stored"};
  return (unsigned)u < COUNTOF(names) ? names[u] : "?";
}

static void dispose_lowered(emitter *e, LLVMOrcThreadSafeContextRef tsc, LLVMTargetMachineRef tm) {
  cpu_ffi_free(e->ffi_calls);
  cpu_coll_free(e->colls);
  llvm_emitter_free(e);
  if (e->mod) LLVMDisposeModule(e->mod);
  LLVMOrcDisposeThreadSafeContext(tsc);
  LLVMDisposeTargetMachine(tm);
}

/* A cache payload: the number of objects (u32), their lengths (u64 each),
 * their bytes. */
static uint8_t *pack(LLVMMemoryBufferRef *objs, int n, size_t *len) {
  size_t total = 4 + 8 * (size_t)n;
  for (int i = 0; i < n; i++) total += LLVMGetBufferSize(objs[i]);
  uint8_t *p = malloc(total), *q = p + 4 + 8 * (size_t)n;
  if (!p) return NULL;
  uint32_t n32 = (uint32_t)n;
  memcpy(p, &n32, 4);
  for (int i = 0; i < n; i++) {
    uint64_t l = LLVMGetBufferSize(objs[i]);
    memcpy(p + 4 + 8 * (size_t)i, &l, 8);
    memcpy(q, LLVMGetBufferStart(objs[i]), (size_t)l);
    q += l;
  }
  *len = total;
  return p;
}

/* The objects of a payload; 0 when it is not one (a checksummed entry of
 * another layout). */
static int unpack(const uint8_t *p, size_t len, LLVMMemoryBufferRef *objs) {
  uint32_t n;
  if (len < 4) return 0;
  memcpy(&n, p, 4);
  if (n < 1 || n > LLVM_MAX_PARTS || len < 4 + 8 * (size_t)n) return 0;
  size_t off = 4 + 8 * (size_t)n;
  uint64_t l[LLVM_MAX_PARTS];
  for (uint32_t i = 0; i < n; i++) {
    memcpy(&l[i], p + 4 + 8 * (size_t)i, 8);
    if (l[i] == 0 || l[i] > len - off) return 0;
    off += (size_t)l[i];
  }
  if (off != len) return 0;
  off = 4 + 8 * (size_t)n;
  for (uint32_t i = 0; i < n; i++) {
    objs[i] = LLVMCreateMemoryBufferWithMemoryRangeCopy((const char *)p + off, (size_t)l[i], "tpucc-cached");
    off += (size_t)l[i];
  }
  return (int)n;
}

/* The machine code of the lowered module e->mod as objects (objs, the
 * count returned): from the cache (opt->cache_dir) when it holds the
 * module, else optimised and generated in parts on compile_threads
 * threads (split.c) and stored. Disposes e->mod. 0 after a failure (in e). */
static int objects_of(emitter *e, const cpu_options *opt, llvm_progress *pg, cpu_exe_info *info,
                      LLVMMemoryBufferRef *objs) {
  double t0 = now();
  uint8_t key[LLVM_CACHE_KEY_BYTES];
  /* Host-function bindings and collective descriptors are addresses in
   * this process baked into the code; a dump needs the optimised IR: none
   * of them comes from the cache. */
  bool cached = opt->cache_dir && !e->ffi_calls && !e->colls && !opt->dump_llvm;
  info->cache = CPU_CACHE_OFF;
  if (cached) {
    llvm_cache_key(e->mod, opt, e->tm, key);
    size_t len;
    const char *why;
    uint8_t *payload = llvm_cache_load(opt->cache_dir, key, &len, &why);
    int n = payload ? unpack(payload, len, objs) : 0;
    free(payload);
    if (n) {
      LLVMDisposeModule(e->mod);
      e->mod = NULL;
      info->cache = CPU_CACHE_HIT;
      info->cache_seconds = now() - t0;
      return n;
    }
    if (payload || strcmp(why, "no entry") != 0)
      snprintf(info->cache_note, sizeof info->cache_note, "%s", payload ? "an entry of another layout (ignored; replaced)" : why);
  }
  double t1 = now();
  int threads = opt->compile_threads > 0 ? opt->compile_threads : cpu_default_threads();
  double secs[3] = {0, 0, 0};
  int n = llvm_compile_parts(e, threads, objs, secs);
  LLVMDisposeModule(e->mod);
  e->mod = NULL;
  double t2 = now();
  size_t len = 0;
  uint8_t *payload = n && cached ? pack(objs, n, &len) : NULL;
  if (payload) {
    char why[256];
    if (llvm_cache_store(opt->cache_dir, key, payload, len, why, sizeof why)) {
      info->cache = CPU_CACHE_STORED;
    } else {
      info->cache = CPU_CACHE_NOT_STORED;
      snprintf(info->cache_note, sizeof info->cache_note, "%s", why);
    }
    free(payload);
  }
  info->build_seconds = t2 - t1;
  info->opt_seconds = secs[0];
  info->codegen_seconds = secs[1];
  info->part_max_seconds = secs[2];
  info->cache_seconds = (t1 - t0) + (now() - t2);
  llvm_progress_phase(pg, "linking");
  return n;
}

/* The LLJIT (taking tm) with the objects linked, and the entry's address. */
static base_status link_objects(cpu_exe *x, LLVMTargetMachineRef tm, LLVMMemoryBufferRef *objs, int n,
                                const char *entry_name, const lk_variant *lk, char *err, size_t errlen) {
  LLVMOrcLLJITBuilderRef jb = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(jb, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm));
  LLVMErrorRef er = LLVMOrcCreateLLJIT(&x->jit, jb);
  if (!er) er = define_symbols(x->jit);
  if (!er) er = define_lk_symbols(x->jit, lk);
  int i = 0;
  /* The JIT owns each object once added, whatever the outcome. */
  for (; !er && i < n; i++)
    er = LLVMOrcLLJITAddObjectFile(x->jit, LLVMOrcLLJITGetMainJITDylib(x->jit), objs[i]);
  for (; i < n; i++) LLVMDisposeMemoryBuffer(objs[i]);
  if (er) return llvm_err(er, "LLJIT", err, errlen);
  LLVMOrcExecutorAddress addr = 0;
  if ((er = LLVMOrcLLJITLookup(x->jit, &addr, entry_name))) return llvm_err(er, "LLJIT lookup", err, errlen);
  x->entry = (entry_fn)(uintptr_t)addr;
  return ST_OK;
}

base_status cpu_compile(const ir_module *m, const cpu_options *o, cpu_exe **out_exe,
                        char *err, size_t errlen) {
  *out_exe = NULL;
  cpu_options opt;
  if (o) opt = *o;
  else cpu_options_init(&opt);
  if (opt.threads <= 0) opt.threads = cpu_default_threads();
  if (opt.replicas < 1) opt.replicas = 1;
  if (opt.replicas > CPU_MAX_REPLICAS) {
    snprintf(err, errlen, "%d replicas: the cpu runs at most %d", (int)opt.replicas, CPU_MAX_REPLICAS);
    return ST_INVALID_ARGUMENT;
  }
  /* Code for a CPU named by the caller (cpu_name, cpu_features) keeps its
   * emitted kernels unless a variant is named too: the variant is chosen
   * by this CPU's cpuid, not by those features. */
  if (!opt.lib_kernels && (opt.cpu_name || opt.cpu_features)) opt.lib_kernels = "off";
  const lk_variant *lk = NULL;
  if (!opt.lib_kernels || strcmp(opt.lib_kernels, "off")) {
    if (!(lk = cpu_lk_find(opt.lib_kernels))) {
      snprintf(err, errlen, "library kernels '%s': not a variant this CPU runs (avx512, avx2, portable, off)",
               opt.lib_kernels);
      return ST_INVALID_ARGUMENT;
    }
    opt.lib_kernels = lk->name; /* in the cache key */
  }
  double t0 = now();
  LLVMTargetMachineRef tm = llvm_host_tm(&opt, true, err, errlen); /* PIC: JIT memory may lie above 4 GiB */
  if (!tm) return ST_INTERNAL;
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  LLVMContextRef ctx = LLVMOrcThreadSafeContextGetContext(tsc);
  emitter e;
  bool ok = llvm_lower_module(&e, m, &opt, false, ctx, tm, err, errlen);
  /* The level rule (docs/cpu-backend.md, "Compile levels"): little work in
   * emitted code, a cheaper pipeline and code generator. */
  LLVMTargetMachineRef tm_small = NULL;
  int lvl = ok && !opt.fixed_level ? llvm_level_for_work(e.work - e.lib_work) : 3;
  if (lvl < opt.opt_level) {
    opt.opt_level = e.opt.opt_level = lvl; /* in the cache key */
    if ((tm_small = llvm_host_tm(&opt, true, err, errlen))) e.tm = tm_small;
  }
  double t1 = now();
  cpu_exe *x = ok ? calloc(1, sizeof *x) : NULL;
  if (!x) {
    base_status st = !ok ? (e.st ? e.st : ST_INTERNAL) : ST_OUT_OF_MEMORY;
    if (ok) snprintf(err, errlen, "out of memory");
    dispose_lowered(&e, tsc, tm);
    return st;
  }
  llvm_progress *pg = llvm_progress_start(opt.progress, e.nkernels);
  LLVMMemoryBufferRef objs[LLVM_MAX_PARTS];
  int nobj = objects_of(&e, &opt, pg, &x->info, objs);
  if (tm_small) LLVMDisposeTargetMachine(tm_small);
  e.tm = tm;
  if (!nobj) {
    llvm_progress_end(pg);
    base_status st = e.st ? e.st : ST_INTERNAL;
    dispose_lowered(&e, tsc, tm);
    free(x);
    return st;
  }
  x->a = arena_create();
  x->scratch_bytes = e.scratch_bytes;
  x->ninputs = e.ninputs;
  x->noutputs = e.noutputs;
  x->info.kernels = e.nkernels;
  const ir_comp *ec = &m->comps.v[m->entry];
  x->nparams = ec->nparams;
  x->params = arena_array(x->a, (size_t)ec->nparams + 1, sizeof(ir_shape));
  for (int p = 0; p < ec->nparams; p++) x->params[p] = ir_shape_clone(x->a, ec->insts.v[ec->params[p]].shape);
  x->result = ir_shape_clone(x->a, ec->insts.v[ec->root].shape);
  x->ffi_calls = e.ffi_calls;
  x->colls = e.colls;
  llvm_emitter_free(&e);
  LLVMOrcDisposeThreadSafeContext(tsc);
  double t2 = now();
  base_status st = link_objects(x, tm, objs, nobj, opt.entry_name ? opt.entry_name : "tpucc_entry", lk,
                                err, errlen);
  double t3 = now();
  llvm_progress_end(pg);
  if (st == ST_OK) {
    size_t sb = (size_t)((x->scratch_bytes + 63) & ~(int64_t)63);
    int per = opt.threads / opt.replicas > 1 ? opt.threads / opt.replicas : 1;
    x->scratch = calloc((size_t)opt.replicas, sizeof *x->scratch);
    x->pool = calloc((size_t)opt.replicas, sizeof *x->pool);
    if (x->scratch && x->pool) x->replicas = opt.replicas;
    for (int r = 0; r < x->replicas; r++) {
      x->scratch[r] = aligned_alloc(64, sb ? sb : 64);
      x->pool[r] = cpu_pool_create(per);
      if (!x->scratch[r] || !x->pool[r]) break;
    }
    if (!x->replicas || !x->scratch[x->replicas - 1] || !x->pool[x->replicas - 1]) {
      snprintf(err, errlen, "cannot allocate %lld bytes of scratch for each of %d replicas", (long long)sb,
               (int)opt.replicas);
      st = ST_OUT_OF_MEMORY;
    }
  }
  if (st != ST_OK) {
    cpu_exe_destroy(x);
    return st;
  }
#ifdef TPUCC_HAVE_OPENBLAS
  openblas_set_num_threads(opt.threads);
#endif
  x->info.lower_seconds = t1 - t0;
  x->info.link_seconds = t3 - t2;
  x->info.jit_seconds = t3 - t2;
  x->info.parts = nobj;
  x->info.opt_level = opt.opt_level;
  x->info.scratch_bytes = x->scratch_bytes;
  x->info.threads = opt.threads;
  llvm_kernel_isa(opt.cpu_name, opt.cpu_features, x->info.isa, sizeof x->info.isa);
  size_t il = strlen(x->info.isa);
  if (lk)
    snprintf(x->info.isa + il, sizeof x->info.isa - il,
             "; dots under 2^24 multiply-adds on the precompiled %s GEMM (%s)", lk->name, lk->tiles_doc);
  *out_exe = x;
  return ST_OK;
}

static int flatten(ir_literal *l, void **ptrs, int n) {
  if (l->shape.type != IR_TUPLE) {
    ptrs[n] = l->data;
    return n + 1;
  }
  for (int i = 0; i < l->shape.ntuple; i++) n = flatten(l->elems[i], ptrs, n);
  return n;
}

static base_status check_args(cpu_exe *x, ir_literal *const *args, int nargs, char *err, size_t errlen) {
  if (nargs != x->nparams) {
    snprintf(err, errlen, "expected %d arguments, got %d", x->nparams, nargs);
    return ST_INVALID_ARGUMENT;
  }
  for (int i = 0; i < nargs; i++) {
    if (!args[i] || !ir_shape_equal(&args[i]->shape, &x->params[i])) {
      strbuf want, got;
      sb_init(&want);
      sb_init(&got);
      ir_shape_print(&want, &x->params[i], false);
      if (args[i]) ir_shape_print(&got, &args[i]->shape, false);
      snprintf(err, errlen, "argument %d: expected %s, got %s", i, sb_str(&want), args[i] ? sb_str(&got) : "nothing");
      sb_free(&want);
      sb_free(&got);
      return ST_INVALID_ARGUMENT;
    }
  }
  return ST_OK;
}

base_status cpu_execute(cpu_exe *x, ir_literal *const *args, int nargs, arena *out_arena,
                        ir_literal **out, char *err, size_t errlen) {
  *out = NULL;
  base_status st = check_args(x, args, nargs, err, errlen);
  if (st != ST_OK) return st;
  ir_literal *res = ir_literal_try_create(out_arena, &x->result);
  if (!res) {
    snprintf(err, errlen, "the host has no memory for the result");
    return ST_OUT_OF_MEMORY;
  }
  st = cpu_execute_to(x, args, nargs, res, err, errlen);
  if (st == ST_OK) *out = res;
  return st;
}

/* The leaf pointers of one replica's arguments and result: in[ninputs],
 * then out[noutputs], in one malloc'ed block (NULL when out of memory). */
static void **leaf_ptrs(cpu_exe *x, ir_literal *const *args, int nargs, ir_literal *res) {
  void **in = calloc((size_t)x->ninputs + (size_t)x->noutputs + 1, sizeof(void *));
  if (!in) return NULL;
  int n = 0;
  for (int i = 0; i < nargs; i++) n = flatten(args[i], in, n);
  BASE_ASSERT(n == x->ninputs);
  n = flatten(res, in + x->ninputs, 0);
  BASE_ASSERT(n == x->noutputs);
  return in;
}

static base_status check_res(cpu_exe *x, const ir_literal *res, char *err, size_t errlen) {
  if (res && ir_shape_equal(&res->shape, &x->result)) return ST_OK;
  snprintf(err, errlen, "the result literal does not have the result's shape");
  return ST_INVALID_ARGUMENT;
}

base_status cpu_execute_to(cpu_exe *x, ir_literal *const *args, int nargs, ir_literal *res,
                           char *err, size_t errlen) {
  if (x->replicas != 1) {
    snprintf(err, errlen, "the program was compiled for %d replicas: run it with cpu_execute_replicas",
             (int)x->replicas);
    return ST_INVALID_ARGUMENT;
  }
  base_status st = check_args(x, args, nargs, err, errlen);
  if (st == ST_OK) st = check_res(x, res, err, errlen);
  if (st != ST_OK) return st;
  void **in = leaf_ptrs(x, args, nargs, res);
  if (!in) {
    snprintf(err, errlen, "out of memory");
    return ST_OUT_OF_MEMORY;
  }
  const void *all[1];
  cpu_rep rep = {.id = 0, .n = 1, .all = all};
  x->entry(in, in + x->ninputs, x->scratch[0], cpu_pool_parfor, x->pool[0], &rep);
  free(in);
  if (!rep.failed) return ST_OK;
  snprintf(err, errlen, "%s", rep.msg);
  return ST_INTERNAL;
}

/* One replica of a replicated run, on its own thread. */
typedef struct replica_run {
  cpu_exe *x;
  cpu_rep rep;
  void **ptrs; /* leaf_ptrs */
  pthread_t tid;
  bool started;
} replica_run;

static void *run_replica(void *arg) {
  replica_run *rr = arg;
  cpu_exe *x = rr->x;
  int r = rr->rep.id;
  x->entry(rr->ptrs, rr->ptrs + x->ninputs, x->scratch[r], cpu_pool_parfor, x->pool[r], &rr->rep);
  if (!rr->rep.failed) rr->rep.comm->ops->leave(rr->rep.comm, r, NULL); /* finished */
  return NULL;
}

/* The message of a failed replicated run: the lowest replica that failed
 * on its own, else the lowest that failed. Whether a replica failed on its
 * own (a host function, replicas reaching different collectives) does not
 * depend on timing, and neither does its message. */
static base_status replicas_status(replica_run *rr, int n, char *err, size_t errlen) {
  int pick = -1;
  for (int r = 0; r < n && pick < 0; r++)
    if (rr[r].rep.failed && rr[r].rep.own) pick = r;
  for (int r = 0; r < n && pick < 0; r++)
    if (rr[r].rep.failed) pick = r;
  if (pick < 0) return ST_OK;
  snprintf(err, errlen, "replica %d: %s", (int)rr[pick].rep.id, rr[pick].rep.msg);
  return ST_INTERNAL;
}

cpu_replicas_fn cpu_replicas_hook;

base_status cpu_execute_replicas(cpu_exe *x, int n, ir_literal *const *args, int nargs,
                                 ir_literal *const *res, char *err, size_t errlen) {
  if (n < 1 || n != x->replicas) {
    snprintf(err, errlen, "%d replicas given to a program compiled for %d", n, (int)x->replicas);
    return ST_INVALID_ARGUMENT;
  }
  if (cpu_replicas_hook) return cpu_replicas_hook(x, n, args, nargs, res, err, errlen);
  coll_rdv *rdv = coll_rdv_create(n);
  if (!rdv) {
    snprintf(err, errlen, "out of memory");
    return ST_OUT_OF_MEMORY;
  }
  base_status st = cpu_execute_comm(x, coll_rdv_comm(rdv), args, nargs, res, err, errlen);
  coll_rdv_destroy(rdv);
  return st;
}

base_status cpu_execute_comm(cpu_exe *x, coll_comm *comm, ir_literal *const *args, int nargs,
                             ir_literal *const *res, char *err, size_t errlen) {
  int n = comm->n, first = comm->first, nl = comm->local;
  if (n != x->replicas || first < 0 || nl < 1 || first + nl > n) {
    snprintf(err, errlen, "replicas %d..%d of %d given to a program compiled for %d", first,
             first + nl - 1, n, (int)x->replicas);
    return ST_INVALID_ARGUMENT;
  }
  for (int j = 0; j < nl; j++) {
    base_status st = check_args(x, args + (size_t)j * (size_t)nargs, nargs, err, errlen);
    if (st == ST_OK) st = check_res(x, res[j], err, errlen);
    if (st != ST_OK) {
      size_t k = strlen(err);
      if (k < errlen) snprintf(err + k, errlen - k, " (replica %d of %d)", first + j, n);
      return st;
    }
  }
  replica_run *rr = calloc((size_t)nl, sizeof *rr);
  const void **all = calloc((size_t)nl * (size_t)n, sizeof *all);
  base_status st = rr && all ? ST_OK : ST_OUT_OF_MEMORY;
  for (int j = 0; j < nl && st == ST_OK; j++) {
    rr[j].x = x;
    rr[j].rep = (cpu_rep){.comm = comm, .id = first + j, .n = n, .all = all + (size_t)j * (size_t)n};
    rr[j].ptrs = leaf_ptrs(x, args + (size_t)j * (size_t)nargs, nargs, res[j]);
    if (!rr[j].ptrs) st = ST_OUT_OF_MEMORY;
  }
  /* the first local replica runs on the calling thread */
  for (int j = 1; j < nl && st == ST_OK; j++) {
    if (pthread_create(&rr[j].tid, NULL, run_replica, &rr[j]) != 0) {
      cpu_rep_fail(&rr[j].rep, true, "cannot start a thread for replica %d", first + j);
      continue;
    }
    rr[j].started = true;
  }
  if (st == ST_OK) run_replica(&rr[0]);
  for (int j = 1; j < nl && st == ST_OK; j++)
    if (rr[j].started) pthread_join(rr[j].tid, NULL);
  if (st == ST_OK) st = replicas_status(rr, nl, err, errlen);
  else snprintf(err, errlen, "out of memory");
  for (int j = 0; rr && j < nl; j++) {
    free(rr[j].ptrs);
    free(rr[j].rep.pack);
  }
  free(rr);
  free(all);
  return st;
}

void cpu_exe_get_info(const cpu_exe *x, cpu_exe_info *out) { *out = x->info; }

void cpu_exe_destroy(cpu_exe *x) {
  if (!x) return;
  for (int r = 0; r < x->replicas; r++) {
    cpu_pool_destroy(x->pool[r]);
    free(x->scratch[r]);
  }
  free(x->pool);
  free(x->scratch);
  if (x->jit) {
    LLVMErrorRef er = LLVMOrcDisposeLLJIT(x->jit);
    if (er) LLVMConsumeError(er);
  }
  cpu_ffi_free(x->ffi_calls);
  cpu_coll_free(x->colls);
  arena_destroy(x->a);
  free(x);
}

base_status cpu_run_once(const ir_module *m, const cpu_options *o, ir_literal *const *args,
                         int nargs, arena *a, ir_literal **out, char *err, size_t errlen) {
  cpu_exe *x = NULL;
  base_status st = cpu_compile(m, o, &x, err, errlen);
  if (st == ST_OK) st = cpu_execute(x, args, nargs, a, out, err, errlen);
  cpu_exe_destroy(x);
  return st;
}
