/* target.c: target presets, the "preset,key=value" parser and formatter. */
#include "target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void seterr(char *err, size_t errlen, const char *fmt, const char *a) {
  if (err && errlen) snprintf(err, errlen, fmt, a);
}

/* The nearest 2-D shape of n chips: rows the largest divisor <= sqrt(n). */
static void torus_shape(int n, int *x, int *y) {
  int r = 1;
  for (int d = 1; (long)d * d <= n; d++)
    if (n % d == 0) r = d;
  *y = r;
  *x = n / r;
}

/* "v2-N" / "v3-N": N cores, 8 or a power of two from 32 to max. Returns N
 * or 0. */
static int board_cores(const char *suffix, int max) {
  char *end;
  long n = strtol(suffix, &end, 10);
  if (*end || end == suffix || suffix[0] == '0' || suffix[0] == '+' || suffix[0] == '-') return 0;
  if (n == 8) return 8;
  if (n < 32 || n > max || (n & (n - 1))) return 0;
  return (int)n;
}

int tgt_preset(const char *name, tgt_target *t) {
  memset(t, 0, sizeof *t);
  t->chips = 1;
  t->cores_per_chip = 2;
  t->mxu_rows = 128;
  t->mxu_cols = 128;
  t->acc_rows = 2048;
  t->vmem_bytes = 16u << 20;
  t->smem_bytes = 16u << 10;
  t->dma_queues = 2;
  t->queue_depth = 32;
  t->dma_latency = 64;
  int cores = 0;
  if (!strcmp(name, "v2") || (!strncmp(name, "v2-", 3) && (cores = board_cores(name + 3, 512)))) {
    memcpy(t->preset, "v2", 3);
    t->mxus = 1;
    t->clock_hz = 700000000u;
    t->hbm_bytes = (uint64_t)8 << 30;
    t->hbm_bw = 350000000000u;
    t->ici_bw = 62000000000u;
    t->ici_latency = 700; /* 1 us: a derived assumption */
  } else if (!strcmp(name, "v3") ||
             (!strncmp(name, "v3-", 3) && (cores = board_cores(name + 3, 2048)))) {
    memcpy(t->preset, "v3", 3);
    t->mxus = 2;
    t->clock_hz = 940000000u;
    t->hbm_bytes = (uint64_t)16 << 30;
    t->hbm_bw = 450000000000u;
    t->ici_bw = 82000000000u;
    t->ici_latency = 940; /* 1 us: a derived assumption */
  } else {
    return -1;
  }
  if (cores) t->chips = cores / 2;
  t->ncores = cores ? cores : 1;
  torus_shape(t->chips, &t->topo_x, &t->topo_y);
  return 0;
}

/* Parses an unsigned number with an optional unit suffix from units[]
 * (matched case-insensitively). Returns 0 or -1. */
typedef struct unit_sfx {
  const char *s;
  uint64_t mul;
} unit_sfx;

static int parse_scaled(const char *v, size_t len, const unit_sfx *units, uint64_t *out) {
  size_t i = 0;
  uint64_t x = 0;
  if (len == 0 || v[0] < '0' || v[0] > '9') return -1;
  while (i < len && v[i] >= '0' && v[i] <= '9') {
    if (x > (UINT64_MAX - 9) / 10) return -1;
    x = x * 10 + (uint64_t)(v[i] - '0');
    i++;
  }
  if (i == len) {
    *out = x;
    return 0;
  }
  for (const unit_sfx *u = units; u && u->s; u++) {
    size_t n = strlen(u->s);
    if (n == len - i && !strncasecmp(v + i, u->s, n)) {
      if (u->mul && x > UINT64_MAX / u->mul) return -1;
      *out = x * u->mul;
      return 0;
    }
  }
  return -1;
}

