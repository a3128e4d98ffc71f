/* test_isa.c: the instruction set's codecs and checks: encode -> decode and
 * assemble -> disassemble -> assemble round trips for every instruction of
 * isa.def, rejection of non-canonical words, target parsing, the .tpub
 * container's write/read round trip, and the verifier's messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "asm.h"
#include "isa.h"
#include "rt_test.h"
#include "target.h"
#include "tpub.h"

static tgt_target v3;

/* A random instruction of op that passes isa_check on v3 with ncode. */
static isa_inst random_inst(int op, uint64_t *seed, uint32_t ncode) {
  const isa_info *f = isa_info_of((isa_op)op);
  for (int tries = 0; tries < 100000; tries++) {
    isa_inst in;
    memset(&in, 0, sizeof in);
    in.op = (uint8_t)op;
    uint8_t regs[4] = {0, 0, 0, 0};
    int r = 0;
    for (const char *p = f->operands; *p; p++) {
      uint64_t x = rt_rand(seed);
      switch (*p) {
      case 'S':
      case 'V':
      case 'E':
        regs[r++] = (uint8_t)(x % 32);
        break;
      case 'M':
        regs[r++] = (uint8_t)(x % 8);
        break;
      case 'X':
        in.x = (uint8_t)(x % 2);
        break;
      case 'Q':
        in.x = (uint8_t)(x % 2);
        break;
      case 'U': {
        static const uint8_t units[] = {0, 1, 2, 3, 6, 7};
        in.x = units[x % 6];
        break;
      }
      case 'L':
        in.imm = (int32_t)(x % ncode);
        break;
      case 'I':
        /* Mostly small numbers (valid ranges are small), sometimes any. */
        in.imm = x % 4 == 0 ? (int32_t)(uint32_t)(x >> 32)
                            : (int32_t)((x >> 32) % 4096) - (x % 8 == 1 ? 2048 : 0);
        break;
      }
    }
    in.a = regs[0];
    in.b = regs[1];
    in.c = regs[2];
    in.d = regs[3];
    if (!isa_check(&in, &v3, ncode, NULL, 0)) return in;
  }
  fail_msg("no valid random instruction for %s", f->mnemonic);
  return (isa_inst){0, 0, 0, 0, 0, 0, 0};
}

static void encode_decode_every_instruction(void **state) {
  (void)state;
  uint64_t seed = 1;
  for (int op = 0; op < OP__COUNT; op++)
    for (int k = 0; k < 200; k++) {
      isa_inst in = random_inst(op, &seed, 1000), out;
      uint64_t w = isa_encode(&in);
      assert_int_equal(w >> 56, op);
      char err[128];
      assert_int_equal(isa_decode(w, &out, err, sizeof err), 0);
      assert_true(in.op == out.op && in.a == out.a && in.b == out.b && in.c == out.c &&
                  in.d == out.d && in.x == out.x && in.imm == out.imm);
      assert_int_equal(isa_encode(&out), w);
    }
}

/* Setting any bit of a field an instruction does not use makes the word
 * invalid, so every valid word has exactly one meaning and one text. */
static void decode_rejects_unused_fields(void **state) {
  (void)state;
  for (int op = 0; op < OP__COUNT; op++) {
    isa_inst in = {(uint8_t)op, 0, 0, 0, 0, 0, 0}, out;
    uint64_t w = isa_encode(&in);
    int rejected = 0, accepted = 0;
    for (int bit = 0; bit < 56; bit++) {
      if (isa_decode(w | (uint64_t)1 << bit, &out, NULL, 0))
        rejected++;
      else
        accepted++;
    }
    const char *ops = isa_info_of((isa_op)op)->operands;
    int used = 0;
    for (const char *p = ops; *p; p++)
      used += *p == 'I' || *p == 'L' ? 32 : (*p == 'X' || *p == 'Q' || *p == 'U') ? 4 : 5;
    assert_int_equal(accepted, used);
    assert_int_equal(rejected, 56 - used);
  }
  isa_inst out;
  char err[128];
  assert_int_equal(isa_decode((uint64_t)OP__COUNT << 56, &out, err, sizeof err), -1);
  assert_non_null(strstr(err, "unknown opcode"));
}

/* isa_check_word accepts a word exactly when isa_decode and isa_check
 * both do, with the same decoded fields: every opcode (and two past the
 * table), on targets with 1..4 MXUs and 1..8 DMA queues, with register,
 * x and imm fields that are mostly zero or small and sometimes anything
 * (imm also near the target's limits: SMEM, VMEM, accumulator rows, code
 * size). */
