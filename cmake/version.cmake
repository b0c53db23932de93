# Writes OUTPUT, a header with the project version and the commit it is built from.
# Run as a script at every build (cmake -DVERSION=.. -DSOURCE_DIR=.. -DOUTPUT=.. -P),
# so that a new commit shows without reconfiguring; configure_file leaves the header
# untouched when nothing changed, so an unchanged tree recompiles nothing.
# A tree without .git (a tarball) or without git says "unknown" rather than failing.
set(SLUICE_COMMIT "unknown")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(
    COMMAND "${GIT_EXECUTABLE}" describe --always --dirty --abbrev=12 --exclude=*
    WORKING_DIRECTORY "${SOURCE_DIR}"
    OUTPUT_VARIABLE described OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0 AND NOT described STREQUAL "")
    set(SLUICE_COMMIT "${described}")
  endif()
endif()
set(SLUICE_VERSION "${VERSION}")
configure_file("${CMAKE_CURRENT_LIST_DIR}/version_info.h.in" "${OUTPUT}" @ONLY)
