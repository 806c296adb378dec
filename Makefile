# The two commands of the README:
#   make run    builds the CLI (only it and its libraries), fetches SmolLM2-135M-Instruct
#               (scripts/fetch_smollm2.sh) and chats with it
#   make test   builds everything and runs every test
# plus `make test-sanitize` (CPU tests under AddressSanitizer + UBSan), `make bench` (builds the
# benchmarks it runs) and `make format`.
JOBS ?= $(shell nproc)
# ccache hits across checkouts in different folders (CI clones afresh each time).
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1
BUILD ?= build
CMAKE_FLAGS ?=

.PHONY: run test test-sanitize bench bench-peers setup setup-torch configure build cli format clean

setup:
	@scripts/setup.sh

# setup plus PyTorch and transformers in a cached venv, for the torch.compile tests only.
setup-torch:
	@scripts/setup.sh --torch

$(BUILD)/build.ninja: | setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DLUMINAL_WERROR=ON $(CMAKE_FLAGS) >/dev/null

build: setup $(BUILD)/build.ninja
	@cmake --build $(BUILD) -j $(JOBS)

# The `luminal` CLI and the libraries it links, nothing else (no tests, benchmarks or examples).
cli: setup $(BUILD)/build.ninja
	@cmake --build $(BUILD) -j $(JOBS) --target luminal_cli

PROMPT ?= Give me three short tips for writing clear code.
run: cli
	@model=$$(scripts/fetch_smollm2.sh) && \
	  $(BUILD)/apps/luminal run "$$model" --chat --prompt "$(PROMPT)" --max-tokens 256

# (configured again after the build so the torch.compile tests find the venv setup-torch made,
# also in a build folder configured before it existed)
test: setup-torch build
	@cmake -S . -B $(BUILD) >/dev/null
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# (leaving out the tests labelled baseline, the evaluator's loops' second copy of the same source,
# and fuzz, whose fuzzers are built with clang++ and the sanitizers alike in both builds; the
# libraries shared, so that the ~60 test binaries do not each carry a sanitized copy of them:
# 2 GB of build where static libraries took 11 GB and filled CI's disk)
test-sanitize: setup
	@cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DLUMINAL_WERROR=ON -DLUMINAL_SANITIZE=ON -DLUMINAL_NO_CUDA=ON \
	  -DLUMINAL_BUILD_BENCH=OFF -DLUMINAL_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=ON >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ctest --output-on-failure -j $(JOBS) -L cpu -LE "baseline|fuzz"

BENCHES := bench_llama_hlir bench_small_transformer bench_session_overhead bench_memory_plan \
           bench_cpu_kernels bench_compile_cache bench_llm_cpu bench_tokenizer bench_quant_gemv \
           bench_thread_pool bench_moe_cpu
bench: setup $(BUILD)/build.ninja
	@cmake --build $(BUILD) -j $(JOBS) --target $(BENCHES)
	@$(BUILD)/bench/bench_llama_hlir
	@$(BUILD)/bench/bench_small_transformer
	@$(BUILD)/bench/bench_session_overhead
	@$(BUILD)/bench/bench_memory_plan
	@$(BUILD)/bench/bench_cpu_kernels
	@$(BUILD)/bench/bench_quant_gemv
	@$(BUILD)/bench/bench_thread_pool
	@$(BUILD)/bench/bench_compile_cache
	@$(BUILD)/bench/bench_llm_cpu
	@$(BUILD)/bench/bench_moe_cpu
	@scripts/fixtures/generate.sh $(BUILD)/fixtures
	@LUMINAL_FIXTURES=$(BUILD)/fixtures $(BUILD)/bench/bench_tokenizer

# luminal against llama.cpp on the CPU, pairs back to back: SmolLM2 Q4_1 / Q8_0 / Q4_K_M, 2 and 1
# threads (builds llama.cpp from the llama-cpp-python sdist once and writes the Q8_0 and Q4_K_M
# files from the Q4_1 one; scripts/bench/quant_pairs.sh).
bench-peers: cli
	@scripts/fetch_smollm2.sh >/dev/null && scripts/gguf/make_quant_models.sh Q8_0 Q4_K_M >/dev/null
	@scripts/bench/quant_pairs.sh 3 "Q4_1 Q8_0 Q4_K_M" "2 1"

format:
	@git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

clean:
	@rm -rf build build-asan
