/* tensor_io.c: placeholder until written. */
#include "ir/ir.h"
