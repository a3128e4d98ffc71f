/* split.c: optimising and generating machine code for a lowered module in
 * parts, on several threads (llvm_compile_parts, cache.h).
 *
 * Units. The entry function is one unit; every other defined function
 * joins the unit of each defined function it references (a kernel's
 * wrapper, its body and any helper they share end up together). Only the
 * entry references functions of other units (the wrappers it calls or
 * hands to parfor). Units are dealt, largest first, to the part with the
 * fewest instructions so far.
 *
 * Parts. Each part is a copy of the module in which the functions of other
 * parts are declarations (external linkage, their function attributes
 * kept) and its own functions that the entry references are external
 * (default visibility), so LLJIT links the parts' objects to each other.
 * Every global stays in every part: they are private constants (scratch
 * offsets, constant literals), folded where used and dropped by the
 * optimiser where not. A module with a global that is not constant, or
 * whose initialiser names a function, is compiled in one part. Each part
 * but the first travels as bitcode to a thread of its own with its own
 * LLVMContext and target machine; optimisation ("default<On>") and code
 * generation are per function after the always-inliner, and no pass
 * changes floating-point semantics, so the parts compute what the whole
 * module computes, bit for bit (the strict-numerics tests check it). */
#include "backend/llvm/cache.h"
#include "backend/llvm/lower.h"

#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { MAX_PARTS = LLVM_MAX_PARTS, SPLIT_MIN_INSTS = 400 };

typedef VEC(LLVMValueRef) value_vec;

typedef struct fn_set {
  value_vec fns;      /* the defined functions */
  int32_t *parent;    /* union-find over fns */
  int64_t *size;      /* instructions of each function */
} fn_set;

static int32_t fn_index(const fn_set *s, LLVMValueRef f) {
  for (int32_t i = 0; i < s->fns.n; i++)
    if (s->fns.v[i] == f) return i;
  return -1;
}

static int32_t find(fn_set *s, int32_t i) {
  while (s->parent[i] != i) i = s->parent[i] = s->parent[s->parent[i]];
  return i;
}

/* Appends to out the index of every defined function instruction (or
 * constant) v refers to, looking through constant expressions (pointer
 * casts under typed pointers). False when the nesting is too deep to
 * follow or out is full. */
static bool refs(const fn_set *s, LLVMValueRef v, int depth, int32_t *out, int *nout, int cap) {
  if (depth > 8) return false;
  if (LLVMIsAFunction(v)) {
    int32_t j = fn_index(s, v);
    if (j >= 0 && *nout < cap) out[(*nout)++] = j;
    return *nout < cap;
  }
  if (!LLVMIsAConstantExpr(v) && !(depth == 0 && LLVMIsAInstruction(v))) return true;
  int n = LLVMGetNumOperands(v);
  for (int k = 0; k < n; k++)
    if (!refs(s, LLVMGetOperand(v, (unsigned)k), depth + 1, out, nout, cap)) return false;
  return true;
}

/* Whether any global is writable or names a function in its initialiser. */
static bool globals_block_split(LLVMModuleRef mod) {
  for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g)) {
    if (LLVMIsDeclaration(g)) continue;
    if (!LLVMIsGlobalConstant(g)) return true;
    LLVMValueRef init = LLVMGetInitializer(g);
    if (init && (LLVMIsAConstantExpr(init) || LLVMIsAConstantStruct(init))) return true;
  }
  return false;
}

/* Fills s with mod's defined functions, their sizes and units; marks
 * exported[i] for those the entry refers to. False when the module is
 * not split (refs too deep). */
static bool units_of(LLVMModuleRef mod, LLVMValueRef entry, arena *a, fn_set *s, bool **exported) {
  memset(s, 0, sizeof *s);
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f)) VEC_PUSH(a, s->fns, f);
  int32_t n = s->fns.n;
  s->parent = arena_array(a, (size_t)n + 1, sizeof(int32_t));
  s->size = arena_array(a, (size_t)n + 1, sizeof(int64_t));
  *exported = arena_array(a, (size_t)n + 1, sizeof(bool));
  for (int32_t i = 0; i < n; i++) s->parent[i] = i;
  int32_t found[64];
  for (int32_t i = 0; i < n; i++) {
    LLVMValueRef f = s->fns.v[i];
    for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b))
      for (LLVMValueRef in = LLVMGetFirstInstruction(b); in; in = LLVMGetNextInstruction(in)) {
        s->size[i]++;
        int nf = 0;
        if (!refs(s, in, 0, found, &nf, (int)COUNTOF(found))) return false;
        for (int k = 0; k < nf; k++) {
          if (f == entry) {
            (*exported)[found[k]] = true;
          } else {
            int32_t x = find(s, i), y = find(s, found[k]);
            if (x != y) s->parent[x] = y;
          }
        }
      }
  }
  int32_t ei = fn_index(s, entry);
  for (int32_t i = 0; i < n; i++) /* the entry referred to from a kernel: one part */
    if (i != ei && find(s, i) == find(s, ei)) return false;
  return ei >= 0;
}

