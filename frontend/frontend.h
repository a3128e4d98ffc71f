/* frontend.h: the one interface of frontend/: text to IR.
 * Both parsers are reentrant (flex/bison pure), keep no global state, and
 * report every error they find into d as file:line:col diagnostics; they
 * never crash or hang on any input. */
#ifndef TPUCC_FRONTEND_H
#define TPUCC_FRONTEND_H

#include "ir/ir.h"

/* Parses XLA HLO text into a verified module. file names the source in
 * diagnostics (and is registered with d for source lines). Returns NULL
 * after reporting the errors into d. */
ir_module *fe_parse_hlo(const char *file, const char *text, size_t len,
                        diag *d);

/* Parses a .tg graph file and lowers it to a module whose entry is the
 * graph named `entry` (NULL: the last graph in the file). Returns NULL
 * after reporting the errors into d. */
ir_module *fe_parse_tg(const char *file, const char *text, size_t len,
                       const char *entry, diag *d);

#endif
