/* coll_sync.c: the synchronisation the collectives share (coll_sync.h). */
#include "backend/tpu/coll_sync.h"

void coll_setup(tb *b) {
  static const uint32_t desc[ISA_PUT_DESC_WORDS] = {4, 1, 1, 1};
  if (b->replicas < 2) return;
  b->coll_flag = tb_hbm_alloc(b, 2 * TB_GRANULE);
  b->coll_desc = tb_smem_words(b, desc, ISA_PUT_DESC_WORDS);
  b->smem_static = b->smem_words;
}

void coll_desc_set(tb *b, int rbytes, int rdst) {
  if (rbytes >= 0) tb_raw(b, OP_SST, rbytes, 0, 0, 0, 0, (int32_t)b->coll_desc);
  if (rdst >= 0) tb_raw(b, OP_SST, rdst, 0, 0, 0, 0, (int32_t)(b->coll_desc + 40));
}

void coll_barrier(tb *b) {
  int n = b->replicas;
  if (n < 2 || b->failed) return;
  tb_barrier(b);
  int me = tb_sreg_take(b), to = tb_sreg_take(b), t = tb_sreg_take(b), cnt = tb_sreg_take(b);
  tb_raw(b, OP_COREID, me, 0, 0, 0, 0, 0);
  for (int ph = 0; ph < 2; ph++) {
    int sem = ph ? COLL_SEM_LEAVE : COLL_SEM_ARRIVE;
    tb_raw(b, OP_SADD, to, me, 0, 0, 0, 0);
    tb_raw(b, OP_SLI, cnt, 0, 0, 0, 0, n - 1);
    uint64_t top = tb_label(b);
    /* to = (to + 1) mod n */
    tb_raw(b, OP_SADDI, to, to, 0, 0, 0, 1);
    tb_raw(b, OP_SSEQ, t, to, tb_sreg(b, (uint32_t)n), 0, 0, 0);
    tb_raw(b, OP_SMULI, t, t, 0, 0, 0, -n);
    tb_raw(b, OP_SADD, to, to, t, 0, 0, 0);
    coll_desc_set(b, tb_sreg(b, 4), to);
    tb_raw(b, OP_DMAPUT, tb_sreg(b, (uint32_t)b->coll_flag),
           tb_sreg(b, (uint32_t)(b->coll_flag + TB_GRANULE)), tb_sreg(b, b->coll_desc), TB_SEM_Q1, 0,
           sem);
    tb_raw(b, OP_WAIT, TB_SEM_Q1, 0, 0, 0, ISA_UNIT_SCALAR, 1);
    tb_raw(b, OP_SADDI, cnt, cnt, 0, 0, 0, -1);
    tb_branch(b, OP_BNE, cnt, 0, top);
    tb_raw(b, OP_IWAIT, sem, 0, 0, 0, 0, n - 1);
  }
  tb_sreg_give(b, me);
  tb_sreg_give(b, to);
  tb_sreg_give(b, t);
  tb_sreg_give(b, cnt);
}