static void checker_matches_decode_and_check(void **state) {
  (void)state;
  static const char *const specs[] = {"v3", "v2", "v3,mxus=1,dma_queues=4",
                                      "v3,mxu=64x64,vmem=64KiB,smem=1KiB,acc_rows=8"};
  uint64_t seed = 13;
  long agree_ok = 0, agree_bad = 0;
  for (size_t k = 0; k < sizeof specs / sizeof *specs; k++) {
    tgt_target t;
    assert_int_equal(tgt_parse(specs[k], &t, NULL, 0), 0);
    const uint32_t ncode = 1000;
    isa_checker ck;
    isa_checker_init(&ck, &t, ncode);
    const int64_t edges[] = {0, 1, -1, 4, 7, 8, 9, 65535, 65536, ncode - 1, ncode,
                             (int64_t)t.smem_bytes - 4, (int64_t)t.smem_bytes,
                             (int64_t)t.vmem_bytes - 512, (int64_t)t.vmem_bytes - 510,
                             (int64_t)t.vmem_bytes, t.acc_rows, t.acc_rows + 1,
                             t.mxu_cols - 1, t.mxu_cols, INT32_MIN, INT32_MAX};
    for (int op = 0; op < OP__COUNT + 2; op++)
      for (int i = 0; i < 4000; i++) {
        uint64_t x = rt_rand(&seed), y = rt_rand(&seed);
        isa_inst in;
        memset(&in, 0, sizeof in);
        if (op < OP__COUNT && i % 2 == 0) in = random_inst(op, &seed, ncode);
        in.op = (uint8_t)op;
        uint8_t *regs[4] = {&in.a, &in.b, &in.c, &in.d};
        for (int r = 0; r < 4; r++)
          if ((x >> (2 * r) & 3) == 0) *regs[r] = (uint8_t)(y >> (5 * r) & 31);
        if (x >> 8 & 1 && x >> 9 & 1) in.x = (uint8_t)(y >> 20 & 15);
        switch (x >> 10 & 7) {
        case 0: in.imm = (int32_t)(y >> 32); break;
        case 1: in.imm = (int32_t)((y >> 32) % 600) - 40; break;
        case 2: in.imm = (int32_t)edges[(y >> 32) % (sizeof edges / sizeof *edges)]; break;
        default: break; /* keep random_inst's, or zero */
        }
        uint64_t w = isa_encode(&in);
        isa_inst slow, fast;
        memset(&slow, 0, sizeof slow);
        memset(&fast, 0, sizeof fast);
        int rs = isa_decode(w, &slow, NULL, 0) || isa_check(&slow, &t, ncode, NULL, 0);
        int rf = isa_check_word(&ck, w, &fast) != 0;
        if (rs != rf)
          fail_msg("%s: word %016llx: decode+check %s, isa_check_word %s", specs[k],
                   (unsigned long long)w, rs ? "rejects" : "accepts", rf ? "rejects" : "accepts");
        if (!rs)
          assert_true(slow.op == fast.op && slow.a == fast.a && slow.b == fast.b &&
                      slow.c == fast.c && slow.d == fast.d && slow.x == fast.x &&
                      slow.imm == fast.imm);
        if (rs) agree_bad++;
        else agree_ok++;
      }
  }
  /* Both outcomes were exercised plenty. */
  assert_true(agree_ok > 100000);
  assert_true(agree_bad > 100000);
}

/* tpub_crc32 is CRC-32/IEEE: the standard check value, and a bit-by-bit
 * reference over every length 0..200 and every start offset 0..7 (the
 * eight-byte steps, the byte tail, unaligned starts). */
static uint32_t crc_bitwise(const uint8_t *b, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    c ^= b[i];
    for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xFFFFFFFFu;
}

static void crc32_matches_reference(void **state) {
  (void)state;
  assert_int_equal(tpub_crc32("123456789", 9), 0xCBF43926u);
  uint8_t buf[208];
  uint64_t seed = 5;
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)rt_rand(&seed);
  for (size_t off = 0; off < 8; off++)
    for (size_t n = 0; n <= 200; n++)
      assert_int_equal(tpub_crc32(buf + off, n), crc_bitwise(buf + off, n));
}

/* Assembles every instruction (random operands) from text, checks the
 * words, then disassembles and reassembles the whole image. */
