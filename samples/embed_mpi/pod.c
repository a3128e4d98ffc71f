/* pod.c: an MPI program that embeds libtpurt-mpi to run a compiled
 * program on an emulated TPU board or pod whose cores are split across
 * its ranks (include/tpurt_mpi.h, docs/runtime.md "A device over MPI").
 *
 *     pod PROGRAM.tpub [--target=v3-8] [--pods=P] [--timeout=SECONDS]
 *
 * The world is split into P pods of consecutive ranks (MPI_Comm_split;
 * P = 1: the world itself); each pod creates its own device from its
 * communicator, loads the program and runs one replica of it per core.
 * Core c of pod p gets every f32 parameter element j as
 * (p + 1) (c + 1) (j mod 7 + 1). Rank 0 of each pod prints every core's
 * results and a line of statistics per core, each line starting with
 * "pod p". The output does not depend on how many ranks share a pod.
 *
 * Make a program with the compiler, e.g. an all-reduce over 8 replicas:
 *     tpucc compile allreduce8.hlo --target=v3-8 -o ar8.tpub
 * Build against the installed runtime and run:
 *     cc pod.c $(pkg-config --cflags --libs tpurt-mpi) -o pod
 *     mpirun -np 4 ./pod ar8.tpub --target=v3-8 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <tpurt.h>
#include <tpurt_mpi.h>

enum { MAX_CORES = 2048, MAX_PARAMS = 16, MAX_RESULTS = 16 };

typedef struct run {
  tpurt_device_t *dev;
  tpurt_program_t *prog;
  int ncores;
  size_t nparams, nresults;
  tpurt_buffer_t **params;  /* ncores x nparams */
  tpurt_buffer_t **results; /* ncores x nresults */
  tpurt_stats_t *stats;     /* ncores */
} run;

/* Ends every rank of the job after saying why (a failed collective
 * leaves the ranks out of step: MPI_Abort is the way out). */
