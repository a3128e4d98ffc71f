/* tpurt_data.h: libtpurt-data, the runtime's input pipeline.
 *
 * Reads a labelled image data set (IDX files, gzipped or not; .npy files;
 * one .npz archive), and turns it into a stream of float32 batches:
 * normalised (x * scale + offset), shuffled per epoch with a seeded,
 * reproducible permutation, cut into global batches (the last, short one
 * kept or dropped), split into per-replica batches, and optionally produced
 * ahead by one host thread into a ring of K batches. docs/runtime.md,
 * "Input pipeline". Link with `pkg-config --libs tpurt-data`.
 *
 *   tpurt_data_options_t o;  tpurt_data_options_init(&o);
 *   o.images = "train-images-idx3-ubyte.gz";
 *   o.labels = "train-labels-idx1-ubyte.gz";
 *   tpurt_dataset_t *ds;     if (tpurt_dataset_open(&o, &ds)) puts(tpurt_dataset_message(ds));
 *   tpurt_loader_options_t l; tpurt_loader_options_init(&l);
 *   l.batch = 128; l.seed = 1; l.prefetch = 4;
 *   tpurt_loader_t *ld;      tpurt_loader_create(ds, &l, &ld);
 *   tpurt_batch_t b;         while (tpurt_loader_next(ld, &b) == TPURT_DATA_OK) ...
 *   tpurt_loader_destroy(ld); tpurt_dataset_destroy(ds);
 *
 * Conventions follow tpurt.h: fallible calls return a status (0 is OK),
 * out-parameters come last, destroy accepts NULL. tpurt_dataset_open
 * returns a handle even when it fails (like sqlite3_open), so that its
 * message, naming the file and what is wrong with it, can be read; destroy
 * it either way (*out_ds is NULL only when memory ran out).
 *
 * Ownership and threads. A dataset owns its examples; a loader reads its
 * dataset, which must outlive it. Both are thread-compatible (one thread at
 * a time); a loader with prefetch > 0 runs one host thread of its own,
 * joined by tpurt_loader_destroy. The library has no global state. */
#ifndef TPURT_DATA_H
#define TPURT_DATA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define TPURT_DATA_API
#else
#define TPURT_DATA_API __attribute__((visibility("default")))
#endif

typedef enum tpurt_data_status {
  TPURT_DATA_OK = 0,
  TPURT_DATA_END = 1,          /* tpurt_loader_next: no batch left (epochs done) */
  TPURT_DATA_IO = 2,           /* a file could not be opened or read */
  TPURT_DATA_FORMAT = 3,       /* a file is malformed; the message says how */
  TPURT_DATA_INVALID_ARGUMENT = 4,
  TPURT_DATA_OUT_OF_MEMORY = 5,
} tpurt_data_status_t;

/* What to open. Formats are recognised by content, not by name: a gzip
 * stream is inflated first; "PK\3\4" is an .npz archive, "\x93NUMPY" an
 * .npy array, a big-endian 0x0000_08_0N word an IDX file of unsigned bytes.
 * Images: N examples of unsigned bytes (IDX, npy "|u1") or float32 (npy
 * "<f4"), any rank >= 1 after N. Labels: N integers (IDX bytes, npy "|u1",
 * "<i4", "<i8"), each in [0, num_classes). */
typedef struct tpurt_data_options {
  const char *images;      /* file of images, or the .npz archive */
  const char *labels;      /* file of labels; NULL when images is an .npz */
  const char *images_key;  /* .npz entry of images (default "x_train") */
  const char *labels_key;  /* .npz entry of labels (default "y_train") */
  int num_classes;         /* labels must be < this (default 10) */
  uint64_t max_bytes;      /* refuse a file (or gzip/deflate stream) that
                            * would take more than this many bytes in memory
                            * (default 1 GiB): bounds a decompression bomb */
} tpurt_data_options_t;

TPURT_DATA_API void tpurt_data_options_init(tpurt_data_options_t *o);

typedef struct tpurt_dataset tpurt_dataset_t;

/* Reads and checks images and labels. Errors: TPURT_DATA_IO (file cannot
 * be read), TPURT_DATA_FORMAT (wrong magic, truncated or oversized data,
 * dims that overflow, counts that differ between images and labels, a
 * label out of range, a stream past max_bytes), TPURT_DATA_INVALID_ARGUMENT. */
TPURT_DATA_API tpurt_data_status_t tpurt_dataset_open(const tpurt_data_options_t *o,
                                                      tpurt_dataset_t **out_ds);