static void asm_disasm_every_instruction(void **state) {
  (void)state;
  enum { PER_OP = 20 };
  uint32_t ncode = OP__COUNT * PER_OP + 1;
  uint64_t *want = calloc(ncode, 8);
  char *text = malloc(ncode * 96 + 4096);
  size_t len = (size_t)sprintf(text, ".target v3\n.hbm 4096\n"
                                     ".param x f32[2,3] @0\n.result y bf16[4] @64\n"
                                     ".smem 8 1, 2, 0xffffffff\n"
                                     ".const @128 f32 1.5, -2\n.const @136 hex 00ff\n");
  uint64_t seed = 2;
  uint32_t pc = 0;
  for (int op = 0; op < OP__COUNT; op++)
    for (int k = 0; k < PER_OP; k++) {
      isa_inst in = random_inst(op, &seed, ncode);
      char line[128];
      isa_format(&in, line, sizeof line);
      len += (size_t)sprintf(text + len, "%s\n", line);
      want[pc++] = isa_encode(&in);
    }
  len += (size_t)sprintf(text + len, "halt\n");
  want[pc++] = 0;
  tpub_image *img = NULL;
  char err[4096];
  int rc = isa_assemble(text, len, "all.s", NULL, &img, err, sizeof err);
  if (rc) fprintf(stderr, "%s", err);
  assert_int_equal(rc, 0);
  assert_int_equal(img->ncode, ncode);
  assert_memory_equal(img->code, want, ncode * 8);
  assert_int_equal(img->nsmem, 5);
  assert_int_equal(img->smem[2], 1);
  assert_int_equal(img->smem[4], 0xffffffffu);
  assert_int_equal(img->nconsts, 1); /* adjacent constants merge */
  assert_int_equal(img->consts[0].size, 10);
  assert_int_equal(img->consts[0].data[8], 0x00);
  assert_int_equal(img->consts[0].data[9], 0xff);
  assert_int_equal(tpub_verify(img, &v3, err, sizeof err), 0);

  char *dis;
  size_t dlen;
  assert_int_equal(isa_disassemble(img, NULL, &dis, &dlen), 0);
  tpub_image *img2 = NULL;
  rc = isa_assemble(dis, dlen, "dis.s", NULL, &img2, err, sizeof err);
  if (rc) fprintf(stderr, "%s", err);
  assert_int_equal(rc, 0);
  assert_int_equal(img2->ncode, ncode);
  assert_memory_equal(img2->code, img->code, ncode * 8);
  assert_string_equal(img2->target, img->target);
  assert_int_equal(img2->nparams, 1);
  assert_int_equal(img2->nresults, 1);
  assert_memory_equal(&img2->params[0], &img->params[0], sizeof(tpub_tensor));
  assert_memory_equal(&img2->results[0], &img->results[0], sizeof(tpub_tensor));
  assert_int_equal(img2->nsmem, img->nsmem);
  assert_memory_equal(img2->smem, img->smem, img->nsmem * 4);
  assert_int_equal(img2->nconsts, 1);
  assert_memory_equal(img2->consts[0].data, img->consts[0].data, 10);

  /* And the binary container round-trips too. */
  uint8_t *bytes;
  size_t n;
  assert_int_equal(tpub_write(img, NULL, &bytes, &n, err, sizeof err), 0);
  tpub_image *img3 = NULL;
  rc = tpub_read(bytes, n, NULL, &img3, err, sizeof err);
  if (rc) fprintf(stderr, "%s\n", err);
  assert_int_equal(rc, 0);
  assert_memory_equal(img3->code, img->code, ncode * 8);
  assert_memory_equal(&img3->params[0], &img->params[0], sizeof(tpub_tensor));
  assert_int_equal(img3->hbm_bytes, 4096);
  uint8_t *bytes2;
  size_t n2;
  assert_int_equal(tpub_write(img3, NULL, &bytes2, &n2, err, sizeof err), 0);
  assert_int_equal(n2, n);
  assert_memory_equal(bytes2, bytes, n);
  free(bytes);
  free(bytes2);
  free(dis);
  tpub_free(img);
  tpub_free(img2);
  tpub_free(img3);
  free(want);
  free(text);
}

/* Disassembly spells a big constant as thousands of adjacent lines; the
 * assembler merges them back in linear time. */
