/* ici_ring.h: a ring of dmaputs on the 8 cores of TARGET (defined by the
 * includer: "v3-8,clock=1GHz,ici_bw=64GB/s,ici_latency=100"), whose
 * values and cycles tests/runtime/test_ici.c derives by hand: core c
 * sends its x (4096 bytes) to core c + 1 (mod 8) and waits for its
 * predecessor's; cores 0 and 4 end at 273 and 272 cycles, the others at
 * 172. Shared with tests/mpi/emu_mpi_prog.c. */
#ifndef TPUCC_TESTS_ICI_RING_H
#define TPUCC_TESTS_ICI_RING_H

static const char *ring_src = ".target " TARGET "\n"
                              ".hbm 8192\n"
                              ".param x f32[1024] @0\n"
                              ".result y f32[1024] @4096\n"
                              ".smem 0 4096, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0\n"
                              "  coreid s1, 0\n"
                              "  coreid s2, 1\n"
                              "  saddi s3, s1, 1\n"
                              "  blt s3, s2, ok\n"
                              "  sli s3, 0\n"
                              "ok:\n"
                              "  sst s3, s0, 40\n"
                              "  sli s4, 4096\n"
                              "  dmaput dma0, s0, s4, s0, sem0, 1\n"
                              "  wait scalar, sem0, 1\n"
                              "  iwait sem1, 1\n"
                              "  halt\n";

#endif
