/* strmap.c: string -> int32 hash map with open addressing (FNV-1a). */
#include "base.h"

typedef struct slot {
  const char *key;
  uint32_t len;
  int32_t value;
} slot;

struct strmap {
  arena *a;
  slot *slots;
  int cap, count;
};

static uint64_t hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

strmap *strmap_create(arena *a) { return strmap_create_sized(a, 0); }

strmap *strmap_create_sized(arena *a, int n) {
  strmap *m = arena_alloc(a, sizeof *m);
  m->a = a;
  m->cap = 16;
  while (m->cap < INT32_MAX / 2 && (int64_t)n * 4 >= (int64_t)m->cap * 3) m->cap *= 2;
  m->slots = arena_array(a, (size_t)m->cap, sizeof(slot));
  return m;
}

static slot *find(const strmap *m, const char *key, size_t len) {
  size_t mask = (size_t)m->cap - 1, i = hash(key, len) & mask;
  for (;;) {
    slot *s = &m->slots[i];
    if (!s->key || (s->len == len && memcmp(s->key, key, len) == 0)) return s;
    i = (i + 1) & mask;
  }
}

int32_t strmap_get(const strmap *m, const char *key, size_t len) {
  slot *s = find(m, key, len);
  return s->key ? s->value : -1;
}

void strmap_put(strmap *m, const char *key, size_t len, int32_t value) {
  if ((m->count + 1) * 4 > m->cap * 3) {
    slot *old = m->slots;
    int oc = m->cap;
    m->cap *= 2;
    m->slots = arena_array(m->a, (size_t)m->cap, sizeof(slot));
    for (int i = 0; i < oc; i++)
      if (old[i].key) *find(m, old[i].key, old[i].len) = old[i];
  }
  if (len > UINT32_MAX) base_die("strmap: a key of %zu bytes", len);
  slot *s = find(m, key, len);
  if (!s->key) {
    s->key = arena_strndup(m->a, key, len);
    s->len = (uint32_t)len;
    m->count++;
  }
  s->value = value;
}

int strmap_count(const strmap *m) { return m->count; }
