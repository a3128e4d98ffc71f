/* steps.c: the driver of tpu_compile's named steps (steps.h) and their
 * text dumps.
 *
 * Dump files are named like the passes' (docs/passes.md):
 * DIR/<module>.<NNNN>.after_<step>.txt, NNNN counting on from
 * tpu_step_options.first_seq, so that `ls` lists them after the passes'
 * dumps in the order they ran. Times are --time-passes lines. */
#include "backend/tpu/steps.h"

#include <errno.h>
#include <stdlib.h>
#include <regex.h>
#include <sys/stat.h>
#include <time.h>

/* ---- the HBM buffer log (tb.h) ----------------------------------------- */

void tb_log_taken(tb *b, uint64_t off, uint64_t bytes) {
  tb_buf r = {off, bytes, (uint64_t)b->code.n, UINT64_MAX,
              b->ops.n ? b->ops.v[b->cur_op].name : b->opname, NULL};
  VEC_PUSH(b->a, *b->buflog, r);
}

void tb_log_freed(tb *b, uint64_t off) {
  for (int k = b->buflog->n - 1; k >= 0; k--) {
    tb_buf *r = &b->buflog->v[k];
    if (r->off == off && r->to == UINT64_MAX) {
      r->to = (uint64_t)b->code.n;
      r->free_op = b->ops.n ? b->ops.v[b->cur_op].name : b->opname;
      return;
    }
  }
}

/* ---- the driver --------------------------------------------------------- */

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static base_status write_dump(const tpu_build *s, const tpu_step *st, int seq) {
  const tpu_step_options *so = s->o->steps;
  strbuf path, text;
  sb_init(&path);
  sb_init(&text);
  sb_printf(&path, "%s/%s.%04d.after_%s.txt", so->dump_dir, s->m->name, seq, st->name);
  st->dump(&text, s);
  char err[512];
  base_status rc = ir_file_write(sb_str(&path), text.s ? text.s : "", text.len, err, sizeof err);
  if (rc != ST_OK)
    diag_error(s->d, (src_loc){0}, "cannot write dump file %s: %s", sb_str(&path), err);
  sb_free(&path);
  sb_free(&text);
  return rc == ST_OK ? ST_OK : ST_IO_ERROR;
}

base_status tpu_steps_run(const tpu_step *steps, int n, tpu_build *s) {
  const tpu_step_options *so = s->o->steps;
  tpu_step_options none = {0};
  if (!so) so = &none;
  regex_t re;
  bool have_re = false;
  if (so->dump_dir) {
    if (mkdir(so->dump_dir, 0777) != 0 && errno != EEXIST) {
      diag_error(s->d, (src_loc){0}, "--dump-dir: cannot create %s: %s", so->dump_dir,
                 strerror(errno));
      return ST_IO_ERROR;
    }
    if (so->dump_after) {
      if (regcomp(&re, so->dump_after, REG_EXTENDED | REG_NOSUB) != 0) {
        diag_error(s->d, (src_loc){0}, "--dump-after: invalid regular expression '%s'",
                   so->dump_after);
        return ST_INVALID_ARGUMENT;
      }
      have_re = true;
    }
  }
  FILE *rep = so->report ? so->report : stderr;
  base_status st = ST_OK;
  double total = 0;
  for (int i = 0; i < n && st == ST_OK; i++) {
    double t0 = now_seconds();
    st = steps[i].run(s);
    double dt = now_seconds() - t0;
    total += dt;
    if (so->time) fprintf(rep, "  %-24s %9.3f ms\n", steps[i].name, dt * 1e3);
    if (st == ST_OK && so->dump_dir && (!have_re || regexec(&re, steps[i].name, 0, NULL, 0) == 0))
      st = write_dump(s, &steps[i], so->first_seq + i);
  }
  if (so->time) fprintf(rep, "  %-24s %9.3f ms\n", "total (tpu)", total * 1e3);
  if (have_re) regfree(&re);
  return st;
}

/* ---- dumps -------------------------------------------------------------- */

static void header(strbuf *out, const tpu_build *s, const char *step, const char *what) {
  sb_printf(out, "# %s: module %s, target %s: %s\n", step, s->m->name, s->spec, what);
}

/* The code words of each op: [first[k], end[k]) (first == end: none). */
static void op_ranges(const tb *b, uint64_t *first, uint64_t *end) {
  for (int k = 0; k < b->ops.n; k++) first[k] = end[k] = 0;
  for (int w = b->code_op.n - 1; w >= 0; w--) first[b->code_op.v[w]] = (uint64_t)w;
  for (int w = 0; w < b->code_op.n; w++) end[b->code_op.v[w]] = (uint64_t)w + 1;
}

