# shardgate_discover_tests(PREFIX SCRIPT [TIMEOUT S] [LABELS L...] [ENVIRONMENT VAR=V...]
#                          [INTERPRETER PYTHON] OPERANDS ARG...)
#
# Asks a tests/lib/sgtest.py script for its cases (`SCRIPT --list` prints `GROUP CASE` lines)
# at configure time and registers one ctest PREFIX<GROUP> per group, running
# `SCRIPT OPERAND... --group GROUP` (exit 77, a case raising sgtest.Skip, is a skip). The script is the only list of its cases: a case added to
# it runs, and editing the script re-runs the configure step. INTERPRETER runs the cases (not
# the listing) with another python3, such as Debian's /usr/bin/python3 for its python3-* modules.
find_package(Python3 REQUIRED COMPONENTS Interpreter)

function(shardgate_discover_tests prefix script)
  cmake_parse_arguments(arg "" "TIMEOUT;INTERPRETER" "LABELS;ENVIRONMENT;OPERANDS" ${ARGN})
  if(NOT arg_INTERPRETER)
    set(arg_INTERPRETER ${Python3_EXECUTABLE})
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
               ${script} ${PROJECT_SOURCE_DIR}/tests/lib/sgtest.py)
  execute_process(COMMAND ${Python3_EXECUTABLE} ${script} --list
                  OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR listing STREQUAL "")
    message(FATAL_ERROR "${script} --list failed (${rc}): ${errors}")
  endif()
  string(REGEX MATCHALL "[^\n]+" lines "${listing}")
  set(groups "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE " .*" "" group "${line}")
    list(APPEND groups ${group})
  endforeach()
  list(REMOVE_DUPLICATES groups)
  foreach(group IN LISTS groups)
    add_test(NAME ${prefix}${group}
             COMMAND ${arg_INTERPRETER} ${script} ${arg_OPERANDS} --group ${group})
    set_tests_properties(${prefix}${group} PROPERTIES TIMEOUT ${arg_TIMEOUT}
                         LABELS "${arg_LABELS}" SKIP_RETURN_CODE 77)
    # Whether the build has the named crash points (gateway/CMakeLists.txt): sgtest skips a
    # case that asks for one in a build without them.
    set(environment "SHARDGATE_CRASH_POINTS_BUILT=${SHARDGATE_CRASH_POINTS}" ${arg_ENVIRONMENT})
    set_tests_properties(${prefix}${group} PROPERTIES ENVIRONMENT "${environment}")
  endforeach()
endfunction()