/* part[i] for every function: units dealt largest first to the lightest
 * part. Returns the number of parts used (<= nparts). */
static int assign_parts(fn_set *s, int nparts, arena *a, int32_t *part) {
  int32_t n = s->fns.n;
  int64_t *unit_size = arena_array(a, (size_t)n + 1, sizeof(int64_t));
  for (int32_t i = 0; i < n; i++) unit_size[find(s, i)] += s->size[i];
  int64_t load[MAX_PARTS] = {0};
  int32_t *unit_part = arena_array(a, (size_t)n + 1, sizeof(int32_t));
  for (int32_t i = 0; i < n; i++) unit_part[i] = -1;
  int used = 0;
  for (;;) {
    int32_t best = -1;
    for (int32_t i = 0; i < n; i++)
      if (find(s, i) == i && unit_part[i] < 0 && (best < 0 || unit_size[i] > unit_size[best])) best = i;
    if (best < 0) break;
    int p = 0;
    for (int q = 1; q < nparts; q++)
      if (load[q] < load[p]) p = q;
    unit_part[best] = p;
    load[p] += unit_size[best];
    if (p + 1 > used) used = p + 1;
  }
  for (int32_t i = 0; i < n; i++) part[i] = unit_part[find(s, i)];
  return used;
}

/* In mod (a copy whose functions correspond, in order, to s->fns): the
 * functions of other parts become declarations; this part's exported ones
 * become external. */
static void keep_part(LLVMModuleRef mod, const fn_set *s, const int32_t *part, const bool *exported,
                      int p) {
  LLVMValueRef f = LLVMGetFirstFunction(mod);
  int32_t i = 0;
  VEC(LLVMValueRef) drop = {0};
  arena *a = arena_create();
  for (; f; f = LLVMGetNextFunction(f)) {
    if (LLVMIsDeclaration(f)) continue;
    if (part[i] == p) {
      if (exported[i]) {
        LLVMSetLinkage(f, LLVMExternalLinkage);
        LLVMSetVisibility(f, LLVMDefaultVisibility);
      }
    } else {
      VEC_PUSH(a, drop, f);
    }
    i++;
  }
  for (int32_t k = 0; k < drop.n; k++) {
    LLVMValueRef old = drop.v[k];
    size_t len;
    const char *nm = LLVMGetValueName2(old, &len);
    char *name = arena_alloc(a, len + 1);
    memcpy(name, nm, len);
    name[len] = 0;
    LLVMValueRef decl = LLVMAddFunction(mod, "", LLVMGlobalGetValueType(old));
    unsigned na = LLVMGetAttributeCountAtIndex(old, LLVMAttributeFunctionIndex);
    LLVMAttributeRef attrs[64];
    if (na <= COUNTOF(attrs)) {
      LLVMGetAttributesAtIndex(old, LLVMAttributeFunctionIndex, attrs);
      for (unsigned j = 0; j < na; j++)
        if (LLVMIsEnumAttribute(attrs[j]) && LLVMGetEnumAttributeKind(attrs[j]) !=
                                                 LLVMGetEnumAttributeKindForName("alwaysinline", 12))
          LLVMAddAttributeAtIndex(decl, LLVMAttributeFunctionIndex, attrs[j]);
    }
    LLVMReplaceAllUsesWith(old, decl);
    LLVMDeleteFunction(old);
    LLVMSetValueName2(decl, name, len);
  }
  arena_destroy(a);
}

/* One part on a thread of its own: its module (in a context of its own,
 * read back from bitcode on the caller's thread) in, its object out. */
typedef struct part_job {
  LLVMContextRef ctx;          /* in (owned) */
  LLVMModuleRef mod;           /* in (owned) */
  const cpu_options *opt;
  LLVMMemoryBufferRef obj;     /* out */
  double secs[2];              /* out: CPU seconds of optimisation, code generation */
  base_status st;
  char err[512];
  pthread_t th;
  bool started;
  bool diag_error;             /* set by the context's diagnostic handler */
} part_job;

/* Optimises mod and generates its object with tm; NULL (err set) on failure. */
/* This thread's CPU seconds: what a part costs whatever else the machine
 * runs. */
static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Optimises mod and generates its object with tm; NULL (err set) on
 * failure. secs: the two phases' CPU seconds. */
static LLVMMemoryBufferRef optimise_emit(LLVMModuleRef mod, LLVMTargetMachineRef tm,
                                         const cpu_options *opt, double secs[2], base_status *st,
                                         char *err, size_t errlen) {
  emitter e;
  memset(&e, 0, sizeof e);
  e.mod = mod;
  e.tm = tm;
  e.opt = *opt;
  e.err = err;
  e.errlen = errlen;
  LLVMMemoryBufferRef obj = NULL;
  char *msg = NULL;
  double t0 = now_s();
  bool ok = llvm_optimise(&e);
  double t1 = now_s();
  if (!ok) {
    *st = e.st ? e.st : ST_INTERNAL;
  } else if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &msg, &obj)) {
    snprintf(err, errlen, "LLVM code generation: %s", msg ? msg : "?");
    *st = ST_INTERNAL;
    obj = NULL;
  }
  LLVMDisposeMessage(msg);
  secs[0] = t1 - t0;
  secs[1] = now_s() - t1;
  return obj;
}

