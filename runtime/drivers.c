/* drivers.c: the drivers libtpurt links (device.h): the emulated TPU
 * alone; TPU devices load .tpub programs and assembly, not module text.
 * libtpurt-cpu replaces this file with driver/rtdev.c. */
#include "runtime/device.h"

static const rt_driver *const linked[] = {&rt_tpu_driver, NULL};
static const rt_drivers drivers = {linked, NULL};

const rt_drivers *rt_linked_drivers(void) { return &drivers; }
