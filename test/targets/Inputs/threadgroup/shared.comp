#version 450
// A kernel whose threadgroup memory is SHARED_FLOATS floats and 4 structs
// laid out as MSL lays them out (float3 takes 16 bytes, so P is 32 bytes,
// not 24): fm-msl counts SHARED_FLOATS * 4 + 128 bytes, and refuses the
// kernel past Metal's 32768.
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Y { float y[]; };
struct P {
  vec3 v;  // at 0, 16 bytes (float3)
  float w; // at 16
  vec2 u;  // at 24; the struct is 32, aligned to 16

};
shared float big[SHARED_FLOATS];
shared P parts[4];
void main() {
  uint t = gl_LocalInvocationID.x;
  for (uint i = t; i < SHARED_FLOATS; i += 64u)
    big[i] = y[i];
  if (t < 4u)
    parts[t] = P(vec3(y[t]), y[t + 1u], vec2(y[t + 2u]));
  barrier();
  y[t] = big[(t * 7u) % SHARED_FLOATS] + parts[t % 4u].v.x + parts[t % 4u].u.y;
}
