; matmul256.s: c = a x b for a, b bf16[256,256], c f32[256,256] through
; DMA and the MXU (weight-stationary 128x128 tiles, K accumulated in the
; MXU's accumulator memory, weight loads double-buffered behind pushes).
;   VMEM: a at 0 (128 KiB), b at 131072, c at 262144 (256 KiB f32)
;   tile W(t, j) = b[128t .. 128t+127][128j .. 128j+127]
;                at VMEM 131072 + t*65536 + j*256, row stride 512
;   lhs a[:, 128t .. 128t+127] at VMEM t*256, row stride 512, 256 rows
;   c[:, 128j ..] at VMEM 262144 + j*512, row stride 1024
.target v3
.hbm 524288
.param a bf16[256,256] @0
.param b bf16[256,256] @131072
.result c f32[256,256] @262144
.smem 0  131072, 1, 1, 1, 0, 0, 0, 0, 0, 0   ; 128 KiB
.smem 40 262144, 1, 1, 1, 0, 0, 0, 0, 0, 0   ; 256 KiB
        sli s1, 131072
        dmald dma0, s0, s0, s0, sem0          ; a
        dmald dma1, s1, s1, s0, sem0          ; b
        wait mxu0, sem0, 2
        sli s2, 512                           ; bf16 row stride
        sli s3, 1024                          ; f32 row stride
        sli s4, 131072                        ; W(0,0)
        sli s5, 196608                        ; W(1,0)
        sli s6, 131328                        ; W(0,1)
        sli s7, 196864                        ; W(1,1)
        sli s8, 256                           ; a[:, 128..]
        sli s9, 262144                        ; c[:, 0..]
        sli s10, 262656                       ; c[:, 128..]
        mwt mxu0, s4, s2
        mswap mxu0
        mwt mxu0, s5, s2                      ; hidden behind the push
        mpush mxu0, s0, s2, s0, 256           ; acc = a[:, 0:128] W(0,0)
        mswap mxu0
        mwt mxu0, s6, s2
        mpusha mxu0, s8, s2, s0, 256          ; acc += a[:, 128:256] W(1,0)
        mpopm mxu0, s9, s3, s0, 256
        mswap mxu0
        mwt mxu0, s7, s2
        mpush mxu0, s0, s2, s0, 256
        mswap mxu0
        mpusha mxu0, s8, s2, s0, 256
        mpopm mxu0, s10, s3, s0, 256
        signal mxu0, sem1, 1
        wait dma0, sem1, 1
        sli s11, 262144
        sli s12, 40
        dmast dma0, s11, s11, s12, sem2
        wait scalar, sem2, 1
        halt
