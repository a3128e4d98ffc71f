/* test_tensor_io.c: unit tests for ir/ tensor I/O: .npy (versions, byte
 * orders, Fortran order, dtypes), .npz (numpy-written archives, several
 * arrays, corruption), raw .bin, IREE-style literals and their printing.
 * Expected values are written out by hand or come from files numpy wrote. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>
#ifdef HAVE_ZLIB
#include <zlib.h>
#endif

#include "ir/ir.h"
#include "numpy_npz.h"

static char err[512];

/* Builds an .npy file: magic, version, header length, header text, data.
 * The header is used exactly as given (no padding added). */
static size_t mk_npy(uint8_t *out, int major, const char *header, const uint8_t *data,
                     size_t ndata) {
  size_t n = 0, hl = strlen(header);
  memcpy(out, "\x93NUMPY", 6);
  n = 6;
  out[n++] = (uint8_t)major;
  out[n++] = 0;
  out[n++] = (uint8_t)(hl & 0xff);
  out[n++] = (uint8_t)(hl >> 8);
  if (major >= 2) {
    out[n++] = 0;
    out[n++] = 0;
  }
  memcpy(out + n, header, hl);
  n += hl;
  if (ndata) memcpy(out + n, data, ndata);
  return n + ndata;
}

static ir_literal *decode_ok(arena *a, const uint8_t *buf, size_t n) {
  ir_literal *l = NULL;
  base_status st = ir_npy_decode(a, "t.npy", buf, n, &l, err, sizeof err);
  if (st != ST_OK) fail_msg("decode failed: %s", err);
  return l;
}

static void decode_err(const uint8_t *buf, size_t n, const char *want) {
  arena *a = arena_create();
  ir_literal *l = NULL;
  base_status st = ir_npy_decode(a, "t.npy", buf, n, &l, err, sizeof err);
  assert_int_not_equal(st, ST_OK);
  if (!strstr(err, want)) fail_msg("error '%s' lacks '%s'", err, want);
  assert_non_null(strstr(err, "t.npy"));
  arena_destroy(a);
}

static void npy_f32_little_c_order(void **state) {
  (void)state;
  /* 1.5f = 0x3fc00000, -2.0f = 0xc0000000, little endian */
  const uint8_t data[] = {0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x00, 0xc0};
  uint8_t buf[256];
  size_t n = mk_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", data,
                    sizeof data);
  arena *a = arena_create();
  ir_literal *l = decode_ok(a, buf, n);
  assert_int_equal(l->shape.type, IR_F32);
  assert_int_equal(l->shape.rank, 1);
  assert_int_equal(l->shape.dims[0], 2);
  assert_true(ir_literal_get_f64(l, 0) == 1.5);
  assert_true(ir_literal_get_f64(l, 1) == -2.0);
  arena_destroy(a);
}

static void npy_s32_big_endian_fortran(void **state) {
  (void)state;
  /* The 2x3 matrix [[1 2 3][4 5 6]] in column-major order is 1 4 2 5 3 6;
   * big endian int32 each. */
  const uint8_t data[] = {0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0, 3, 0, 0, 0, 6};
  uint8_t buf[256];
  size_t n = mk_npy(buf, 1, "{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }  \n", data,
                    sizeof data);
  arena *a = arena_create();
  ir_literal *l = decode_ok(a, buf, n);
  assert_int_equal(l->shape.type, IR_S32);
  assert_int_equal(l->shape.rank, 2);
  for (int i = 0; i < 6; i++)
    assert_int_equal(ir_literal_get_i64(l, i), i + 1);
  arena_destroy(a);
}

static void npy_fortran_rank3(void **state) {
  (void)state;
  /* shape (2,2,2), element (i,j,k) = 100i + 10j + k; Fortran offset is
   * i + 2j + 4k. int8 values fit: max 111. */
  uint8_t data[8];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      for (int k = 0; k < 2; k++)
        data[i + 2 * j + 4 * k] = (uint8_t)(100 * i + 10 * j + k);
  uint8_t buf[256];
  size_t n = mk_npy(buf, 1, "{'descr': '|i1', 'fortran_order': True, 'shape': (2, 2, 2), }\n", data,
                    sizeof data);
  arena *a = arena_create();
  ir_literal *l = decode_ok(a, buf, n);
  const int want[8] = {0, 1, 10, 11, 100, 101, 110, 111};
  for (int i = 0; i < 8; i++)
    assert_int_equal(ir_literal_get_i64(l, i), want[i]);
  arena_destroy(a);
}

static void npy_f16_big_endian_v2(void **state) {
  (void)state;
  /* f16: 1.0 = 0x3c00, -0.5 = 0xb800, 65504 = 0x7bff; version 2.0 header */
  const uint8_t data[] = {0x3c, 0x00, 0xb8, 0x00, 0x7b, 0xff};
  uint8_t buf[256];
  size_t n = mk_npy(buf, 2, "{\"descr\": \">f2\", \"shape\": (3,), \"fortran_order\": False}\n",
                    data, sizeof data);
  arena *a = arena_create();
  ir_literal *l = decode_ok(a, buf, n);
  assert_int_equal(l->shape.type, IR_F16);
  assert_true(ir_literal_get_f64(l, 0) == 1.0);
  assert_true(ir_literal_get_f64(l, 1) == -0.5);
  assert_true(ir_literal_get_f64(l, 2) == 65504.0);
  arena_destroy(a);
}

