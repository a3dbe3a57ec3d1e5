# Front-end assets for report.html, inlined into tokperf at build time so the report opens offline.
# npm ci installs the pinned chart library (package-lock.json) into the build tree; embed_assets.cmake
# turns it and our own report.js/report.css into a generated C++ source (report/report_assets.h).
# Without npm the build still succeeds and the report says its charts were left out.

set(TOKPERF_WEB_DIR ${CMAKE_SOURCE_DIR}/web)
set(TOKPERF_WEB_BUILD ${CMAKE_BINARY_DIR}/web)
file(MAKE_DIRECTORY ${TOKPERF_WEB_BUILD})
set(TOKPERF_ASSETS_CC ${CMAKE_BINARY_DIR}/generated/report_assets.cc)
find_program(TOKPERF_NPM npm)
option(TOKPERF_REPORT_CHARTS "Fetch the chart library with npm at build time" ON)

set(_own_assets ${TOKPERF_WEB_DIR}/report.js ${TOKPERF_WEB_DIR}/report.css
                ${TOKPERF_WEB_DIR}/embed_assets.cmake)
if(TOKPERF_REPORT_CHARTS AND TOKPERF_NPM)
  set(_uplot_dir ${TOKPERF_WEB_BUILD}/node_modules/uplot/dist)
  add_custom_command(
    OUTPUT ${_uplot_dir}/uPlot.iife.min.js ${_uplot_dir}/uPlot.min.css
    COMMAND ${CMAKE_COMMAND} -E copy ${TOKPERF_WEB_DIR}/package.json
            ${TOKPERF_WEB_DIR}/package-lock.json ${TOKPERF_WEB_BUILD}/
    COMMAND ${TOKPERF_NPM} ci --no-audit --no-fund --loglevel=error
    WORKING_DIRECTORY ${TOKPERF_WEB_BUILD}
    DEPENDS ${TOKPERF_WEB_DIR}/package.json ${TOKPERF_WEB_DIR}/package-lock.json
    COMMENT "npm ci: chart library for report.html")
  set(_embed_args -DUPLOT_JS=${_uplot_dir}/uPlot.iife.min.js -DUPLOT_CSS=${_uplot_dir}/uPlot.min.css)
  set(_embed_deps ${_uplot_dir}/uPlot.iife.min.js ${_uplot_dir}/uPlot.min.css)
else()
  message(STATUS "tokperf: npm not found or TOKPERF_REPORT_CHARTS=OFF: report.html without charts")
  set(_embed_args)
  set(_embed_deps)
endif()

add_custom_command(
  OUTPUT ${TOKPERF_ASSETS_CC}
  COMMAND ${CMAKE_COMMAND} ${_embed_args} -DREPORT_JS=${TOKPERF_WEB_DIR}/report.js
          -DREPORT_CSS=${TOKPERF_WEB_DIR}/report.css -DOUT=${TOKPERF_ASSETS_CC}
          -P ${TOKPERF_WEB_DIR}/embed_assets.cmake
  DEPENDS ${_embed_deps} ${_own_assets}
  COMMENT "Embedding report.html assets")
target_sources(tokperf_lib PRIVATE ${TOKPERF_ASSETS_CC})