static const unit_sfx size_units[] = {{"B", 1},
                                      {"KiB", 1ull << 10},
                                      {"MiB", 1ull << 20},
                                      {"GiB", 1ull << 30},
                                      {"TiB", 1ull << 40},
                                      {"KB", 1000ull},
                                      {"MB", 1000000ull},
                                      {"GB", 1000000000ull},
                                      {"TB", 1000000000000ull},
                                      {NULL, 0}};
static const unit_sfx bw_units[] = {{"B/s", 1},
                                    {"KB/s", 1000ull},
                                    {"MB/s", 1000000ull},
                                    {"GB/s", 1000000000ull},
                                    {"TB/s", 1000000000000ull},
                                    {NULL, 0}};
static const unit_sfx hz_units[] = {
    {"Hz", 1}, {"KHz", 1000ull}, {"MHz", 1000000ull}, {"GHz", 1000000000ull}, {NULL, 0}};

static int to_int(uint64_t v, int *out) {
  if (v > 0x7fffffff) return -1;
  *out = (int)v;
  return 0;
}

int tgt_parse(const char *spec, tgt_target *t, char *err, size_t errlen) {
  char name[16];
  const char *p = spec ? spec : "";
  size_t n = strcspn(p, ",");
  if (n == 0 || n >= sizeof name) {
    seterr(err, errlen, "target '%s': expected a preset name (v2, v3, v2-8, v3-8, v2-32, ...)", p);
    return -1;
  }
  memcpy(name, p, n);
  name[n] = 0;
  if (tgt_preset(name, t)) {
    seterr(err, errlen,
           "unknown target preset '%s' (known: v2, v3, v2-8, v3-8, pods v2-32..v2-512 and "
           "v3-32..v3-2048 in powers of two)",
           name);
    return -1;
  }
  /* A board or pod runs all its cores unless ncores says otherwise; the
   * torus follows chips unless topology says otherwise. */
  int all_cores = t->ncores > 1, set_ncores = 0, set_topo = 0;
  p += n;
  while (*p == ',') {
    p++;
    size_t len = strcspn(p, ",");
    const char *eq = memchr(p, '=', len);
    char item[96];
    snprintf(item, sizeof item, "%.*s", (int)(len < 90 ? len : 90), p);
    if (!eq) {
      seterr(err, errlen, "target override '%s': expected key=value", item);
      return -1;
    }
    size_t klen = (size_t)(eq - p);
    const char *v = eq + 1;
    size_t vlen = len - klen - 1;
    uint64_t x = 0;
    int bad = 0;
#define KEY(s) (klen == strlen(s) && !strncmp(p, s, klen))
    if (KEY("mxu")) {
      const char *xs = memchr(v, 'x', vlen);
      uint64_t r, c;
      if (!xs || parse_scaled(v, (size_t)(xs - v), NULL, &r) ||
          parse_scaled(xs + 1, vlen - (size_t)(xs - v) - 1, NULL, &c) || to_int(r, &t->mxu_rows) ||
          to_int(c, &t->mxu_cols))
        bad = 1;
    } else if (KEY("mxus")) {
      bad = parse_scaled(v, vlen, NULL, &x) || to_int(x, &t->mxus);
    } else if (KEY("acc_rows")) {
      bad = parse_scaled(v, vlen, NULL, &x) || to_int(x, &t->acc_rows);
    } else if (KEY("vmem")) {
      bad = parse_scaled(v, vlen, size_units, &t->vmem_bytes);
    } else if (KEY("smem")) {
      bad = parse_scaled(v, vlen, size_units, &t->smem_bytes);
    } else if (KEY("hbm")) {
      bad = parse_scaled(v, vlen, size_units, &t->hbm_bytes);
    } else if (KEY("hbm_bw")) {
      bad = parse_scaled(v, vlen, bw_units, &t->hbm_bw);
    } else if (KEY("clock")) {
      bad = parse_scaled(v, vlen, hz_units, &t->clock_hz);
    } else if (KEY("dma_queues")) {
      bad = parse_scaled(v, vlen, NULL, &x) || to_int(x, &t->dma_queues);
    } else if (KEY("queue_depth")) {
      bad = parse_scaled(v, vlen, NULL, &x) || to_int(x, &t->queue_depth);
    } else if (KEY("dma_latency")) {
      bad = parse_scaled(v, vlen, NULL, &x) || to_int(x, &t->dma_latency);
    } else if (KEY("chips")) {
      bad = parse_scaled(v, vlen, NULL, &x) || to_int(x, &t->chips);
    } else if (KEY("cores")) {
      bad = parse_scaled(v, vlen, NULL, &x) || to_int(x, &t->cores_per_chip);
    } else if (KEY("ncores")) {
      bad = parse_scaled(v, vlen, NULL, &x) || to_int(x, &t->ncores);
      set_ncores = 1;
    } else if (KEY("topology")) {
      const char *xs = memchr(v, 'x', vlen);
      uint64_t a, b;
      bad = !xs || parse_scaled(v, (size_t)(xs - v), NULL, &a) ||
            parse_scaled(xs + 1, vlen - (size_t)(xs - v) - 1, NULL, &b) || to_int(a, &t->topo_x) ||
            to_int(b, &t->topo_y);
      set_topo = 1;
    } else if (KEY("ici_bw")) {
      bad = parse_scaled(v, vlen, bw_units, &t->ici_bw);
    } else if (KEY("ici_latency")) {
      bad = parse_scaled(v, vlen, NULL, &x) || to_int(x, &t->ici_latency);
    } else {
      seterr(err, errlen,
             "unknown target override '%s' (keys: mxu, mxus, acc_rows, vmem, "
             "smem, hbm, hbm_bw, clock, dma_queues, queue_depth, dma_latency, "
             "chips, cores, ncores, topology, ici_bw, ici_latency)",
             item);
      return -1;
    }
#undef KEY
    if (bad) {
      seterr(err, errlen, "target override '%s': malformed value", item);
      return -1;
    }
    p += len;
  }
  if (!set_ncores && all_cores && t->chips >= 1 && t->cores_per_chip >= 1 && t->chips <= 4096 &&
      t->cores_per_chip <= 4096)
    t->ncores = t->chips * t->cores_per_chip;
  if (!set_topo && t->chips >= 1 && t->chips <= 4096) torus_shape(t->chips, &t->topo_x, &t->topo_y);
  return tgt_validate(t, err, errlen);
}

