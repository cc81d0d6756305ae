# The two commands that set up everything on a fresh machine:
#   make demo   install deps, build, run the main job on the bundled example
#   make check  install deps, build, run every test
#   make check-sanitize  the whole project and its tests under ASan + UBSan,
#               the runtime's threaded tests under TSan (separate builds)
#   make check-sanitize-runtime  CI's sanitizer run: the whole project under
#               ASan + UBSan (tests sampled, lit, corruption), TSan threaded tests
BUILD ?= build
JOBS  ?= 2
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22

.PHONY: all deps configure build check check-sanitize check-sanitize-runtime demo docs clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -G Ninja -S . -B $(BUILD) $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: deps configure
	ninja -C $(BUILD) -j$(JOBS)

# SANITIZE=1 adds the runtime's sanitizer runs to check (about 15 min more on
# 2 cores, measured: README); .ci/run runs check, then check-sanitize-runtime.
check: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)
ifeq ($(SANITIZE),1)
	JOBS=$(JOBS) bash scripts/check-sanitize-runtime.sh $(BUILD)
endif

check-sanitize-runtime: build
	JOBS=$(JOBS) bash scripts/check-sanitize-runtime.sh $(BUILD)

check-sanitize: deps
	JOBS=$(JOBS) bash scripts/check-sanitize.sh $(BUILD)-sanitize $(BUILD)-tsan

demo: build
	@bash scripts/demo.sh $(BUILD)

docs: configure
	ninja -C $(BUILD) fm-docs

clean:
	rm -rf $(BUILD) $(BUILD)-sanitize $(BUILD)-tsan $(BUILD)-asan $(BUILD)-asan-runtime
