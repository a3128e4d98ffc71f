/* test_attrs.c: the attribute table (ir/attrs.def) drives the printer, the
 * parser, CSE equality and the deep copy. Each sample instruction carries
 * non-default values; every HLO row of the table must be printed by some
 * sample (so a row added without a sample fails here), every sample must
 * read back from its printed form to equal attributes, and changing any
 * one field must make the attributes unequal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "frontend/frontend.h"

#define ADD_COMP                                                                                   \
  "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n"

/* One module per sample: its root carries the attributes under test. */
static const char *const samples[] = {
    "ENTRY e {\n  ROOT i = s32[4,3]{1,0} iota(), iota_dimension=1\n}\n",
    "ENTRY e {\n  p = (f32[2]{0}, s32[]) parameter(0)\n"
    "  ROOT g = s32[] get-tuple-element(p), index=1\n}\n",
    "ENTRY e {\n  p = f32[3]{0} parameter(0)\n"
    "  ROOT b = f32[2,3]{1,0} broadcast(p), dimensions={1}\n}\n",
    "ENTRY e {\n  p = f32[3,2]{1,0} parameter(0)\n"
    "  ROOT t = f32[2,3]{1,0} transpose(p), dimensions={1,0}\n}\n",
    "ENTRY e {\n  p = f32[3,2]{1,0} parameter(0)\n"
    "  ROOT v = f32[3,2]{1,0} reverse(p), dimensions={0,1}\n}\n",
    "ENTRY e {\n  p = f32[3,2]{1,0} parameter(0)\n"
    "  ROOT c = f32[3,4]{1,0} concatenate(p, p), dimensions={1}\n}\n",
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(a, b)\n}\n\nENTRY e {\n  p = f32[3,2]{1,0} parameter(0)\n"
    "  z = f32[] constant(0)\n"
    "  ROOT r = f32[2]{0} reduce(p, z), dimensions={0}, to_apply=add\n}\n",
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(a, b)\n}\n\nENTRY e {\n  p = f32[4,4]{1,0} parameter(0)\n"
    "  z = f32[] constant(0)\n  ROOT r = f32[2,4]{1,0} reduce-window(p, z), "
    "window={size=2x1 stride=2x1 lhs_dilate=1x1 rhs_dilate=1x1}, to_apply=add\n}\n",
    "ENTRY e {\n  p = f32[8,6]{1,0} parameter(0)\n"
    "  ROOT s = f32[2,2]{1,0} slice(p), slice={[1:5:2], [0:6:3]}\n}\n",
    "ENTRY e {\n  p = f32[3,4]{1,0} parameter(0)\n  z = f32[] constant(0)\n"
    "  ROOT q = f32[8,11]{1,0} pad(p, z), padding=1_2_1x-1_2_2\n}\n",
    "ENTRY e {\n  p = s32[4]{0} parameter(0)\n"
    "  ROOT c = pred[4]{0} compare(p, p), direction=GE, type=UNSIGNED\n}\n",
    "ENTRY e {\n  a = f32[2,3,4]{2,1,0} parameter(0)\n  b = f32[2,4,5]{2,1,0} parameter(1)\n"
    "  ROOT d = f32[2,3,5]{2,1,0} dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
    "rhs_batch_dims={0}, rhs_contracting_dims={1}, operand_precision={high,highest}, "
    "preferred_element_type=bf16\n}\n",
    "ENTRY e {\n  x = f32[1,8,8,4]{3,2,1,0} parameter(0)\n  k = f32[3,3,2,6]{3,2,1,0} parameter(1)\n"
    "  ROOT c = f32[1,4,8,6]{3,2,1,0} convolution(x, k), window={size=3x3 stride=2x1 "
    "pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=2, "
    "operand_precision={highest,default}, preferred_element_type=bf16\n}\n",
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(a, b)\n}\n\nENTRY e {\n  p = f32[4]{0} parameter(0)\n"
    "  ROOT r = f32[4]{0} all-reduce(p), channel_id=3, replica_groups={{0,1},{2,3}}, "
    "to_apply=add\n}\n",
    "f {\n  a = f32[4]{0} parameter(0)\n  ROOT n = f32[4]{0} negate(a)\n}\n\n"
    "ENTRY e {\n  p = f32[4]{0} parameter(0)\n"
    "  ROOT u = f32[4]{0} fusion(p), kind=kOutput, calls=f\n}\n",
    "ENTRY e {\n  x = f32[2,6,6,2]{3,2,1,0} parameter(0)\n  k = f32[3,3,2,2]{3,2,1,0} parameter(1)\n"
    "  ROOT c = f32[1,4,4,2]{3,2,1,0} convolution(x, k), window={size=3x3 rhs_reversal=1x0}, "
    "dim_labels=b01f_01io->b01f, batch_group_count=2\n}\n",
    "ENTRY e {\n  x = f32[2,5,4]{2,1,0} parameter(0)\n  i = s32[2,3,1]{2,1,0} parameter(1)\n"
    "  ROOT g = f32[2,3,4]{2,1,0} gather(x, i), offset_dims={2}, collapsed_slice_dims={1}, "
    "start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, "
    "index_vector_dim=2, slice_sizes={1,1,4}, indices_are_sorted=true\n}\n",
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(a, b)\n}\n\nENTRY e {\n  x = f32[2,5,4]{2,1,0} parameter(0)\n"
    "  i = s32[2,3,1]{2,1,0} parameter(1)\n  u = f32[2,3,4]{2,1,0} parameter(2)\n"
    "  ROOT s = f32[2,5,4]{2,1,0} scatter(x, i, u), update_window_dims={2}, "
    "inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, input_batching_dims={0}, "
    "scatter_indices_batching_dims={0}, index_vector_dim=2, indices_are_sorted=true, "
    "unique_indices=true, to_apply=add\n}\n",
    "ENTRY e {\n  x = f32[5,4]{1,0} parameter(0)\n  i = s32[] parameter(1)\n"
    "  ROOT d = f32[2,4]{1,0} dynamic-slice(x, i, i), dynamic_slice_sizes={2,4}\n}\n",
    "ge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  ROOT c = pred[] compare(a, b), direction=GE\n}\n\n"
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(a, b)\n}\n\nENTRY e {\n  x = f32[4,6]{1,0} parameter(0)\n"
    "  src = f32[2,3]{1,0} parameter(1)\n  z = f32[] constant(0)\n"
    "  ROOT s = f32[4,6]{1,0} select-and-scatter(x, src, z), window={size=2x2 stride=2x2}, "
    "select=ge, scatter=add\n}\n",
    /* the collectives: every attribute XLA prints for each */
    ADD_COMP "ENTRY e {\n  p = f32[4]{0} parameter(0)\n"
    "  ROOT r = f32[4]{0} all-reduce(p), channel_id=2, replica_groups=[2,2]<=[2,2]T(1,0), "
    "constrain_layout=true, use_global_device_ids=true, to_apply=add\n}\n",
    ADD_COMP "ENTRY e {\n  p = f32[4]{0} parameter(0)\n"
    "  ROOT r = f32[4]{0} all-reduce-start(p), channel_id=2, replica_groups={{0,1}}, "
    "constrain_layout=true, use_global_device_ids=true, to_apply=add\n}\n",
    "ENTRY e {\n  p = f32[2,3]{1,0} parameter(0)\n"
    "  ROOT g = f32[2,6]{1,0} all-gather(p), channel_id=4, replica_groups={{1,0}}, "
    "constrain_layout=true, dimensions={1}, use_global_device_ids=true\n}\n",
    "ENTRY e {\n  p = f32[2,3]{1,0} parameter(0)\n"
    "  ROOT g = (f32[2,3]{1,0}, f32[4,3]{1,0}) all-gather-start(p), channel_id=4, "
    "replica_groups={{1,0}}, constrain_layout=true, dimensions={0}, use_global_device_ids=true\n}\n",
    "ENTRY e {\n  p = f32[4,3]{1,0} parameter(0)\n"
    "  ROOT a = f32[4,3]{1,0} all-to-all(p), channel_id=5, replica_groups={{0,1},{2,3}}, "
    "constrain_layout=true, dimensions={0}\n}\n",
    ADD_COMP "ENTRY e {\n  p = f32[4,3]{1,0} parameter(0)\n"
    "  ROOT r = f32[2,3]{1,0} reduce-scatter(p), channel_id=6, replica_groups={{0,1}}, "
    "constrain_layout=true, dimensions={0}, use_global_device_ids=true, to_apply=add\n}\n",
    "ENTRY e {\n  p = f32[4]{0} parameter(0)\n"
    "  ROOT c = f32[4]{0} collective-permute(p), channel_id=7, "
    "source_target_pairs={{0,1},{1,2},{2,0}}\n}\n",
    "ENTRY e {\n  p = f32[4]{0} parameter(0)\n"
    "  ROOT c = (f32[4]{0}, f32[4]{0}, u32[], u32[]) collective-permute-start(p), channel_id=7, "
    "source_target_pairs={{0,1},{1,0}}\n}\n",
    "ENTRY e {\n  p = f32[4]{0} parameter(0)\n"
    "  ROOT c = f32[4]{0} collective-broadcast(p), channel_id=8, replica_groups={{1,0}}\n}\n",
};
#define NSAMPLES (sizeof samples / sizeof samples[0])

