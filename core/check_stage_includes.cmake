# Fails when a core file includes a header of a stage above its own. The stages, lowest first:
#   io -> merge -> compare -> report -> replay
#   (-> session: the use cases every front end runs, a diff session and a localize run)
# A file may include headers of its own stage and of the stages below it, never above
# (docs/architecture.md, "Targets and who may include whom"). The build runs this check on
# every build (target ttrace_stage_includes) and CTest runs it (stage_includes).
#
#   cmake -DCORE_DIR=<core folder> -P check_stage_includes.cmake
#
# A file's stage is its folder: core/src/<stage>/ and core/include/ttrace/<stage>/. An include's
# stage is the folder it names: "ttrace/<stage>/x.h" (public) or "<stage>/x.h" (private).
cmake_minimum_required(VERSION 3.25)

set(stages io merge compare report replay session)

# Public headers still directly in core/include/ttrace/ have no stage folder yet: their stage
# is listed here. Moving them into their folders empties this table; a header added there
# unlisted fails the check, so that every header has a stage.
# BEGIN flat header stages
set(flat_io)
set(flat_merge)
set(flat_compare)
set(flat_report)
set(flat_replay)
set(flat_session)
# END flat header stages

if(NOT CORE_DIR OR NOT IS_DIRECTORY "${CORE_DIR}/src")
  message(FATAL_ERROR "check_stage_includes: CORE_DIR must name the core folder (got '${CORE_DIR}')")
endif()

# The rank of a stage name (0 = io), or -1 when the name is no stage.
function(stage_rank name out)
  list(FIND stages "${name}" rank)
  set(${out} ${rank} PARENT_SCOPE)
endfunction()

# The stage of a public header named without a stage folder ("ttrace/x.h"); empty if unlisted.
function(flat_stage name out)
  set(found "")
  foreach(stage IN LISTS stages)
    if(name IN_LIST flat_${stage})
      set(found ${stage})
    endif()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# The stage an include line names, or "" when it names no core header (system headers,
# standard library) and "?" when it names a flat public header the table lacks.
function(include_stage header out)
  set(stage "")
  if(header MATCHES "^ttrace/([a-z_]+)/[^/]+\\.h$")
    set(stage ${CMAKE_MATCH_1})
  elseif(header MATCHES "^ttrace/([a-z_0-9]+)\\.h$")
    flat_stage(${CMAKE_MATCH_1} stage)
    if(stage STREQUAL "")
      set(stage "?")
    endif()
  elseif(header MATCHES "^([a-z_]+)/[^/]+\\.h$")
    stage_rank(${CMAKE_MATCH_1} rank)
    if(rank GREATER_EQUAL 0)
      set(stage ${CMAKE_MATCH_1})
    endif()
  endif()
  set(${out} "${stage}" PARENT_SCOPE)
endfunction()

# The stage of a core file from its path; "" for a flat public header the table lacks.
function(file_stage path out)
  file(RELATIVE_PATH rel "${CORE_DIR}" "${path}")
  set(stage "")
  if(rel MATCHES "^src/([a-z_]+)/")
    set(stage ${CMAKE_MATCH_1})
  elseif(rel MATCHES "^include/ttrace/([a-z_]+)/")
    set(stage ${CMAKE_MATCH_1})
  elseif(rel MATCHES "^include/ttrace/([a-z_0-9]+)\\.h$")
    flat_stage(${CMAKE_MATCH_1} stage)
  endif()
  set(${out} "${stage}" PARENT_SCOPE)
endfunction()

file(GLOB_RECURSE core_files LIST_DIRECTORIES false
     "${CORE_DIR}/src/*.h" "${CORE_DIR}/src/*.cpp" "${CORE_DIR}/include/*.h")
list(SORT core_files)
set(problems 0)
foreach(path IN LISTS core_files)
  file(RELATIVE_PATH rel "${CORE_DIR}" "${path}")
  file_stage("${path}" stage)
  stage_rank("${stage}" rank)
  if(rank LESS 0)
    message(SEND_ERROR "no stage: core/${rel} (put it under a stage folder, or list a flat "
                       "public header in this script's table)")
    math(EXPR problems "${problems} + 1")
    continue()
  endif()
  file(STRINGS "${path}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*$" "\\1" header "${line}")
    include_stage("${header}" target)
    if(target STREQUAL "")
      continue()
    endif()
    if(target STREQUAL "?")
      message(SEND_ERROR "unknown stage: core/${rel} includes \"${header}\", which has no stage "
                         "folder and is not in this script's table")
      math(EXPR problems "${problems} + 1")
      continue()
    endif()
    stage_rank("${target}" target_rank)
    if(target_rank GREATER rank)
      message(SEND_ERROR "upward include: core/${rel} (${stage}) includes \"${header}\" "
                         "(${target}); the stages go io -> merge -> compare -> report -> replay -> session")
      math(EXPR problems "${problems} + 1")
    endif()
  endforeach()
endforeach()

list(LENGTH core_files checked)
if(problems GREATER 0)
  message(FATAL_ERROR "stage includes: ${problems} problem(s) in ${checked} core files")
endif()
message(STATUS "stage includes: ${checked} core files include only their own or lower stages")