static void die(int rank, const char *what, const char *why) {
  fprintf(stderr, "pod: rank %d: %s: %s\n", rank, what, why);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

/* Parameter buffers of every core: core c of pod p as the header says. */
static tpurt_status_t make_params(run *r, int pod) {
  for (int c = 0; c < r->ncores; c++)
    for (size_t i = 0; i < r->nparams; i++) {
      tpurt_tensor_info_t t;
      tpurt_program_param_info(r->prog, i, &t);
      if (t.dtype != TPURT_F32) return TPURT_UNSUPPORTED;
      size_t n = t.bytes / sizeof(float);
      float *x = malloc(t.bytes ? t.bytes : 1);
      if (!x) return TPURT_OUT_OF_MEMORY;
      for (size_t j = 0; j < n; j++) x[j] = (float)((pod + 1) * (c + 1) * (int)(j % 7 + 1));
      tpurt_status_t st = tpurt_buffer_create(r->dev, t.dtype, t.rank, t.dims, x, t.bytes,
                                              &r->params[(size_t)c * r->nparams + i]);
      free(x);
      if (st != TPURT_OK) return st;
    }
  return TPURT_OK;
}

/* Every core's f32 results, then its statistics, one line each. */
static void print_run(const run *r, int pod) {
  for (int c = 0; c < r->ncores; c++)
    for (size_t i = 0; i < r->nresults; i++) {
      tpurt_buffer_t *b = r->results[(size_t)c * r->nresults + i];
      tpurt_tensor_info_t t;
      tpurt_buffer_info(b, &t);
      float *y = malloc(t.bytes ? t.bytes : 1);
      if (!y || t.dtype != TPURT_F32 || tpurt_buffer_read(b, y, t.bytes) != TPURT_OK) {
        printf("pod %d core %d result %zu: (not f32)\n", pod, c, i);
        free(y);
        continue;
      }
      printf("pod %d core %d result %zu:", pod, c, i);
      for (size_t j = 0; j < t.bytes / sizeof(float); j++) printf(" %.9g", (double)y[j]);
      printf("\n");
      free(y);
    }
  for (int c = 0; c < r->ncores; c++) {
    const tpurt_stats_t *s = &r->stats[c];
    printf("pod %d core %d stats: cycles=%llu", pod, c, (unsigned long long)s->cycles);
#define PRINT_COUNTER(field, kind) printf(" " #field "=%llu", (unsigned long long)s->field);
    TPURT_RUN_COUNTERS(PRINT_COUNTER)
#undef PRINT_COUNTER
    printf("\n");
  }
  fflush(stdout);
}

static void free_run(run *r) {
  for (int k = 0; r->params && k < r->ncores * (int)r->nparams; k++)
    tpurt_buffer_destroy(r->params[k]);
  for (int k = 0; r->results && k < r->ncores * (int)r->nresults; k++)
    tpurt_buffer_destroy(r->results[k]);
  free(r->params);
  free(r->results);
  free(r->stats);
  tpurt_program_destroy(r->prog);
  tpurt_device_destroy(r->dev);
}

/* One pod: the device over comm, the program, one execution. */
static void run_pod(MPI_Comm comm, int pod, const char *path, const char *target,
                    double timeout) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  tpurt_device_options_t opts;
  tpurt_device_options_init(&opts);
  opts.target = target;
  run r;
  memset(&r, 0, sizeof r);
  char err[1024];
  if (tpurt_mpi_device_create(&opts, comm, timeout, &r.dev, err, sizeof err) != TPURT_OK)
    die(rank, "tpurt_mpi_device_create", err);
  if (tpurt_program_load_file(r.dev, path, &r.prog) != TPURT_OK)
    die(rank, path, tpurt_device_message(r.dev));
  r.ncores = tpurt_device_core_count(r.dev);
  r.nparams = tpurt_program_param_count(r.prog);
  r.nresults = tpurt_program_result_count(r.prog);
  if (r.ncores > MAX_CORES || r.nparams > MAX_PARAMS || r.nresults > MAX_RESULTS)
    die(rank, path, "more cores, parameters or results than this sample handles");
  r.params = calloc((size_t)r.ncores * r.nparams + 1, sizeof *r.params);
  r.results = calloc((size_t)r.ncores * r.nresults + 1, sizeof *r.results);
  r.stats = calloc((size_t)r.ncores, sizeof *r.stats);
  if (!r.params || !r.results || !r.stats) die(rank, path, "out of memory");
  tpurt_status_t st = make_params(&r, pod);
  if (st != TPURT_OK) die(rank, "parameters", tpurt_status_string(st));
  /* every rank of the pod calls it; rank 0's parameters are used and rank
   * 0 gets every core's results and statistics */
  if (tpurt_program_execute_replicas(r.prog, (size_t)r.ncores, r.params, r.nparams, r.results,
                                     r.nresults, r.stats) != TPURT_OK)
    die(rank, "execute", tpurt_device_message(r.dev));
  if (rank == 0) print_run(&r, pod);
  free_run(&r);
}

int main(int argc, char **argv) {
  const char *path = NULL, *target = "v3-8";
  int pods = 1;
  double timeout = 60;
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--target=", 9))
      target = argv[i] + 9;
    else if (!strncmp(argv[i], "--pods=", 7))
      pods = atoi(argv[i] + 7);
    else if (!strncmp(argv[i], "--timeout=", 10))
      timeout = atof(argv[i] + 10);
    else
      path = argv[i];
  }
  if (!path || pods < 1) {
    fprintf(stderr, "usage: pod PROGRAM.tpub [--target=v3-8] [--pods=P] [--timeout=SECONDS]\n");
    return 2;
  }
  /* the device calls MPI only from this (the main) thread */
  int provided = 0, rank = 0, size = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size % pods) die(rank, "--pods", "the world's size is not a multiple of the pods");
  MPI_Comm comm = MPI_COMM_WORLD;
  int pod = 0;
  if (pods > 1) {
    pod = rank / (size / pods);
    MPI_Comm_split(MPI_COMM_WORLD, pod, rank, &comm);
  }
  run_pod(comm, pod, path, target, timeout);
  if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
  MPI_Finalize();
  return 0;
}