#define CHECK(c, msg)                                                                              \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      seterr(err, errlen, "%s", msg);                                                              \
      return -1;                                                                                   \
    }                                                                                              \
  } while (0)

int tgt_validate(const tgt_target *t, char *err, size_t errlen) {
  CHECK(t->mxus >= 1 && t->mxus <= TGT_MAX_MXUS, "target: mxus must be 1..4");
  CHECK(t->mxu_rows >= 4 && t->mxu_rows <= 256 && t->mxu_rows % 4 == 0 && t->mxu_cols >= 4 &&
            t->mxu_cols <= 256 && t->mxu_cols % 4 == 0,
        "target: MXU sides must be multiples of 4 in 4..256");
  CHECK(t->acc_rows >= 8 && t->acc_rows <= 65536 && t->acc_rows % 8 == 0,
        "target: acc_rows must be a multiple of 8 in 8..65536");
  CHECK(t->vmem_bytes >= (64u << 10) && t->vmem_bytes <= (1u << 30) && t->vmem_bytes % 4 == 0,
        "target: vmem must be 64KiB..1GiB, a multiple of 4");
  CHECK(t->smem_bytes >= 1024 && t->smem_bytes <= (1u << 20) && t->smem_bytes % 4 == 0,
        "target: smem must be 1KiB..1MiB, a multiple of 4");
  CHECK(t->hbm_bytes >= (1u << 20) && t->hbm_bytes <= (1ull << 40),
        "target: hbm must be 1MiB..1TiB");
  CHECK(t->hbm_bw >= 1000000u && t->hbm_bw <= 100000000000000ull,
        "target: hbm_bw must be 1MB/s..100TB/s");
  CHECK(t->clock_hz >= 1000000u && t->clock_hz <= 100000000000ull,
        "target: clock must be 1MHz..100GHz");
  CHECK(t->dma_queues >= 1 && t->dma_queues <= TGT_MAX_DMA_QUEUES,
        "target: dma_queues must be 1..8");
  CHECK(t->queue_depth >= 1 && t->queue_depth <= 1024, "target: queue_depth must be 1..1024");
  CHECK(t->dma_latency >= 0 && t->dma_latency <= 100000, "target: dma_latency must be 0..100000");
  CHECK(t->chips >= 1 && t->chips <= 4096 && t->cores_per_chip >= 1 && t->cores_per_chip <= 4096,
        "target: chips and cores must be 1..4096");
  CHECK(t->ncores >= 1 && (int64_t)t->ncores <= (int64_t)t->chips * t->cores_per_chip,
        "target: ncores must be 1..chips x cores");
  CHECK(t->topo_x >= 1 && t->topo_y >= 1 && (int64_t)t->topo_x * t->topo_y == t->chips,
        "target: topology AxB must have A x B = chips");
  CHECK(t->ici_bw >= 1000000u && t->ici_bw <= 100000000000000ull,
        "target: ici_bw must be 1MB/s..100TB/s");
  CHECK(t->ici_latency >= 1 && t->ici_latency <= 10000000,
        "target: ici_latency must be 1..10000000 cycles");
  return 0;
}

