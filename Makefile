# The two commands: `make demo` and `make test`. Both set up what is missing first.
BUILD ?= build
# The ONNX 1.22 node suite: ONYX_CONFORMANCE_DIR from the environment, else beside the clone.
SUITE ?= $(or $(ONYX_CONFORMANCE_DIR),$(CURDIR)/../shared/conformance/onnx-node)
JOBS ?= $(shell nproc)
# Seconds per fuzz target of `make fuzz` (`make test` runs each for 30, seeded with every
# 10th model of the suites).
FUZZ_SECONDS ?= 300

.PHONY: all setup build demo test test-models test-asan test-tsan test-wasm conformance-report bench clean \
        web-build web test-web bench-web fuzz

all: build

setup:
	@scripts/setup.sh

$(BUILD)/build.ninja:
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DONYX_CONFORMANCE_DIR=$(SUITE) >/dev/null

build: setup $(BUILD)/build.ninja
	@ninja -C $(BUILD) -j$(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS)
	@scripts/test_wasm.sh
	@scripts/test_web.sh $(BUILD)
	@scripts/test_tsan.sh $(BUILD)
	@scripts/test_fuzz.sh --seconds 30 --every 10

test-models: build
	@cd $(BUILD) && ctest -R 'models_parity|crnn_digits' --output-on-failure

# onyx against onnxruntime-node, interleaved in one run (bench/README.md); rewrites
# bench/RESULTS.md and bench/results.json. Builds the CLI and the GEMM microbenchmark
# (bench/gemm_bench.cc: FMA peak and SGEMM 1024^3 in RESULTS.md). To iterate on one model:
# make bench BENCH_ARGS="--only resnet50 --rounds 2".
bench: setup $(BUILD)/build.ninja
	@ninja -C $(BUILD) -j$(JOBS) onyx onyx_gemm_bench
	@/usr/bin/python3 bench/run.py --build-dir $(BUILD) $(BENCH_ARGS)

test-wasm: setup
	@scripts/test_wasm.sh

# Rewrites tests/conformance/REPORT.md and adds newly passing cases to the allowlist.
conformance-report: build
	@$(BUILD)/onyx_conformance --suite $(SUITE) --jobs $(JOBS) \
	  --allowlist tests/conformance/expected_pass.txt \
	  --write-allowlist tests/conformance/expected_pass.txt \
	  --report tests/conformance/REPORT.md --json $(BUILD)/conformance.json
	@$(BUILD)/onyx_conformance --suite /usr/share/libonnx-testdata/data/node --jobs $(JOBS) \
	  --allowlist tests/conformance/expected_pass_onnx112.txt \
	  --write-allowlist tests/conformance/expected_pass_onnx112.txt \
	  --report tests/conformance/REPORT_onnx112.md --json $(BUILD)/conformance_onnx112.json

test-asan: setup
	@cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DONYX_SANITIZE=ON >/dev/null
	@ninja -C build-asan -j$(JOBS) onyx_unit_tests
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ./onyx_unit_tests

# The concurrency stress test (tests/stress) under ThreadSanitizer (clang-16); reads the
# models the main build's tests export into $(BUILD)/models.
test-tsan: build
	@scripts/test_tsan.sh $(BUILD)

# onyx-web (bindings/js): both WebAssembly builds (build-web/, build-web-mt/) and the
# TypeScript package into bindings/js/dist/; `make web` serves the digit reader page (web/)
# with COOP/COEP headers so the pthreads build is used.
web-build: setup
	@bindings/js/build.sh

web: web-build
	@node web/serve.mjs --build $(BUILD)

# Playwright tests of the page and the package (tests/web/) in Debian's chromium; they
# read the native CLI and the models exported by the main build's tests.
test-web: build
	@cd $(BUILD) && ctest -R models_export --output-on-failure >/dev/null
	@scripts/test_web.sh $(BUILD)

# onyx-web against onnxruntime-web 1.30 in headless chromium; rewrites bench/RESULTS-web.md.
bench-web: build web-build
	@cd $(BUILD) && ctest -R models_export --output-on-failure >/dev/null
	@NODE_PATH=$(CURDIR)/node_modules node bench/web/run.mjs --build $(BUILD) $(BENCH_ARGS)

# The libFuzzer targets of tests/fuzz (clang-16, ASan + UBSan, in build-fuzz): replays the
# regressions, then runs each target for FUZZ_SECONDS, two at a time; the corpora grow in
# build-fuzz/corpus.
fuzz: setup
	@scripts/test_fuzz.sh --seconds $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) build-asan build-tsan build-wasm build-web build-web-mt build-fuzz bindings/js/dist
