# The stage check must fail on an upward include and pass a tree without one: builds two small
# core trees in WORK_DIR and runs core/check_stage_includes.cmake on each.
#   cmake -DCHECK=<check script> -DWORK_DIR=<scratch folder> -P check_stage_includes_fails.cmake
cmake_minimum_required(VERSION 3.25)

function(write_tree dir io_include)
  file(REMOVE_RECURSE "${dir}")
  file(WRITE "${dir}/include/ttrace/merge/merged.h" "#pragma once\n#include \"ttrace/io/read.h\"\n")
  file(WRITE "${dir}/include/ttrace/io/read.h" "#pragma once\n#include <vector>\n")
  file(WRITE "${dir}/src/compare/judge.cpp"
       "#include \"ttrace/merge/merged.h\"\n#include \"merge/private.h\"\n#include \"ttrace/io/bundle.h\"\n")
  file(WRITE "${dir}/src/io/read.cpp" "#include \"ttrace/io/read.h\"\n${io_include}")
endfunction()

function(run_check dir out_result out_text)
  execute_process(COMMAND ${CMAKE_COMMAND} -DCORE_DIR=${dir} -P ${CHECK}
                  RESULT_VARIABLE result OUTPUT_VARIABLE text ERROR_VARIABLE text)
  set(${out_result} ${result} PARENT_SCOPE)
  set(${out_text} "${text}" PARENT_SCOPE)
endfunction()

write_tree("${WORK_DIR}/downward" "")
run_check("${WORK_DIR}/downward" result text)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "a tree with only downward includes was refused:\n${text}")
endif()

# io including compare's verdicts: a public header by its folder, and a flat one by the table.
foreach(upward "#include \"ttrace/compare/verdict.h\"\n" "#include \"ttrace/compare/diff_result.h\"\n"
               "#include \"report/timeline.h\"\n")
  write_tree("${WORK_DIR}/upward" "${upward}")
  run_check("${WORK_DIR}/upward" result text)
  string(REGEX REPLACE "[ \t\n]+" " " flat "${text}")
  if(result EQUAL 0 OR NOT flat MATCHES "upward include: core/src/io/read.cpp \\(io\\) includes")
    message(FATAL_ERROR "an upward include passed the check (${upward}):\n${text}")
  endif()
endforeach()

# A flat public header that the table does not know has no stage: refused.
write_tree("${WORK_DIR}/unknown" "#include \"ttrace/not_in_table.h\"\n")
run_check("${WORK_DIR}/unknown" result text)
if(result EQUAL 0)
  message(FATAL_ERROR "an include of an unclassified header passed the check:\n${text}")
endif()
message(STATUS "stage check: refuses upward and unclassified includes, passes downward ones")
