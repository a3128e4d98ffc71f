/* value.h: private to backend/tpu: the values of the lowering, HBM
 * buffers with reference counts, and the value-to-value operations every
 * op lowering uses. Below the lowering (lower.h): calls only the builder
 * and the kernels (tb.h). Prefix tv_. */
#ifndef TPUCC_BACKEND_TPU_VALUE_H
#define TPUCC_BACKEND_TPU_VALUE_H

#include "backend/tpu/tb.h"

/* An HBM buffer shared by the values that alias it (reshape, copy,
 * get-tuple-element); freed when the last reference goes. Parameters and
 * constants are not owned (never freed). */
typedef struct hbuf {
  uint64_t addr, bytes;
  int refs;
  bool owned;
} hbuf;

typedef struct tval tval;
struct tval {
  bool tuple;
  int n; /* tuple: elements */
  tval **elems;
  hbuf *buf;    /* array: its storage (row-major, internal element type) */
  ir_type type; /* IR element type */
  int rank;
  int64_t dims[IR_MAX_RANK];
  int64_t count;
};

int tv_esize(ir_type t); /* bytes per element in HBM inside the program */
/* A new array value with its own HBM buffer (one reference). */
tval *tv_new(tb *b, ir_type t, int rank, const int64_t *dims);
/* A new value sharing v's buffer (one more reference), as type t, dims. */
tval *tv_alias(tb *b, const tval *v, ir_type t, int rank, const int64_t *dims);
/* Another reference to v (a tuple: to each element). */
tval *tv_ref(tb *b, tval *v);
/* Drops a reference (NULL: nothing); the last frees an owned buffer. */
void tv_release(tb *b, tval *v);
void tv_strides(const tval *v, int64_t *st); /* row-major strides, elements */
uint64_t tv_addr(const tval *v);
/* Internal 32-bit register bits of element idx of a literal. */
uint32_t lit_bits(const ir_literal *l, int64_t idx);

/* The constant pool of a build (b->pool): every constant's bytes, for the
 * image's CONST section, and a cache of the values made. */
typedef struct tv_cconst tv_cconst;
typedef struct tv_pool {
  VEC(tpub_const) v;
  VEC(tv_cconst) cache;
  bool frozen; /* every constant made: lowering has started */
} tv_pool;
/* The value of constant l (in the pool; the same value again for the
 * same literal, or a scalar of the same type and bits). Every constant
 * is made before lowering starts (a later new one is an internal error):
 * its HBM region must never have held scratch. */
tval *tv_const(tb *b, const ir_literal *l);

/* New values computed from v, each by one kernel: */
/* v converted (elementwise) to type t. */
tval *tv_convert(tb *b, const tval *v, ir_type t);
/* v (f32 or bf16) as nparts bf16 parts for the MXU, v = parts[0] +
 * parts[1] + ... (each part the bf16 rounding of what the earlier ones
 * leave). */
void tv_split_bf16(tb *b, const tval *v, int nparts, tval **parts);
/* v broadcast (strides 0) to dims of the same rank. */
tval *tv_broadcast(tb *b, const tval *v, int rank, const int64_t *dims);
/* Dims permuted: result dim k = v dim perm[k]. */
tval *tv_transpose(tb *b, const tval *v, const int64_t *perm);
/* v padded: lo/hi/interior per dim, with the value of the one-element pv. */
tval *tv_pad(tb *b, const tval *v, const tval *pv, const ir_padding_dim *pd, ir_type t);

#endif
