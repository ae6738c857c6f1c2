# The explorer's desktop integration: menu entry, icon theme, AppStream metadata.
configure_file(explorer.desktop.in ${TTRACE_APP_ID}.desktop @ONLY)
configure_file(explorer.metainfo.xml.in ${TTRACE_APP_ID}.metainfo.xml @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/${TTRACE_APP_ID}.desktop
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/applications)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/${TTRACE_APP_ID}.metainfo.xml
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/metainfo)

set(_icons ${PROJECT_SOURCE_DIR}/resources)
foreach(size 16 24 32 48 64 128 256)
  install(FILES ${_icons}/icons/${size}.png
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/icons/hicolor/${size}x${size}/apps
          RENAME ${TTRACE_APP_ID}.png)
endforeach()
install(FILES ${_icons}/ttrace-explorer.svg
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/icons/hicolor/scalable/apps
        RENAME ${TTRACE_APP_ID}.svg)
