# One helper each for a library and a test target, so every module is declared alike.

set(SLUICE_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wimplicit-fallthrough -Wno-missing-field-initializers
    # GCC 12 reports false positives for std::vector growth at -O2 (GCC PR 107138).
    $<$<CXX_COMPILER_ID:GNU>:-Wno-array-bounds -Wno-stringop-overflow -Wno-restrict>)

# sluice_add_library(<module> SOURCES ... DEPS ...): builds sluice_<module>,
# includes rooted at src/.
function(sluice_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(sluice_${name} STATIC ${ARG_SOURCES})
  target_include_directories(sluice_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(sluice_${name} PRIVATE ${SLUICE_WARNINGS}
    $<$<BOOL:${SLUICE_WERROR}>:-Werror>)
  target_link_libraries(sluice_${name} PUBLIC ${ARG_DEPS})
endfunction()

# sluice_add_test(<name> SOURCES ... DEPS ... LABELS ...): a GoogleTest binary whose
# tests ctest discovers one by one.
function(sluice_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${SLUICE_WARNINGS}
    $<$<BOOL:${SLUICE_WERROR}>:-Werror>)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" DISCOVERY_TIMEOUT 60)
endfunction()
