/* custom_call.c: what a custom-call names and what every target does with
 * it (ir.h, "custom-call"): identity targets of one partition, host
 * functions an embedder registered, XLA's TopK, or a located error. */
#include "ir/ir.h"

#include <errno.h>
#include <stdlib.h>

const ir_ffi_entry *ir_ffi_find(const ir_ffi_table *t, const char *target) {
  if (!t || !target) return NULL;
  for (int32_t i = 0; i < t->n; i++)
    if (t->v[i].target && t->v[i].fn && strcmp(t->v[i].target, target) == 0) return &t->v[i];
  return NULL;
}

static const ir_raw_attr *raw_attr(const ir_inst *in, const char *name) {
  if (!in->info) return NULL;
  for (int32_t k = 0; k < in->info->nraw; k++)
    if (in->info->raw[k].name && in->info->raw[k].text && strcmp(in->info->raw[k].name, name) == 0)
      return &in->info->raw[k];
  return NULL;
}

/* Decodes text (a quoted string, or any other text as written) into out,
 * which has room for strlen(text) + 1 bytes. */
static void decode(const char *text, char *out) {
  size_t n = strlen(text);
  if (n >= 2 && text[0] == '"' && text[n - 1] == '"') base_c_unescape(text + 1, n - 2, out);
  else memcpy(out, text, n + 1);
}

bool ir_custom_call_target(const ir_inst *in, char *buf, size_t n) {
  const ir_raw_attr *r = raw_attr(in, "custom_call_target");
  if (!r || n == 0) return false;
  size_t len = strlen(r->text);
  char small[256];
  char *tmp = len < sizeof small ? small : base_xmalloc(len + 1);
  decode(r->text, tmp);
  snprintf(buf, n, "%s", tmp);
  if (tmp != small) free(tmp);
  return true;
}

const char *ir_custom_call_config(const ir_inst *in, arena *a) {
  const ir_raw_attr *r = raw_attr(in, "backend_config");
  if (!r) return "";
  char *out = arena_alloc(a, strlen(r->text) + 1);
  decode(r->text, out);
  return out;
}

ir_custom_kind ir_custom_call_kind(const ir_inst *in, const ir_ffi_table *ffi) {
  char t[256];
  if (in->op != IR_OP_CUSTOM_CALL || !ir_custom_call_target(in, t, sizeof t)) return IR_CC_UNKNOWN;
  if (ir_ffi_find(ffi, t)) return IR_CC_HOST;
  if (!strcmp(t, "Sharding") || !strcmp(t, "SPMDFullToShardShape") ||
      !strcmp(t, "SPMDShardToFullShape"))
    return IR_CC_IDENTITY;
  if (!strcmp(t, "TopK")) return IR_CC_TOPK;
  return IR_CC_UNKNOWN;
}

long long ir_module_count_attr(const ir_module *m, const char *name) {
  for (int i = 0; i < m->nraw; i++) {
    if (!m->raw[i].name || strcmp(m->raw[i].name, name) != 0) continue;
    const char *t = m->raw[i].text ? m->raw[i].text : "";
    char *end = NULL;
    errno = 0;
    long long n = strtoll(t, &end, 10);
    return end == t || *end || errno || n < 1 ? 0 : n;
  }
  return 1;
}
