# Real-client integration tests: each pytest file is one ctest test, labelled
# `integration`, run with Debian's interpreter (the one with the Kafka client packages).
file(GLOB integration_tests ${CMAKE_CURRENT_LIST_DIR}/test_*.py)
foreach(test_file ${integration_tests})
  get_filename_component(name ${test_file} NAME_WE)
  add_test(NAME integration.${name}
    COMMAND /usr/bin/python3 -m pytest -q -p no:cacheprovider ${test_file}
    WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR})
  set_tests_properties(integration.${name} PROPERTIES
    LABELS integration
    ENVIRONMENT "SLUICE_BIN=${PROJECT_BINARY_DIR}/sluice"
    TIMEOUT 600
    # Brokers and clients are CPU-heavy on a 2-core machine: one such test at a time.
    RESOURCE_LOCK broker)
endforeach()

# The librdkafka suites again under confluent-kafka 2.x from PyPI (each bundles its own
# librdkafka): each version's virtual environment (.venv-ck-X.Y, made by `make test-deps`
# from requirements-ck-X.Y.txt, with Debian's packages visible for pytest and the other
# clients) runs the files below; conftest.py fails the run when the venv holds another
# version than the one named here.
set(confluent_kafka_versions 2.4.0 2.8.2 2.16.1)
set(confluent_kafka_suites test_confluent test_groups_confluent test_admin_answers test_idempotence)
foreach(version ${confluent_kafka_versions})
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" short ${version})
  foreach(suite ${confluent_kafka_suites})
    add_test(NAME integration.ck-${short}.${suite}
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/.venv-ck-${short}/bin/python -m pytest -q -p no:cacheprovider
              ${CMAKE_CURRENT_LIST_DIR}/${suite}.py
      WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR})
    set_tests_properties(integration.ck-${short}.${suite} PROPERTIES
      LABELS integration
      ENVIRONMENT "SLUICE_BIN=${PROJECT_BINARY_DIR}/sluice;SLUICE_EXPECT_CONFLUENT_KAFKA=${version}"
      TIMEOUT 600
      RESOURCE_LOCK broker)
  endforeach()
endforeach()

# KIP-848 consumer groups (group.protocol=consumer) need librdkafka 2.12+: this suite runs
# under the newest venv only (under Debian's interpreter it skips).
add_test(NAME integration.ck-2.16.test_groups_kip848_confluent
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/.venv-ck-2.16/bin/python -m pytest -q -p no:cacheprovider
          ${CMAKE_CURRENT_LIST_DIR}/test_groups_kip848_confluent.py
  WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR})
set_tests_properties(integration.ck-2.16.test_groups_kip848_confluent PROPERTIES
  LABELS integration
  ENVIRONMENT "SLUICE_BIN=${PROJECT_BINARY_DIR}/sluice;SLUICE_EXPECT_CONFLUENT_KAFKA=2.16.1"
  TIMEOUT 600
  RESOURCE_LOCK broker)