int tgt_format(const tgt_target *t, char *buf, size_t n) {
  return snprintf(buf, n,
                  "%s,chips=%d,cores=%d,mxus=%d,mxu=%dx%d,acc_rows=%d,"
                  "vmem=%lluB,smem=%lluB,hbm=%lluB,hbm_bw=%lluB/s,clock=%lluHz,"
                  "dma_queues=%d,queue_depth=%d,dma_latency=%d,ncores=%d,topology=%dx%d,"
                  "ici_bw=%lluB/s,ici_latency=%d",
                  t->preset, t->chips, t->cores_per_chip, t->mxus, t->mxu_rows, t->mxu_cols,
                  t->acc_rows, (unsigned long long)t->vmem_bytes, (unsigned long long)t->smem_bytes,
                  (unsigned long long)t->hbm_bytes, (unsigned long long)t->hbm_bw,
                  (unsigned long long)t->clock_hz, t->dma_queues, t->queue_depth, t->dma_latency,
                  t->ncores, t->topo_x, t->topo_y, (unsigned long long)t->ici_bw, t->ici_latency);
}

int tgt_cores(const tgt_target *t) { return t->chips * t->cores_per_chip; }

uint64_t tgt_hbm_bytes_per_cycle_q10(const tgt_target *t) {
  /* hbm_bw <= 1e14 so hbm_bw * 1024 fits in 64 bits. */
  uint64_t q = (t->hbm_bw * 1024u + t->clock_hz / 2) / t->clock_hz;
  return q ? q : 1;
}

uint64_t tgt_hbm_cycles(const tgt_target *t, uint64_t bytes) {
  uint64_t q = tgt_hbm_bytes_per_cycle_q10(t);
  /* bytes < 2^40 in any verified program, so bytes * 1024 fits. */
  return (bytes * 1024u + q - 1) / q;
}

uint64_t tgt_ici_bytes_per_cycle_q10(const tgt_target *t) {
  uint64_t q = (t->ici_bw * 1024u + t->clock_hz / 2) / t->clock_hz;
  return q ? q : 1;
}

uint64_t tgt_ici_cycles(const tgt_target *t, uint64_t bytes) {
  uint64_t q = tgt_ici_bytes_per_cycle_q10(t);
  uint64_t c = (bytes * 1024u + q - 1) / q;
  return c ? c : 1;
}

uint64_t tgt_peak_macs_per_cycle(const tgt_target *t) {
  return (uint64_t)t->mxus * (uint64_t)t->mxu_rows * (uint64_t)t->mxu_cols;
}
