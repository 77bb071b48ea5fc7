# twinflow: the few commands a person or CI types. Every target installs what is missing
# (scripts/install-deps is idempotent and quick on a ready machine) and configures the build
# directory, so a fresh Debian 12 checkout needs only `make test`.
#
#   make demo        build; boxing plans, the SBP search on two models, short training runs
#                    in-process, under mpirun and from Python; simulations up to GPT-3
#   make test        build and run every test except those labelled slow
#   make test-slow   the tests labelled slow
#   make bench       build and run the benchmarks (build/bin/bench_*, bench/mpi_bench.sh)
#   make test-sanitize  the unit, property and integration tests built with Clang, ASan and
#                    UBSan (build-sanitize/)
#   make fuzz        the libFuzzer targets (tests/fuzz), FUZZ_RUNS executions each (10^6)
#
# Variables: BUILD_DIR (default build), BUILD_TYPE (RelWithDebInfo), CMAKE_ARGS (extra
# configure flags, e.g. -DTWINFLOW_CUDA=OFF), CTEST_ARGS (extra ctest flags, e.g. -R cli).

BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
CMAKE_ARGS ?=
CTEST_ARGS ?=
SANITIZE_DIR ?= build-sanitize
FUZZ_RUNS ?= 1000000

.PHONY: all deps configure build test test-slow demo bench clean help sanitize-configure \
	test-sanitize fuzz

all: build

help:
	@sed -n '5,15p' $(firstword $(MAKEFILE_LIST)) | sed 's/^# \{0,1\}//'

deps:
	scripts/install-deps

configure: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD_DIR)

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j2 -LE slow $(CTEST_ARGS)

test-slow: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -L slow $(CTEST_ARGS)

demo: build
	$(BUILD_DIR)/bin/twinflow demo
	@echo; echo "== The SBP search on a 3-layer MLP, hybrid dp=2,tp=2 on 4 devices =="
	$(BUILD_DIR)/bin/twinflow explain --model mlp --devices 4 --strategy dp=2,tp=2 --summary
	@echo; echo "== Training it for real on 4 in-process CPU devices, checked against one device =="
	$(BUILD_DIR)/bin/twinflow run --model mlp --devices 4 --strategy dp=2,tp=2 --steps 3 --check
	@echo; echo "== The same job on 2 MPI ranks of 2 devices each, checked against one device =="
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 2 --oversubscribe \
	  --bind-to none $(BUILD_DIR)/bin/twinflow run --model mlp --devices 4 --strategy dp=2,tp=2 \
	  --steps 10 --check >$(BUILD_DIR)/demo-mpirun.txt && cat $(BUILD_DIR)/demo-mpirun.txt
	@echo; echo "== From Python: an MLP on scikit-learn's digits, dp=2,tp=2 (examples/mlp_digits.py) =="
	PYTHONPATH=$(BUILD_DIR)/python /usr/bin/python3 examples/mlp_digits.py --epochs 10 --target 0.9
	@echo; echo "== The simulator's prediction for the mpirun job (the same Plan), calibrated on this host =="
	$(BUILD_DIR)/bin/twinflow calibrate --model mlp --devices 4 --strategy dp=2,tp=2 \
	  --output $(BUILD_DIR)/cpu-local.pbtxt
	$(BUILD_DIR)/bin/twinflow sim --model mlp --devices 4 --strategy dp=2,tp=2 --steps 10 \
	  --ranks 2 --cluster $(BUILD_DIR)/cpu-local.pbtxt >$(BUILD_DIR)/demo-sim.txt && \
	  cat $(BUILD_DIR)/demo-sim.txt
	@awk '/^step time/ { v = $$3; if ($$4 == "s") v *= 1000; ms[FILENAME] = v } \
	  END { r = ms[ARGV[1]]; s = ms[ARGV[2]]; printf "predicted %.1f ms a step against %.1f ms measured under mpirun: %+.1f%%\n", \
	  s, r, 100 * (s - r) / r }' $(BUILD_DIR)/demo-mpirun.txt $(BUILD_DIR)/demo-sim.txt
	@echo; echo "== GPT-3 175B on 1,024 devices, dp=8,tp=8,pp=16 =="
	$(BUILD_DIR)/bin/twinflow explain --model gpt --preset gpt3-175b --devices 1024 \
	  --strategy dp=8,tp=8,pp=16 --summary
	@echo; echo "== And simulated on 128 DGX-H100 nodes: 64 micro-batches, 1F1B, full activation recomputation,"
	@echo "   bf16, fused attention; the exact Plan, one of its 8 data-parallel copies lowered and simulated =="
	$(BUILD_DIR)/bin/twinflow sim --model gpt --preset gpt3-175b \
	  --strategy dp=8,tp=8,pp=16,mb=64,recompute=full,precision=bf16 --cluster dgx-h100 \
	  --nodes 128 --device cuda --attention fused

bench: deps
	BUILD_TYPE=$(BUILD_TYPE) CMAKE_ARGS="$(CMAKE_ARGS)" scripts/bench $(BUILD_DIR)
	bench/mpi_bench.sh $(BUILD_DIR)
	# The 8B case (minutes); `bench/tune_bench.sh build 70b 175b` runs the others (far longer).
	bench/tune_bench.sh $(BUILD_DIR) 8b

# One Clang build with ASan, UBSan and libFuzzer's instrumentation serves both targets below
# (no CUDA: nvcc does not take the sanitizers).
sanitize-configure:
	scripts/install-deps --sanitize
	CC=clang-14 CXX=clang++-14 cmake -S . -B $(SANITIZE_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Sanitize \
	  -DTWINFLOW_SANITIZE=ON -DTWINFLOW_CUDA=OFF

# Leak checking is off: Open MPI and protobuf keep process-lifetime allocations on purpose.
test-sanitize: sanitize-configure
	cmake --build $(SANITIZE_DIR) --target unit_tests property_tests integration_tests
	ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir $(SANITIZE_DIR) \
	  --output-on-failure -j2 -L "unit|property|integration" -LE "slow|mpi" $(CTEST_ARGS)

fuzz: sanitize-configure
	cmake --build $(SANITIZE_DIR) --target twinflow fuzz_plan fuzz_checkpoint fuzz_cluster_spec fuzz_text
	scripts/fuzz $(SANITIZE_DIR) $(FUZZ_RUNS)

clean:
	rm -rf $(BUILD_DIR) $(SANITIZE_DIR)
