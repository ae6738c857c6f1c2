# Man pages generated from the programs' own --help and --version, so they cannot fall behind
# the options. help2man is optional for a build from source; the DEB build requires it.
find_program(TTRACE_HELP2MAN help2man)
find_program(TTRACE_GZIP gzip)
if(NOT TTRACE_HELP2MAN OR NOT TTRACE_GZIP)
  message(STATUS "help2man or gzip not found: no man pages")
  return()
endif()

# ttrace_man_page(TARGET "one-line description"): TARGET.1.gz, installed to man1.
function(ttrace_man_page target description)
  set(page ${CMAKE_CURRENT_BINARY_DIR}/${target}.1)
  add_custom_command(
    OUTPUT ${page}.gz
    # The explorer prints its help without a display; the offscreen platform makes sure.
    COMMAND ${CMAKE_COMMAND} -E env QT_QPA_PLATFORM=offscreen
            ${TTRACE_HELP2MAN} --no-info --section 1 --name ${description}
            # The page is named after the program, not the explorer's "TTrace Explorer 1.2.3".
            --version-string "${target} ${PROJECT_VERSION}"
            --output ${page} $<TARGET_FILE:${target}>
    COMMAND ${TTRACE_GZIP} -9nf ${page}
    DEPENDS ${target}
    COMMENT "Man page of ${target}"
    VERBATIM)
  add_custom_target(${target}_man ALL DEPENDS ${page}.gz)
  install(FILES ${page}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endfunction()

ttrace_man_page(ttrace "compare and validate TTrace trace bundles of training runs")
ttrace_man_page(ttrace-index "index one TTrace rank file for ttrace (run by the tools)")
if(TTRACE_BUILD_UI)
  ttrace_man_page(ttrace-explorer "explore where a distributed training run diverges")
endif()
