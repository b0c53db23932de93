# Real-client integration tests: each pytest file is one ctest test, labelled
# `integration`, run with Debian's interpreter (the one with the Kafka client packages).
# Each test has its own pytest base directory (--basetemp under the build dir): a pytest
# starting takes o+x off the shared /tmp/pytest-of-USER, which a PostgreSQL started by
# another test (as user postgres, below that directory) must traverse.
#
# Integration tests share the machine two at a time (`make test` gives ctest
# ctest-resources.json: two slots). A test that is timing- or load-sensitive, kills
# brokers in cycles, binds fixed ports or is new and not yet classified takes both slots
# and runs alone; the tests listed below take one, so a short Python test shares the
# machine with another, or with one JVM test (never two JVMs at once: a Connect worker
# or Kafka's tools start in seconds on a free core and in tens of them on a shared one).
# test_docs runs each page in a network namespace of its own (its fixed ports cannot
# clash) and starts a few of Kafka's tools, from the class archive: pairable.
# Alone on purpose: test_shared_maintenance (kill -9 of probes, grace periods and job
# leases of a few seconds), test_shared_faults (a cluster whose database, object store and
# brokers are killed or throttled under load).
# Pairable after a check (each run alone twice and three times beside test_groups_protocol,
# on the shared 2-core machine under load 19-28, all passing; seconds alone / paired):
# test_metrics (its own broker's counters, exact, no timing: 44 43 / 49 34 66),
# test_crash (kill -9 of its own broker twice; acknowledged records, not times: 19 19 /
# 22 22 21), test_scale (its own broker's descriptors and RSS, bounds not timings:
# 77 73 / 85 75 70), test_full_disk (a loop-mounted file system of its own: 45 48 /
# 55 63 54). test_groups_protocol took 39-49 s beside each, as beside the others.
set(integration_pairable
  test_admin_answers test_batch_header test_clear_answers test_cli test_cli_command_config
  test_compaction test_compaction_lag test_compression test_config_file test_docs test_confluent test_connect_topics
  test_crash test_full_disk test_metrics test_scale
  test_expansion_keys test_expansions test_expansions_duck test_flexible test_go_clients test_groups_admin
  test_groups_clients test_groups_confluent test_groups_protocol test_groups_restart
  test_idempotence test_journal test_kafka_python test_kafka_python_pypi test_kafkajs test_kcat
  test_legacy_formats test_produce_errors test_restart test_retention test_security_auth
  test_security_authz test_security_cli test_security_scram_mechanisms test_security_sql
  test_semantics test_shared_engines test_shared_log test_shared_sql test_shared_stores test_sql_clients test_sql_dialect test_sql_errors
  test_sql_joins test_sql_paths test_sql_semantics test_sql_topic_names test_topic_configs
  test_version test_groups_kip848_confluent test_transactions_clients test_transactions_rdkafka)
set(integration_jvm
  test_broker_configs test_broker_loggers test_cli_groups test_connect_cluster
  test_connect_restart test_connect_security test_console test_consumer_groups test_debezium
  test_differential test_fetch_sessions test_java_admin test_java_client test_kafka_acls
  test_kafka_tools test_sql_catalog test_sql_tools test_transactions test_trino test_txn_authz
  test_connect_eos test_differential_consumer_groups test_group_migration test_share_groups
  test_differential_group_configs test_differential_share_groups test_group_configs
  test_streams_eos test_transactions_admin test_share_groups_admin test_shared_txn
  test_shared_share_groups test_shared_share_moves)
function(sluice_integration_slots test suite)
  if(suite IN_LIST integration_pairable)
    set_tests_properties(${test} PROPERTIES RESOURCE_GROUPS "slots:1")
  elseif(suite IN_LIST integration_jvm)
    set_tests_properties(${test} PROPERTIES RESOURCE_GROUPS "slots:1" RESOURCE_LOCK jvm)
  else()
    set_tests_properties(${test} PROPERTIES RESOURCE_GROUPS "slots:2")
  endif()
endfunction()

# A pytest run of Debian's interpreter named integration.NAME (its --basetemp
# pytest/NAME), with SLUICE_BIN and the variable ENV ("" for none) set, taking the slots
# of SLOTS_SUITE; the rest of the arguments are pytest's.
function(sluice_pytest_run name env slots_suite)
  set(environment "SLUICE_BIN=${PROJECT_BINARY_DIR}/sluice")
  if(env)
    list(APPEND environment ${env})
  endif()
  add_test(NAME integration.${name}
    COMMAND /usr/bin/python3 -m pytest -q -p no:cacheprovider
            --basetemp=${PROJECT_BINARY_DIR}/pytest/${name} ${ARGN}
    WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR})
  set_tests_properties(integration.${name} PROPERTIES
    LABELS integration
    ENVIRONMENT "${environment}"
    TIMEOUT 600)
  sluice_integration_slots(integration.${name} ${slots_suite})
