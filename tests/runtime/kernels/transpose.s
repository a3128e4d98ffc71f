; transpose.s: y = transpose(x) for x f32[128,128] through the transpose
; unit: 16 blocks of 8 rows pushed, 16 blocks popped.
.target v3
.hbm 131072
.param x f32[128,128] @0
.result y f32[128,128] @65536
.smem 0 65536, 1, 1, 1, 0, 0, 0, 0, 0, 0
        dmald dma0, s0, s0, s0, sem0
        wait vector, sem0, 1
        sli s1, 512                 ; row stride
        sli s2, 0                   ; block address
        vld v0, s2, 0, s1
        vtpush v0, 0
        vld v0, s2, 4096, s1
        vtpush v0, 1
        vld v0, s2, 8192, s1
        vtpush v0, 2
        vld v0, s2, 12288, s1
        vtpush v0, 3
        vld v0, s2, 16384, s1
        vtpush v0, 4
        vld v0, s2, 20480, s1
        vtpush v0, 5
        vld v0, s2, 24576, s1
        vtpush v0, 6
        vld v0, s2, 28672, s1
        vtpush v0, 7
        vld v0, s2, 32768, s1
        vtpush v0, 8
        vld v0, s2, 36864, s1
        vtpush v0, 9
        vld v0, s2, 40960, s1
        vtpush v0, 10
        vld v0, s2, 45056, s1
        vtpush v0, 11
        vld v0, s2, 49152, s1
        vtpush v0, 12
        vld v0, s2, 53248, s1
        vtpush v0, 13
        vld v0, s2, 57344, s1
        vtpush v0, 14
        vld v0, s2, 61440, s1
        vtpush v0, 15
        vtpop v1, 0
        vst v1, s2, 65536, s1, m0
        vtpop v1, 1
        vst v1, s2, 69632, s1, m0
        vtpop v1, 2
        vst v1, s2, 73728, s1, m0
        vtpop v1, 3
        vst v1, s2, 77824, s1, m0
        vtpop v1, 4
        vst v1, s2, 81920, s1, m0
        vtpop v1, 5
        vst v1, s2, 86016, s1, m0
        vtpop v1, 6
        vst v1, s2, 90112, s1, m0
        vtpop v1, 7
        vst v1, s2, 94208, s1, m0
        vtpop v1, 8
        vst v1, s2, 98304, s1, m0
        vtpop v1, 9
        vst v1, s2, 102400, s1, m0
        vtpop v1, 10
        vst v1, s2, 106496, s1, m0
        vtpop v1, 11
        vst v1, s2, 110592, s1, m0
        vtpop v1, 12
        vst v1, s2, 114688, s1, m0
        vtpop v1, 13
        vst v1, s2, 118784, s1, m0
        vtpop v1, 14
        vst v1, s2, 122880, s1, m0
        vtpop v1, 15
        vst v1, s2, 126976, s1, m0
        signal vector, sem1, 1
        wait dma0, sem1, 1
        sli s3, 65536
        dmast dma0, s3, s3, s0, sem2
        wait scalar, sem2, 1
        halt