/* One "tiling: OP: message" line of the explain text. */
typedef struct plan_line {
  const char *op, *msg;
  int oplen, msglen, seq;
} plan_line;

static int plan_cmp(const void *pa, const void *pb) {
  const plan_line *a = pa, *b = pb;
  int n = a->oplen < b->oplen ? a->oplen : b->oplen;
  int c = memcmp(a->op, b->op, (size_t)n);
  if (c == 0) c = a->oplen - b->oplen;
  return c ? c : a->seq - b->seq;
}

/* The explain text's lines, sorted by op name (then in order); *n of them. */
static plan_line *plan_lines(arena *a, const strbuf *explain, int *n) {
  const char *t = explain->len ? explain->s : "";
  int cap = 0;
  for (const char *q = t; *q; q++) cap += *q == '\n';
  plan_line *v = arena_array(a, (size_t)cap + 1, sizeof *v);
  int k = 0;
  for (const char *l = t; *l && k < cap;) {
    const char *e = strchr(l, '\n');
    const char *o = l + strlen("tiling: ");
    const char *sep = strstr(o, ": ");
    if (!sep || sep > e) sep = o; /* no op name: an empty one */
    v[k] = (plan_line){o, sep == o ? o : sep + 2, (int)(sep - o),
                       (int)(e - (sep == o ? o : sep + 2)), k};
    k++;
    l = e + 1;
  }
  qsort(v, (size_t)k, sizeof *v, plan_cmp);
  *n = k;
  return v;
}

void tpu_dump_lower(strbuf *out, const tpu_build *s) {
  const tb *b = &s->b;
  header(out, s, "tpu-lower",
         "the entry lowered into kernels, in program order: each op's code words "
         "[first, end), FLOPs and source, then the plans its lowering chose");
  uint64_t *first = arena_array(s->a, (size_t)b->ops.n + 1, sizeof *first);
  uint64_t *end = arena_array(s->a, (size_t)b->ops.n + 1, sizeof *end);
  op_ranges(b, first, end);
  int nl;
  plan_line *pl = plan_lines(s->a, &s->explain, &nl);
  bool *shown = arena_array(s->a, (size_t)nl + 1, sizeof *shown);
  for (int k = 0; k < b->ops.n; k++) {
    const tpub_op *o = &b->ops.v[k];
    /* the current op's FLOPs are added to its row when the next begins */
    uint64_t flops = o->flops + ((uint32_t)k == b->cur_op ? b->flops - b->op_flops0 : 0);
    sb_printf(out, "%s%s%s%s: ", o->name, o->kind[0] ? " (" : "", o->kind, o->kind[0] ? ")" : "");
    if (first[k] == end[k]) sb_puts(out, "no code");
    else
      sb_printf(out, "code [%llu, %llu), %llu flops", (unsigned long long)first[k],
                (unsigned long long)end[k], (unsigned long long)flops);
    if (o->file[0]) sb_printf(out, ", %s:%u", o->file, o->line);
    sb_putc(out, '\n');
    plan_line key = {o->name, NULL, (int)strlen(o->name), 0, -1};
    int lo = 0, hi = nl; /* the first line of this op: lower bound */
    while (lo < hi) {
      int mid = (lo + hi) / 2;
      if (plan_cmp(&pl[mid], &key) < 0) lo = mid + 1;
      else hi = mid;
    }
    for (; lo < nl && pl[lo].oplen == key.oplen && !memcmp(pl[lo].op, key.op, (size_t)key.oplen);
         lo++)
      if (!shown[lo]) {
        sb_printf(out, "  plan: %.*s\n", pl[lo].msglen, pl[lo].msg);
        shown[lo] = true;
      }
  }
  bool any = false; /* decisions of ops that emitted no code of their own */
  for (int k = 0; k < nl; k++)
    if (!shown[k]) {
      if (!any) sb_puts(out, "(ops that emitted no code)\n");
      any = true;
      sb_printf(out, "  plan (%.*s): %.*s\n", pl[k].oplen, pl[k].op, pl[k].msglen, pl[k].msg);
    }
}

/* The role of a buffer still held at the end: a parameter, a result or a
 * constant (by its offset), else scratch. */
