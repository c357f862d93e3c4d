# shardgate_ui_assets(OUT PREFIX URL=FILE...): generates OUT, a C file that holds the files of
# ui/ named by FILE under their URL and the lookup function PREFIX (ui/embed.cmake). The page is
# compiled into the program: no files on disk, no build step beyond this one.
function(shardgate_ui_assets out prefix)
  set(files "")
  set(deps ${PROJECT_SOURCE_DIR}/ui/embed.cmake)
  foreach(pair IN LISTS ARGN)
    string(REPLACE "=" ";" parts "${pair}")
    list(GET parts 0 url)
    list(GET parts 1 rel)
    list(APPEND deps ${PROJECT_SOURCE_DIR}/ui/${rel})
    if(files)
      string(APPEND files "|")
    endif()
    string(APPEND files "${url}=${PROJECT_SOURCE_DIR}/ui/${rel}")
  endforeach()
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DPREFIX=${prefix} -DFILES=${files}
            -P ${PROJECT_SOURCE_DIR}/ui/embed.cmake
    DEPENDS ${deps} VERBATIM)
endfunction()
