/* data_pipeline: libtpurt-data throughput on Debian's Fashion-MNIST: load
 * time, then images/s of shuffled batches of 128 normalised to float32
 * (x / 255), with no prefetch and with a prefetch thread (the consumer only
 * sums each batch, so the figure is the pipeline's own rate).
 *   build/bench/data_pipeline [EPOCHS] [DIR] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tpurt_data.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  int epochs = argc > 1 ? atoi(argv[1]) : 3;
  const char *dir = argc > 2 ? argv[2] : "/usr/share/datasets/fashion-mnist";
  char img[512], lab[512];
  snprintf(img, sizeof img, "%s/train-images-idx3-ubyte.gz", dir);
  snprintf(lab, sizeof lab, "%s/train-labels-idx1-ubyte.gz", dir);
  tpurt_data_options_t o;
  tpurt_data_options_init(&o);
  o.images = img, o.labels = lab;
  tpurt_dataset_t *ds;
  double t0 = now();
  if (tpurt_dataset_open(&o, &ds) != TPURT_DATA_OK) {
    fprintf(stderr, "data_pipeline: %s\n", tpurt_dataset_message(ds));
    tpurt_dataset_destroy(ds);
    return 1;
  }
  printf("load (gunzip + checks) of %zu images: %.3f s\n", tpurt_dataset_count(ds), now() - t0);
  int pf[2] = {0, 4};
  for (int k = 0; k < 2; k++) {
    tpurt_loader_options_t l;
    tpurt_loader_options_init(&l);
    l.batch = 128, l.seed = 1, l.epochs = epochs, l.prefetch = pf[k];
    tpurt_loader_t *ld;
    if (tpurt_loader_create(ds, &l, &ld) != TPURT_DATA_OK)
      return 1;
    tpurt_batch_t b;
    double sum = 0, t = now();
    size_t images = 0;
    while (tpurt_loader_next(ld, &b) == TPURT_DATA_OK) {
      for (size_t i = 0; i < b.count * b.elems; i += 97)
        sum += b.images[i];
      images += b.count;
    }
    t = now() - t;
    tpurt_loader_stats_t st;
    tpurt_loader_stats(ld, &st);
    printf("prefetch %d: %zu images in %.3f s = %.0f images/s (consumer waited %.3f s in %llu "
           "stalls; checksum %.1f)\n",
           pf[k], images, t, (double)images / t, 1e-9 * (double)st.wait_ns,
           (unsigned long long)st.stalls, sum);
    tpurt_loader_destroy(ld);
  }
  tpurt_dataset_destroy(ds);
  return 0;
}
