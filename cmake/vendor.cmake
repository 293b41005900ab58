# Copies FILES (a ;-list, relative to SRC, the node_modules folder) into
# DEST, flat by file name, rewriting only what changed. A file missing from
# SRC fails with the command that installs it.
# Usage: cmake -DSRC=... -DDEST=... -DFILES=... -P vendor.cmake
file(MAKE_DIRECTORY "${DEST}")
foreach(f IN LISTS FILES)
  if(NOT EXISTS "${SRC}/${f}")
    message(FATAL_ERROR "${SRC}/${f} is missing: the dashboard bundles it from the npm package "
                        "pinned in package.json. Run `npm ci` in the source tree (make run and "
                        "make test do), then build again.")
  endif()
  get_filename_component(name "${f}" NAME)
  execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${SRC}/${f}" "${DEST}/${name}"
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "could not copy ${SRC}/${f} to ${DEST}")
  endif()
endforeach()
