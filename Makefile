# The README's two commands, plus a few conveniences. CMake does the build.
.PHONY: run test build deps bench clean

LISTEN ?= 127.0.0.1:8080
DEMO_DIR := build/demo
JOBS ?= $(shell nproc)

deps:
	@scripts/deps.sh

build: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build -j $(JOBS)

# Starts gpuinv with a demo fleet on its embedded SQLite database.
run: build
	@mkdir -p $(DEMO_DIR)
	@[ -s $(DEMO_DIR)/admin-password ] || (umask 077; head -c 18 /dev/urandom | base64 | tr '+/' 'xy' > $(DEMO_DIR)/admin-password)
	@echo "gpuinv: dashboard at http://$(LISTEN)/"
	@echo "gpuinv: sign in as user 'admin' with password '$$(cat $(DEMO_DIR)/admin-password)'"
	@echo "gpuinv: (the password is kept in $(DEMO_DIR)/admin-password; Ctrl-C stops)"
	@GPUINV_ADMIN_PASSWORD="$$(cat $(DEMO_DIR)/admin-password)" \
	  exec build/gpuinv serve --demo --db $(DEMO_DIR)/gpuinv.db --listen $(LISTEN)

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
