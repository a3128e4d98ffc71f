/* test_tg_threads.c: the .tg frontend keeps no global state (reentrant
 * flex scanner, pure bison parser): threads compiling the samples at the
 * same time produce exactly the HLO text of a single-threaded run. */
#include <pthread.h>
#include <string.h>

#include "tests/tg/tg_util.h"

enum { THREADS = 4, ROUNDS = 10, MAXF = 8 };

static int nfiles;
static char *texts[MAXF], *want[MAXF];
static size_t lens[MAXF];

static char *compile(int f) {
  diag *d = diag_create();
  ir_module *m = fe_parse_tg("sample.tg", texts[f], lens[f], NULL, d);
  strbuf b;
  sb_init(&b);
  if (m) ir_print_module(&b, m);
  else sb_puts(&b, diag_text(d));
  char *r = strdup(sb_str(&b));
  sb_free(&b);
  ir_module_destroy(m);
  diag_destroy(d);
  return r;
}

static void *worker(void *arg) {
  intptr_t bad = 0;
  for (int r = 0; r < ROUNDS; r++)
    for (int f = 0; f < nfiles; f++) {
      int k = (f + (int)(intptr_t)arg) % nfiles;
      char *got = compile(k);
      if (strcmp(got, want[k]) != 0) bad = 1;
      free(got);
    }
  return (void *)bad;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc && nfiles < MAXF; i++, nfiles++) {
    texts[nfiles] = tgu_read_file(argv[i], &lens[nfiles]);
    if (!texts[nfiles]) return 2;
    want[nfiles] = compile(nfiles);
  }
  pthread_t th[THREADS];
  for (intptr_t t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, worker, (void *)t);
  int bad = 0;
  for (int t = 0; t < THREADS; t++) {
    void *r;
    pthread_join(th[t], &r);
    bad |= r != NULL;
  }
  for (int f = 0; f < nfiles; f++) {
    free(texts[f]);
    free(want[f]);
  }
  printf("%s\n", bad ? "threads disagree with the single-threaded run" : "ok");
  return bad;
}
