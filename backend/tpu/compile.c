/* compile.c: tpu_compile as a table of named steps (steps.h): tpu-lower
 * (the entry's parameters and constants placed in HBM, the entry lowered
 * into kernels by lower.c), tpu-buffers (results placed in their regions)
 * and tpu-emit (the .tpub image assembled and verified).
 *
 * HBM map: parameters (their own dtype, dense row-major) first, then
 * constants (internal types) and scratch buffers (first fit with reuse
 * after the last use), results last-allocated. Every region is aligned to
 * 512 bytes so that no two buffers share a race-checker granule. */
#include "backend/tpu/steps.h"
#include "backend/tpu/coll_sync.h"

#include <stdlib.h>
#include <time.h>

void tpu_options_init(tpu_options *o) {
  memset(o, 0, sizeof *o);
  o->target = "v3";
  o->precision = IR_PREC_DEFAULT;
}

void tpu_info_free(tpu_compile_info *info) {
  if (!info) return;
  free(info->memory_report);
  info->memory_report = NULL;
  free(info->explain);
  info->explain = NULL;
}

typedef VEC(ir_shape) shape_vec;
typedef VEC(tval *) tval_vec;

static void leaves(arena *a, const ir_shape *s, shape_vec *out) {
  if (s->type == IR_TUPLE) {
    for (int k = 0; k < s->ntuple; k++) leaves(a, &s->tuple[k], out);
    return;
  }
  VEC_PUSH(a, *out, *s);
}

static void val_leaves(arena *a, tval *v, tval_vec *out) {
  if (v->tuple) {
    for (int k = 0; k < v->n; k++) val_leaves(a, v->elems[k], out);
    return;
  }
  VEC_PUSH(a, *out, v);
}

static void set_name(char *dst, const char *src) {
  size_t n = strlen(src);
  if (n > TPUB_MAX_NAME) n = TPUB_MAX_NAME;
  if (n == 0) {
    memcpy(dst, "t", 2);
    return;
  }
  memcpy(dst, src, n);
  dst[n] = 0;
}

static int shape_leaf_count(const ir_shape *s) {
  if (s->type != IR_TUPLE) return 1;
  int n = 0;
  for (int k = 0; k < s->ntuple; k++) n += shape_leaf_count(&s->tuple[k]);
  return n;
}

/* One elementwise program from the n 32-bit words at in (of type from)
 * to the words at out (may be in): a node of op and type to (elem.c: a
 * bitcast-convert between s32 and f16 converts f16 bits). */
static void word_program(tb *b, uint64_t in, uint64_t out, ir_type from, ir_type to, ir_op op,
                         int64_t n) {
  tk_node nodes[2] = {{TK_IN, from, 0, 0, 0, 0, 0, 0, {0, 0, 0}},
                      {TK_OP, to, 0, 0, op, 0, 0, 1, {0, 0, 0}}};
  int root = 1;
  uint64_t ia = in, oa = out;
  ir_type it = from;
  tk_elem e = {2, nodes, 1, &ia, &it, 1, &root, &oa, n};
  tk_elementwise(b, &e);
}

/* The value of an entry parameter (or of one array leaf of a tuple
 * parameter) of shape s: leaf *leaf of the signature pt, named name (a
 * tuple's leaves name.0, name.1, ... by their index path). NULL on error
 * (reported). */
