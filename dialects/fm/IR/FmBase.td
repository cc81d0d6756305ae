// The fm dialect: base definitions shared by its types, attributes and ops.
#ifndef FM_BASE_TD
#define FM_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Fm_Dialect : Dialect {
  let name = "fm";
  let cppNamespace = "::mlir::fm";
  let summary = "Model-level IR for foundation-model graphs";
  let description = [{
    The `fm` dialect describes a transformer model at the level at which its
    authors think about it: token embedding, RMSNorm, attention with grouped
    KV heads and RoPE (or none), global or sliding-window attention, SwiGLU
    MLPs, mixture-of-experts layers, parallel track blocks, KV caches that
    layers own or share, ViT encoders with register windows, and the
    vision-language adapter. Weights are never inlined: every weight is an
    `fm.param` that names a tensor of the checkpoint by key.

    Activations are `tensor<S x H x f32>` with a dynamic sequence length S.
    A model is an `fm.model` holding its KV cache declarations and one
    `func.func` per phase (`fm.phase = "prefill"` / `"decode"` / `"encode"`).
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Name of the discardable attribute that marks a func.func as a phase.
    static constexpr ::llvm::StringLiteral kPhaseAttrName = "fm.phase";
  }];
}

class Fm_Op<string mnemonic, list<Trait> traits = []>
    : Op<Fm_Dialect, mnemonic, traits>;

class Fm_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Fm_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

// Activations: [tokens, features] f32 tensors.
def Fm_Activation : 2DTensorOf<[F32]>;
// Stored parameters: the checkpoint's float dtype.
def Fm_Weight : RankedTensorOf<[F32, F16, BF16]>;

#endif // FM_BASE_TD
