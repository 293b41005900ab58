# The README's two commands, plus a few conveniences. CMake does the build.
.PHONY: run test build deps bench clean

LISTEN ?= 127.0.0.1:8080
JOBS ?= $(shell nproc)

deps:
	@scripts/deps.sh

build: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build -j $(JOBS)

# Starts gpuinv with a demo fleet on its embedded SQLite database, and
# simulated GPU hosts that report through the real agent. Installs and
# builds only what that needs: gpuinv, gpuinv-agent and the stand-in NVML
# (no browser, Prometheus, cmocka or test targets).
run:
	@scripts/deps.sh --run
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build -j $(JOBS) --target gpuinv gpuinv-agent fake_nvml
	@LISTEN=$(LISTEN) scripts/demo.sh

# Builds with AddressSanitizer + UndefinedBehaviorSanitizer and runs every
# test. The optimized build that `make run` uses is built too: the
# compiler's warnings (errors here) differ with optimization. Three tests
# at once on two cores: most of them wait on servers and databases.
test: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DGI_SANITIZE=ON >/dev/null
	cmake --build build-asan -j $(JOBS)
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build -j $(JOBS) --target gpuinv gpuinv-agent fake_nvml
	cd build-asan && ctest --output-on-failure -j 3

# Every benchmark, each next to its reference (figures: docs/PERFORMANCE.md).
bench: build
	@scripts/deps.sh --bench
	bench/run.sh
	BENCH_STORE=postgresql bench/run.sh
	bench/replicas.sh
	bench/ingest.sh 2 100
	BENCH_PG=auto bench/ingest.sh 4 50
	bench/agent.sh 180
	bench/usage.sh
	BENCH_STORE=postgresql bench/usage.sh
	bench/home.sh
	node bench/abuse.mjs build/gpuinv
	cc -O2 -Isrc bench/bench_promtext.c src/parse/promtext.c src/parse/dcgm.c \
	  src/core/observation.c src/core/util.c -lm -o build/bench_promtext && build/bench_promtext

clean:
	rm -rf build build-asan