static ir_module *parse(const char *text) {
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo("s.hlo", text, strlen(text), d);
  if (!m) fail_msg("%s: %s", text, diag_first_message(d));
  diag_destroy(d);
  return m;
}

static char *print(const ir_module *m) {
  strbuf b;
  sb_init(&b);
  ir_print_module(&b, m);
  char *s = strdup(sb_str(&b));
  sb_free(&b);
  return s;
}

static const ir_inst *root(const ir_module *m) {
  const ir_comp *c = &m->comps.v[m->entry];
  return &c->insts.v[c->root];
}

/* print -> parse -> print is a fixed point, and the attributes read back
 * equal (ir_attrs_equal and a deep copy through ir_inst_set_attrs). */
static void samples_round_trip(void **state) {
  (void)state;
  for (size_t s = 0; s < NSAMPLES; s++) {
    ir_module *m1 = parse(samples[s]);
    char *t1 = print(m1);
    ir_module *m2 = parse(t1);
    char *t2 = print(m2);
    assert_string_equal(t1, t2);
    const ir_inst *r1 = root(m1), *r2 = root(m2);
    assert_true(ir_attrs_equal(r1->op, r1->a, r2->a));
    assert_int_equal(ir_attrs_hash(r1->op, r1->a, 0), ir_attrs_hash(r2->op, r2->a, 0));
    ir_inst copy = *r1;
    ir_inst_set_attrs(m2, &copy, r1->a);
    assert_true(ir_attrs_equal(r1->op, r1->a, copy.a));
    free(t1);
    free(t2);
    ir_module_destroy(m1);
    ir_module_destroy(m2);
  }
}

