/* hlo_files.h: walks the .hlo files a test program is given. */
#ifndef TPUCC_TESTS_HLO_FILES_H
#define TPUCC_TESTS_HLO_FILES_H

/* Calls fn on path when it is not a directory, else on every file of
 * the directory whose name ends in .hlo, in sorted order (not
 * recursive). */
void tp_for_each_hlo(const char *path, void (*fn)(const char *file));

#endif
