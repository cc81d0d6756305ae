# lit configuration of the fm suite: .mlir files and shell tests under test/.
import os
import lit.formats

config.name = "fm"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt", "Inputs",
                   "reference", "unit", "fuzz"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fm_obj_root, "test")

# Every test has a time limit, so that a hang fails that test in minutes
# (lit needs psutil for it: scripts/install-deps.sh installs python3-psutil).
# The slowest test takes ~20 s in a plain build; sanitizer builds run
# everything ~3-10x slower.
try:
    import psutil  # noqa: F401
except ImportError:
    lit_config.fatal("python3-psutil is missing (scripts/install-deps.sh installs it): "
                     "lit's per-test time limit needs it")
lit_config.maxIndividualTestTime = 1200 if getattr(config, "fm_sanitize", "") else 300

# `lit --param fm_run_dir=DIR`: the runtime's tools (fm-run, ...) from DIR ahead
# of this build's, e.g. a sanitizer build's over this build's fmc
# (scripts/check-sanitize.sh).
_fm_run_dir = lit_config.params.get("fm_run_dir")
config.environment["PATH"] = os.pathsep.join(
    ([_fm_run_dir] if _fm_run_dir else []) +
    [config.fm_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
# What the device and kernel choice read, passed to the tests as lit itself
# sees them (lit passes few variables through): the Vulkan drivers asked for
# (scripts/sanitize-env.sh hides them from most sanitizer stages) and the
# kernels' ISA cap (runtime/kernels/isa.h).
for _var in ("VK_ICD_FILENAMES", "VK_DRIVER_FILES", "FM_MAX_CPU_ISA"):
    if _var in os.environ:
        config.environment[_var] = os.environ[_var]
config.substitutions.append(("%fm_src", config.fm_src_root))
config.substitutions.append(("%examples", os.path.join(config.fm_src_root, "examples")))
config.substitutions.append(("%python", config.python_numpy))
config.substitutions.append(("%fm_bin", config.fm_tools_dir))
config.substitutions.append(("%{tokens32}", ",".join(str(t) for t in [
    1, 17, 42, 5, 9, 100, 3, 4, 5, 6, 7, 8, 9, 10, 11, 2, 30, 77, 200, 12, 13, 14,
    15, 16, 17, 18, 19, 20, 21, 22, 23, 24])))

import shutil
if shutil.which("llvm-objdump", path=config.environment["PATH"]):
    config.available_features.add("fm-objdump")

# fmc's ELF loader cross-built for AArch64 (test/loader/CMakeLists.txt), run
# under qemu-user with the AArch64 sysroot's C runtime first
# (cmake/FmQemu.cmake says why).
_qemu_a64 = shutil.which("qemu-aarch64-static") or shutil.which("qemu-aarch64")
_elf_load_a64 = os.path.join(config.fm_obj_root, "test", "loader", "fm_elf_load_aarch64")
# The whole runtime cross-built (test/aarch64): wrappers for the e2e checks.
_a64_bin = os.path.join(config.fm_obj_root, "test", "aarch64", "bin")
if _qemu_a64 and os.access(os.path.join(config.fm_obj_root, "aarch64-runtime", "bin", "fm-run"),
                           os.X_OK) and os.access(os.path.join(_a64_bin, "fm-run"), os.X_OK):
    config.available_features.add("aarch64-runtime")
    config.substitutions.append(("%{aarch64_bin}", _a64_bin))
if _qemu_a64 and os.access(_elf_load_a64, os.X_OK):
    config.available_features.add("aarch64-qemu")
    config.substitutions.append(
        ("%{elf_load_aarch64}", "%s -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=%s %s" % (
            _qemu_a64, "/usr/aarch64-linux-gnu/lib:/usr/lib/aarch64-linux-gnu", _elf_load_a64)))

# The text tests' tokenizer oracle (@lenml/tokenizers) runs under node.
if shutil.which("node"):
    config.available_features.add("node")

if getattr(config, "fm_have_mpi", 0):
    config.available_features.add("mpi")
    # Open MPI refuses root without these; CI runs as root.
    config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
else:
    lit_config.note("MPI (mpirun + libopenmpi-dev) not found: the MPI tests are skipped")

# GPU targets: spirv-val/spirv-dis (spirv-tools) check every SPIR-V module
# fmc emits; the metal target exists where the SPIRV-Cross C API was found;
# the Vulkan e2e tests (test/gpu, ctest lit.gpu) need a Vulkan device in
# fm-run (lavapipe counts: the tests ask for it explicitly).
if shutil.which("spirv-val") and shutil.which("spirv-dis"):
    config.available_features.add("spirv-tools")
if getattr(config, "fm_have_metal_target", 0):
    config.available_features.add("metal-target")
if shutil.which("glslc"):
    config.available_features.add("glslc")
# The runtime's Vulkan kernels as glslc compiled them (fm-msl translates
# them to MSL).
_vk_spv = os.path.join(config.fm_obj_root, "runtime", "hal", "vulkan", "spv")
if os.path.isdir(_vk_spv):
    config.available_features.add("vulkan-kernels")
    config.substitutions.append(("%vk_spv", _vk_spv))
# The cuda target needs the CUDA toolkit's libdevice (CUDA_PATH or the
# build's FM_CUDA_PATH); its PTX is checked by the toolkit's ptxas; the
# metadata round trip runs the CUDA device's unit test binary.
_cuda = os.environ.get("CUDA_PATH") or getattr(config, "fm_cuda_path", "/usr/local/cuda")
if os.path.isfile(os.path.join(_cuda, "nvvm", "libdevice", "libdevice.10.bc")):
    config.available_features.add("cuda-toolkit")
else:
    lit_config.note("no CUDA toolkit at %s (nvvm/libdevice): the cuda target tests are skipped" % _cuda)
if os.access(os.path.join(_cuda, "bin", "ptxas"), os.X_OK):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", os.path.join(_cuda, "bin", "ptxas")))
if os.access(os.path.join(config.fm_tools_dir, "fm_cuda_test"), os.X_OK):
    config.available_features.add("cuda-device-test")
# clang (LLVM's, beside FileCheck) checks the MSL as C++ for OpenCL.
config.substitutions.append(("%clang", os.path.join(config.llvm_tools_dir, "clang")))
import subprocess
# fm-run --list-devices decides whether the Vulkan e2e tests run: a fm-run
# that fails here (a crash, a sanitizer report) must fail the suite, not
# leave those tests silently unsupported.
_fm_run = os.path.join(config.fm_tools_dir, "fm-run")
try:
    _listed = subprocess.run([_fm_run, "--list-devices"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=60)
except subprocess.TimeoutExpired:
    lit_config.fatal("fm-run --list-devices was killed after 60 s (a hang?)")
except OSError as e:
    lit_config.fatal("cannot run %s --list-devices: %s" % (_fm_run, e))
if _listed.returncode != 0:
    lit_config.fatal("fm-run --list-devices failed (exit %d):\n%s" %
                     (_listed.returncode, _listed.stderr[-4000:]))
_devices = _listed.stdout
if any(l.split()[:2] in (["vulkan", "present"], ["vulkan", "software"])
       for l in _devices.splitlines()):
    config.available_features.add("vulkan-device")
else:
    lit_config.note("no Vulkan device in fm-run here%s: the Vulkan e2e tests are unsupported "
                    "(test/lit_checked.py fails any that run)" %
                    (" (VK_ICD_FILENAMES=%s)" % os.environ["VK_ICD_FILENAMES"]
                     if os.environ.get("VK_ICD_FILENAMES") else
                     " (libvulkan-dev, glslc and mesa-vulkan-drivers give one)"))

# What this machine's devices can be, from facts fmc does not decide (which
# drivers are installed or asked for), for e2e/device.test's fm-run
# --list-devices: a state outside these fails the test.
#   cuda: not built (no CUDA toolkit at build time), absent (no libcuda.so.1)
#         or present;
#   vulkan: not built (no libvulkan-dev/glslc at build time), absent (no
#         driver: none installed, or VK_ICD_FILENAMES points at none),
#         software (Mesa's lavapipe) or present (a GPU's driver and a
#         /dev/dri render node).
import ctypes
import glob


def _cuda_state():
    if "cuda-device-test" not in config.available_features:
        return "not built"
    try:
        ctypes.CDLL("libcuda.so.1")
        return "present"
    except OSError:
        return "absent"


def _vulkan_states():
    if "vulkan-kernels" not in config.available_features:
        return ["not built"]
    icds = os.environ.get("VK_ICD_FILENAMES") or os.environ.get("VK_DRIVER_FILES")
    if icds:
        files = [f for f in icds.split(os.pathsep) if os.path.isfile(f)]
    else:
        files = glob.glob("/usr/share/vulkan/icd.d/*.json") + \
            glob.glob("/etc/vulkan/icd.d/*.json")
    states = []
    if any(os.path.basename(f).startswith("lvp_icd") for f in files):
        states.append("software")
    if any(not os.path.basename(f).startswith("lvp_icd") for f in files) and \
            glob.glob("/dev/dri/renderD*"):
        states.append("present")
    return states or ["absent"]


# A Vulkan driver that aborts the process that loads it (test/icd), for
# e2e/device_probe.test.
_trap_icd = os.path.join(config.fm_obj_root, "test", "icd", "fm_trap_icd.json")
if os.path.isfile(_trap_icd):
    config.available_features.add("trap-icd")
    config.substitutions.append(("%{trap_icd}", _trap_icd))

config.substitutions.append(("%{cuda_state}", _cuda_state()))
config.substitutions.append(("%{vulkan_states}", "|".join(_vulkan_states())))

# The activations fm-run's default takes for a w2 group-32 model's prefill
# GEMMs (e2e/activations.test): int11 where the CPU has AMX (its flags in
# /proc/cpuinfo) and FM_MAX_CPU_ISA does not cap the kernels below it, int8x2
# elsewhere.
def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


_amx = {"amx_tile", "amx_int8"} <= _cpu_flags() and \
    os.environ.get("FM_MAX_CPU_ISA", "amx") in ("", "amx")
config.substitutions.append(("%{int11_default}", "int11" if _amx else "int8x2"))
