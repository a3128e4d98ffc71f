/* data_dump IMAGES [LABELS]: opens a data set with libtpurt-data and prints
 * its count, example dims, then each example's label and raw values, one
 * example a line; on failure the message and exit 1 (test_data_numpy.sh). */
#include <stdio.h>

#include "tpurt_data.h"

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  tpurt_data_options_t o;
  tpurt_data_options_init(&o);
  o.images = argv[1];
  o.labels = argc > 2 ? argv[2] : NULL;
  tpurt_dataset_t *ds;
  if (tpurt_dataset_open(&o, &ds) != TPURT_DATA_OK) {
    printf("error: %s\n", tpurt_dataset_message(ds));
    tpurt_dataset_destroy(ds);
    return 1;
  }
  int64_t d[8];
  int rank = tpurt_dataset_example_dims(ds, d, 8);
  printf("%zu", tpurt_dataset_count(ds));
  for (int i = 0; i < rank; i++)
    printf(" %lld", (long long)d[i]);
  printf("\n");
  for (size_t i = 0; i < tpurt_dataset_count(ds); i++) {
    printf("%d:", (int)tpurt_dataset_label(ds, i));
    for (size_t j = 0; j < tpurt_dataset_example_elems(ds); j++)
      printf(" %g", tpurt_dataset_value(ds, i, j));
    printf("\n");
  }
  tpurt_dataset_destroy(ds);
  return 0;
}
