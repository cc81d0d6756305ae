# The two commands that set up everything on a fresh machine:
#   make demo   install deps, build, run the main job on the bundled example
#   make check  install deps, build, run every test
#   make check-sanitize  CI's sanitizer run: the whole project under ASan +
#               UBSan (its tests, the fuzz targets, lit, the corruption test;
#               the slowest tests sampled), the threaded tests under TSan
BUILD ?= build
JOBS  ?= 2
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22

.PHONY: all deps configure build check check-sanitize demo docs clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -G Ninja -S . -B $(BUILD) $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: deps configure
	ninja -C $(BUILD) -j$(JOBS)

# SANITIZE=1 adds the sanitizer runs to check (measured: docs/ci.md); .ci/run
# runs check, then check-sanitize.
check: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)
ifeq ($(SANITIZE),1)
	JOBS=$(JOBS) bash scripts/check-sanitize.sh $(BUILD)
endif

# The plain build only for its lit (scripts/check-sanitize.sh).
check-sanitize: deps configure
	JOBS=$(JOBS) bash scripts/check-sanitize.sh $(BUILD)

demo: build
	@bash scripts/demo.sh $(BUILD)

docs: configure
	ninja -C $(BUILD) fm-docs

clean:
	rm -rf $(BUILD) $(BUILD)-sanitize $(BUILD)-tsan $(BUILD)-asan $(BUILD)-asan-runtime
