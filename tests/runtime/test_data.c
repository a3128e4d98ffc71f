/* test_data.c: libtpurt-data (include/tpurt_data.h) on small files this
 * test writes: IDX plain and gzipped, .npy, .npz stored and deflated. Exact
 * batch values against an independent implementation of the documented
 * shuffle, reproducibility, remainder, per-replica split, prefetch equal to
 * no prefetch, malformed inputs, and truncations / byte flips of each file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <unistd.h>
#include <zlib.h>

#include "tpurt_data.h"

enum { N = 10, R = 2, C = 3, E = R * C };

static char dir[256];

static const char *path(const char *name) {
  static char buf[4][512];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
  return buf[k];
}

static void put(const char *name, const void *p, size_t n) {
  FILE *f = fopen(path(name), "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(p, 1, n, f), n);
  fclose(f);
}

static void put_gz(const char *name, const void *p, size_t n) {
  gzFile g = gzopen(path(name), "wb");
  assert_non_null(g);
  assert_int_equal(gzwrite(g, p, (unsigned)n), (int)n);
  gzclose(g);
}

static void be(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* images: example i, element j = i * E + j; labels: (3 * i) % 10. */
static size_t idx_images(uint8_t *b) {
  be(b, 0x803), be(b + 4, N), be(b + 8, R), be(b + 12, C);
  for (int i = 0; i < N * E; i++)
    b[16 + i] = (uint8_t)i;
  return 16 + N * E;
}
static size_t idx_labels(uint8_t *b) {
  be(b, 0x801), be(b + 4, N);
  for (int i = 0; i < N; i++)
    b[8 + i] = (uint8_t)(3 * i % 10);
  return 8 + N;
}

static uint8_t img[16 + N * E], lab[8 + N];
static size_t nimg, nlab;

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tpurt_data_test_%d", (int)getpid());
  char cmd[300];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
  if (system(cmd) != 0)
    return -1;
  nimg = idx_images(img);
  nlab = idx_labels(lab);
  put("img", img, nimg);
  put("lab", lab, nlab);
  put_gz("img.gz", img, nimg);
  put_gz("lab.gz", lab, nlab);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd) != 0;
}

static tpurt_dataset_t *open2(const char *images, const char *labels) {
  tpurt_data_options_t o;
  tpurt_data_options_init(&o);
  o.images = path(images);
  o.labels = labels ? path(labels) : NULL;
  tpurt_dataset_t *ds;
  tpurt_data_status_t s = tpurt_dataset_open(&o, &ds);
  if (s)
    fail_msg("%s", tpurt_dataset_message(ds));
  return ds;
}

/* The documented shuffle, written out again. */
static uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
static void ref_order(uint64_t seed, int epoch, uint32_t *p, int n) {
  for (int i = 0; i < n; i++)
    p[i] = (uint32_t)i;
  for (int i = n - 1; i >= 1; i--) {
    uint64_t r = mix(seed ^ mix(mix((uint64_t)epoch) ^ mix((uint64_t)i)));
    int j = (int)(((r >> 32) * (uint64_t)(i + 1)) >> 32);
    uint32_t t = p[i];
    p[i] = p[j], p[j] = t;
  }
}

/* Every batch of loader options o over ds matches the reference. */
static void check_stream(tpurt_dataset_t *ds, const tpurt_loader_options_t *o) {
  tpurt_loader_t *ld;
  assert_int_equal(tpurt_loader_create(ds, o, &ld), TPURT_DATA_OK);
  size_t per = o->drop_remainder ? N / o->batch : (N + o->batch - 1) / o->batch;
  assert_int_equal(tpurt_loader_batches_per_epoch(ld), per);
  tpurt_batch_t b;
  for (int e = 0; e < o->epochs; e++) {
    uint32_t p[N];
    if (o->shuffle)
      ref_order(o->seed, e, p, N);
    else
      for (int i = 0; i < N; i++)
        p[i] = (uint32_t)i;
    for (size_t k = 0; k < per; k++) {
      assert_int_equal(tpurt_loader_next(ld, &b), TPURT_DATA_OK);
      assert_int_equal(b.epoch, e);
      assert_int_equal(b.index, k);
      size_t want = N - k * o->batch < o->batch ? N - k * o->batch : o->batch;
      assert_int_equal(b.count, want);
      assert_int_equal(b.elems, E);
      for (size_t r = 0; r < b.count; r++) {
        uint32_t ex = p[k * o->batch + r];
        assert_int_equal(b.labels[r], (int)(3 * ex % 10));
        for (int j = 0; j < E; j++)
          assert_true(b.images[r * E + (size_t)j] == (float)(ex * E + (uint32_t)j) * o->scale + o->offset);
      }
    }
  }
  assert_int_equal(tpurt_loader_next(ld, &b), TPURT_DATA_END);
  tpurt_loader_stats_t st;
  tpurt_loader_stats(ld, &st);
  assert_int_equal(st.batches, per * (size_t)o->epochs);
  tpurt_loader_destroy(ld);
}

