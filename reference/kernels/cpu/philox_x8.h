// Eight consecutive Philox4x32-10 blocks at a time (core/philox.h's stream
// convention), for the CPU kernels that draw a block per 4 elements: with
// AVX2 the eight run side by side in vector lanes, else one after another.
// The words are core::PhiloxBlock's, bit for bit.
#pragma once

#include <cstdint>

namespace mlperf::cpu {

// Blocks block0 .. block0 + 7 of stream (seed, offset) into out[0, 32), in
// element order: word w of block block0 + b at out[4 * b + w].
void PhiloxBlocks8(uint64_t seed, uint64_t offset, uint64_t block0, uint32_t* out);

}  // namespace mlperf::cpu