static void npy_bool_v3_scalar_and_python2_dims(void **state) {
  (void)state;
  uint8_t buf[256];
  const uint8_t one[] = {1};
  size_t n = mk_npy(buf, 3, "{'descr': '|b1', 'fortran_order': False, 'shape': (), }\n", one, 1);
  arena *a = arena_create();
  ir_literal *l = decode_ok(a, buf, n);
  assert_int_equal(l->shape.type, IR_PRED);
  assert_int_equal(l->shape.rank, 0);
  assert_int_equal(ir_literal_get_i64(l, 0), 1);
  /* Python 2 wrote "2L"; nonzero bytes of a bool array read as 1 */
  const uint8_t two[] = {0, 7};
  n = mk_npy(buf, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2L,), }\n", two, 2);
  l = decode_ok(a, buf, n);
  assert_int_equal(ir_literal_get_i64(l, 0), 0);
  assert_int_equal(((uint8_t *)l->data)[1], 1);
  arena_destroy(a);
}

static void npy_decode_as_converts(void **state) {
  (void)state;
  uint8_t buf[256];
  arena *a = arena_create();
  ir_literal *l;
  /* float64 1/3 (0x3fd5555555555555) and -2.5 (0xc004000000000000), little
   * endian, read as f32 and as bf16 (1/3 -> 0x3eab, round to nearest) */
  const uint8_t f8[] = {0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0xd5, 0x3f,
                        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0xc0};
  size_t n =
      mk_npy(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }\n", f8, sizeof f8);
  assert_int_equal(ir_npy_decode_as(a, "d.npy", buf, n, IR_F32, &l, err, sizeof err), ST_OK);
  assert_true(ir_literal_get_f64(l, 0) == (double)(float)(1.0 / 3));
  assert_true(ir_literal_get_f64(l, 1) == -2.5);
  assert_int_equal(ir_npy_decode_as(a, "d.npy", buf, n, IR_BF16, &l, err, sizeof err), ST_OK);
  assert_int_equal(((uint16_t *)l->data)[0], 0x3eab);
  /* without a type asked for, float64 reads as f64, exactly */
  assert_int_equal(ir_npy_decode(a, "d.npy", buf, n, &l, err, sizeof err), ST_OK);
  assert_int_equal(l->shape.type, IR_F64);
  assert_true(ir_literal_get_f64(l, 0) == 1.0 / 3 && ir_literal_get_f64(l, 1) == -2.5);
  assert_int_not_equal(ir_npy_decode_as(a, "d.npy", buf, n, IR_S32, &l, err, sizeof err), ST_OK);
  assert_string_equal(err, "d.npy: float64 data cannot be read as s32");
  /* big-endian int64 2x2 in Fortran order: [[-1 300][7 0]] is -1 7 300 0 */
  const uint8_t i8[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 7,
                        0,    0,    0,    0,    0,    0,    1,    0x2c, 0, 0, 0, 0, 0, 0, 0, 0};
  n = mk_npy(buf, 1, "{'descr': '>i8', 'fortran_order': True, 'shape': (2, 2), }\n", i8, sizeof i8);
  assert_int_equal(ir_npy_decode_as(a, "q.npy", buf, n, IR_S32, &l, err, sizeof err), ST_OK);
  const int want[4] = {-1, 300, 7, 0};
  for (int i = 0; i < 4; i++)
    assert_int_equal(ir_literal_get_i64(l, i), want[i]);
  assert_int_equal(ir_npy_decode_as(a, "q.npy", buf, n, IR_F16, &l, err, sizeof err), ST_OK);
  assert_true(ir_literal_get_f64(l, 1) == 300.0);
  assert_int_not_equal(ir_npy_decode_as(a, "q.npy", buf, n, IR_S8, &l, err, sizeof err), ST_OK);
  assert_string_equal(err, "q.npy: element 1 (300) does not fit s8");
  /* uint16 big endian 65535 as s32; uint8 as pred (nonzero -> 1) */
  const uint8_t u2[] = {0xff, 0xff};
  n = mk_npy(buf, 1, "{'descr': '>u2', 'fortran_order': False, 'shape': (), }\n", u2, 2);
  assert_int_equal(ir_npy_decode_as(a, "u.npy", buf, n, IR_S32, &l, err, sizeof err), ST_OK);
  assert_int_equal(ir_literal_get_i64(l, 0), 65535);
  const uint8_t u1[] = {0, 9};
  n = mk_npy(buf, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }\n", u1, 2);
  assert_int_equal(ir_npy_decode_as(a, "u.npy", buf, n, IR_PRED, &l, err, sizeof err), ST_OK);
  assert_int_equal(((uint8_t *)l->data)[1], 1);
  arena_destroy(a);
}

