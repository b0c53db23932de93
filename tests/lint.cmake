# `make lint` as a test of `make test` (label `lint`): the curated clang-tidy checks and
# the include check over src/ (see the Makefile). It runs at the idle CPU priority
# (scripts/idle), so it takes the cores only while the integration tests leave them idle
# (waiting on brokers, clients and timers), and costs them little when they do not. Its
# cost puts it first, and `make test` gives ctest one job more than the machine's cores
# for it. A finding fails it, with the findings in its output.
add_test(NAME lint.src
  COMMAND ${PROJECT_SOURCE_DIR}/scripts/idle make --no-print-directory -C ${PROJECT_SOURCE_DIR} lint
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(lint.src PROPERTIES LABELS lint TIMEOUT 3600)
