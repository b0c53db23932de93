#!/usr/bin/env bash
# Installs the Debian packages that building, running and testing Sluice need, and
# only those that are missing. Usage: scripts/install-deps.sh [build|clients|test|bench|lint|fuzz]...
# `clients` is what the docs' examples use (kcat, psql, curl, Debian's confluent-kafka for
# Python, openssl for test certificates, Java and Maven for scripts/kafka-tool).
set -euo pipefail

# curl (and npm, below): scripts/fetch-duckdb, which every configure runs (DuckDB's library).
build_pkgs=(g++ cmake make pkg-config curl libsqlite3-dev libfmt-dev libcli11-dev
            libgtest-dev libgmock-dev librdkafka-dev libpq-dev libsimdjson-dev
            libssl-dev libtomlplusplus-dev libcurl4-openssl-dev
            zlib1g-dev libsnappy-dev liblz4-dev libzstd-dev)
client_pkgs=(kcat postgresql-client curl python3 python3-confluent-kafka openssl
             openjdk-17-jdk-headless maven)
# iproute2: tests/integration/test_docs.py brings up the loopback of its namespaces.
# chromium: the console's tests (tests/integration/console) drive it headless.
test_pkgs=("${client_pkgs[@]}" iproute2 python3-pytest python3-kafka
            python3-psycopg2 python3-venv python3-snappy python3-lz4 python3-zstandard python3-crcmod
            postgresql-15 python3-sqlalchemy chromium)
bench_pkgs=(fio iperf3 apache2-utils)
lint_pkgs=(clang-tidy python3)
# libFuzzer and the sanitizers' runtimes come with clang's runtime package.
fuzz_pkgs=(clang libclang-rt-14-dev)

want=()
for group in "${@:-build}"; do
  case "$group" in
    build) want+=("${build_pkgs[@]}") ;;
    clients) want+=("${client_pkgs[@]}") ;;
    test) want+=("${build_pkgs[@]}" "${test_pkgs[@]}") ;;
    bench) want+=("${build_pkgs[@]}" "${bench_pkgs[@]}") ;;
    lint) want+=("${build_pkgs[@]}" "${lint_pkgs[@]}") ;;
    fuzz) want+=("${build_pkgs[@]}" "${fuzz_pkgs[@]}") ;;
    *) echo "install-deps: unknown group '$group'" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# Node.js may come from another packager than Debian; only install it when absent. Every
# group builds the broker, whose console (ui/) npm and esbuild bundle.
if ! command -v npm >/dev/null; then
  missing+=(nodejs npm)
fi
# The sarama test (tests/integration/go) needs Go; only install Debian's when none is
# there (its go.mod asks for the Go that sarama v1.61.1 requires).
if [[ " $* " == *" test "* ]] && ! command -v go >/dev/null; then
  missing+=(golang-go)
fi

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
  # The Debezium test runs its own PostgreSQL cluster (tests/integration/postgres_helpers.py):
  # the default one that installing postgresql-15 just made (and started, where it
  # could) on port 5432 goes again.
  if [[ " ${missing[*]} " == *" postgresql-15 "* ]] && command -v pg_lsclusters >/dev/null &&
     pg_lsclusters -h 2>/dev/null | awk '$1 == 15 && $2 == "main"' | grep -q .; then
    $sudo pg_dropcluster --stop 15 main || echo "install-deps: could not drop the default cluster 15/main" >&2
  fi
fi
