/* randsort.c: the RG_SORT family of the random-graph generator
 * (randgraph.h): sorts, topk and the TopK custom-call on keys with many
 * ties. Parameters f32, s32 and bf16 of one random shape; the keys are
 * floor(f32) (nine values on rg_args' [-4, 4]) and s32 >> 7 (about
 * sixteen), so equal keys are common; then one to three of: a sort of one
 * to three operands along a random dimension (stable or not) with a
 * comparator of one compare (LT or GT, FLOAT or TOTALORDER) or two levels
 * (the first key GT, ties by the second LT), a topk (largest or not, k up
 * to the last dimension), a TopK custom-call on a rank <= 2 key (with or
 * without a GT TOTALORDER to_apply). The root is the tuple of results. */
#include "tests/common/randgraph.h"
#include "tests/common/testgen.h"

typedef struct sg {
  uint64_t rs;
  ir_module *m;
  ir_comp_id c;
} sg;

static int pick(sg *g, int n) { return (int)(tc_splitmix(&g->rs) % (uint64_t)n); }

static ir_id add(sg *g, ir_comp_id c, ir_op op, const ir_shape *s, int nops, const ir_id *ops,
                 const ir_attrs *a, int ncalls, ir_comp_id *calls) {
  ir_inst_proto p = {.op = op, .shape = *s, .nops = nops, .ops = (ir_id *)ops,
                     .a = a ? *a : ir_attrs_none, .ncalls = ncalls, .calls = calls};
  return ir_inst_add(g->m, c, &p);
}

static void raw(sg *g, ir_id id, int n, const char *const *names, const char *const *texts) {
  ir_inst *in = ir_inst_get(g->m, g->c, id);
  ir_raw_attr *r = arena_array(g->m->arena, (size_t)n, sizeof *r);
  for (int i = 0; i < n; i++) {
    r[i].name = names[i];
    r[i].text = texts[i] ? arena_strdup(g->m->arena, texts[i]) : NULL;
    r[i].ncalls = texts[i] ? 0 : 1;
  }
  in->info->nraw = n;
  in->info->raw = r;
}

/* A comparator over types[0..n): one compare of operand 0 (dir, ct), or
 * two levels (operand 0 GT, ties by operand 1 LT TOTALORDER). */
static ir_comp_id comparator(sg *g, const ir_type *types, int n, int form) {
  ir_comp_id c = ir_comp_add(g->m, ir_unique_name(g->m, "cmp"));
  ir_id p[6];
  for (int i = 0; i < 2 * n; i++) {
    ir_shape s = ir_shape_scalar(types[i / 2]);
    p[i] = tc_param(g->m, c, &s, i);
  }
  ir_shape pr = ir_shape_scalar(IR_PRED);
  ir_attrs a = ir_attrs_none;
  a.cmp_dir = form == 1 ? IR_CMP_GT : IR_CMP_LT;
  a.cmp_type = form == 2 && ir_type_is_float(types[0]) ? IR_CMPT_TOTALORDER : IR_CMPT_DEFAULT;
  ir_id r = add(g, c, IR_OP_COMPARE, &pr, 2, (ir_id[]){p[0], p[1]}, &a, 0, NULL);
  if (form == 3 && n >= 2) {
    a.cmp_dir = IR_CMP_GT;
    a.cmp_type = IR_CMPT_DEFAULT;
    ir_id gt = add(g, c, IR_OP_COMPARE, &pr, 2, (ir_id[]){p[0], p[1]}, &a, 0, NULL);
    a.cmp_dir = IR_CMP_EQ;
    ir_id eq = add(g, c, IR_OP_COMPARE, &pr, 2, (ir_id[]){p[0], p[1]}, &a, 0, NULL);
    a.cmp_dir = IR_CMP_LT;
    a.cmp_type = ir_type_is_float(types[1]) ? IR_CMPT_TOTALORDER : IR_CMPT_DEFAULT;
    ir_id lt = add(g, c, IR_OP_COMPARE, &pr, 2, (ir_id[]){p[2], p[3]}, &a, 0, NULL);
    ir_id both = add(g, c, IR_OP_AND, &pr, 2, (ir_id[]){eq, lt}, NULL, 0, NULL);
    r = add(g, c, IR_OP_OR, &pr, 2, (ir_id[]){gt, both}, NULL, 0, NULL);
  }
  ir_comp_get(g->m, c)->root = r;
  ir_comp_finish(g->m, c);
  return c;
}

static ir_shape tuple2(sg *g, const ir_shape *a, const ir_shape *b) {
  ir_shape t;
  memset(&t, 0, sizeof t);
  t.type = IR_TUPLE;
  t.ntuple = 2;
  t.tuple = arena_array(g->m->arena, 2, sizeof(ir_shape));
  t.tuple[0] = *a;
  t.tuple[1] = *b;
  return t;
}