static void idx_plain_unshuffled_hand_values(void **state) {
  (void)state;
  tpurt_dataset_t *ds = open2("img", "lab");
  assert_int_equal(tpurt_dataset_count(ds), N);
  int64_t d[4];
  assert_int_equal(tpurt_dataset_example_dims(ds, d, 4), 2);
  assert_int_equal(d[0], R);
  assert_int_equal(d[1], C);
  tpurt_loader_options_t o;
  tpurt_loader_options_init(&o);
  o.batch = 4, o.shuffle = 0;
  tpurt_loader_t *ld;
  assert_int_equal(tpurt_loader_create(ds, &o, &ld), TPURT_DATA_OK);
  tpurt_batch_t b;
  assert_int_equal(tpurt_loader_next(ld, &b), TPURT_DATA_OK);
  assert_int_equal(tpurt_loader_next(ld, &b), TPURT_DATA_OK);
  /* second batch: examples 4..7; example 5 element 2 is byte 32, label 5 */
  assert_int_equal(b.count, 4);
  assert_true(b.images[1 * E + 2] == 32.0f * (1.0f / 255.0f));
  assert_int_equal(b.labels[1], 5);
  assert_int_equal(tpurt_loader_next(ld, &b), TPURT_DATA_OK);
  assert_int_equal(b.count, 2); /* remainder kept */
  assert_int_equal(b.labels[1], 7);
  assert_int_equal(tpurt_loader_next(ld, &b), TPURT_DATA_END);
  tpurt_loader_destroy(ld);
  tpurt_dataset_destroy(ds);
}

static void idx_shuffled_batches_exact(void **state) {
  (void)state;
  const char *files[2][2] = {{"img", "lab"}, {"img.gz", "lab.gz"}};
  for (int f = 0; f < 2; f++) {
    tpurt_dataset_t *ds = open2(files[f][0], files[f][1]);
    tpurt_loader_options_t o;
    tpurt_loader_options_init(&o);
    for (int drop = 0; drop < 2; drop++)
      for (int pf = 0; pf < 3; pf += 2) {
        o.batch = 4, o.seed = 12345, o.epochs = 3, o.drop_remainder = drop, o.prefetch = pf;
        o.scale = 0.5f, o.offset = -1.0f;
        check_stream(ds, &o);
      }
    tpurt_dataset_destroy(ds);
  }
}

static void shuffle_reproducible_and_keyed(void **state) {
  (void)state;
  tpurt_dataset_t *ds = open2("img", "lab");
  tpurt_loader_options_t o;
  tpurt_loader_options_init(&o);
  o.seed = 99;
  tpurt_loader_t *a, *b;
  assert_int_equal(tpurt_loader_create(ds, &o, &a), TPURT_DATA_OK);
  o.prefetch = 3;
  assert_int_equal(tpurt_loader_create(ds, &o, &b), TPURT_DATA_OK);
  uint32_t p0[N], p1[N], p2[N], seen[N] = {0};
  tpurt_loader_order(a, 0, p0);
  tpurt_loader_order(b, 0, p1);
  assert_memory_equal(p0, p1, sizeof p0);
  for (int i = 0; i < N; i++)
    seen[p0[i]]++;
  for (int i = 0; i < N; i++)
    assert_int_equal(seen[i], 1);
  tpurt_loader_order(a, 1, p2);
  assert_memory_not_equal(p0, p2, sizeof p0);
  tpurt_loader_destroy(b);
  o.seed = 100;
  assert_int_equal(tpurt_loader_create(ds, &o, &b), TPURT_DATA_OK);
  tpurt_loader_order(b, 0, p1);
  assert_memory_not_equal(p0, p1, sizeof p0);
  tpurt_loader_destroy(a);
  tpurt_loader_destroy(b);
  tpurt_dataset_destroy(ds);
}

