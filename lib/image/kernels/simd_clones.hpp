// Private to lib/image: RINGFEED_AVX2_CLONES marks a hot loop to be compiled
// twice, for x86-64's baseline and for AVX2, the copy picked at load time
// (GCC function multi-versioning, an ifunc); the arithmetic is the same in
// both. RINGFEED_V3_CLONES: the same for x86-64-v3 (AVX2 and FMA), for the
// float loops whose std::fma must be an instruction, not a call to libm's
// fmaf (the baseline's); an FMA rounds once either way, and these files'
// -ffp-contract=off fuses nothing else, so both copies give the same bits.
// Not under ThreadSanitizer: the ifunc resolvers run before its
// runtime is up and crash the program at load.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define RINGFEED_AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#define RINGFEED_V3_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define RINGFEED_AVX2_CLONES
#define RINGFEED_V3_CLONES
#endif
