# The two commands of the README: `make run` and `make test`. Both install what is
# missing first.
JOBS ?= $(shell nproc)
BUILD_DIR := build

.PHONY: all build deps test-deps run install test unit integration clean format lint fuzz s3proxy run-cluster

all: build

deps:
	scripts/install-deps.sh build

# Clients from PyPI that the tests need newer than Debian's, pinned with their hashes in
# tests/integration/requirements-pypi.txt, go into a virtual environment of Debian's
# python3. It is made again only when the requirements file changes (the copy beside it
# says what it was made from); a failed install leaves no copy, so the next run retries.
PYPI_VENV := tests/integration/.venv
PYPI_REQS := tests/integration/requirements-pypi.txt
# confluent-kafka 2.x, one venv per version (see tests/integration/tests.cmake), which
# also sees Debian's packages (pytest, kafka-python, psycopg2) for the suites it runs.
CK_VERSIONS := 2.4 2.8 2.16
# Trino for tests/integration/test_trino.py (its server from Maven Central; Java 25).
TRINO_VERSION := 476

# Each venv DIR:REQUIREMENTS:FLAGS is made again when its requirements changed.
VENVS := $(PYPI_VENV):$(PYPI_REQS): \
  $(foreach v,$(CK_VERSIONS),tests/integration/.venv-ck-$(v):tests/integration/requirements-ck-$(v).txt:--system-site-packages) \
  tests/integration/.venv-sqltools:tests/integration/requirements-sqltools.txt:--system-site-packages

