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

# `lit --param fm_run_dir=DIR`: the runtime's tools (fm-run, ...) from DIR ahead
# of this build's, e.g. a sanitizer build's over this build's fmc
# (scripts/check-sanitize.sh).
_fm_run_dir = lit_config.params.get("fm_run_dir")
config.environment["PATH"] = os.pathsep.join(
    ([_fm_run_dir] if _fm_run_dir else []) +
    [config.fm_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
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
try:
    _devices = subprocess.run([os.path.join(config.fm_tools_dir, "fm-run"), "--list-devices"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              timeout=60).stdout
except OSError:
    _devices = ""
except subprocess.TimeoutExpired:
    lit_config.note("fm-run --list-devices was killed after 60 s (a hang?): no Vulkan device")
    _devices = ""
if any(l.split()[:2] in (["vulkan", "present"], ["vulkan", "software"])
       for l in _devices.splitlines()):
    config.available_features.add("vulkan-device")
else:
    lit_config.note("no Vulkan device in fm-run (libvulkan, glslc, mesa-vulkan-drivers): "
                    "the Vulkan e2e tests are skipped")
