# find_package(DuckDB): DuckDB's C library as the imported target duckdb::duckdb.
#
# Looks in DuckDB_ROOT (a directory holding include/duckdb.h and lib/libduckdb.so) when
# given; otherwise in <build>/duckdb, which scripts/fetch-duckdb fills at configure time
# with the pinned prebuilt library (npm @duckdb/node-bindings-linux-x64) and its header
# (crate libduckdb-sys), checked by sha256. Nothing is built from source.
#
# Sets DuckDB_FOUND, DuckDB_VERSION, DuckDB_INCLUDE_DIR, DuckDB_LIBRARY.

if(NOT DuckDB_ROOT)
  set(_duckdb_dir ${CMAKE_BINARY_DIR}/duckdb)
  execute_process(
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/../scripts/fetch-duckdb ${_duckdb_dir}
    RESULT_VARIABLE _duckdb_rc)
  if(NOT _duckdb_rc EQUAL 0)
    # Without DuckDB there is no broker to build: say how to go on.
    message(FATAL_ERROR "scripts/fetch-duckdb ${_duckdb_dir} failed (exit ${_duckdb_rc}; its "
      "message is above). It needs npm and curl with access to the npm registry and "
      "crates.io, and pins Linux x86_64 only; elsewhere give -DDuckDB_ROOT=DIR, a directory "
      "holding the DuckDB version the script pins: include/duckdb.h, include/duckdb.hpp, "
      "include/duckdb/ and lib/libduckdb.so.")
  endif()
  set(DuckDB_ROOT ${_duckdb_dir})
endif()

find_path(DuckDB_INCLUDE_DIR duckdb.h PATHS ${DuckDB_ROOT}/include NO_DEFAULT_PATH)
find_library(DuckDB_LIBRARY duckdb PATHS ${DuckDB_ROOT}/lib NO_DEFAULT_PATH)
if(EXISTS ${DuckDB_ROOT}/VERSION)
  file(STRINGS ${DuckDB_ROOT}/VERSION DuckDB_VERSION LIMIT_COUNT 1)
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(DuckDB
  REQUIRED_VARS DuckDB_LIBRARY DuckDB_INCLUDE_DIR
  VERSION_VAR DuckDB_VERSION)

if(DuckDB_FOUND AND NOT TARGET duckdb::duckdb)
  add_library(duckdb::duckdb SHARED IMPORTED)
  set_target_properties(duckdb::duckdb PROPERTIES
    IMPORTED_LOCATION ${DuckDB_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${DuckDB_INCLUDE_DIR})
endif()
mark_as_advanced(DuckDB_INCLUDE_DIR DuckDB_LIBRARY)