static tval *param_value(lctx *x, const ir_shape *s, const char *name, tpub_tensor *pt, int *leaf) {
  tb *bp = x->b;
  arena *a = bp->a;
  if (s->type == IR_TUPLE) {
    tval *t = arena_alloc(a, sizeof *t);
    t->tuple = true;
    t->n = s->ntuple;
    t->elems = arena_array(a, (size_t)(t->n ? t->n : 1), sizeof(tval *));
    for (int k = 0; k < t->n && !bp->failed; k++) {
      char sub[TPUB_MAX_NAME + 16];
      snprintf(sub, sizeof sub, "%.*s.%d", TPUB_MAX_NAME, name, k);
      t->elems[k] = param_value(x, &s->tuple[k], sub, pt, leaf);
    }
    return t;
  }
  int p = (*leaf)++;
  if (tk_itype(s->type) == IR_TYPE_INVALID) {
    tb_error(bp, ST_UNSUPPORTED, "parameter of type %s is not supported", ir_type_name(s->type));
    return NULL;
  }
  if (s->rank > TPUB_MAX_RANK) {
    tb_error(bp, ST_UNSUPPORTED, "parameter of rank %d: a TPU program's parameters have at most %d dimensions",
             s->rank, TPUB_MAX_RANK);
    return NULL;
  }
  int64_t n = ir_shape_count(s);
  uint64_t bytes = (uint64_t)n * (uint64_t)ir_type_size(s->type);
  set_name(pt[p].name, name);
  pt[p].dtype = ir_type_tpurt_code(s->type);
  pt[p].rank = s->rank;
  for (int k = 0; k < s->rank; k++) pt[p].dims[k] = s->dims[k];
  pt[p].bytes = bytes;
  pt[p].hbm_offset = tb_hbm_alloc(bp, bytes);
  tval *v = arena_alloc(a, sizeof *v);
  v->type = s->type;
  v->rank = s->rank;
  v->count = n;
  for (int k = 0; k < s->rank; k++) v->dims[k] = s->dims[k];
  v->buf = arena_alloc(a, sizeof *v->buf);
  v->buf->addr = pt[p].hbm_offset;
  v->buf->bytes = bytes;
  v->buf->refs = 1;
  int es = ir_type_size(s->type);
  if (es < tv_esize(s->type)) {
    /* pred / s8 / f16: elements -> zero-extended 32-bit words; s8 then
     * sign-extended, f16 bits turned into the f32 value. */
    tval *w = tv_new(x->b, s->type, s->rank, s->dims);
    tk_fill(bp, tv_addr(w), n, 4, 0);
    int64_t one = n, ds = 4 / es, ss = 1;
    tk_copy(bp, tv_addr(w), &ds, v->buf->addr, &ss, 1, &one, es);
    if (s->type == IR_S8 || s->type == IR_F16)
      word_program(bp, tv_addr(w), tv_addr(w), IR_S32, s->type,
                   s->type == IR_S8 ? IR_OP_CONVERT : IR_OP_BITCAST_CONVERT, n);
    v = w;
  }
  return v;
}

/* The image of a finished build: its SMEM, constants, signature (params
 * pt[np], results rt[nr]) and op table copied, its code and op map taken
 * from b (NULL there afterwards). NULL with the reason in err when host
 * memory runs out. */
static tpub_image *assemble_image(tb *b, const char *spec, const tpub_tensor *pt, int np,
                                  const tpub_tensor *rt, int nr, const tv_pool *pool, char *err,
                                  size_t errlen) {
  tpub_image *img = tpub_new(NULL);
  if (!img) goto oom;
  size_t sl = strlen(spec);
  char *tspec = rt_alloc(&img->alloc, sl + 1);
  if (!tspec) goto oom;
  memcpy(tspec, spec, sl + 1);
  rt_free(&img->alloc, img->target);
  img->target = tspec;
  img->hbm_bytes = b->hbm_peak < 4096 ? 4096 : b->hbm_peak;
  uint32_t nsm = b->smem_words ? b->smem_words : 1;
  img->params = rt_calloc(&img->alloc, (size_t)np + 1, sizeof *img->params);
  img->results = rt_calloc(&img->alloc, (size_t)nr + 1, sizeof *img->results);
  img->consts = rt_calloc(&img->alloc, (size_t)pool->v.n + 1, sizeof *img->consts);
  img->smem = rt_calloc(&img->alloc, nsm, 4);
  if (!img->params || !img->results || !img->consts || !img->smem) goto oom;
  img->nparams = (uint32_t)np;
  memcpy(img->params, pt, (size_t)np * sizeof *pt);
  img->nresults = (uint32_t)nr;
  memcpy(img->results, rt, (size_t)nr * sizeof *rt);
  /* The builder's code and op map are malloc'd (tb_fini), as the image's
   * default allocator is: the image takes them. */
  img->ncode = (uint32_t)b->code.n;
  img->code = b->code.v;
  b->code.v = NULL;
  img->nsmem = nsm;
  memcpy(img->smem, b->smem, (size_t)b->smem_words * 4);
  for (int k = 0; k < pool->v.n; k++) {
    tpub_const c = pool->v.v[k];
    c.data = rt_alloc(&img->alloc, c.size);
    if (!c.data) goto oom;
    memcpy(c.data, pool->v.v[k].data, c.size);
    img->consts[img->nconsts++] = c;
  }
  int rc = tpub_set_ops_take(img, b->ops.v, (uint32_t)b->ops.n, b->code_op.v, err, errlen);
  if (rc == -2) goto oom;
  if (rc) base_die("tpu: op table: %s", err);
  b->code_op.v = NULL;
  return img;
oom:
  tpub_free(img);
  snprintf(err, errlen, "out of memory assembling the program");
  return NULL;
}