static void replica_split(void **state) {
  (void)state;
  tpurt_dataset_t *ds = open2("img", "lab");
  tpurt_loader_options_t o;
  tpurt_loader_options_init(&o);
  o.batch = 4, o.shuffle = 0;
  tpurt_loader_t *ld;
  assert_int_equal(tpurt_loader_create(ds, &o, &ld), TPURT_DATA_OK);
  tpurt_batch_t b, r;
  assert_int_equal(tpurt_loader_next(ld, &b), TPURT_DATA_OK);
  assert_int_equal(tpurt_batch_replica(&b, 1, 2, &r), TPURT_DATA_OK);
  assert_int_equal(r.count, 2);
  assert_int_equal(r.labels[0], 6); /* example 2 */
  assert_true(r.images[0] == 12.0f * (1.0f / 255.0f));
  assert_int_equal(tpurt_batch_replica(&b, 3, 4, &r), TPURT_DATA_OK);
  assert_int_equal(r.labels[0], 9);
  assert_int_equal(tpurt_batch_replica(&b, 0, 3, &r), TPURT_DATA_INVALID_ARGUMENT);
  assert_int_equal(tpurt_batch_replica(&b, 2, 2, &r), TPURT_DATA_INVALID_ARGUMENT);
  assert_int_equal(tpurt_loader_next(ld, &b), TPURT_DATA_OK);
  assert_int_equal(tpurt_loader_next(ld, &b), TPURT_DATA_OK);
  assert_int_equal(b.count, 2);
  assert_int_equal(tpurt_batch_replica(&b, 0, 4, &r), TPURT_DATA_INVALID_ARGUMENT);
  tpurt_loader_destroy(ld);
  o.batch = 11, o.drop_remainder = 1; /* no full batch */
  assert_int_equal(tpurt_loader_create(ds, &o, &ld), TPURT_DATA_INVALID_ARGUMENT);
  assert_null(ld);
  tpurt_dataset_destroy(ds);
}

/* .npy float32 images with int64 labels; .npz with both, stored and deflated. */
static size_t npy(uint8_t *out, const char *descr, const char *shape, const void *data, size_t n) {
  char h[128];
  int k = snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
  size_t hl = (size_t)k + 1;
  while ((10 + hl) % 64)
    hl++;
  memcpy(out, "\x93NUMPY\x01\x00", 8);
  out[8] = (uint8_t)hl, out[9] = (uint8_t)(hl >> 8);
  memset(out + 10, ' ', hl);
  memcpy(out + 10, h, (size_t)k);
  out[10 + hl - 1] = '\n';
  memcpy(out + 10 + hl, data, n);
  return 10 + hl + n;
}

