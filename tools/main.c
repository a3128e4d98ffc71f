/* main.c: the `tpucc` command: subcommand dispatch, --help and --version.
 * Each subcommand lives in its own cmd_*.c with its help text. */
#include "tools/tools.h"
#include "driver/driver.h" /* drv_set_progress */
#include "tools/mpi_run.h"

static const struct {
  const char *name, *summary;
  int (*run)(int argc, char **argv);
  void (*help)(FILE *f);
} cmds[] = {
    {"run", "compile a module and run it on a target", tool_cmd_run, tool_help_run},
    {"compile", "compile a module and emit it (HLO, TPU program, assembly, CPU object)", tool_cmd_compile, tool_help_compile},
    {"opt", "run chosen passes on a module and print the HLO", tool_cmd_opt, tool_help_opt},
    {"grad", "write the vector-Jacobian product (gradients) of a module as HLO", tool_cmd_grad, tool_help_grad},
    {"asm", "assemble TPU assembly into a .tpub program", tpucc_cmd_asm, tpucc_help_asm},
    {"dump-module", "print a .tpub program: header, signature, disassembly", tpucc_cmd_dump_module, tpucc_help_dump_module},
#ifdef TPUCC_HAVE_TRAIN
    {"train", "train a .tg model on an image data set (docs/training.md)", tool_cmd_train, tool_help_train},
#endif
};

static void usage(FILE *f) {
  fputs("usage: tpucc COMMAND [options]   (tpucc COMMAND --help for its options)\n"
        "\n"
        "commands:\n",
        f);
  for (unsigned i = 0; i < COUNTOF(cmds); i++)
    fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
  fputs("  help CMD   the options of CMD\n"
        "\n"
        "options:\n"
        "  -h, --help     this text\n"
        "  --version      print the version\n"
        "\n"
        "under mpirun, run and train split the cpu target's replicas over the\n"
        "ranks (docs/distributed.md): ",
        f);
  fputs(tool_mpi_build_note(), f);
  fputs("\n\n"
        "exit status: 0 success; 1 a mismatch or an error while running;\n"
        "2 a usage or compile error.\n",
        f);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return TOOL_EXIT_USAGE;
  }
  const char *c = argv[1];
  if (!strcmp(c, "-h") || !strcmp(c, "--help")) {
    usage(stdout);
    return TOOL_EXIT_OK;
  }
  if (!strcmp(c, "--version")) {
    printf("tpucc %s\n", tpucc_version_string());
    return TOOL_EXIT_OK;
  }
  bool help = !strcmp(c, "help");
  if (help) {
    if (argc < 3) {
      usage(stdout);
      return TOOL_EXIT_OK;
    }
    c = argv[2];
  }
  for (unsigned i = 0; i < COUNTOF(cmds); i++) {
    if (strcmp(cmds[i].name, c) != 0) continue;
    if (help) {
      cmds[i].help(stdout);
      return TOOL_EXIT_OK;
    }
    drv_set_progress(true); /* long cpu compiles draw a line on a terminal */
    return cmds[i].run(argc - 2, argv + 2);
  }
  fprintf(stderr, "tpucc: error: unknown command '%s' (known: ", c);
  for (unsigned i = 0; i < COUNTOF(cmds); i++) fprintf(stderr, "%s%s", i ? ", " : "", cmds[i].name);
  fprintf(stderr, "; see tpucc --help)\n");
  return TOOL_EXIT_USAGE;
}