static void npy_malformed(void **state) {
  (void)state;
  uint8_t buf[512];
  const uint8_t d4[] = {0, 0, 0, 0};
  size_t n;
  decode_err((const uint8_t *)"\x93NUMPX\x01\x00\x00\x00", 10, "bad magic");
  decode_err((const uint8_t *)"\x93NUM", 5, "bad magic");
  n = mk_npy(buf, 4, "{}", NULL, 0);
  decode_err(buf, n, "format version 4.0");
  /* header length larger than the file */
  n = mk_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", d4, 4);
  decode_err(buf, 30, "exceeds the file");
  n = mk_npy(buf, 1, "{'descr': '<f4', 'shape': (1,), }\n", d4, 4);
  decode_err(buf, n, "lacks 'fortran_order'");
  n = mk_npy(buf, 1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }\n", d4, 4);
  decode_err(buf, n, "neither True nor False");
  n = mk_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }\n", d4, 4);
  decode_err(buf, n, "non-negative integers");
  n = mk_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': 4, }\n", d4, 4);
  decode_err(buf, n, "not a tuple");
  n = mk_npy(buf, 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }\n", d4, 4);
  decode_err(buf, n, "unsupported dtype '<c8' (unknown)");
  n = mk_npy(buf, 1, "{'descr': '|f4', 'fortran_order': False, 'shape': (1,), }\n", d4, 4);
  decode_err(buf, n, "unsupported dtype '|f4'");
  n = mk_npy(buf, 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }\n", d4, 4);
  decode_err(buf, n, "structured dtypes");
  n = mk_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", d4, 4);
  decode_err(buf, n, "truncated: shape needs 8 data bytes, the file has 4");
  n = mk_npy(buf, 1, "{'descr': '<i1', 'fortran_order': False, 'shape': (3,), }\n", d4, 4);
  decode_err(buf, n, "1 unexpected bytes");
  n = mk_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}\n", d4, 4);
  decode_err(buf, n, "unexpected key 'x'");
  n = mk_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,) ", d4, 4);
  decode_err(buf, n, "expected ',' or '}'");
  n = mk_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } junk", d4, 4);
  decode_err(buf, n, "after the header dict");
  /* a huge shape in a tiny file: rejected before any allocation */
  n = mk_npy(buf, 1,
             "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000, 1000), }\n", d4,
             4);
  decode_err(buf, n, "too large");
  n = mk_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }\n", d4,
             4);
  decode_err(buf, n, "truncated");
  n = mk_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1,1,1,1), }\n",
             d4, 4);
  decode_err(buf, n, "more than 12 dimensions");
  n = mk_npy(buf, 1,
             "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }\n", d4,
             4);
  decode_err(buf, n, "too large");
  /* every prefix of a good file fails cleanly */
  n = mk_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", d4, 4);
  for (size_t k = 0; k < n; k++) {
    arena *a = arena_create();
    ir_literal *l;
    assert_int_not_equal(ir_npy_decode(a, "p.npy", buf, k, &l, err, sizeof err), ST_OK);
    arena_destroy(a);
  }
}