/* The signature's parameters: each entry parameter's value
 * (its own dtype, widened when needed; a tuple parameter is one .tpub
 * parameter per array leaf, depth first), returned; their .tpub tensors
 * into *out_pt (*out_n of them). */
static tval **bind_params(lctx *x, arena *a, tpub_tensor **out_pt, int *out_n) {
  const ir_comp *entry = x->comp;
  int np = entry->nparams, nleaves = 0;
  for (int p = 0; p < np; p++) nleaves += shape_leaf_count(entry->insts.v[entry->params[p]].shape);
  tpub_tensor *pt = arena_array(a, (size_t)nleaves + 1, sizeof *pt);
  tval **params = arena_array(a, (size_t)np + 1, sizeof(tval *));
  int leaf = 0;
  for (int p = 0; p < np && !x->b->failed; p++) {
    const ir_inst *pi = &entry->insts.v[entry->params[p]];
    x->b->loc = pi->info->loc;
    x->b->opname = "parameter";
    params[p] = param_value(x, pi->shape, pi->info->name, pt, &leaf);
  }
  *out_pt = pt;
  *out_n = nleaves;
  return params;
}

/* The constant pool: every constant of the module, and the zeros
 * the lowerings pad with; frozen after. */
static void place_constants(lctx *x, arena *a, tv_pool *pool) {
  const ir_module *m = x->m;
  tb *b = x->b;
  for (int c = 0; c < m->comps.n && !b->failed; c++)
    for (int i = 0; i < m->comps.v[c].insts.n; i++) {
      const ir_inst *in = &m->comps.v[c].insts.v[i];
      if (in->op == IR_OP_CONSTANT && !in->dead) {
        b->loc = in->info->loc;
        b->opname = "constant";
        tv_const(x->b, in->a->literal);
      }
      ir_literal *sl = in->dead ? NULL : lower_small_constant(a, &m->comps.v[c], in);
      if (sl) tv_const(x->b, sl);
    }
  b->opname = "constant";
  b->loc = x->comp->loc;
  static const ir_type zt[] = {IR_F32, IR_BF16, IR_S32, IR_S8, IR_PRED};
  for (size_t k = 0; k < COUNTOF(zt); k++) {
    ir_shape zs = ir_shape_scalar(zt[k]);
    tv_const(x->b, ir_literal_create(a, &zs));
  }
  pool->frozen = true;
}

/* The signature's results: each array leaf of the entry's root
 * value in a region of its own dtype (the value's buffer itself when it
 * has that representation and no other result uses it, else a copy):
 * their .tpub tensors into *out_rt (*out_n of them). */
