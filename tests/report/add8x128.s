; One elementwise add of f32[8,128] on v3, written the way the backend
; lowers it: two DMA loads, vector load/add/store, a fence, a DMA store.
; Cycle by cycle derivation (docs/isa.md sections 5 and 8) in
; test_report.c, test "add8x128_cycles". Ops (pcs): load 0..3, add 4..9,
; store 10..14.
.target v3
.hbm 12288
.param x f32[8,128] @0
.param y f32[8,128] @4096
.result z f32[8,128] @8192
.smem 0 4096, 1, 1, 1, 0, 0, 0, 0, 0, 0
  sli s1, 4096
  sli s2, 8192
  dmald dma0, s0, s0, s0, sem0
  dmald dma0, s1, s1, s0, sem0
  wait vector, sem0, 2
  sli s3, 512
  vld v1, s0, 0, s3
  vld v2, s1, 0, s3
  vaddf v3, v1, v2
  vst v3, s2, 0, s3, m0
  signal vector, sem1, 1
  wait dma0, sem1, 1
  dmast dma0, s2, s2, s0, sem2
  wait scalar, sem2, 1
  halt
