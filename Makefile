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
# simulated GPU hosts that report through the real agent.
run: build
	@LISTEN=$(LISTEN) scripts/demo.sh

# Builds with AddressSanitizer + UndefinedBehaviorSanitizer and runs every test.
test: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DGI_SANITIZE=ON >/dev/null
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j 2

bench: build
	@scripts/deps.sh --bench
	bench/run.sh

clean:
	rm -rf build build-asan