static void buffer_role(strbuf *out, const tpu_build *s, const tb_buf *r) {
  if (r->to == UINT64_MAX) {
    for (int k = 0; k < s->npt; k++)
      if (s->pt[k].hbm_offset == r->off) {
        sb_printf(out, "parameter %s", s->pt[k].name);
        return;
      }
    for (int k = 0; k < s->nrt; k++)
      if (s->rt[k].hbm_offset == r->off) {
        sb_printf(out, "%s", s->rt[k].name);
        return;
      }
    for (int k = 0; k < s->pool.v.n; k++)
      if (s->pool.v.v[k].hbm_offset == r->off) {
        sb_printf(out, "constant %d", k);
        return;
      }
  }
  sb_puts(out, "scratch");
}

void tpu_dump_buffers(strbuf *out, const tpu_build *s) {
  const tb *b = &s->b;
  header(out, s, "tpu-buffers",
         "HBM buffers in the order taken (first fit over freed space, 512-byte granules); "
         "live over code words [from, to)");
  sb_printf(out, "# HBM peak %llu bytes of %llu; VMEM peak %llu bytes of %llu (the largest kernel "
                 "footprint: each kernel places its own tiles in VMEM)\n",
            (unsigned long long)b->hbm_peak, (unsigned long long)b->t.hbm_bytes,
            (unsigned long long)b->vmem_peak, (unsigned long long)b->t.vmem_bytes);
  sb_puts(out, "#   hbm offset        bytes  live [from, to)          value; taken by -> freed by\n");
  for (int k = 0; k < s->bufs.n; k++) {
    const tb_buf *r = &s->bufs.v[k];
    char to[24];
    if (r->to == UINT64_MAX) snprintf(to, sizeof to, "end");
    else snprintf(to, sizeof to, "%llu", (unsigned long long)r->to);
    char live[48];
    snprintf(live, sizeof live, "[%llu, %s)", (unsigned long long)r->from, to);
    sb_printf(out, "  0x%010llx %12llu  %-24s ", (unsigned long long)r->off,
              (unsigned long long)r->bytes, live);
    buffer_role(out, s, r);
    sb_printf(out, "; %s -> %s\n", r->op ? r->op : "-", r->free_op ? r->free_op : "(held)");
  }
}

static void tensor_line(strbuf *out, const tpub_tensor *t) {
  sb_printf(out, "  %-16s %s[", t->name, tpub_dtype_name(t->dtype));
  for (int j = 0; j < t->rank; j++) sb_printf(out, "%s%lld", j ? "," : "", (long long)t->dims[j]);
  sb_printf(out, "] %llu bytes at 0x%llx\n", (unsigned long long)t->bytes,
            (unsigned long long)t->hbm_offset);
}

void tpu_dump_emit(strbuf *out, const tpu_build *s) {
  const tpub_image *img = s->img;
  header(out, s, "tpu-emit", "the program image (verified), its signature and instruction mix");
  uint64_t cbytes = 0;
  for (uint32_t k = 0; k < img->nconsts; k++) cbytes += img->consts[k].size;
  sb_printf(out, "code %u words; SMEM %u words; HBM %llu bytes; %u constants (%llu bytes); %u ops\n",
            img->ncode, img->nsmem, (unsigned long long)img->hbm_bytes, img->nconsts,
            (unsigned long long)cbytes, img->nops);
  sb_printf(out, "parameters (%u):\n", img->nparams);
  for (uint32_t k = 0; k < img->nparams; k++) tensor_line(out, &img->params[k]);
  sb_printf(out, "results (%u):\n", img->nresults);
  for (uint32_t k = 0; k < img->nresults; k++) tensor_line(out, &img->results[k]);
  uint64_t per_op[OP__COUNT] = {0}, per_unit[ISA_UNIT_COUNT] = {0};
  for (uint32_t w = 0; w < img->ncode; w++) {
    isa_inst in;
    if (isa_decode(img->code[w], &in, NULL, 0) != 0) continue; /* verified: cannot happen */
    per_op[in.op]++;
    int u = isa_exec_unit(&in);
    if (u >= 0 && u < ISA_UNIT_COUNT) per_unit[u]++;
  }
  sb_puts(out, "instructions by unit:\n");
  for (int u = 0; u < ISA_UNIT_COUNT; u++)
    if (per_unit[u]) sb_printf(out, "  %-10s %10llu\n", isa_unit_name(u), (unsigned long long)per_unit[u]);
  sb_puts(out, "instructions by opcode:\n");
  for (int op = 0; op < OP__COUNT; op++)
    if (per_op[op])
      sb_printf(out, "  %-10s %10llu\n", isa_info_of((isa_op)op)->mnemonic,
                (unsigned long long)per_op[op]);
}