TPURT_DATA_API void tpurt_dataset_destroy(tpurt_dataset_t *ds);
/* The message of the last failure ("" when none); owned by ds. */
TPURT_DATA_API const char *tpurt_dataset_message(const tpurt_dataset_t *ds);
TPURT_DATA_API size_t tpurt_dataset_count(const tpurt_dataset_t *ds);
/* Elements of one example (28 * 28 for Fashion-MNIST). */
TPURT_DATA_API size_t tpurt_dataset_example_elems(const tpurt_dataset_t *ds);
/* Dims of one example (without N); returns the rank, writes up to max dims. */
TPURT_DATA_API int tpurt_dataset_example_dims(const tpurt_dataset_t *ds, int64_t *dims, int max);
/* Label of example i (i < count). */
TPURT_DATA_API int32_t tpurt_dataset_label(const tpurt_dataset_t *ds, size_t i);
/* Raw element j of example i as a double (before normalisation). */
TPURT_DATA_API double tpurt_dataset_value(const tpurt_dataset_t *ds, size_t i, size_t j);

typedef struct tpurt_loader_options {
  size_t batch;        /* global batch size (default 32) */
  int drop_remainder;  /* drop the last short batch of an epoch (default 0) */
  int shuffle;         /* shuffle each epoch (default 1) */
  uint64_t seed;       /* shuffle seed (default 0) */
  int epochs;          /* epochs to produce; 0 = unbounded (default 1) */
  int prefetch;        /* batches a host thread produces ahead; 0 = none,
                        * batches are made inside tpurt_loader_next */
  float scale, offset; /* element = raw * scale + offset (default 1/255, 0) */
} tpurt_loader_options_t;

TPURT_DATA_API void tpurt_loader_options_init(tpurt_loader_options_t *o);

/* One batch: count examples, images row-major [count][example_elems],
 * labels [count]. Owned by the loader, valid until the next
 * tpurt_loader_next or tpurt_loader_destroy. */
typedef struct tpurt_batch {
  size_t count;
  size_t elems;        /* elements per example */
  const float *images;
  const int32_t *labels;
  int epoch;           /* 0-based */
  size_t index;        /* batch index within the epoch */
} tpurt_batch_t;

/* Input statistics. wait_ns is the time tpurt_loader_next spent waiting
 * for a batch (with prefetch, the device's input stall; without, the time
 * spent making the batch); stalls counts calls that found no batch ready. */
typedef struct tpurt_loader_stats {
  uint64_t batches;
  uint64_t stalls;
  uint64_t wait_ns;
  uint64_t produce_ns; /* time spent making batches, on whichever thread */
} tpurt_loader_stats_t;

typedef struct tpurt_loader tpurt_loader_t;

/* The shuffle: epoch e's order is a Fisher-Yates shuffle of 0..N-1, for
 * i = N-1 down to 1 swapping position i with j = (r >> 32) * (i + 1) >> 32,
 * r = splitmix64(seed ^ splitmix64(splitmix64(epoch) ^ splitmix64(i)))
 * (splitmix64(x) is Vigna's SplitMix64 output finaliser applied to
 * x + 0x9E3779B97F4A7C15; j is biased by at most N / 2^32). It
 * depends on (seed, epoch) alone, never on threads or prefetch. Errors:
 * TPURT_DATA_INVALID_ARGUMENT (batch 0, epochs < 0, prefetch < 0, an epoch
 * with no batch), TPURT_DATA_OUT_OF_MEMORY, TPURT_DATA_IO (no thread). */
TPURT_DATA_API tpurt_data_status_t tpurt_loader_create(const tpurt_dataset_t *ds,
                                                       const tpurt_loader_options_t *o,
                                                       tpurt_loader_t **out_loader);
TPURT_DATA_API void tpurt_loader_destroy(tpurt_loader_t *ld);
/* The next batch, or TPURT_DATA_END after the last epoch. */
TPURT_DATA_API tpurt_data_status_t tpurt_loader_next(tpurt_loader_t *ld, tpurt_batch_t *out_batch);
TPURT_DATA_API size_t tpurt_loader_batches_per_epoch(const tpurt_loader_t *ld);
TPURT_DATA_API void tpurt_loader_stats(const tpurt_loader_t *ld, tpurt_loader_stats_t *out_stats);
/* Writes epoch's order (N indices) into perm: the permutation above, or
 * 0..N-1 when the loader does not shuffle. */
TPURT_DATA_API void tpurt_loader_order(const tpurt_loader_t *ld, int epoch, uint32_t *perm);

/* Replica r of n of a global batch: rows [r * count / n, (r + 1) * count / n),
 * a view into b. TPURT_DATA_INVALID_ARGUMENT when n < 1, r outside [0, n)
 * or count is not a multiple of n. */
TPURT_DATA_API tpurt_data_status_t tpurt_batch_replica(const tpurt_batch_t *b, int r, int n,
                                                      tpurt_batch_t *out_batch);

#ifdef __cplusplus
}
#endif
#endif