static void npy_encode_matches_numpy(void **state) {
  (void)state;
  arena *a = arena_create();
  int64_t d = 3;
  ir_shape s = ir_shape_array(IR_F32, 1, &d);
  ir_literal *l = ir_literal_create(a, &s);
  for (int i = 0; i < 3; i++)
    ir_literal_set_f64(l, i, i + 1);
  strbuf b;
  sb_init(&b);
  assert_int_equal(ir_npy_encode(&b, l, err, sizeof err), ST_OK);
  /* numpy 1.24: np.save(f, np.array([1,2,3], np.float32)) is 140 bytes:
   * a 118-byte header, then 1.0f 2.0f 3.0f. */
  const char hdr[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  assert_int_equal(b.len, 140);
  assert_memory_equal(b.s, "\x93NUMPY\x01\x00\x76\x00", 10);
  assert_memory_equal(b.s + 10, hdr, strlen(hdr));
  assert_int_equal(b.s[127], '\n');
  assert_int_equal(b.s[126], ' ');
  assert_memory_equal(b.s + 128, "\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40", 12);
  sb_free(&b);
  arena_destroy(a);
}

static void npy_round_trip_all_types(void **state) {
  (void)state;
  arena *a = arena_create();
  int64_t dims[2] = {2, 3};
  for (ir_type t = IR_PRED; t <= IR_F32; t++) {
    ir_shape s = ir_shape_array(t, 2, dims);
    ir_literal *l = ir_literal_create(a, &s);
    for (int i = 0; i < 6; i++)
      ir_literal_set_f64(l, i, t == IR_PRED ? i % 2 : i - 2.5);
    strbuf b;
    sb_init(&b);
    assert_int_equal(ir_npy_encode(&b, l, err, sizeof err), ST_OK);
    assert_int_equal((b.len - ir_shape_count(&s) * (t == IR_BF16 ? 4 : ir_type_size(t))) % 64, 0);
    ir_literal *r;
    assert_int_equal(ir_npy_decode(a, "rt.npy", b.s, b.len, &r, err, sizeof err), ST_OK);
    if (t == IR_BF16) { /* widened to f32 exactly */
      assert_int_equal(r->shape.type, IR_F32);
      for (int i = 0; i < 6; i++)
        assert_true(ir_literal_get_f64(r, i) == ir_literal_get_f64(l, i));
    } else {
      assert_true(ir_literal_equal(l, r));
    }
    sb_free(&b);
  }
  arena_destroy(a);
}

static void npz_read_numpy_savez(void **state) {
  (void)state;
  arena *a = arena_create();
  ir_named_literal *arr;
  int n;
  assert_int_equal(
      ir_npz_decode(a, "n.npz", numpy_savez, sizeof numpy_savez, NULL, NULL, &arr, &n, err, sizeof err), ST_OK);
  assert_int_equal(n, 2);
  assert_string_equal(arr[0].name, "a");
  assert_string_equal(arr[1].name, "b");
  assert_int_equal(arr[0].lit->shape.type, IR_S32);
  assert_int_equal(ir_literal_get_i64(arr[0].lit, 0), 1);
  assert_int_equal(ir_literal_get_i64(arr[0].lit, 1), 2);
  assert_int_equal(arr[1].lit->shape.rank, 0);
  assert_true(ir_literal_get_f64(arr[1].lit, 0) == 3.5);
  arena_destroy(a);
}

static void npz_read_numpy_savez_compressed(void **state) {
  (void)state;
  arena *a = arena_create();
  ir_named_literal *arr;
  int n;
  base_status st = ir_npz_decode(a, "c.npz", numpy_savez_compressed, sizeof numpy_savez_compressed,
                                 NULL, NULL, &arr, &n, err, sizeof err);
#ifdef HAVE_ZLIB
  assert_int_equal(st, ST_OK);
  assert_int_equal(n, 1);
  assert_string_equal(arr[0].name, "x");
  assert_int_equal(arr[0].lit->shape.dims[1], 3);
  for (int i = 0; i < 6; i++)
    assert_true(ir_literal_get_f64(arr[0].lit, i) == i);
#else
  assert_int_equal(st, ST_UNSUPPORTED);
  assert_non_null(strstr(err, "without zlib"));
#endif
  arena_destroy(a);
}

static void npz_write_several_and_read_back(void **state) {
  (void)state;
  arena *a = arena_create();
  int64_t d2[2] = {2, 2}, d1 = 3;
  ir_shape s0 = ir_shape_array(IR_F32, 2, d2), s1 = ir_shape_array(IR_S8, 1, &d1),
           s2 = ir_shape_scalar(IR_PRED);
  ir_named_literal in[3] = {{"weights", ir_literal_create(a, &s0)},
                            {"bias", ir_literal_create(a, &s1)},
                            {"flag", ir_literal_create(a, &s2)}};
  for (int i = 0; i < 4; i++)
    ir_literal_set_f64(in[0].lit, i, 0.25 * i);
  for (int i = 0; i < 3; i++)
    ir_literal_set_i64(in[1].lit, i, -i);
  ir_literal_set_i64(in[2].lit, 0, 1);
  strbuf b;
  sb_init(&b);
  assert_int_equal(ir_npz_encode(&b, in, 3, err, sizeof err), ST_OK);
  ir_named_literal *out;
  int n;
  assert_int_equal(ir_npz_decode(a, "w.npz", b.s, b.len, NULL, NULL, &out, &n, err, sizeof err), ST_OK);
  assert_int_equal(n, 3);
  for (int i = 0; i < 3; i++) {
    assert_string_equal(out[i].name, in[i].name);
    assert_true(ir_literal_equal(out[i].lit, in[i].lit));
  }
  /* corruption: flip one data byte (CRC), cut the end record, bad offsets */
  char *c = malloc(b.len);
  memcpy(c, b.s, b.len);
  c[41 + 128 + 2] ^= 1; /* a data byte of weights.npy (after its 41-byte local header) */
  assert_int_not_equal(ir_npz_decode(a, "w.npz", c, b.len, NULL, NULL, &out, &n, err, sizeof err), ST_OK);
  assert_non_null(strstr(err, "CRC-32 mismatch"));
  assert_non_null(strstr(err, "'weights.npy'"));
  memcpy(c, b.s, b.len);
  assert_int_not_equal(ir_npz_decode(a, "w.npz", c, b.len - 1, NULL, NULL, &out, &n, err, sizeof err), ST_OK);
  assert_non_null(strstr(err, "end-of-central-directory"));
  c[b.len - 6] = (char)0xff; /* central directory offset far out */
  assert_int_not_equal(ir_npz_decode(a, "w.npz", c, b.len, NULL, NULL, &out, &n, err, sizeof err), ST_OK);
  assert_non_null(strstr(err, "outside the file"));
  /* every truncation fails cleanly */
  for (size_t k = 0; k < b.len; k += 7)
    assert_int_not_equal(ir_npz_decode(a, "w.npz", b.s, k, NULL, NULL, &out, &n, err, sizeof err), ST_OK);
  free(c);
  sb_free(&b);
  arena_destroy(a);
}

/* ---- hostile archives, built here byte by byte ---------------------- */

static void put16(strbuf *b, uint32_t v) {
  sb_putc(b, (char)(v & 0xff));
  sb_putc(b, (char)(v >> 8 & 0xff));
}
static void put32(strbuf *b, uint32_t v) {
  put16(b, v & 0xffff);
  put16(b, v >> 16);
}

/* A local header for an entry of method m with data of csize bytes
 * following it (sizes in the header are ignored by readers of the central
 * directory, as numpy's force_zip64 writer leaves them). */
static void zip_local(strbuf *b, const char *name, uint32_t m) {
  put32(b, 0x04034b50);
  put16(b, 20), put16(b, 0), put16(b, m), put16(b, 0), put16(b, 0x21);
  put32(b, 0), put32(b, 0xffffffffu), put32(b, 0xffffffffu);
  put16(b, (uint32_t)strlen(name)), put16(b, 0);
  sb_puts(b, name);
}

/* A central-directory record; usize/csize 0xffffffff with a zip64 extra
 * field holding the real sizes when big is set. */
static void zip_central(strbuf *b, const char *name, uint32_t m, uint32_t crc, uint64_t csize,
                        uint64_t usize, uint32_t loff, bool big) {
  put32(b, 0x02014b50);
  put16(b, 45), put16(b, 45), put16(b, 0), put16(b, m), put16(b, 0), put16(b, 0x21);
  put32(b, crc);
  put32(b, big ? 0xffffffffu : (uint32_t)csize), put32(b, big ? 0xffffffffu : (uint32_t)usize);
  put16(b, (uint32_t)strlen(name)), put16(b, big ? 20 : 0), put16(b, 0);
  put16(b, 0), put16(b, 0), put32(b, 0), put32(b, loff);
  sb_puts(b, name);
  if (big) {
    put16(b, 1), put16(b, 16);
    put32(b, (uint32_t)usize), put32(b, (uint32_t)(usize >> 32));
    put32(b, (uint32_t)csize), put32(b, (uint32_t)(csize >> 32));
  }
}

static void zip_end(strbuf *b, uint32_t n, size_t cdstart) {
  put32(b, 0x06054b50);
  put16(b, 0), put16(b, 0), put16(b, n), put16(b, n);
  put32(b, (uint32_t)(b->len - cdstart)), put32(b, (uint32_t)cdstart), put16(b, 0);
}

/* A deflated entry whose .npy header declares 10^8 float32 (400 MB) while
 * only its first bytes are real deflate data: asked for as 2x4xf32, the
 * header is refused before the entry is inflated (nothing of 400 MB is
 * allocated); an entry declaring over 4 GiB is refused from the directory
 * alone. */
static void npz_header_checked_before_inflating(void **state) {
  (void)state;
#ifdef HAVE_ZLIB
  arena *a = arena_create();
  char hdr[128] = "{'descr': '<f4', 'fortran_order': False, 'shape': (100000000,), }";
  size_t hl = strlen(hdr);
  while ((10 + hl + 1) % 64) hdr[hl++] = ' ';
  hdr[hl++] = '\n';
  hdr[hl] = 0;
  uint8_t npy[256];
  size_t nn = mk_npy(npy, 1, hdr, NULL, 0);
  uint8_t z[512];
  uLongf zl = sizeof z;
  assert_int_equal(compress2(z, &zl, npy, nn, 9), Z_OK); /* zlib framing: 2 bytes, then raw */
  uint64_t usize = nn + (uint64_t)400000000, csize = usize / 1000;
  for (int big = 0; big < 2; big++) {
    if (big) usize = (uint64_t)6 << 30, csize = usize / 1000; /* the 6 GB zip64 bomb */
    strbuf b;
    sb_init(&b);
    zip_local(&b, "x.npy", 8);
    sb_putn(&b, (const char *)z + 2, zl - 6); /* the header's deflate blocks, not final */
    while (b.len < 35 + csize) sb_putc(&b, 0); /* filler never inflated */
    size_t cd = b.len;
    zip_central(&b, "x.npy", 8, 0, csize, usize, 0, true);
    zip_end(&b, 1, cd);
    int64_t d[2] = {2, 4};
    ir_shape want = ir_shape_array(IR_F32, 2, d);
    ir_named_literal *out;
    int n;
    assert_int_equal(ir_npz_decode(a, "bomb.npz", b.s, b.len, NULL, &want, &out, &n, err,
                                   sizeof err),
                     big ? ST_RESOURCE_EXHAUSTED : ST_INVALID_ARGUMENT);
    assert_non_null(strstr(err, big ? "entry 'x.npy' holds 6442450944 bytes, over the limit"
                                    : "bomb.npz:x.npy: expected 2x4xf32, the array is "
                                      "100000000xf32"));
    sb_free(&b);
  }
  arena_destroy(a);
#endif
}

/* 64 directory records naming one 128-byte stored entry: an archive whose
 * entries share bytes is refused before any entry is decoded, whichever
 * entry is asked for; a well-formed archive decodes only the entry asked
 * for. */
static void npz_overlapping_entries_refused(void **state) {
  (void)state;
  arena *a = arena_create();
  uint8_t npy[256];
  float v[2] = {1, 2};
  size_t nn = mk_npy(npy, 1,
                     "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }            \n",
                     (const uint8_t *)v, sizeof v);
  strbuf b;
  sb_init(&b);
  zip_local(&b, "a0.npy", 0);
  sb_putn(&b, (const char *)npy, nn);
  size_t cd = b.len;
  char name[16];
  for (int i = 0; i < 64; i++) {
    snprintf(name, sizeof name, "a%d.npy", i);
    zip_central(&b, name, 0, 0, nn, nn, 0, false);
  }
  zip_end(&b, 64, cd);
  ir_named_literal *out;
  int n;
  assert_int_equal(ir_npz_decode(a, "o.npz", b.s, b.len, NULL, NULL, &out, &n, err, sizeof err),
                   ST_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "o.npz: entries 'a0' and 'a1' overlap (at byte 0)"));
  assert_int_equal(ir_npz_decode(a, "o.npz", b.s, b.len, "a5", NULL, &out, &n, err, sizeof err),
                   ST_INVALID_ARGUMENT);
  sb_free(&b);
  /* select: one entry of three decoded; an unknown name lists the others */
  int64_t d1 = 3;
  ir_shape s1 = ir_shape_array(IR_S8, 1, &d1);
  ir_named_literal in[3] = {{"p", ir_literal_create(a, &s1)},
                            {"q", ir_literal_create(a, &s1)},
                            {"r", ir_literal_create(a, &s1)}};
  ir_literal_set_i64(in[1].lit, 2, 7);
  sb_init(&b);
  assert_int_equal(ir_npz_encode(&b, in, 3, err, sizeof err), ST_OK);
  assert_int_equal(ir_npz_decode(a, "s.npz", b.s, b.len, "q", NULL, &out, &n, err, sizeof err),
                   ST_OK);
  assert_int_equal(n, 1);
  assert_string_equal(out[0].name, "q");
  assert_int_equal(ir_literal_get_i64(out[0].lit, 2), 7);
  assert_int_equal(ir_npz_decode(a, "s.npz", b.s, b.len, "z", NULL, &out, &n, err, sizeof err),
                   ST_NOT_FOUND);
  assert_non_null(strstr(err, "s.npz has no array 'z' (it has: p, q, r)"));
  sb_free(&b);
  arena_destroy(a);
}

