#!/usr/bin/python3
"""The C API (fm/fm.h) from Python through ctypes alone (the standard
library, no binding): generates from ids (greedy and sampled), from text
(streamed through a callback) and under a JSON Schema, and prints the lines
capi_test.c prints for the same cases, which check_capi.py compares with
fm-run's.

  capi_ctypes.py libfmrt.so MODEL.fmb WORK
"""
import ctypes as C
import sys

OK = 0


class GenerateParams(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("max_new_tokens", C.c_int64),
                ("stop_strings", C.POINTER(C.c_char_p)), ("n_stop_strings", C.c_size_t),
                ("stop_ids", C.POINTER(C.c_int32)), ("n_stop_ids", C.c_size_t),
                ("use_model_stop_ids", C.c_int), ("add_special_tokens", C.c_int),
                ("skip_special_tokens", C.c_int), ("prefill_chunk", C.c_int64),
                ("constraint", C.c_void_p), ("on_token", C.c_void_p),
                ("on_text", C.c_void_p), ("user_data", C.c_void_p)]


class Generation(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("tokens", C.POINTER(C.c_int32)),
                ("n_tokens", C.c_size_t), ("prompt", C.POINTER(C.c_int32)),
                ("n_prompt", C.c_size_t), ("text", C.c_char_p), ("text_size", C.c_size_t),
                ("stop", C.c_int), ("stop_name", C.c_char_p), ("constrained", C.c_char_p),
                ("complete", C.c_int), ("is_tool_call", C.c_int),
                ("context", C.POINTER(C.c_int32)), ("n_context", C.c_size_t),
                ("reused_tokens", C.c_int64), ("prefill_ms", C.c_double),
                ("decode_ms", C.c_double)]


class SamplerParams(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("temperature", C.c_float), ("top_k", C.c_int),
                ("top_p", C.c_float), ("seed", C.c_uint64)]


class SessionParams(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("threads", C.c_int),
                ("activations", C.c_char_p)]


class ConstraintParams(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("kind", C.c_int), ("source", C.c_char_p),
                ("tool_choice", C.c_char_p)]


TEXT_CALLBACK = C.CFUNCTYPE(C.c_int, C.POINTER(C.c_char), C.c_size_t, C.c_void_p)


def main():
    lib = C.CDLL(sys.argv[1])
    model_path, work = sys.argv[2].encode(), sys.argv[3]
    lib.fm_last_error.restype = C.c_char_p
    lib.fm_version.restype = C.c_char_p
    for name, struct in (("fm_generate_params_default", GenerateParams),
                         ("fm_generation_default", Generation),
                         ("fm_sampler_params_default", SamplerParams),
                         ("fm_session_params_default", SessionParams),
                         ("fm_constraint_params_default", ConstraintParams)):
        getattr(lib, name).restype = struct

    def ok(status):
        if status != OK:
            sys.exit("fm: %s" % lib.fm_last_error().decode())

    print("version: %s" % lib.fm_version().decode())
    model, session = C.c_void_p(), C.c_void_p()
    greedy, sampled = C.c_void_p(), C.c_void_p()
    ok(lib.fm_model_load(model_path, None, C.byref(model)))
    sp = lib.fm_session_params_default()
    sp.threads = 1
    ok(lib.fm_session_create(model, C.byref(sp), C.byref(session)))
    ok(lib.fm_sampler_create(None, C.byref(greedy)))
    smp = lib.fm_sampler_params_default()
    smp.temperature, smp.top_k, smp.top_p, smp.seed = 0.8, 40, 0.9, 7
    ok(lib.fm_sampler_create(C.byref(smp), C.byref(sampled)))

    prompt = [int(t) for t in open(work + "/prompt_ids.txt").read().split()]
    ids = (C.c_int32 * len(prompt))(*prompt)
    gen = lib.fm_generation_default()

    def generate_ids(name, sampler):
        gp = lib.fm_generate_params_default()
        gp.max_new_tokens = 12
        ok(lib.fm_session_reset(session))
        ok(lib.fm_session_generate_tokens(session, ids, len(prompt), sampler, C.byref(gp),
                                          C.byref(gen)))
        print("%s: %s" % (name, " ".join(str(gen.tokens[i]) for i in range(gen.n_tokens))))

    generate_ids("tokens", greedy)
    generate_ids("sampled", sampled)

    # Text, streamed through a Python callback.
    pieces = []

    def on_text(text, size, user):
        pieces.append(C.string_at(text, size))
        return 1

    callback = TEXT_CALLBACK(on_text)
    gp = lib.fm_generate_params_default()
    gp.max_new_tokens = 12
    gp.on_text = C.cast(callback, C.c_void_p)
    ok(lib.fm_session_reset(session))
    prompt_text = open(work + "/prompt.txt", "rb").read()
    ok(lib.fm_session_generate_text(session, prompt_text, greedy, C.byref(gp), C.byref(gen)))
    text = C.string_at(gen.text, gen.text_size)
    assert b"".join(pieces) == text, (pieces, text)
    print("text ids: %s" % " ".join(str(gen.tokens[i]) for i in range(gen.n_tokens)))
    print("text: %s" % text.hex())

    # A JSON Schema.
    cp = lib.fm_constraint_params_default()
    cp.kind = 0
    cp.source = open(work + "/schema.json", "rb").read()
    constraint = C.c_void_p()
    ok(lib.fm_constraint_create(model, C.byref(cp), C.byref(constraint)))
    gp = lib.fm_generate_params_default()
    gp.max_new_tokens = 60
    gp.constraint = constraint
    ok(lib.fm_session_reset(session))
    ok(lib.fm_session_generate_text(session, prompt_text, greedy, C.byref(gp), C.byref(gen)))
    print("schema ids: %s" % " ".join(str(gen.tokens[i]) for i in range(gen.n_tokens)))
    print("schema: %s" % gen.constrained.hex())

    for free, handle in (("fm_constraint_free", constraint), ("fm_sampler_free", greedy),
                         ("fm_sampler_free", sampled), ("fm_session_free", session),
                         ("fm_model_free", model)):
        ok(getattr(lib, free)(handle))
    # Freed twice: a status and a message, not a crash.
    status = lib.fm_model_free(model)
    print("double free: %d %s" % (status, lib.fm_last_error().decode()))


if __name__ == "__main__":
    main()
