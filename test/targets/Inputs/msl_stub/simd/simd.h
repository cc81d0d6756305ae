// Empty stand-in for Metal's <simd/simd.h> (see ../metal_stdlib).
#pragma once