static void bin_decode_and_encode(void **state) {
  (void)state;
  arena *a = arena_create();
  int64_t d = 2;
  ir_shape s = ir_shape_array(IR_BF16, 1, &d);
  /* bf16 1.0 = 0x3f80, -2.0 = 0xc000, little endian */
  const uint8_t raw[] = {0x80, 0x3f, 0x00, 0xc0};
  ir_literal *l;
  assert_int_equal(ir_bin_decode(a, "a.bin", raw, 4, &s, &l, err, sizeof err), ST_OK);
  assert_true(ir_literal_get_f64(l, 0) == 1.0);
  assert_true(ir_literal_get_f64(l, 1) == -2.0);
  strbuf b;
  sb_init(&b);
  ir_bin_encode(&b, l);
  assert_int_equal(b.len, 4);
  assert_memory_equal(b.s, raw, 4);
  sb_free(&b);
  assert_int_not_equal(ir_bin_decode(a, "a.bin", raw, 3, &s, &l, err, sizeof err), ST_OK);
  assert_string_equal(err, "a.bin: raw file has 3 bytes but 2xbf16 needs 4");
  arena_destroy(a);
}

static ir_literal *parse1(arena *a, const char *text) {
  ir_named_literal *r;
  int n;
  base_status st = ir_tensor_parse(a, text, &r, &n, err, sizeof err);
  if (st != ST_OK) fail_msg("parse '%s' failed: %s", text, err);
  assert_int_equal(n, 1);
  return r[0].lit;
}

