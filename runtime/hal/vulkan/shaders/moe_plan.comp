#version 450
// MoE slot plan, one workgroup: groups the M * topK (row, choice) slots by
// expert (counting sort, rows ascending within an expert, as kernels/moe.cpp
// orders them) into list[], with first[e] .. first[e + 1] the slots of
// expert e (first[E + 1 + e] is e's fill cursor), and writes the indirect dispatch sizes of each expert's up and
// down kernels: workgroups for `count` slots, MR slots each.
layout(local_size_x = 1) in;

layout(set = 0, binding = 0) readonly buffer S { uint sel[]; };
layout(set = 0, binding = 1) writeonly buffer L { uint list[]; };
layout(set = 0, binding = 2) buffer F { uint first[]; };
layout(set = 0, binding = 3) writeonly buffer A { uint args[]; };

layout(push_constant) uniform Push {
  uint slots, E;
  uint upTiles, downTiles; // workgroups in x: intermediate / hidden tiles
  uint mr;                 // slots per workgroup
} pc;

void main() {
  for (uint e = 0u; e <= pc.E; ++e)
    first[e] = 0u;
  for (uint s = 0u; s < pc.slots; ++s)
    first[sel[s] + 1u] += 1u;
  for (uint e = 0u; e < pc.E; ++e) {
    uint count = first[e + 1u];
    uint groups = (count + pc.mr - 1u) / pc.mr;
    args[6u * e + 0u] = groups == 0u ? 0u : pc.upTiles;
    args[6u * e + 1u] = groups;
    args[6u * e + 2u] = 1u;
    args[6u * e + 3u] = groups == 0u ? 0u : pc.downTiles;
    args[6u * e + 4u] = groups;
    args[6u * e + 5u] = 1u;
    first[e + 1u] += first[e];
  }
  for (uint e = 0u; e < pc.E; ++e)
    first[pc.E + 1u + e] = first[e];
  for (uint s = 0u; s < pc.slots; ++s) {
    uint e = sel[s];
    uint at = first[pc.E + 1u + e];
    first[pc.E + 1u + e] = at + 1u;
    list[at] = s;
  }
}