static void place_results(tb *b, arena *a, const ir_comp *entry, tval *root, tpub_tensor **out_rt,
                          int *out_n) {
  shape_vec rs = {0};
  tval_vec rv = {0};
  leaves(a, entry->insts.v[entry->root].shape, &rs);
  if (root) val_leaves(a, root, &rv);
  tpub_tensor *rt = arena_array(a, (size_t)rs.n + 1, sizeof *rt);
  b->opname = "result";
  b->loc = entry->insts.v[entry->root].info->loc;
  tb_set_op(b, "(results)", "", b->loc);
  for (int k = 0; k < rs.n && !b->failed; k++) {
    const ir_shape *s = &rs.v[k];
    if (s->rank > TPUB_MAX_RANK) {
      tb_error(b, ST_UNSUPPORTED,
               "result of rank %d: a TPU program's results have at most %d dimensions", s->rank,
               TPUB_MAX_RANK);
      break;
    }
    tval *v = rv.v[k];
    int64_t n = ir_shape_count(s);
    int xs = ir_type_size(s->type);
    snprintf(rt[k].name, sizeof rt[k].name, "result.%d", k);
    rt[k].dtype = ir_type_tpurt_code(s->type);
    rt[k].rank = s->rank;
    for (int j = 0; j < s->rank; j++) rt[k].dims[j] = s->dims[j];
    rt[k].bytes = (uint64_t)n * (uint64_t)xs;
    /* A scratch buffer of the right representation becomes the result
     * region itself (once); anything else is copied. */
    bool reuse = v->buf->owned && v->buf->refs > 0 && xs == tv_esize(s->type) && n > 0;
    for (int j = 0; j < k && reuse; j++) reuse = rv.v[j]->buf != v->buf;
    if (reuse) {
      rt[k].hbm_offset = v->buf->addr;
      continue;
    }
    rt[k].hbm_offset = tb_hbm_alloc(b, rt[k].bytes);
    uint64_t src = tv_addr(v);
    if (s->type == IR_F16 && n > 0) { /* f16 values -> f16 bits in the words' low halves */
      tval *w = tv_new(b, IR_S32, s->rank, s->dims);
      word_program(b, src, tv_addr(w), IR_F16, IR_S32, IR_OP_BITCAST_CONVERT, n);
      src = tv_addr(w);
    }
    int64_t one = n, ds = 1, ss = tv_esize(s->type) / xs;
    tk_copy(b, rt[k].hbm_offset, &ds, src, &ss, 1, &one, xs);
  }
  *out_rt = rt;
  *out_n = rs.n;
}

/* --memory-report: peaks of HBM, VMEM and SMEM and the largest results
 * of the entry's instructions (with source lines); malloc'ed. */
