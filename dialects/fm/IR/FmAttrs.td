// The fm dialect's enums and attributes: RoPE style, attention kind, track
// combine, MLP activation, quantization grid and the quantized-parameter attr.
#ifndef FM_ATTRS_TD
#define FM_ATTRS_TD

include "FmBase.td"

def Fm_RopeStyle : I32EnumAttr<"RopeStyle", "rotary position embedding variant", [
    I32EnumAttrCase<"none", 0>,
    // HF rotate_half: pairs (i, i + head_dim/2).
    I32EnumAttrCase<"half", 1>,
    // Traditional RoPE: adjacent pairs (2i, 2i + 1).
    I32EnumAttrCase<"interleaved", 2>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::fm";
}
def Fm_RopeStyleAttr : EnumAttr<Fm_Dialect, Fm_RopeStyle, "rope">;

def Fm_AttentionKind : I32EnumAttr<"AttentionKind", "which keys a query sees", [
    I32EnumAttrCase<"global", 0>,
    I32EnumAttrCase<"local", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::fm";
}
def Fm_AttentionKindAttr : EnumAttr<Fm_Dialect, Fm_AttentionKind, "attention">;

def Fm_Combine : I32EnumAttr<"Combine", "how track outputs are reduced", [
    I32EnumAttrCase<"mean", 0>,
    I32EnumAttrCase<"sum", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::fm";
}
def Fm_CombineAttr : EnumAttr<Fm_Dialect, Fm_Combine, "combine">;

def Fm_Activation_ : I32EnumAttr<"Activation", "MLP activation", [
    // down(silu(gate(x)) * up(x))
    I32EnumAttrCase<"swiglu", 0>,
    // down(gelu(up(x) + up_bias)) + down_bias, the exact erf GELU
    I32EnumAttrCase<"gelu", 1>,
    // as gelu with GELU's tanh approximation
    I32EnumAttrCase<"gelu_tanh", 2>,
    // as gelu with x * sigmoid(1.702 x) (CLIP's quick_gelu)
    I32EnumAttrCase<"quick_gelu", 3>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::fm";
}
def Fm_ActivationAttr : EnumAttr<Fm_Dialect, Fm_Activation_, "activation">;

def Fm_VitAttentionMode : I32EnumAttr<"VitAttentionMode", "ViT attention extent", [
    I32EnumAttrCase<"global", 0>,
    I32EnumAttrCase<"window", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::fm";
}
def Fm_VitAttentionModeAttr
    : EnumAttr<Fm_Dialect, Fm_VitAttentionMode, "vit_attention">;

def Fm_QuantGrid : I32EnumAttr<"QuantGrid", "grid of quantized values", [
    // Symmetric, no zero: (q - (2^bits - 1) / 2) * scale; for 2 bits the
    // grid is {-1.5, -0.5, 0.5, 1.5} * scale.
    I32EnumAttrCase<"balanced", 0>,
    // Asymmetric: q * scale + min.
    I32EnumAttrCase<"affine", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::fm";
}

def Fm_QuantAttr : Fm_Attr<"Quant", "quant"> {
  let summary = "how a parameter is quantized";
  let description = [{
    Grouped weight quantization along the input (last) dimension: every
    `group` consecutive inputs of an output row share one scale of type
    `scale`, and each weight is stored in `bits` bits on `grid`.

    ```mlir
    #fm.quant<bits = 2, group = 64, grid = balanced, scale = f16>
    ```
  }];
  let parameters = (ins "unsigned":$bits, "int64_t":$group,
                        EnumParameter<Fm_QuantGrid>:$grid, "::mlir::Type":$scale);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Storage cost in bits per weight, scales included (2 bits + one f16
    /// scale per 64 weights = 2.25).
    double bitsPerWeight() const;
  }];
}

#endif // FM_ATTRS_TD
