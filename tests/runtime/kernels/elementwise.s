; elementwise.s: y = max(exp(x) * z - x, 0.25) and w = bf16(x * z) on
; f32[16,128] tensors, two 8-row blocks per tensor.
; VMEM: x at 0, z at 8192, y at 16384, w (bf16) at 24576.
.target v3
.hbm 36864
.param x f32[16,128] @0
.param z f32[16,128] @8192
.result y f32[16,128] @16384
.result w bf16[16,128] @32768
; DMA descriptors (run, n1, n2, n3, hbm strides, vmem strides)
.smem 0  8192, 1, 1, 1, 0, 0, 0, 0, 0, 0
.smem 40 4096, 1, 1, 1, 0, 0, 0, 0, 0, 0
.equ ROW 512                    ; bytes per f32 row of 128 lanes
        sli s3, 0               ; descriptor: 8 KiB
        sli s1, 0
        dmald dma0, s1, s1, s3, sem0        ; x -> VMEM 0
        sli s4, 8192
        dmald dma1, s4, s4, s3, sem1        ; z -> VMEM 8192
        wait vector, sem0, 1
        wait vector, sem1, 1
        sli s5, ROW
        sli s6, 256                         ; bf16 row stride
        sli s7, 0                           ; f32 block offset
        sli s8, 24576                       ; bf16 output address
        sli s9, 2                           ; blocks
        vimm v9, 0.25f
block:  vld v0, s7, 0, s5
        vld v1, s7, 8192, s5
        vexp v2, v0
        vmulf v2, v2, v1
        vsubf v2, v2, v0
        vmaxf v2, v2, v9
        vst v2, s7, 16384, s5, m0
        vmulf v3, v0, v1
        vsth v3, s8, 0, s6, m0
        saddi s7, s7, 4096
        saddi s8, s8, 2048
        loop s9, block
        signal vector, sem2, 2              ; results are in VMEM
        wait dma0, sem2, 1
        sli s10, 16384
        dmast dma0, s10, s10, s3, sem3      ; y
        sli s11, 24576
        sli s12, 32768
        sli s13, 40
        wait dma1, sem2, 1
        dmast dma1, s11, s12, s13, sem3     ; w
        wait scalar, sem3, 2
        halt
