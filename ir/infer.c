/* infer.c: placeholder until written. */
#include "ir/ir.h"