static char *memory_report(const tb *b, const char *spec, const ir_comp *entry) {
  strbuf r;
  sb_init(&r);
  sb_printf(&r, "memory report (target %s)\n", spec);
  sb_printf(&r, "  HBM peak:  %llu bytes (%.2f MiB) of %llu\n", (unsigned long long)b->hbm_peak,
            (double)b->hbm_peak / 1048576.0, (unsigned long long)b->t.hbm_bytes);
  sb_printf(&r, "  VMEM peak: %llu bytes (%.2f MiB) of %llu (largest kernel footprint)\n",
            (unsigned long long)b->vmem_peak, (double)b->vmem_peak / 1048576.0,
            (unsigned long long)b->t.vmem_bytes);
  sb_printf(&r, "  SMEM: %u descriptor words of %u\n", b->smem_words, b->smem_cap);
  sb_printf(&r, "  largest buffers:\n");
  int order[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
  for (int i = 0; i < entry->insts.n; i++) {
    const ir_inst *in = &entry->insts.v[i];
    if (in->dead || in->shape->type == IR_TUPLE) continue;
    uint64_t by = (uint64_t)ir_shape_count(in->shape) * (uint64_t)tv_esize(in->shape->type);
    for (int s = 0; s < 8; s++) {
      uint64_t bs = order[s] < 0 ? 0
                                 : (uint64_t)ir_shape_count(entry->insts.v[order[s]].shape) *
                                       (uint64_t)tv_esize(entry->insts.v[order[s]].shape->type);
      if (order[s] < 0 || by > bs) {
        memmove(&order[s + 1], &order[s], (size_t)(7 - s) * sizeof(int));
        order[s] = i;
        break;
      }
    }
  }
  for (int s = 0; s < 8 && order[s] >= 0; s++) {
    const ir_inst *in = &entry->insts.v[order[s]];
    strbuf sh;
    sb_init(&sh);
    ir_shape_print(&sh, in->shape, false);
    sb_printf(&r, "    %12llu  %-24s %s %s:%d\n",
              (unsigned long long)((uint64_t)ir_shape_count(in->shape) *
                                   (uint64_t)tv_esize(in->shape->type)),
              sb_str(&sh), in->info->name,
              in->info->loc.file ? in->info->loc.file : "?",
              in->info->loc.line);
    sb_free(&sh);
  }
  char *text = strdup(sb_str(&r));
  sb_free(&r);
  return text;
}

/* What the finished build b found out (tpu_compile_info). */
static void fill_info(tpu_compile_info *info, const tb *b, arena *a, double seconds) {
  memset(info, 0, sizeof *info);
  info->flops = b->flops;
  info->mxu_passes = (uint64_t)b->max_passes;
  info->precision = b->flops == 0        ? "none"
                    : b->max_passes == 6 ? "bf16x6 (HIGHEST)"
                    : b->max_passes == 3 ? "bf16x3 (HIGH)"
                                         : "bf16 (1 pass, DEFAULT)";
  info->hbm_peak = b->hbm_peak;
  info->vmem_peak = b->vmem_peak;
  info->instructions = (uint64_t)b->code.n;
  info->compile_seconds = seconds;
  info->arena_bytes = arena_bytes(a);
}

/* The checks before a build: the target spec parses into *tg, the module
 * has an entry, runs on the target and fits the budgets. */
static base_status compile_checks(const ir_module *m, const char *spec, int replicas, tgt_target *tg,
                                  diag *d) {
  char err[256];
  if (tgt_parse(spec, tg, err, sizeof err)) {
    diag_error(d, (src_loc){0}, "tpu: target '%s': %s", spec, err);
    return ST_INVALID_ARGUMENT;
  }
  if (m->entry < 0) {
    diag_error(d, (src_loc){0}, "tpu: module has no entry computation");
    return ST_INVALID_ARGUMENT;
  }
  /* A module for N replicas runs one per core: as many as the target has,
   * at most (ir_check_runnable_replicas says what is asked beyond). */
  long long rc = replicas > 0 ? replicas : ir_module_count_attr(m, "replica_count");
  int nrep = rc < 1 ? 1 : rc > tg->ncores ? tg->ncores : (int)rc;
  if (ir_check_runnable_replicas(m, spec, NULL, nrep, d, NULL, 0) || tpu_check_types(m, d))
    return ST_UNSUPPORTED;
  if (rc > 1 && rc < tg->ncores) { /* every core runs the program: each must be a replica */
    diag_error(d, m->comps.v[m->entry].loc,
               "tpu: module asks for %lld replicas (replica_count); target %s runs %d cores, "
               "one replica each (override ncores=%lld)",
               rc, spec, tg->ncores, rc);
    return ST_UNSUPPORTED;
  }
  return ir_budget_check(m, NULL, d, NULL, 0); /* work and memory: ir.h */
}

/* The image of the finished build b, verified against tg. */
static base_status finish_image(tb *b, const char *spec, const tgt_target *tg,
                                const tpub_tensor *pt, int np, const tpub_tensor *rt, int nr,
                                const tv_pool *pool, diag *d, tpub_image **out) {
  char err[256];
  /* Assemble the image (host allocations checked: out of memory is an
   * error, ST_OUT_OF_MEMORY). */
  b->ops.v[b->cur_op].flops += b->flops - b->op_flops0;
  tpub_image *img = assemble_image(b, spec, pt, np, rt, nr, pool, err, sizeof err);
  if (!img) {
    diag_error(d, (src_loc){0}, "tpu: %s", err);
    return ST_OUT_OF_MEMORY;
  }
  if (tpub_verify(img, tg, err, sizeof err)) {
    diag_error(d, (src_loc){0}, "tpu: internal error: generated program fails verification: %s", err);
    tpub_free(img);
    return ST_INTERNAL;
  }
  *out = img;
  return ST_OK;
}

/* tpu-lower: the signature's parameters and the constant pool placed in
 * HBM, then the entry lowered: each kernel plans its tiles (--explain and
 * the dump show the plans), takes its scratch buffers in HBM first fit and
 * emits its code as it goes. */
static base_status step_lower(tpu_build *s) {
  tb *b = &s->b;
  const ir_comp *entry = &s->m->comps.v[s->m->entry];
  b->attr_comp = entry;
  tb_set_op(b, "(parameters)", "", (src_loc){0});
  s->x.b = b;
  s->x.m = s->m;
  s->x.c = s->m->entry;
  s->x.comp = entry;
  s->x.precision = s->o->precision;
  long long nrep = s->o->replicas > 0 ? s->o->replicas : ir_module_count_attr(s->m, "replica_count");
  b->replicas = nrep > 1 ? (int)nrep : 1;
  b->all_reduce = s->o->all_reduce;
  /* The collectives' readiness words (a granule no other buffer ever had)
   * and their put descriptor. */
  coll_setup(b);
  tval **params = bind_params(&s->x, s->a, &s->pt, &s->npt);
  place_constants(&s->x, s->a, &s->pool);
  if (!b->failed) {
    s->x.params = params;
    s->root = lower_comp(b, s->m, s->m->entry, params, s->o->precision);
  }
  return b->failed ? b->status : ST_OK;
}

/* tpu-buffers: the results' HBM regions (a scratch buffer of the right
 * representation becomes its result's region, else a copy); the dump is
 * the whole build's buffer assignment. */
static base_status step_buffers(tpu_build *s) {
  place_results(&s->b, s->a, &s->m->comps.v[s->m->entry], s->root, &s->rt, &s->nrt);
  return s->b.failed ? s->b.status : ST_OK;
}

/* tpu-emit: the final halt, the image assembled and verified against the
 * target. */
static base_status step_emit(tpu_build *s) {
  tb_halt(&s->b);
  return finish_image(&s->b, s->spec, &s->tg, s->pt, s->npt, s->rt, s->nrt, &s->pool, s->d,
                      &s->img);
}

/* The backend's steps, in order (steps.h; docs/passes.md lists them). */
static const tpu_step steps[] = {
    {"tpu-lower", step_lower, tpu_dump_lower,
     "parameters and constants in HBM; the entry lowered into kernels with their tile plans"},
    {"tpu-buffers", step_buffers, tpu_dump_buffers,
     "the results' HBM regions; dumps the whole HBM buffer assignment"},
    {"tpu-emit", step_emit, tpu_dump_emit, "the .tpub image assembled and verified"},
};

const char *tpu_step_info(int k, const char **doc) {
  if (k < 0 || k >= (int)COUNTOF(steps)) return NULL;
  if (doc) *doc = steps[k].doc;
  return steps[k].name;
}

/* The checks, then the steps; info is filled whether or not they succeed. */
base_status tpu_compile(const ir_module *m, const tpu_options *o, diag *d, tpub_image **out,
                        tpu_compile_info *info) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  *out = NULL;
  tpu_options def;
  tpu_options_init(&def);
  if (!o) o = &def;
  tpu_build s;
  memset(&s, 0, sizeof s);
  s.m = m;
  s.o = o;
  s.d = d;
  s.spec = o->target ? o->target : "v3";
  base_status st = compile_checks(m, s.spec, o->replicas, &s.tg, d);
  if (st != ST_OK) return st;
  s.a = arena_create();
  tb_init(&s.b, s.a, &s.tg, d);
  sb_init(&s.explain);
  bool dumps = o->steps && o->steps->dump_dir;
  if ((o->explain && info) || dumps) s.b.explain = &s.explain;
  if (dumps) s.b.buflog = &s.bufs;
  s.b.pool = &s.pool;
  st = tpu_steps_run(steps, (int)COUNTOF(steps), &s);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (info) {
    fill_info(info, &s.b, s.a,
              (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
    if (o->memory_report) info->memory_report = memory_report(&s.b, s.spec, &m->comps.v[m->entry]);
    if (o->explain) info->explain = strdup(sb_str(&s.explain));
  }
  sb_free(&s.explain);
  tb_fini(&s.b);
  arena_destroy(s.a);
  if (st == ST_OK) *out = s.img;
  else tpub_free(s.img);
  return st;
}