static void parse_err(const char *text, const char *want) {
  arena *a = arena_create();
  ir_named_literal *r;
  int n;
  assert_int_not_equal(ir_tensor_parse(a, text, &r, &n, err, sizeof err), ST_OK);
  if (!strstr(err, want)) fail_msg("'%s': error '%s' lacks '%s'", text, err, want);
  arena_destroy(a);
}

static const char *print1(strbuf *b, const ir_literal *l, int64_t max) {
  b->len = 0;
  sb_puts(b, "");
  ir_tensor_print(b, l, max);
  return sb_str(b);
}

static void literal_parse_and_print(void **state) {
  (void)state;
  arena *a = arena_create();
  strbuf b;
  sb_init(&b);
  ir_literal *l = parse1(a, "2x3xf32=1 2 3 4 5 6");
  assert_string_equal(print1(&b, l, 0), "2x3xf32=[1 2 3][4 5 6]");
  l = parse1(a, "f32=3.5");
  assert_string_equal(print1(&b, l, 0), "f32=3.5");
  l = parse1(a, "2x2xs32=[1, 2][3, -4]");
  assert_string_equal(print1(&b, l, 0), "2x2xs32=[1 2][3 -4]");
  l = parse1(a, "3xi32=7"); /* splat */
  assert_string_equal(print1(&b, l, 0), "3xs32=7 7 7");
  l = parse1(a, "s32[2,2]=1 2 3 4"); /* HLO spelling */
  assert_string_equal(print1(&b, l, 0), "2x2xs32=[1 2][3 4]");
  l = parse1(a, "4xpred=true false 1 0");
  assert_string_equal(print1(&b, l, 0), "4xpred=1 0 1 0");
  l = parse1(a, "2x1x2xi8=-128 127 0 5");
  assert_string_equal(print1(&b, l, 0), "2x1x2xs8=[[-128 127]][[0 5]]");
  l = parse1(a, "f32=6.28"); /* shortest round trip */
  assert_string_equal(print1(&b, l, 0), "f32=6.28");
  l = parse1(a, "8xf32=10 100 123456 0.001 0.0001 0.00001 1e20 -2.5e-7");
  assert_string_equal(print1(&b, l, 0), "8xf32=10 100 123456 0.001 0.0001 1e-05 1e+20 -2.5e-07");
  l = parse1(a, "4xf32=nan inf -inf -0");
  assert_string_equal(print1(&b, l, 0), "4xf32=nan inf -inf -0");
  /* bf16: 1/3 rounds to 0x3eab = 0.333984375; the shortest text that reads
   * back to it is 0.334. 1.00390625 is halfway between 1 and 1.0078125:
   * ties to even gives 1. */
  l = parse1(a, "2xbf16=0.3333333 1.00390625");
  assert_int_equal(((uint16_t *)l->data)[0], 0x3eab);
  assert_int_equal(((uint16_t *)l->data)[1], 0x3f80);
  assert_string_equal(print1(&b, l, 0), "2xbf16=0.334 1");
  l = parse1(a, "f16=0.1");
  assert_int_equal(((uint16_t *)l->data)[0], 0x2e66);
  assert_string_equal(print1(&b, l, 0), "f16=0.1");
  l = parse1(a, "0x3xf32=");
  assert_string_equal(print1(&b, l, 0), "0x3xf32=");
  l = parse1(a, "10xs32=0 1 2 3 4 5 6 7 8 9");
  assert_string_equal(print1(&b, l, 4), "10xs32=0 1 2 3 ...");
  l = parse1(a, "3x2xs32=1 2 3 4 5 6");
  assert_string_equal(print1(&b, l, 3), "3x2xs32=[1 2][3 ...]");
  sb_free(&b);
  arena_destroy(a);

  parse_err("2x3xf32=1 2 3", "expected 6 values, got 3");
  parse_err("2x3xf33=1", "unknown element type 'f33'");
  parse_err("2xyxf32=1", "bad dimension 'y'");
  parse_err("2x3", "expected SHAPExTYPE=VALUES");
  parse_err("2xs8=1 300", "value 1: 300 is out of range for s8");
  parse_err("2xs32=1 2.5", "value 1: '2.5' is not an integer");
  parse_err("2xf32=1 abc", "value 1: 'abc' is not a number");
  parse_err("pred=2", "not a pred value");
  parse_err("1x1x1x1x1x1x1x1x1x1x1x1x1xf32=1", "more than 12 dimensions");
  parse_err("100000x100000x100000xf32=1", "too large");
  parse_err("100000x100000xf32=1", "tensor too large (10000000000 elements");
  parse_err("2xf32=@", "empty file name");
  parse_err("@/nonexistent/x.npy", "/nonexistent/x.npy: No such file");
  parse_err("2x2xf32=@/nonexistent/x.bin", "/nonexistent/x.bin");
}

