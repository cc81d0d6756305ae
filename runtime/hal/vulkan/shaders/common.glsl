// Shared by the Vulkan kernels: the 8/16-bit storage extensions, the weight
// element type of each weight kind, and the low-bit format decoders of
// runtime/kernels/qformat.h. No kernel assumes a subgroup width: every
// reduction goes through shared memory.
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require

// WKIND (a -D of the build): 0 f32 weights, 1 f16 weights, 2 packed low-bit
// weights. Each kind binds its weights as its own element type, so no buffer
// is aliased (SPIRV-Cross maps every binding to one Metal buffer index).
#ifndef WKIND
#define WKIND 0
#endif
#if WKIND == 0
#define WTYPE float
#elif WKIND == 1
#define WTYPE uint16_t
#else
#define WTYPE uint8_t
#endif

// The packed format (qformat.h): bits in {2, 4, 8}, group in {32, 64, 128},
// balanced or affine grid. Specialization constants, so a pipeline is
// compiled per format with its loops known.
layout(constant_id = 0) const uint QBITS = 8;
layout(constant_id = 1) const uint QGROUP = 32;
layout(constant_id = 2) const bool QAFFINE = false;

// Inputs per unit U = min(group, 64), bytes per unit, planes per byte.
const uint QUNIT = QGROUP < 64u ? QGROUP : 64u;
const uint QUNIT_BYTES = QUNIT * QBITS / 8u;
const uint QPLANES = 8u / QBITS;
const uint QMASK = (1u << QBITS) - 1u;
// The balanced grid's centre, (2^bits - 1) / 2.
float qcenter() { return float(QMASK) * 0.5; }

// Bytes of quants in a row of k inputs (the offset of its scales).
uint quantBytes(uint k) { return k * QBITS / 8u; }

// The f32 of the IEEE binary16 whose little-endian bytes are lo, hi.
float halfOf(uint lo, uint hi) { return unpackHalf2x16(lo | (hi << 8)).x; }