test-deps:
	scripts/install-deps.sh test lint
	@for spec in $(VENVS); do \
	  dir=$${spec%%:*}; rest=$${spec#*:}; reqs=$${rest%%:*}; flags=$${rest#*:}; \
	  cmp -s $$reqs $$dir/requirements.installed || { \
	    echo "test-deps: making $$dir from $$reqs" && rm -rf $$dir && \
	    /usr/bin/python3 -m venv $$flags $$dir && \
	    $$dir/bin/pip install -q --disable-pip-version-check --no-deps --require-hashes \
	      -r $$reqs && cp $$reqs $$dir/requirements.installed; } || exit 1; \
	done
	cd tests/integration/node && { cmp -s package-lock.json node_modules/.lock.installed || { \
	  npm ci --no-audit --no-fund --loglevel=error && cp package-lock.json node_modules/.lock.installed; }; }
	cd tests/integration/go && go mod download
	cd tests/integration/go/sarama-1.44 && go mod download
	mvn -B -q -f tests/jvm/pom.xml package dependency:build-classpath \
	    -Dmdep.outputFile=target/classpath.txt
	scripts/jvm-class-archive
	scripts/fetch-trino $(TRINO_VERSION) tests/jvm/target
	$(MAKE) s3proxy

# The S3-compatible server of shared mode's tests and scripts/cluster (s3proxy from Maven
# Central, tests/s3proxy/pom.xml): its class path in tests/s3proxy/target/classpath.txt.
s3proxy:
	mvn -B -q -f tests/s3proxy/pom.xml dependency:build-classpath \
	    -Dmdep.outputFile=target/classpath.txt

# Every build links DuckDB (the default SQL engine): its prebuilt library and headers are
# fetched once, at configure time, by scripts/fetch-duckdb (pinned by sha256, into
# build/duckdb; cmake/FindDuckDB.cmake). CMAKE_ARGS passes more options to the configure.
CMAKE_ARGS ?=

build: deps
	cmake --preset release $(CMAKE_ARGS) >/dev/null
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The ports and directory `make run` takes; change them on the command line, e.g.
# `make run KAFKA=127.0.0.1:19092 PG=127.0.0.1:15432 HTTP=127.0.0.1:18080 DATA=./data2`.
KAFKA ?= 127.0.0.1:9092
PG ?= 127.0.0.1:5432
HTTP ?= 127.0.0.1:8080
DATA ?= ./data

# serve makes the data directory itself, once its ports are known to be free. Only the
# broker is built (not the unit tests and benchmark tools `make build` makes too).
# A new consumer group waits 300 ms for more members here, not Kafka's 3 s (the broker's
# default): trying a consumer by hand, it gets its partitions in its first poll or two.
# Change it with `make run GROUP_DELAY_MS=3000` (docs/configuration.md).
GROUP_DELAY_MS ?= 300
run: deps
	cmake --preset release $(CMAKE_ARGS) >/dev/null
	cmake --build $(BUILD_DIR) -j $(JOBS) --target sluice
	@echo "make run: --group-initial-rebalance-delay-ms $(GROUP_DELAY_MS) (the broker's default, as Kafka's, is 3000)"
	$(BUILD_DIR)/sluice serve --data-dir $(DATA) --listen $(KAFKA) \
	    --pg $(PG) --http $(HTTP) --group-initial-rebalance-delay-ms $(GROUP_DELAY_MS)

# A shared-mode cluster in CLUSTER_DIR (scripts/cluster, docs/shared-mode.md): PostgreSQL,
# the S3 server and three brokers in shared mode; `scripts/cluster down $(CLUSTER_DIR)`
# stops it.
CLUSTER_DIR ?= ./cluster
run-cluster: deps
	cmake --preset release $(CMAKE_ARGS) >/dev/null
	cmake --build $(BUILD_DIR) -j $(JOBS) --target sluice
	scripts/cluster up $(CLUSTER_DIR) --brokers 3

# Builds build/sluice alone and installs what a Sluice installation needs: the broker in
# PREFIX/bin and DuckDB's library beside it, in PREFIX/lib/sluice (where the installed
# broker looks, src/app/CMakeLists.txt), e.g. `make install PREFIX=~/.local`. DESTDIR is
# prepended, for packaging. The broker is installed stripped (about 6 MB instead of 50: the
# build's symbols and line tables stay in build/sluice, for debugging it), and so is DuckDB's
# library (59.6 MB instead of 70.5: its symbol table; the dynamic symbols stay).
PREFIX ?= /usr/local
install: deps
	cmake --preset release $(CMAKE_ARGS) >/dev/null
	cmake --build $(BUILD_DIR) -j $(JOBS) --target sluice
	DESTDIR=$(DESTDIR) cmake --install $(BUILD_DIR) --prefix $(PREFIX) --strip

# Unit tests, the real-client integration tests and the lint, all through ctest.
# Integration tests run two at a time where tests/integration/tests.cmake lets them (its
# two "slots"). The lint (tests/lint.cmake) runs beside them at the idle CPU priority, in
# the one job ctest gets beyond the cores.
CTEST_SLOTS = --resource-spec-file $(CURDIR)/tests/integration/ctest-resources.json
test: test-deps build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $$(($(JOBS) + 1)) --timeout 900 $(CTEST_SLOTS)

unit: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -L unit

integration: test-deps build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -L integration $(CTEST_SLOTS)

format:
	find src tests bench -name '*.h' -o -name '*.cc' | xargs clang-format -i

# The curated clang-tidy checks over src/; any finding fails (see .clang-tidy). They
# read the compile commands of their own configuration (preset lint: no precompiled
# header), one per batch of the unity build, so the checks see each batch's files
# together; bugprone-suspicious-include is off because a batch includes its .cc files,
# and the grep below stands in for it. check-includes.py then compiles every file on
# its own, syntax only, so each file must include what it uses. Nothing is built.
LINT_DIR := build-lint
lint:
	scripts/install-deps.sh lint
	cmake --preset lint >/dev/null
	@! grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"].*\.(cc|cpp)[>"]' src \
	  || { echo "lint: a source file includes a .cc file"; exit 1; }
	run-clang-tidy -p $(LINT_DIR) -quiet -j $(JOBS) -checks=-bugprone-suspicious-include \
	  -extra-arg=-Wno-unknown-warning-option 'src/' > $(LINT_DIR)/clang-tidy.log 2>&1 \
	  || { grep -E 'warning:|error:' $(LINT_DIR)/clang-tidy.log | sort -u; exit 1; }
	@echo "clang-tidy: no findings"
	scripts/check-includes.py $(LINT_DIR) src/ -j $(JOBS)

# libFuzzer targets under clang with ASan and UBSan, each run for FUZZ_SECONDS from the
# committed seeds (new inputs go to a scratch copy, not the repository).
FUZZ_SECONDS ?= 60
fuzz:
	scripts/install-deps.sh fuzz
	cmake --preset fuzz >/dev/null
	cmake --build build-fuzz -j $(JOBS) --target fuzz_request fuzz_record_batch fuzz_compressed_batch
	for t in fuzz_request fuzz_record_batch fuzz_compressed_batch; do \
	  rm -rf build-fuzz/corpus-$$t && cp -r tests/fuzz/corpus/$$t build-fuzz/corpus-$$t && \
	  build-fuzz/tests/fuzz/$$t -max_total_time=$(FUZZ_SECONDS) build-fuzz/corpus-$$t || exit 1; \
	done

clean:
	rm -rf $(BUILD_DIR) $(LINT_DIR)