static ir_id gen_sort(sg *g, const ir_id *vals, const ir_shape *shapes) {
  int n = 1 + pick(g, 3), form = pick(g, 4), order[3] = {0, 1, 2};
  for (int i = 2; i > 0; i--) {
    int j = pick(g, i + 1), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  ir_id ops[3];
  ir_type types[3];
  ir_shape el[3];
  for (int i = 0; i < n; i++) {
    ops[i] = vals[order[i]];
    el[i] = shapes[order[i]];
    types[i] = el[i].type;
  }
  ir_comp_id cmp = comparator(g, types, n, form);
  ir_shape rs = el[0];
  if (n > 1) {
    memset(&rs, 0, sizeof rs);
    rs.type = IR_TUPLE;
    rs.ntuple = n;
    rs.tuple = arena_array(g->m->arena, (size_t)n, sizeof(ir_shape));
    memcpy(rs.tuple, el, sizeof(ir_shape) * (size_t)n);
  }
  ir_id s = add(g, g->c, IR_OP_SORT, &rs, n, ops, NULL, 1, &cmp);
  char dim[24];
  snprintf(dim, sizeof dim, "{%d}", pick(g, el[0].rank));
  const char *names[3] = {"dimensions", "is_stable", "to_apply"};
  const char *texts[3] = {dim, pick(g, 2) ? "true" : "false", NULL};
  raw(g, s, 3, names, texts);
  return s;
}

static ir_id gen_topk(sg *g, ir_id x, const ir_shape *xs) {
  int64_t k = pick(g, (int)xs->dims[xs->rank - 1] + 1);
  ir_shape v = *xs, ix = *xs;
  v.dims[xs->rank - 1] = ix.dims[xs->rank - 1] = k;
  ix.type = IR_S32;
  ir_shape t = tuple2(g, &v, &ix);
  bool cc = xs->rank <= 2 && pick(g, 2);
  bool with_cmp = cc && pick(g, 2);
  ir_comp_id cmp = with_cmp ? comparator(g, &xs->type, 1, 1) : IR_NONE;
  if (with_cmp) {
    ir_comp *cp = ir_comp_get(g->m, cmp);
    ir_attrs *a = ir_inst_attrs_mut(g->m, &cp->insts.v[cp->root]);
    if (ir_type_is_float(xs->type)) a->cmp_type = IR_CMPT_TOTALORDER;
  }
  ir_id r = add(g, g->c, cc ? IR_OP_CUSTOM_CALL : IR_OP_TOPK, &t, 1, &x, NULL, with_cmp,
                with_cmp ? &cmp : NULL);
  char kt[24];
  snprintf(kt, sizeof kt, "%lld", (long long)k);
  if (cc) {
    const char *names[2] = {"custom_call_target", "to_apply"};
    const char *texts[2] = {"\"TopK\"", NULL};
    raw(g, r, with_cmp ? 2 : 1, names, texts);
  } else {
    const char *names[2] = {"k", "largest"};
    const char *texts[2] = {kt, pick(g, 2) ? "true" : "false"};
    raw(g, r, 2, names, texts);
  }
  return r;
}

ir_module *rg_generate_sort(uint64_t seed, uint64_t index) {
  sg g = {seed * 0x9E3779B97F4A7C15ull + index * 0xD1B54A32D192ED03ull + 7, NULL, 0};
  char name[48];
  snprintf(name, sizeof name, "sort_%llu_%llu", (unsigned long long)seed,
           (unsigned long long)index);
  g.m = ir_module_create(name);
  g.c = ir_comp_add(g.m, "main");
  g.m->entry = g.c;
  static const int64_t sizes[] = {1, 2, 3, 7, 8, 33};
  int rank = 1 + pick(&g, 3);
  int64_t dims[3];
  for (int i = 0; i < rank; i++) dims[i] = sizes[pick(&g, 6)];
  const ir_type pt[3] = {IR_F32, IR_S32, IR_BF16};
  ir_id p[3];
  ir_shape s[3];
  for (int i = 0; i < 3; i++) {
    s[i] = ir_shape_array(pt[i], rank, dims);
    p[i] = tc_param(g.m, g.c, &s[i], i);
  }
  ir_id keys[3];
  keys[0] = add(&g, g.c, IR_OP_FLOOR, &s[0], 1, &p[0], NULL, 0, NULL);
  ir_shape sc = ir_shape_scalar(IR_S32);
  ir_literal *l7 = ir_literal_create(g.m->arena, &sc);
  ir_literal_set_i64(l7, 0, 7);
  ir_id seven = tc_constant(g.m, g.c, l7);
  ir_attrs none = ir_attrs_none;
  ir_id b7 = add(&g, g.c, IR_OP_BROADCAST, &s[1], 1, &seven, &none, 0, NULL);
  keys[1] = add(&g, g.c, IR_OP_SHR_A, &s[1], 2, (ir_id[]){p[1], b7}, NULL, 0, NULL);
  keys[2] = p[2];
  int nres = 1 + pick(&g, 3);
  ir_id res[3];
  ir_shape rsh[3];
  for (int i = 0; i < nres; i++) {
    int k = pick(&g, 3);
    int j = pick(&g, 3);
    res[i] = k ? gen_sort(&g, keys, s) : gen_topk(&g, keys[j], &s[j]);
    rsh[i] = *ir_inst_get(g.m, g.c, res[i])->shape;
  }
  ir_shape rt;
  memset(&rt, 0, sizeof rt);
  rt.type = IR_TUPLE;
  rt.ntuple = nres;
  rt.tuple = rsh;
  tc_finish(g.m, g.c, add(&g, g.c, IR_OP_TUPLE, &rt, nres, res, NULL, 0, NULL), "rg_generate_sort",
            index);
  return g.m;
}