/* Every HLO row is printed (", name=") by a sample of each of its ops, and
 * parsed back there (the round trip above); so a row added to the table
 * is reached by the generic printer and parser. */
static void every_row_printed(void **state) {
  (void)state;
  ir_module *m[NSAMPLES];
  char *t[NSAMPLES];
  for (size_t s = 0; s < NSAMPLES; s++) {
    m[s] = parse(samples[s]);
    t[s] = print(m[s]);
  }
  for (int r = 0; r < ir_attr_count; r++) {
    const ir_attr_desc *d = &ir_attr_table[r];
    if (d->flags & IR_AF_NOT_HLO) continue;
    char key[80];
    snprintf(key, sizeof key, ", %s=", d->name);
    for (ir_op op = 0; op < IR_OP__COUNT; op++) {
      if (!ir_attr_on(&d->ops, op)) continue;
      bool found = false;
      for (size_t s = 0; s < NSAMPLES && !found; s++)
        found = root(m[s])->op == op && strstr(t[s], key) != NULL;
      if (!found) fail_msg("no sample prints '%s' on %s", d->name, ir_op_name(op));
    }
  }
  for (size_t s = 0; s < NSAMPLES; s++) {
    free(t[s]);
    ir_module_destroy(m[s]);
  }
}

/* Changes one field of row d in a (per kind), allocating in ar. */
static void perturb(arena *ar, ir_attrs *a, const ir_attr_desc *d) {
  switch (d->kind) {
  case IR_AK_INT: (*IR_ATTR_FIELD(a, d->f, int64_t))++; break;
  case IR_AK_SLICE:
  case IR_AK_INTS: {
    ir_ints *v = IR_ATTR_FIELD(a, d->kind == IR_AK_SLICE ? d->h : d->f, ir_ints);
    int64_t *nv = arena_array(ar, (size_t)v->n + 1, sizeof(int64_t));
    if (v->n) memcpy(nv, v->v, sizeof(int64_t) * (size_t)v->n);
    nv[v->n] = 7;
    v->v = nv;
    v->n++;
    break;
  }
  case IR_AK_PADS: {
    ir_padding_dim **p = IR_ATTR_FIELD(a, d->f, ir_padding_dim *);
    int32_t n = *IR_ATTR_FIELD(a, d->g, int32_t);
    ir_padding_dim *np = arena_dup(ar, *p, sizeof(ir_padding_dim) * (size_t)n);
    np[n - 1].interior++;
    *p = np;
    break;
  }
  case IR_AK_PREC: IR_ATTR_FIELD(a, d->f, int)[1] ^= 1; break;
  case IR_AK_ENUM: *IR_ATTR_FIELD(a, d->f, int) ^= 1; break;
  case IR_AK_WINDOW: {
    const ir_window **w = IR_ATTR_FIELD(a, d->f, const ir_window *);
    ir_window *nw = arena_dup(ar, ir_window_of(a), sizeof *nw);
    nw->dims[0].pad_hi++;
    *w = nw;
    break;
  }
  case IR_AK_CONV: IR_ATTR_FIELD(a, d->f, ir_conv_dims)->k_out ^= 1; break;
  case IR_AK_GROUPS: {
    ir_replica_groups *g = IR_ATTR_FIELD(a, d->f, ir_replica_groups);
    ir_ints *ng = arena_dup(ar, g->groups, sizeof(ir_ints) * (size_t)g->ngroups);
    ng[0].v = arena_dup(ar, ng[0].v, sizeof(int64_t) * (size_t)ng[0].n);
    ng[0].v[0] += 9;
    g->groups = ng;
    break;
  }
  case IR_AK_TYPE: *IR_ATTR_FIELD(a, d->f, ir_type) = IR_S8; break;
  case IR_AK_LITERAL: *IR_ATTR_FIELD(a, d->f, ir_literal *) = NULL; break;
  }
}

/* Every HLO row is compared: changing its value on a sample op makes the
 * attributes unequal. */
static void every_row_compared(void **state) {
  (void)state;
  arena *ar = arena_create();
  for (int r = 0; r < ir_attr_count; r++) {
    const ir_attr_desc *d = &ir_attr_table[r];
    if (d->flags & IR_AF_NOT_HLO) continue;
    bool tried = false;
    for (size_t s = 0; s < NSAMPLES; s++) {
      ir_module *m = parse(samples[s]);
      const ir_inst *in = root(m);
      if (ir_attr_on(&d->ops, in->op)) {
        ir_attrs changed = *in->a;
        perturb(ar, &changed, d);
        if (ir_attrs_equal(in->op, in->a, &changed))
          fail_msg("changing '%s' on %s leaves the attributes equal", d->name,
                   ir_op_name(in->op));
        tried = true;
      }
      ir_module_destroy(m);
    }
    assert_true(tried);
  }
  arena_destroy(ar);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(samples_round_trip),
      cmocka_unit_test(every_row_printed),
      cmocka_unit_test(every_row_compared),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
