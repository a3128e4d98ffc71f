/* test_data_fashion.c: libtpurt-data opens Debian's dataset-fashion-mnist
 * (/usr/share/datasets/fashion-mnist, gzipped IDX): 60000 training and 10000
 * test images of 28x28, labels in 0..9, first labels as published. Exit 77
 * (skip) when the package is not installed. */
#include <stdio.h>
#include <unistd.h>

#include "tpurt_data.h"

#define DIR "/usr/share/datasets/fashion-mnist/"

static int check(const char *images, const char *labels, size_t n, int first) {
  tpurt_data_options_t o;
  tpurt_data_options_init(&o);
  o.images = images, o.labels = labels;
  tpurt_dataset_t *ds;
  int bad = 0;
  if (tpurt_dataset_open(&o, &ds) != TPURT_DATA_OK) {
    fprintf(stderr, "%s\n", tpurt_dataset_message(ds));
    bad = 1;
  } else {
    int64_t d[3] = {0};
    int rank = tpurt_dataset_example_dims(ds, d, 3);
    printf("%s: %zu images of %lldx%lld, first label %d\n", images, tpurt_dataset_count(ds),
           (long long)d[0], (long long)d[1], (int)tpurt_dataset_label(ds, 0));
    bad = tpurt_dataset_count(ds) != n || rank != 2 || d[0] != 28 || d[1] != 28 ||
          tpurt_dataset_label(ds, 0) != first;
  }
  tpurt_dataset_destroy(ds);
  return bad;
}

int main(void) {
  if (access(DIR "train-images-idx3-ubyte.gz", R_OK) != 0) {
    printf("SKIP: " DIR " absent (apt-get install dataset-fashion-mnist)\n");
    return 77;
  }
  int bad = check(DIR "train-images-idx3-ubyte.gz", DIR "train-labels-idx1-ubyte.gz", 60000, 9);
  bad |= check(DIR "t10k-images-idx3-ubyte.gz", DIR "t10k-labels-idx1-ubyte.gz", 10000, 9);
  return bad;
}