static void literal_file_references(void **state) {
  (void)state;
  char npy[64], bin[64], npz[64], dir[64];
  snprintf(npy, sizeof npy, "/tmp/tpucc_tio_%d.npy", (int)getpid());
  snprintf(bin, sizeof bin, "/tmp/tpucc_tio_%d.bin", (int)getpid());
  snprintf(npz, sizeof npz, "/tmp/tpucc_tio_%d.npz", (int)getpid());
  snprintf(dir, sizeof dir, "/tmp");
  arena *a = arena_create();
  ir_literal *l = parse1(a, "2x2xf32=1.5 2.5 3.5 4.5");
  assert_int_equal(ir_tensor_write_file(npy, l, err, sizeof err), ST_OK);
  assert_int_equal(ir_tensor_write_file(bin, l, err, sizeof err), ST_OK);
  char arg[128];
  snprintf(arg, sizeof arg, "@%s", npy);
  assert_true(ir_literal_equal(parse1(a, arg), l));
  snprintf(arg, sizeof arg, "2x2xf32=@%s", npy);
  assert_true(ir_literal_equal(parse1(a, arg), l));
  snprintf(arg, sizeof arg, "2x2xbf16=@%s", npy); /* f32 file given as bf16: rounded */
  ir_literal *h = parse1(a, arg);
  assert_int_equal(h->shape.type, IR_BF16);
  assert_true(ir_literal_get_f64(h, 3) == 4.5);
  snprintf(arg, sizeof arg, "2x2xf32=@%s", bin);
  assert_true(ir_literal_equal(parse1(a, arg), l));
  snprintf(arg, sizeof arg, "3x2xf32=@%s", npy);
  parse_err(arg, "holds 2x2xf32, not 3x2xf32");
  snprintf(arg, sizeof arg, "2x2xs32=@%s", npy);
  parse_err(arg, "float32 data cannot be read as s32");
  snprintf(arg, sizeof arg, "4xf32=@%s", bin);
  ir_literal *flat = parse1(a, arg); /* raw data takes any shape of the same size */
  assert_true(ir_literal_get_f64(flat, 2) == 3.5);
  snprintf(arg, sizeof arg, "3xf32=@%s", bin);
  parse_err(arg, "raw file has 16 bytes but 3xf32 needs 12");
  snprintf(arg, sizeof arg, "@%s", bin);
  parse_err(arg, "needs an explicit shape and type");
  snprintf(arg, sizeof arg, "@%s", dir);
  parse_err(arg, "is a directory");
  /* npz with two arrays: all, or one by name */
  ir_named_literal two[2] = {{"x", l}, {"y", parse1(a, "s32=5")}};
  strbuf b;
  sb_init(&b);
  assert_int_equal(ir_npz_encode(&b, two, 2, err, sizeof err), ST_OK);
  assert_int_equal(ir_file_write(npz, b.s, b.len, err, sizeof err), ST_OK);
  sb_free(&b);
  ir_named_literal *r;
  int n;
  snprintf(arg, sizeof arg, "@%s", npz);
  assert_int_equal(ir_tensor_parse(a, arg, &r, &n, err, sizeof err), ST_OK);
  assert_int_equal(n, 2);
  assert_int_equal(ir_literal_get_i64(r[1].lit, 0), 5);
  snprintf(arg, sizeof arg, "@%s:y", npz);
  assert_int_equal(ir_literal_get_i64(parse1(a, arg), 0), 5);
  snprintf(arg, sizeof arg, "@%s:z", npz);
  parse_err(arg, "has no array 'z' (it has: x, y)");
  snprintf(arg, sizeof arg, "2x2xf32=@%s", npz);
  parse_err(arg, "holds 2 arrays");
  unlink(npy);
  unlink(bin);
  unlink(npz);
  arena_destroy(a);
}

