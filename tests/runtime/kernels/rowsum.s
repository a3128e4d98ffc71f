; rowsum.s: y[i] = sum over j of x[i][j] (lanes in ascending order) for
; x f32[64,128]: per 8-row block, vrlsum then vtpush into the transpose
; buffer; one vtpop gathers the 64 sums into lanes 0..63.
.target v3
.hbm 33024
.param x f32[64,128] @0
.result y f32[64] @32768
.smem 0  32768, 1, 1, 1, 0, 0, 0, 0, 0, 0
.smem 40 256, 1, 1, 1, 0, 0, 0, 0, 0, 0
        dmald dma0, s0, s0, s0, sem0
        wait vector, sem0, 1
        sli s1, 512
        vld v0, s0, 0, s1
        vrlsum v1, v0
        vtpush v1, 0
        vld v0, s0, 4096, s1
        vrlsum v1, v0
        vtpush v1, 1
        vld v0, s0, 8192, s1
        vrlsum v1, v0
        vtpush v1, 2
        vld v0, s0, 12288, s1
        vrlsum v1, v0
        vtpush v1, 3
        vld v0, s0, 16384, s1
        vrlsum v1, v0
        vtpush v1, 4
        vld v0, s0, 20480, s1
        vrlsum v1, v0
        vtpush v1, 5
        vld v0, s0, 24576, s1
        vrlsum v1, v0
        vtpush v1, 6
        vld v0, s0, 28672, s1
        vrlsum v1, v0
        vtpush v1, 7
        vtpop v2, 0                 ; v2[r][l] = sum of row l, l < 64
        viota v3, 0
        vimm v4, 64
        vcmplti m1, v3, v4          ; lanes 0..63
        vst v2, s0, 32768, s0, m1   ; stride 0: all 8 sublanes to one row
        signal vector, sem1, 1
        wait dma0, sem1, 1
        sli s2, 32768
        sli s3, 40
        dmast dma0, s2, s2, s3, sem2
        wait scalar, sem2, 1
        halt
