# The Debian package. Its Depends are computed by dpkg-shlibdeps from the libraries the
# installed programs link (Qt 6, QCustomPlot, HDF5, oneTBB, ...), so a new shared library
# dependency is picked up without editing this file.
configure_file(copyright.in copyright @ONLY)
# The version has no Debian revision (a native package), so the Debian changelog is
# changelog.gz. Its date is the configure time, or SOURCE_DATE_EPOCH for reproducible builds.
string(TIMESTAMP TTRACE_CHANGELOG_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
configure_file(changelog.in changelog @ONLY)
set(_changelog ${CMAKE_CURRENT_BINARY_DIR}/changelog)
add_custom_command(
  OUTPUT ${_changelog}.gz
  COMMAND gzip -9nkf ${_changelog}
  DEPENDS ${_changelog}
  VERBATIM)
add_custom_target(deb_changelog ALL DEPENDS ${_changelog}.gz)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/copyright ${_changelog}.gz
        DESTINATION ${TTRACE_DEB_DOCDIR})

set(CPACK_PACKAGE_NAME "ttrace-explorer")
set(CPACK_PACKAGE_VENDOR "TTrace Explorer developers")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "find silent bugs in distributed training by comparing traces")
# Lines of at most 79 characters: dpkg shows them as they are.
set(CPACK_PACKAGE_DESCRIPTION
    "TTrace Explorer compares the intermediate tensors of a distributed training\n\
run (tensor, sequence, context, pipeline, data or expert parallel; sharded\n\
optimizers; BF16 or FP8) with those of a single-device reference, under\n\
round-off tolerances derived from the reference, and shows where the two runs\n\
first diverge.\n\
\n\
This package holds the desktop explorer (ttrace-explorer) and the headless\n\
command (ttrace) for CI. Traces are captured with the ttrace Python package.")
set(CPACK_GENERATOR "DEB")
set(CPACK_STRIP_FILES ON)
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${TTRACE_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)
include(CPack)