static void disasm_asm_large_constant(void **state) {
  (void)state;
  enum { BYTES = 2 << 20, WORDS = 20000 };
  char err[1024];
  tpub_image *img = NULL;
  const char *src = ".hbm 4194304\nhalt\n";
  assert_int_equal(isa_assemble(src, strlen(src), "c.s", NULL, &img, err, sizeof err), 0);
  img->consts = calloc(1, sizeof(tpub_const));
  img->consts[0].hbm_offset = 4096;
  img->consts[0].size = BYTES;
  img->consts[0].data = malloc(BYTES);
  uint64_t seed = 9;
  for (size_t i = 0; i < BYTES; i++)
    img->consts[0].data[i] = (uint8_t)rt_rand(&seed);
  img->nconsts = 1;
  img->smem = calloc(WORDS, 4);
  for (uint32_t i = 0; i < WORDS; i++)
    img->smem[i] = i * 2654435761u;
  img->nsmem = WORDS;
  char *dis;
  size_t dlen;
  assert_int_equal(isa_disassemble(img, NULL, &dis, &dlen), 0);
  tpub_image *img2 = NULL;
  assert_int_equal(isa_assemble(dis, dlen, "dis.s", NULL, &img2, err, sizeof err), 0);
  assert_int_equal(img2->nconsts, 1);
  assert_int_equal(img2->consts[0].size, BYTES);
  assert_memory_equal(img2->consts[0].data, img->consts[0].data, BYTES);
  assert_int_equal(img2->nsmem, WORDS);
  assert_memory_equal(img2->smem, img->smem, WORDS * 4);
  free(dis);
  tpub_free(img);
  tpub_free(img2);
}

static void assembler_reports_errors_with_location(void **state) {
  (void)state;
  const char *src = "  sli s1, 5\n  vaddf v1, v2\n  frob s1\n  jmp nowhere\n  halt\n";
  tpub_image *img = NULL;
  char err[4096];
  assert_int_equal(isa_assemble(src, strlen(src), "bad.s", NULL, &img, err, sizeof err), -1);
  assert_null(img);
  /* pass 1 finds the unknown mnemonic; the operand errors come after. */
  assert_non_null(strstr(err, "bad.s:3:3: error: unknown instruction 'frob'"));
  const char *src2 = "  vaddf v1, v2\n  sli s40, 1\n  jmp nowhere\n  halt\n";
  assert_int_equal(isa_assemble(src2, strlen(src2), "b2.s", NULL, &img, err, sizeof err), -1);
  assert_non_null(strstr(err, "b2.s:1:15: error: vaddf expects 3 operands"));
  assert_non_null(strstr(err, "b2.s:2:7: error: sli: operand 1: expected a scalar register"));
  assert_non_null(strstr(err, "b2.s:3:7: error: undefined name 'nowhere'"));
  assert_non_null(strstr(err, "  sli s40, 1\n        ^"));
}

static void targets_presets_and_overrides(void **state) {
  (void)state;
  tgt_target t;
  char err[256];
  assert_int_equal(tgt_parse("v2", &t, err, sizeof err), 0);
  assert_int_equal(t.mxus, 1);
  assert_int_equal(t.clock_hz, 700000000u);
  assert_int_equal(t.hbm_bw, 350000000000u);
  assert_int_equal(t.vmem_bytes, 16u << 20);
  assert_int_equal(t.smem_bytes, 16u << 10);
  assert_int_equal(tgt_cores(&t), 2);
  assert_int_equal(tgt_parse("v3-8", &t, err, sizeof err), 0);
  assert_int_equal(t.mxus, 2);
  assert_int_equal(tgt_cores(&t), 8);
  assert_int_equal(t.hbm_bytes, (uint64_t)16 << 30);
  assert_int_equal(tgt_parse("v3,mxu=64x64,vmem=8MiB,hbm_bw=600GB/s,clock=1GHz,mxus=1,dma_queues=4",
                             &t, err, sizeof err),
                   0);
  assert_int_equal(t.mxu_rows, 64);
  assert_int_equal(t.mxu_cols, 64);
  assert_int_equal(t.vmem_bytes, 8u << 20);
  assert_int_equal(t.hbm_bw, 600000000000u);
  assert_int_equal(t.clock_hz, 1000000000u);
  assert_int_equal(t.dma_queues, 4);
  assert_int_equal(tgt_peak_macs_per_cycle(&t), 4096);
  /* 600 GB/s at 1 GHz = 600 bytes per cycle */
  assert_int_equal(tgt_hbm_cycles(&t, 6000), 10);
  /* The canonical text parses back to the same figures. */
  char text[512];
  tgt_format(&t, text, sizeof text);
  tgt_target t2;
  assert_int_equal(tgt_parse(text, &t2, err, sizeof err), 0);
  assert_memory_equal(&t, &t2, sizeof t);
  assert_int_equal(tgt_parse("v5", &t, err, sizeof err), -1);
  assert_non_null(strstr(err, "unknown target preset 'v5'"));
  assert_int_equal(tgt_parse("v3,foo=1", &t, err, sizeof err), -1);
  assert_non_null(strstr(err, "unknown target override 'foo=1'"));
  assert_int_equal(tgt_parse("v3,vmem=lots", &t, err, sizeof err), -1);
  assert_non_null(strstr(err, "malformed value"));
  assert_int_equal(tgt_parse("v3,mxus=9", &t, err, sizeof err), -1);
  assert_non_null(strstr(err, "mxus must be 1..4"));
  assert_int_equal(tgt_parse("v3,mxu=128", &t, err, sizeof err), -1);
  assert_int_equal(tgt_parse("", &t, err, sizeof err), -1);
  assert_int_equal(tgt_parse("v3,clock=99999999999999999999999GHz", &t, err, sizeof err), -1);
}

