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
