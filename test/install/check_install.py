#!/usr/bin/python3
"""`cmake --install` and what an application builds against it.

  check_install.py --build DIR --cmake CMAKE --cc CC --cxx CXX --work DIR

Installs the runtime component and, apart, the compiler component into
fresh prefixes, and checks what lands there: libfmrt shared (its SONAME) and
static, exactly the public headers (which compile on their own: none needs
a header that is not installed), fm-run and fm-tokenize, the CMake package
and fmrt.pc; fmc and fm-opt only in the compiler's prefix; an installed
libfmrt.so that links no LLVM or MLIR. Then builds, out of tree, the C++
example (examples/app/generate.cpp) and the C program of docs/embedding.md
(its first ```c block, compiled as it is written there) once with CMake
(find_package(fmrt CONFIG): fmrt::fmrt, and fmrt::fmrt_static) and once with
pkg-config, and runs each on a tiny model (test/capi/check_capi.py's):
the example's ids are fm-run --tokens', the chat prints what fm-run --chat
prints, with and without --json-schema. Prints one line per check and
`N passed, N failed` at the end; exits 1 on a failure.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "capi"))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
import check_capi  # noqa: E402  (the tiny model)
import checks  # noqa: E402
from checks import check, run  # noqa: E402  (PASS/FAIL lines, time-limited commands)

PUBLIC = {"fm.h", "chat_template.h", "communicator.h", "constrained_logits.h",
          "conversation.h", "device_info.h", "grammar.h", "guided.h", "guided_tokenizer.h",
          "image.h", "image_prompt.h", "logits_processor.h", "perplexity.h", "runtime.h",
          "sampler.h", "status.h", "tokenizer.h", "tool_call_stream.h"}
TURNS = ["Hello! Who are you?", "And then?"]

CMAKE_APP = """cmake_minimum_required(VERSION 3.20)
project(fmrt_app C CXX)
find_package(fmrt 0.1 CONFIG REQUIRED)
add_executable(generate {generate})
target_link_libraries(generate PRIVATE fmrt::fmrt)
add_executable(chat chat.c)
set_target_properties(chat PROPERTIES C_STANDARD 99 C_EXTENSIONS OFF)
target_link_libraries(chat PRIVATE fmrt::fmrt)
add_executable(chat_static chat.c)
set_target_properties(chat_static PROPERTIES C_STANDARD 99 C_EXTENSIONS OFF)
target_link_libraries(chat_static PRIVATE fmrt::fmrt_static)
# An artifact compiled with --cpu-code static: its kernels linked in.
add_executable(generate_kernels {generate} {kernels}.kernels.c {kernels}.kernels.o)
target_link_libraries(generate_kernels PRIVATE fmrt::fmrt)
"""


def listing(prefix):
    out = set()
    for d, _, files in os.walk(prefix):
        for f in files:
            out.add(os.path.relpath(os.path.join(d, f), prefix))
    return out


def doc_program():
    text = open(os.path.join(ROOT, "docs", "embedding.md"), encoding="utf-8").read()
    m = re.search(r"```c\n(.*?)```", text, re.S)
    return m.group(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--cmake", default="cmake")
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--cxx", default="c++")
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    work = os.path.abspath(args.work)
    if os.path.isdir(work):
        shutil.rmtree(work)
    os.makedirs(work)
    prefix, cprefix = os.path.join(work, "prefix"), os.path.join(work, "compiler")
    run([args.cmake, "--install", args.build, "--prefix", prefix, "--component", "runtime"])
    run([args.cmake, "--install", args.build, "--prefix", cprefix, "--component", "compiler"])

    files = listing(prefix)
    headers = {f[len("include/fm/"):] for f in files if f.startswith("include/fm/")}
    check(headers == PUBLIC, "the public headers, and only them",
          "extra %s, missing %s" % (sorted(headers - PUBLIC), sorted(PUBLIC - headers)))
    check(not [f for f in files if "generated" in f], "no generated header installed")
    libdir = next(os.path.dirname(f) for f in files if os.path.basename(f) == "libfmrt.a")
    lib = lambda name: os.path.join(prefix, libdir, name)  # noqa: E731
    so = lib("libfmrt.so")
    check(os.path.islink(so) and os.path.exists(lib("libfmrt.so.1")),
          "libfmrt.so -> libfmrt.so.1 (the ABI) -> the library")
    soname = run(["readelf", "-d", so])[0].decode()
    check("Library soname: [libfmrt.so.1]" in soname, "SONAME libfmrt.so.1")
    check({"bin/fm-run", "bin/fm-tokenize"} <= files and not {"bin/fmc", "bin/fm-opt"} & files,
          "the runtime's tools, not the compiler's", str(sorted(f for f in files
                                                                 if f.startswith("bin/"))))
    check({libdir + "/cmake/fmrt/fmrtConfig.cmake", libdir + "/cmake/fmrt/fmrtConfigVersion.cmake",
           libdir + "/pkgconfig/fmrt.pc"} <= files, "the CMake package and fmrt.pc")
    cfiles = listing(cprefix)
    check(cfiles == {"bin/fmc", "bin/fm-opt"}, "the compiler component: fmc and fm-opt",
          str(sorted(cfiles)))
    ldd = run(["ldd", so])[0].decode()
    check(not re.search(r"libLLVM|libMLIR|libclang", ldd), "libfmrt.so links no LLVM or MLIR",
          ldd)
    # Each header compiles alone against the prefix.
    for h in sorted(headers):
        src = os.path.join(work, "header.cpp")
        open(src, "w").write("#include <fm/%s>\n" % h)
        p = subprocess.run([args.cxx, "-std=c++17", "-fsyntax-only", "-I",
                            os.path.join(prefix, "include"), src],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        check(p.returncode == 0, "fm/%s compiles against the prefix alone" % h,
              p.stdout.decode()[-400:])

    # The model, and what fm-run says.
    tool = lambda name: os.path.join(args.build, "bin", name)  # noqa: E731
    fmb = check_capi.make_inputs(tool, os.path.join(work, "model"))
    model = os.path.dirname(fmb)
    turns = os.path.join(work, "turns.txt")
    open(turns, "w").write("\n---\n".join(TURNS) + "\n")
    schema = os.path.join(model, "schema.json")
    want_ids = run([tool("fm-run"), fmb, "--tokens", "1,17,42", "--max-new-tokens", "16"])[0]
    chat = [tool("fm-run"), fmb, "--chat", "--chat-file", turns, "--system", "You are terse.",
            "--max-new-tokens", "32"]
    want_chat = run(chat)[0]
    want_json = run(chat + ["--json-schema", schema], ok=(0, 3))[0]
    # The same checkpoint with its CPU kernels to link statically, and
    # another architecture's (afm7: other kernels, so another key; the key
    # is the code's, so a checkpoint of the same shapes shares it).
    static = os.path.join(work, "static.fmb")
    other = os.path.join(work, "other.fmb")
    out = run([tool("fmc"), "compile", os.path.join(model, "checkpoint"), "-o", static,
               "--max-prefill", "8", "--cpu-code", "static"])[0].decode()
    key = re.search(r"static \(key ([0-9a-f]{16})\)", out)
    check(key is not None and os.path.exists(static + ".kernels.o") and
          os.path.exists(static + ".kernels.c"),
          "fmc compile --cpu-code static writes the artifact, .kernels.o and .kernels.c", out)
    key = key.group(1) if key else "?"
    run(["/usr/bin/python3", os.path.join(ROOT, "examples", "gen_checkpoint.py"), "--family",
         "afm7", "--preset", "tiny", "--out", os.path.join(work, "afm7")])
    out = run([tool("fmc"), "compile", os.path.join(work, "afm7"), "-o", other,
               "--cpu-code", "static"])[0].decode()
    other_key = re.search(r"static \(key ([0-9a-f]{16})\)", out)
    other_key = other_key.group(1) if other_key else "?"
    err = run([tool("fm-run"), static, "--tokens", "1,17,42"], ok=(1,))[1]
    check("compiled to link statically (key %s) and this program has not linked them" % key
          in err, "fm-run refuses an artifact whose kernels it has not linked, naming the key",
          err)

    src = os.path.join(work, "chat.c")
    open(src, "w").write(doc_program())
    generate = os.path.join(ROOT, "examples", "app", "generate.cpp")
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(prefix, libdir))

    def try_programs(how, generate_exe, chats):
        out = run([generate_exe, fmb, "1", "17", "42"], env=env)[0].decode().splitlines()
        check(out[-1].split() == want_ids.decode().split(),
              "%s: examples/app's ids are fm-run --tokens'" % how, "%r" % out)
        for exe in chats:
            name = os.path.basename(exe)
            got = run([exe, fmb] + TURNS, env=env)[0]
            check(got == want_chat, "%s: %s prints what fm-run --chat prints" % (how, name),
                  "%r != %r" % (got, want_chat))
            got = run([exe, fmb, "--schema", schema] + TURNS, env=env)[0]
            check(got == want_json, "%s: %s --schema prints what fm-run --chat --json-schema "
                  "prints" % (how, name), "%r != %r" % (got, want_json))

    # CMake.
    app = os.path.join(work, "cmake-app")
    os.makedirs(app)
    shutil.copy(src, app)
    open(os.path.join(app, "CMakeLists.txt"), "w").write(
        CMAKE_APP.format(generate=generate, kernels=static))
    run([args.cmake, "-S", app, "-B", os.path.join(app, "build"), "-G", "Ninja",
         "-DCMAKE_PREFIX_PATH=" + prefix, "-DCMAKE_C_COMPILER=" + args.cc,
         "-DCMAKE_CXX_COMPILER=" + args.cxx, "-DCMAKE_BUILD_TYPE=Release"])
    run([args.cmake, "--build", os.path.join(app, "build")])
    exe = lambda name: os.path.join(app, "build", name)  # noqa: E731
    try_programs("CMake", exe("generate"), [exe("chat"), exe("chat_static")])
    static_deps = run(["readelf", "-d", exe("chat_static")])[0].decode()
    check("libfmrt" not in static_deps, "fmrt::fmrt_static links libfmrt.a (no libfmrt.so)")
    got = run([exe("generate_kernels"), static, "1", "17", "42"], env=env)[0].decode()
    check(got.splitlines()[-1].split() == want_ids.decode().split(),
          "examples/app with the kernels linked statically: fm-run --tokens' ids on the "
          "same checkpoint compiled to an image", "%r" % got)
    err = run([exe("generate_kernels"), other, "1", "17", "42"], env=env, ok=(1,))[1]
    check(("(key %s) and this program has not linked them (it has the kernels of %s)"
           % (other_key, key)) in err,
          "kernels of another artifact are refused, naming both keys", err)
    err = run([exe("generate"), static, "1", "17", "42"], env=env, ok=(1,))[1]
    check("(key %s) and this program has not linked them (it has none)" % key in err,
          "a program without the kernels refuses the static artifact", err)

    # pkg-config.
    pc_env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(prefix, libdir, "pkgconfig"))
    flags = run(["pkg-config", "--cflags", "--libs", "fmrt"], env=pc_env)[0].decode().split()
    version = run(["pkg-config", "--modversion", "fmrt"], env=pc_env)[0].decode().strip()
    check(re.fullmatch(r"\d+\.\d+\.\d+", version) is not None, "pkg-config --modversion fmrt: "
          + version)
    pc = os.path.join(work, "pkg-config")
    os.makedirs(pc)
    run([args.cc, "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", src, "-o",
         os.path.join(pc, "chat")] + flags)
    run([args.cxx, "-std=c++17", generate, "-o", os.path.join(pc, "generate")] + flags)
    try_programs("pkg-config", os.path.join(pc, "generate"), [os.path.join(pc, "chat")])

    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