static void *run_part(void *arg) {
  part_job *j = arg;
  LLVMTargetMachineRef tm = llvm_host_tm(j->opt, true, j->err, sizeof j->err);
  if (!tm) j->st = ST_INTERNAL;
  else j->obj = optimise_emit(j->mod, tm, j->opt, j->secs, &j->st, j->err, sizeof j->err);
  if (tm) LLVMDisposeTargetMachine(tm);
  LLVMDisposeModule(j->mod);
  LLVMContextDispose(j->ctx);
  j->mod = NULL;
  j->ctx = NULL;
  return NULL;
}

/* The context's diagnostics: a failure is recorded, never printed (the
 * default handler would exit the process). */
static void on_diagnostic(LLVMDiagnosticInfoRef d, void *flag) {
  if (LLVMGetDiagInfoSeverity(d) == LLVMDSError) *(bool *)flag = true;
}

/* Part p of e->mod as a module of a fresh context in j; false when its
 * bitcode does not read back (LLVM 14 refuses some typed-pointer loads
 * that it compiles in memory): the module is then compiled whole. */
static bool make_part(emitter *e, const fn_set *s, const int32_t *part, const bool *exported, int p,
                      part_job *j) {
  LLVMModuleRef c = LLVMCloneModule(e->mod);
  keep_part(c, s, part, exported, p);
  LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(c);
  LLVMDisposeModule(c);
  j->ctx = LLVMContextCreate();
  LLVMContextSetDiagnosticHandler(j->ctx, on_diagnostic, &j->diag_error);
  bool ok = !LLVMParseBitcodeInContext2(j->ctx, bc, &j->mod);
  LLVMDisposeMemoryBuffer(bc);
  if (!ok) {
    LLVMContextDispose(j->ctx);
    j->ctx = NULL;
    j->mod = NULL;
  }
  j->opt = &e->opt;
  return ok;
}

/* How many parts to make of mod (1: do not split). */
static int plan_parts(emitter *e, int nparts, arena *a, fn_set *s, bool **exported, int32_t **part) {
  if (nparts > MAX_PARTS) nparts = MAX_PARTS;
  if (nparts < 2 || e->opt.dump_llvm || globals_block_split(e->mod) ||
      !units_of(e->mod, e->entry, a, s, exported))
    return 1;
  int64_t total = 0;
  for (int32_t i = 0; i < s->fns.n; i++) total += s->size[i];
  if (total < SPLIT_MIN_INSTS) return 1;
  *part = arena_array(a, (size_t)s->fns.n + 1, sizeof(int32_t));
  return assign_parts(s, nparts, a, *part);
}

int llvm_compile_parts(emitter *e, int nparts, LLVMMemoryBufferRef *objs, double secs[3]) {
  arena *a = arena_create();
  fn_set s;
  bool *exported = NULL;
  int32_t *part = NULL;
  int np = plan_parts(e, nparts, a, &s, &exported, &part);
  part_job jobs[MAX_PARTS];
  memset(jobs, 0, sizeof jobs);
  int made = 1; /* copies first: keep_part changes e->mod last */
  while (made < np && make_part(e, &s, part, exported, made, &jobs[made])) made++;
  if (made < np) { /* a part did not read back: the module whole */
    for (int p = 1; p < made; p++) {
      LLVMDisposeModule(jobs[p].mod);
      LLVMContextDispose(jobs[p].ctx);
    }
    np = 1;
  }
  for (int p = 1; p < np; p++)
    jobs[p].started = pthread_create(&jobs[p].th, NULL, run_part, &jobs[p]) == 0;
  if (np > 1) keep_part(e->mod, &s, part, exported, 0);
  for (int p = 1; p < np; p++)
    if (!jobs[p].started) run_part(&jobs[p]); /* no thread to be had: here */
  base_status st0 = ST_OK;
  objs[0] = optimise_emit(e->mod, e->tm, &e->opt, secs, &st0, e->err, e->errlen);
  if (!objs[0]) e->st = st0;
  secs[2] = secs[0] + secs[1];
  bool ok = objs[0] != NULL;
  for (int p = 1; p < np; p++) {
    if (jobs[p].started) pthread_join(jobs[p].th, NULL);
    objs[p] = jobs[p].obj;
    secs[0] += jobs[p].secs[0];
    secs[1] += jobs[p].secs[1];
    if (jobs[p].secs[0] + jobs[p].secs[1] > secs[2]) secs[2] = jobs[p].secs[0] + jobs[p].secs[1];
    if (!objs[p] && ok) {
      ok = llvm_fail(e, jobs[p].st ? jobs[p].st : ST_INTERNAL, "%s", jobs[p].err);
    }
  }
  arena_destroy(a);
  if (ok) return np;
  for (int p = 0; p < np; p++)
    if (objs[p]) LLVMDisposeMemoryBuffer(objs[p]);
  return 0;
}