static void le(uint8_t *p, uint32_t v, int n) {
  for (int i = 0; i < n; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* A zip of entries (name, data), stored (deflate 0) or deflated. */
static size_t zip(uint8_t *out, const char **names, const uint8_t **data, const size_t *n, int cnt,
                  int deflated) {
  size_t at = 0;
  for (int i = 0; i < cnt; i++) {
    uint8_t *h = out + at;
    size_t nl = strlen(names[i]);
    size_t cs = n[i];
    uint8_t *d = h + 30 + nl;
    if (deflated) {
      z_stream z;
      memset(&z, 0, sizeof z);
      assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
      z.next_in = (Bytef *)(uintptr_t)data[i], z.avail_in = (uInt)n[i];
      z.next_out = d, z.avail_out = 4096;
      assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
      cs = 4096 - z.avail_out;
      deflateEnd(&z);
    } else {
      memcpy(d, data[i], n[i]);
    }
    memset(h, 0, 30);
    le(h, 0x04034b50, 4), le(h + 4, 20, 2), le(h + 8, deflated ? 8 : 0, 2);
    le(h + 14, (uint32_t)crc32(0, data[i], (uInt)n[i]), 4);
    le(h + 18, (uint32_t)cs, 4), le(h + 22, (uint32_t)n[i], 4), le(h + 26, (uint32_t)nl, 2);
    memcpy(h + 30, names[i], nl);
    at += 30 + nl + cs;
  }
  memcpy(out + at, "PK\5\6", 4); /* end record, unread */
  memset(out + at + 4, 0, 18);
  return at + 22;
}

static uint8_t npz_bytes[2][8192];
static size_t npz_n[2];

static void make_npy_npz(void) {
  float xf[N * E];
  int64_t yl[N];
  for (int i = 0; i < N * E; i++)
    xf[i] = (float)i;
  for (int i = 0; i < N; i++)
    yl[i] = 3 * i % 10;
  static uint8_t a[4096], b[4096];
  size_t na = npy(a, "<f4", "(10, 2, 3)", xf, sizeof xf);
  size_t nb = npy(b, "<i8", "(10,)", yl, sizeof yl);
  put("x.npy", a, na);
  put("y.npy", b, nb);
  const char *names[2] = {"x_train.npy", "y_train.npy"};
  const uint8_t *data[2] = {a, b};
  size_t n[2] = {na, nb};
  for (int d = 0; d < 2; d++) {
    npz_n[d] = zip(npz_bytes[d], names, data, n, 2, d);
    put(d ? "deflated.npz" : "stored.npz", npz_bytes[d], npz_n[d]);
  }
}

static void npy_and_npz_match_idx(void **state) {
  (void)state;
  make_npy_npz();
  const char *files[3][2] = {{"x.npy", "y.npy"}, {"stored.npz", NULL}, {"deflated.npz", NULL}};
  for (int f = 0; f < 3; f++) {
    tpurt_dataset_t *ds = open2(files[f][0], files[f][1]);
    tpurt_loader_options_t o;
    tpurt_loader_options_init(&o);
    o.batch = 3, o.seed = 5, o.epochs = 2, o.prefetch = 1;
    check_stream(ds, &o);
    tpurt_dataset_destroy(ds);
  }
}

/* Opening gives status s and a message containing file and what. */
static void expect_error(const char *images, const char *labels, tpurt_data_status_t s,
                         const char *what, uint64_t max_bytes) {
  tpurt_data_options_t o;
  tpurt_data_options_init(&o);
  o.images = path(images);
  o.labels = labels ? path(labels) : NULL;
  if (max_bytes)
    o.max_bytes = max_bytes;
  tpurt_dataset_t *ds;
  tpurt_data_status_t got = tpurt_dataset_open(&o, &ds);
  const char *m = tpurt_dataset_message(ds);
  if (got != s || !strstr(m, what) || !strstr(m, dir))
    fail_msg("%s: status %d, message '%s'; want %d and '%s'", images, got, m, s, what);
  tpurt_dataset_destroy(ds);
}

static void malformed_inputs(void **state) {
  (void)state;
  uint8_t b[sizeof img + 64];
  expect_error("missing", "lab", TPURT_DATA_IO, "cannot open", 0);
  memcpy(b, img, nimg);
  b[2] = 9; /* element type 0x09 */
  put("bad_magic", b, nimg);
  expect_error("bad_magic", "lab", TPURT_DATA_FORMAT, "not an IDX file", 0);
  put("trunc", img, nimg - 1);
  expect_error("trunc", "lab", TPURT_DATA_FORMAT, "truncated", 0);
  memcpy(b, img, nimg);
  put("trailing", b, nimg + 1);
  expect_error("trailing", "lab", TPURT_DATA_FORMAT, "trailing bytes", 0);
  memcpy(b, img, nimg);
  be(b + 4, 0xffffffffu), be(b + 8, 0xffffffffu), be(b + 12, 0xffffffffu);
  put("overflow", b, nimg);
  expect_error("overflow", "lab", TPURT_DATA_FORMAT, "overflows", 0);
  memcpy(b, lab, nlab);
  be(b + 4, N - 1);
  put("short_lab", b, nlab - 1);
  expect_error("img", "short_lab", TPURT_DATA_FORMAT, "9 labels for 10 images", 0);
  memcpy(b, lab, nlab);
  b[8 + 4] = 10;
  put("big_lab", b, nlab);
  expect_error("img", "big_lab", TPURT_DATA_FORMAT, "label 10 of example 4 is outside [0, 10)", 0);
  /* 4 MiB of zeros gzip to a few KiB: refused past max_bytes. */
  size_t bomb = 4u << 20;
  uint8_t *z = calloc(bomb, 1);
  assert_non_null(z);
  be(z, 0x801), be(z + 4, (uint32_t)(bomb - 8));
  put_gz("bomb.gz", z, bomb);
  free(z);
  expect_error("img", "bomb.gz", TPURT_DATA_FORMAT, "past the limit of 1048576 bytes", 1u << 20);
  make_npy_npz();
  uint8_t *y = memmem(npz_bytes[0], npz_n[0], "y_train.npy", 11);
  assert_non_null(y);
  *y = 'z';
  put("no_labels.npz", npz_bytes[0], npz_n[0]);
  *y = 'y';
  expect_error("no_labels.npz", NULL, TPURT_DATA_FORMAT, "no entry y_train.npy", 0);
  /* A deflated entry whose stated size is one byte short, or one byte long. */
  uint8_t *u = npz_bytes[1] + 22;
  uint32_t usize = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
  le(u, usize - 1, 4);
  put("short.npz", npz_bytes[1], npz_n[1]);
  expect_error("short.npz", NULL, TPURT_DATA_FORMAT, "gives 368 bytes, not the stated 367", 0);
  le(u, usize + 1, 4);
  put("long.npz", npz_bytes[1], npz_n[1]);
  expect_error("long.npz", NULL, TPURT_DATA_FORMAT, "gives 368 bytes, not the stated 369", 0);
  le(u, usize - 10, 4);
  put("shorter.npz", npz_bytes[1], npz_n[1]);
  expect_error("shorter.npz", NULL, TPURT_DATA_FORMAT, "inflates past its stated size of 358 bytes", 0);
  le(u, usize, 4);
}

/* Every truncation and every single-byte flip of a file either opens (and
 * then reads its batches) or fails with a message naming the file. */
static void fuzz_one(const char *name, const uint8_t *p, size_t n, int gz, const char *other,
                     int images_side) {
  uint8_t *b = malloc(n);
  assert_non_null(b);
  for (size_t cut = 0; cut <= 2 * n; cut++) {
    size_t len = cut <= n ? cut : n;
    memcpy(b, p, n);
    if (cut > n)
      b[cut - n - 1] ^= (uint8_t)(0x5a + cut);
    if (gz)
      put_gz(name, b, len);
    else
      put(name, b, len);
    tpurt_data_options_t o;
    tpurt_data_options_init(&o);
    o.images = path(images_side ? name : other);
    o.labels = other ? path(images_side ? other : name) : NULL;
    o.max_bytes = 1u << 20;
    tpurt_dataset_t *ds;
    if (tpurt_dataset_open(&o, &ds) == TPURT_DATA_OK) {
      tpurt_loader_options_t lo;
      tpurt_loader_options_init(&lo);
      lo.batch = 3;
      tpurt_loader_t *ld;
      if (tpurt_loader_create(ds, &lo, &ld) == TPURT_DATA_OK) {
        tpurt_batch_t bt;
        while (tpurt_loader_next(ld, &bt) == TPURT_DATA_OK)
          assert_true(bt.count > 0);
        tpurt_loader_destroy(ld);
      }
    } else if (!strstr(tpurt_dataset_message(ds), dir)) {
      fail_msg("cut/flip %zu of %s: message '%s' names no file", cut, name, tpurt_dataset_message(ds));
    }
    tpurt_dataset_destroy(ds);
  }
  free(b);
}

static void fuzz_truncations_and_flips(void **state) {
  (void)state;
  make_npy_npz();
  fuzz_one("fz_img", img, nimg, 0, "lab", 1);
  fuzz_one("fz_lab", lab, nlab, 0, "img", 0);
  fuzz_one("fz_img.gz", img, nimg, 1, "lab", 1);
  fuzz_one("fz_a.npz", npz_bytes[0], npz_n[0], 0, NULL, 1);
  fuzz_one("fz_b.npz", npz_bytes[1], npz_n[1], 0, NULL, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(idx_plain_unshuffled_hand_values),
      cmocka_unit_test(idx_shuffled_batches_exact),
      cmocka_unit_test(shuffle_reproducible_and_keyed),
      cmocka_unit_test(replica_split),
      cmocka_unit_test(npy_and_npz_match_idx),
      cmocka_unit_test(malformed_inputs),
      cmocka_unit_test(fuzz_truncations_and_flips),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
