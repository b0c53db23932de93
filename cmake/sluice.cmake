# One helper each for a library and a test target, so every module is declared alike.

set(SLUICE_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wimplicit-fallthrough -Wno-missing-field-initializers
    # GCC 12 reports false positives for std::vector growth at -O2 (GCC PR 107138).
    $<$<CXX_COMPILER_ID:GNU>:-Wno-array-bounds -Wno-stringop-overflow -Wno-restrict>)

# Standard and fmt headers that most translation units include, parsed once into a
# precompiled header that every target built with the helpers below shares: parsing
# them took half of a handler's compile time. make lint's configuration goes without
# it, and compiles every file on its own there, so a missing #include still fails.
option(SLUICE_PCH "Precompile the common standard library and fmt headers" ON)
set(SLUICE_PCH_HEADERS
  <algorithm> <array> <atomic> <chrono> <cstdint> <cstring> <filesystem> <functional>
  <map> <memory> <mutex> <optional> <set> <span> <string> <string_view> <thread>
  <unordered_map> <utility> <vector> <fmt/format.h>)

# sluice_use_pch(<target>): the shared precompiled header, made by sluice_common.
function(sluice_use_pch target)
  if(NOT SLUICE_PCH)
    return()
  endif()
  if(target STREQUAL "sluice_common")
    target_precompile_headers(${target} PRIVATE ${SLUICE_PCH_HEADERS})
  else()
    target_precompile_headers(${target} REUSE_FROM sluice_common)
  endif()
endfunction()

# sluice_add_library(<module> SOURCES ... DEPS ...): builds sluice_<module>,
# includes rooted at src/.
function(sluice_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(sluice_${name} STATIC ${ARG_SOURCES})
  target_include_directories(sluice_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(sluice_${name} PRIVATE ${SLUICE_WARNINGS}
    $<$<BOOL:${SLUICE_WERROR}>:-Werror>)
  target_link_libraries(sluice_${name} PUBLIC ${ARG_DEPS})
  sluice_use_pch(sluice_${name})
endfunction()

# sluice_add_test(<name> SOURCES ... DEPS ... LABELS ...): a GoogleTest binary whose
# tests ctest discovers one by one.
function(sluice_add_test name)
  cmake_parse_arguments(ARG "" "TEST_FILTER" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${SLUICE_WARNINGS}
    $<$<BOOL:${SLUICE_WERROR}>:-Werror>)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  sluice_use_pch(${name})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if(NOT ARG_TEST_FILTER)
    set(ARG_TEST_FILTER "*")
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" DISCOVERY_TIMEOUT 60
    TEST_FILTER "${ARG_TEST_FILTER}")
endfunction()