endfunction()

file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/pytest)  # pytest makes the --basetemp, not its parent
file(GLOB integration_tests ${CMAKE_CURRENT_LIST_DIR}/test_*.py)
# Suites that need a newer librdkafka than Debian's run only in their venv (below).
list(FILTER integration_tests EXCLUDE REGEX "/test_groups_kip848_confluent[.]py$")
foreach(test_file ${integration_tests})
  get_filename_component(name ${test_file} NAME_WE)
  sluice_pytest_run(${name} "" ${name} ${test_file})
endforeach()

# The librdkafka suites again under confluent-kafka 2.x from PyPI (each bundles its own
# librdkafka): each version's virtual environment (.venv-ck-X.Y, made by `make test-deps`
# from requirements-ck-X.Y.txt, with Debian's packages visible for pytest and the other
# clients) runs the files below; conftest.py fails the run when the venv holds another
# version than the one named here.
set(confluent_kafka_versions 2.4.0 2.8.2 2.16.1)
set(confluent_kafka_suites test_confluent test_groups_confluent test_admin_answers test_idempotence
    test_transactions_rdkafka)
foreach(version ${confluent_kafka_versions})
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" short ${version})
  foreach(suite ${confluent_kafka_suites})
    add_test(NAME integration.ck-${short}.${suite}
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/.venv-ck-${short}/bin/python -m pytest -q -p no:cacheprovider
              --basetemp=${PROJECT_BINARY_DIR}/pytest/ck-${short}.${suite}
              ${CMAKE_CURRENT_LIST_DIR}/${suite}.py
      WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR})
    set_tests_properties(integration.ck-${short}.${suite} PROPERTIES
      LABELS integration
      ENVIRONMENT "SLUICE_BIN=${PROJECT_BINARY_DIR}/sluice;SLUICE_EXPECT_CONFLUENT_KAFKA=${version}"
      TIMEOUT 600)
    sluice_integration_slots(integration.ck-${short}.${suite} ${suite})
  endforeach()
endforeach()

# KIP-848 consumer groups (group.protocol=consumer) need librdkafka 2.12+: this suite runs
# under the newest venv only (it is left out of the Debian interpreter's list above).
add_test(NAME integration.ck-2.16.test_groups_kip848_confluent
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/.venv-ck-2.16/bin/python -m pytest -q -p no:cacheprovider
          --basetemp=${PROJECT_BINARY_DIR}/pytest/ck-2.16.test_groups_kip848_confluent
          ${CMAKE_CURRENT_LIST_DIR}/test_groups_kip848_confluent.py
  WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR})
set_tests_properties(integration.ck-2.16.test_groups_kip848_confluent PROPERTIES
  LABELS integration
  ENVIRONMENT "SLUICE_BIN=${PROJECT_BINARY_DIR}/sluice;SLUICE_EXPECT_CONFLUENT_KAFKA=2.16.1"
  TIMEOUT 600)
sluice_integration_slots(integration.ck-2.16.test_groups_kip848_confluent test_groups_kip848_confluent)

# The real-client suites again against a shared-mode cluster (docs/shared-mode.md, "The
# client suites against a cluster"): SLUICE_TEST_CLUSTER=3 makes each module's `broker` the
# three brokers of one `scripts/cluster up` (PostgreSQL, s3proxy) the module shares
# (cluster_mode.py); tests needing what shared mode does not serve yet are skipped with
# the feature named in pytest's summary. Each suite keeps its single-node slots (and the
# JVM lock). test_connect_cluster passes this way too but is left out for CI's time (half
# as long again as its single-node run, which takes 80 s).
# test_idempotence runs its restart tests (kill -9, snapshots) and its expiry test only
# against one broker: 6 of its 9 tests in a cluster, about 15 s against 6 s alone.
set(cluster_suites test_confluent test_kafka_python test_kafkajs test_java_client test_idempotence)
foreach(suite ${cluster_suites})
  sluice_pytest_run(cluster3.${suite} SLUICE_TEST_CLUSTER=3 ${suite} ${CMAKE_CURRENT_LIST_DIR}/${suite}.py)
endforeach()

# ctest runs the longest tests first when it knows their durations (its cost data, kept in
# the build directory after each run). A fresh build gets the durations of the suites over
# 15 s as measured here (ctest-costs.txt, seconds), so that no long suite is left for the
# end of a CI run with one core idle; ctest updates them after each run.
if(NOT EXISTS ${PROJECT_BINARY_DIR}/Testing/Temporary/CTestCostData.txt)
  file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/Testing/Temporary)
  file(READ ${CMAKE_CURRENT_LIST_DIR}/ctest-costs.txt costs)
  file(WRITE ${PROJECT_BINARY_DIR}/Testing/Temporary/CTestCostData.txt "${costs}---\n")
endif()