/* Mutated archives and headers (a fixed pseudo-random sequence): every one
 * either decodes or fails with a message; none crashes (run under ASan). */
static void mutations_never_crash(void **state) {
  (void)state;
  uint64_t x = 12345;
  size_t n = sizeof numpy_savez;
  uint8_t *buf = malloc(n);
  int ok = 0;
  for (int iter = 0; iter < 3000; iter++) {
    memcpy(buf, numpy_savez, n);
    for (int k = 0; k < 1 + iter % 4; k++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      buf[(x >> 33) % n] = (uint8_t)(x >> 13);
    }
    arena *a = arena_create();
    ir_named_literal *arr;
    int cnt;
    err[0] = 0;
    if (ir_npz_decode(a, "m.npz", buf, n, NULL, NULL, &arr, &cnt, err, sizeof err) == ST_OK)
      ok++;
    else
      assert_true(strncmp(err, "m.npz", 5) == 0);
    /* the first entry's .npy alone, mutated the same way */
    ir_literal *l;
    if (ir_npy_decode(a, "m.npy", buf + 55, 136, &l, err, sizeof err) != ST_OK)
      assert_true(strncmp(err, "m.npy", 5) == 0);
    arena_destroy(a);
  }
  assert_true(ok > 0); /* mutations of unused fields (times, padding) still read */
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(npy_f32_little_c_order),
      cmocka_unit_test(npy_s32_big_endian_fortran),
      cmocka_unit_test(npy_fortran_rank3),
      cmocka_unit_test(npy_f16_big_endian_v2),
      cmocka_unit_test(npy_bool_v3_scalar_and_python2_dims),
      cmocka_unit_test(npy_decode_as_converts),
      cmocka_unit_test(npy_malformed),
      cmocka_unit_test(npy_encode_matches_numpy),
      cmocka_unit_test(npy_round_trip_all_types),
      cmocka_unit_test(npz_read_numpy_savez),
      cmocka_unit_test(npz_read_numpy_savez_compressed),
      cmocka_unit_test(npz_write_several_and_read_back),
      cmocka_unit_test(bin_decode_and_encode),
      cmocka_unit_test(literal_parse_and_print),
      cmocka_unit_test(literal_file_references),
      cmocka_unit_test(mutations_never_crash),
      cmocka_unit_test(npz_header_checked_before_inflating),
      cmocka_unit_test(npz_overlapping_entries_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