/* Boards and pods: cores that run, the torus, the interconnect figures
 * (docs/isa.md, section 13) and their overrides. */
static void targets_boards_and_pods(void **state) {
  (void)state;
  static const struct {
    const char *spec;
    int ncores, chips, x, y;
    uint64_t ici_bw;
    int lat;
  } cases[] = {
      {"v3", 1, 1, 1, 1, 82000000000u, 940},     {"v2", 1, 1, 1, 1, 62000000000u, 700},
      {"v2-8", 8, 4, 2, 2, 62000000000u, 700},   {"v3-8", 8, 4, 2, 2, 82000000000u, 940},
      {"v2-32", 32, 16, 4, 4, 62000000000u, 700}, {"v2-64", 64, 32, 8, 4, 62000000000u, 700},
      {"v2-512", 512, 256, 16, 16, 62000000000u, 700},
      {"v3-128", 128, 64, 8, 8, 82000000000u, 940},
      {"v3-2048", 2048, 1024, 32, 32, 82000000000u, 940},
      {"v3-8,chips=2", 4, 2, 2, 1, 82000000000u, 940},
      {"v3-8,ncores=2,topology=4x1,ici_bw=100GB/s,ici_latency=10", 2, 4, 4, 1, 100000000000u, 10},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tgt_target t, t2;
    char err[256], text[512];
    assert_int_equal(tgt_parse(cases[i].spec, &t, err, sizeof err), 0);
    assert_int_equal(t.ncores, cases[i].ncores);
    assert_int_equal(t.chips, cases[i].chips);
    assert_int_equal(t.topo_x, cases[i].x);
    assert_int_equal(t.topo_y, cases[i].y);
    assert_int_equal(t.ici_bw, cases[i].ici_bw);
    assert_int_equal(t.ici_latency, cases[i].lat);
    tgt_format(&t, text, sizeof text);
    assert_int_equal(tgt_parse(text, &t2, err, sizeof err), 0);
    assert_memory_equal(&t, &t2, sizeof t);
  }
  tgt_target t;
  char err[256], text[512];
  assert_int_equal(tgt_parse("v3-8", &t, err, sizeof err), 0);
  tgt_format(&t, text, sizeof text);
  assert_non_null(strstr(text, ",ncores=8,topology=2x2,ici_bw=82000000000B/s,ici_latency=940"));
  /* 82 GB/s at 940 MHz: round(82e9 * 1024 / 940e6) = 89328 / 1024 bytes a
   * cycle, so 4096 bytes take ceil(4096 * 1024 / 89328) = 47 cycles. */
  assert_int_equal(tgt_ici_bytes_per_cycle_q10(&t), 89328);
  assert_int_equal(tgt_ici_cycles(&t, 4096), 47);
  assert_int_equal(tgt_ici_cycles(&t, 0), 1);
  static const char *const bad[][2] = {
      {"v3-16", "unknown target preset 'v3-16'"},
      {"v2-1024", "unknown target preset 'v2-1024'"},
      {"v3-08", "unknown target preset 'v3-08'"},
      {"v3-8,ncores=9", "ncores must be 1..chips x cores"},
      {"v3-8,topology=3x1", "topology AxB must have A x B = chips"},
      {"v3-8,topology=2", "malformed value"},
      {"v3-8,ici_latency=0", "ici_latency must be 1..10000000"},
      {"v3,ici_bw=5B/s", "ici_bw must be 1MB/s..100TB/s"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(tgt_parse(bad[i][0], &t, err, sizeof err), -1);
    assert_non_null(strstr(err, bad[i][1]));
  }
}

/* Assembles src and returns tpub_verify's result on target spec. */
static int verify_text(const char *src, const char *target, char *err, size_t n) {
  tpub_image *img = NULL;
  if (isa_assemble(src, strlen(src), "v.s", NULL, &img, err, n)) return -2;
  tgt_target t;
  assert_int_equal(tgt_parse(target, &t, NULL, 0), 0);
  int rc = tpub_verify(img, &t, err, n);
  tpub_free(img);
  return rc;
}

static void verifier_rejects_with_reasons(void **state) {
  (void)state;
  char err[512];
  assert_int_equal(verify_text("halt\n", "v3", err, sizeof err), 0);
  assert_int_equal(verify_text("sli s1, 1\n", "v3", err, sizeof err), -1);
  assert_non_null(strstr(err, "must be halt or jmp"));
  assert_int_equal(verify_text("jmp @5\nhalt\n", "v3", err, sizeof err), -1);
  assert_non_null(strstr(err, "jump target 5 outside the code"));
  assert_int_equal(verify_text("vsel v1, m9, v2, v3\nhalt\n", "v3", err, sizeof err), -1);
  assert_non_null(strstr(err, "mask register m9 does not exist"));
  assert_int_equal(verify_text("mswap mxu1\nhalt\n", "v2", err, sizeof err), -1);
  assert_non_null(strstr(err, "mxu1 does not exist on this target"));
  assert_int_equal(verify_text("mswap mxu1\nhalt\n", "v3", err, sizeof err), 0);
  assert_int_equal(verify_text("wait dma3, sem0, 1\nhalt\n", "v3", err, sizeof err), -1);
  assert_non_null(strstr(err, "dma3"));
  assert_int_equal(verify_text("wait vector, sem0, 0\nhalt\n", "v3", err, sizeof err), -1);
  assert_non_null(strstr(err, "count 0 outside 1..65535"));
  /* the first bad word is named, after good ones */
  assert_int_equal(verify_text("sli s1, 1\nsli s2, 2\nwait vector, sem0, 0\nwait vector, sem0, 0\n"
                               "halt\n", "v3", err, sizeof err), -1);
  assert_non_null(strstr(err, "code word 2 "));
  assert_int_equal(verify_text("sld s1, s0, 16384\nhalt\n", "v3", err, sizeof err), -1);
  assert_non_null(strstr(err, "SMEM address 16384"));
  assert_int_equal(verify_text("vld v1, s0, 16777000, s0\nhalt\n", "v3", err, sizeof err), -1);
  assert_non_null(strstr(err, "outside VMEM"));
  assert_int_equal(verify_text("mpush mxu0, s1, s2, s3, 0\nhalt\n", "v3", err, sizeof err), -1);
  assert_non_null(strstr(err, "row count 0"));
  assert_int_equal(verify_text("mpushv mxu0, v1, s2\nhalt\n", "v3,mxu=256x256", err, sizeof err),
                   -1);
  assert_int_equal(verify_text(".hbm 100\n.param x f32[8] @0\n.param y f32[8] @16\nhalt\n", "v3",
                               err, sizeof err),
                   -1);
  assert_non_null(strstr(err, "overlaps"));
  assert_int_equal(verify_text(".hbm 100\n.param x f32[8] @80\nhalt\n", "v3", err, sizeof err), -1);
  assert_non_null(strstr(err, "outside the program's HBM"));
  assert_int_equal(verify_text(".hbm 100000000000\nhalt\n", "v3,hbm=1GiB", err, sizeof err), -1);
  assert_non_null(strstr(err, "needs 100000000000 bytes of HBM"));
}

static int setup(void **state) {
  (void)state;
  return tgt_parse("v3", &v3, NULL, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(encode_decode_every_instruction),
      cmocka_unit_test(decode_rejects_unused_fields),
      cmocka_unit_test(checker_matches_decode_and_check),
      cmocka_unit_test(crc32_matches_reference),
      cmocka_unit_test(asm_disasm_every_instruction),
      cmocka_unit_test(disasm_asm_large_constant),
      cmocka_unit_test(assembler_reports_errors_with_location),
      cmocka_unit_test(targets_presets_and_overrides),
      cmocka_unit_test(targets_boards_and_pods),
      cmocka_unit_test(verifier_rejects_with_reasons),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
