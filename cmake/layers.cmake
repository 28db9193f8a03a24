# The layers of the library, each its own CMake target, and the views
# that make a forbidden include fail to compile (docs/architecture.md,
# "Layers").
#
# Every layer names the folders it owns (VIEW) and the layers it may use
# (USES). Its sources see no source tree, only views: for each layer a
# folder of the build tree, layers/<name>/, holding symbolic links to the
# folders it owns under the names its includes use (platform/tcp ->
# <source>/platform/tcp; offload -> <source>/offload/include/offload),
# as Bazel's virtual includes do. A layer's include path is its own view
# and the views of the layers it uses, nothing more (nothing passes on
# from a layer to the layers above it): host/ includes
# "platform/tcp/tcp_net.h" and the compiler answers "No such file or
# directory". tests/layers/ shows it (ctest -L layers).
#
# Object libraries: libucc.a and libucc.so are made of all of them
# (ucc_library_objects).

set(UCC_LAYER_ROOT ${CMAKE_BINARY_DIR}/layers)

# ucc_layer(<name> VIEW <folder>[=<source folder>]... [SOURCES <file>...]
#           [USES <layer>...] [DEFINES <definition>...]
#           [IN_LIBRARY | STATIC])
# Makes the target ucc_<name> of SOURCES, built with the library flags:
# an object library whose objects go into libucc (IN_LIBRARY), a static
# library of its own (STATIC: firmware_sim's parts), or, without SOURCES,
# nothing but the view. The include path is given as folders, not by
# linking the layers' targets, so that no layer's objects or paths pass
# to another by way of a link.
function(ucc_layer name)
  cmake_parse_arguments(L "IN_LIBRARY;STATIC" "" "VIEW;SOURCES;USES;DEFINES"
    ${ARGN})
  set(root ${UCC_LAYER_ROOT}/${name})
  file(REMOVE_RECURSE ${root})
  file(MAKE_DIRECTORY ${root})
  foreach(v IN LISTS L_VIEW)
    if(v MATCHES "^([^=]+)=(.+)$")
      set(as ${CMAKE_MATCH_1})
      set(src ${CMAKE_MATCH_2})
    else()
      set(as ${v})
      set(src ${v})
    endif()
    get_filename_component(parent ${root}/${as} DIRECTORY)
    file(MAKE_DIRECTORY ${parent})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${src} ${root}/${as} SYMBOLIC)
  endforeach()
  set(dirs ${root})
  foreach(u IN LISTS L_USES)
    get_property(known GLOBAL PROPERTY UCC_LAYER_VIEW_${u} SET)
    if(NOT known)
      message(FATAL_ERROR "layer ${name} uses ${u}, which is not a layer "
        "(yet): layers are declared from the bottom up")
    endif()
    get_property(d GLOBAL PROPERTY UCC_LAYER_VIEW_${u})
    list(APPEND dirs ${d})
  endforeach()
  set_property(GLOBAL PROPERTY UCC_LAYER_VIEW_${name} ${root})
  # The include path the layer compiles with (for its probes, and for
  # the programs built beside a layer: firmware_sim).
  set_property(GLOBAL PROPERTY UCC_LAYER_PATH_${name} ${dirs})
  if(NOT L_SOURCES)
    return()
  endif()
  if(L_STATIC)
    add_library(ucc_${name} STATIC ${L_SOURCES})
  else()
    add_library(ucc_${name} OBJECT ${L_SOURCES})
  endif()
  target_include_directories(ucc_${name} PRIVATE ${dirs})
  target_compile_options(ucc_${name} PRIVATE ${UCC_LIB_FLAGS}
    $<$<CONFIG:Release>:-O3>)
  target_compile_definitions(ucc_${name} PRIVATE ${L_DEFINES})
  if(L_IN_LIBRARY)
    set_property(GLOBAL APPEND PROPERTY UCC_LIBRARY_LAYERS ucc_${name})
  endif()
endfunction()

# The objects of every IN_LIBRARY layer, for add_library, in the order
# `ORDER` names the layers (the rest after them, as declared). The order
# places the code in the library and in what links it statically; it is
# kept as the objects lay before the layers (offload, the platform, the
# engine, the host), so that timings stay comparable with the figures
# measured before.
function(ucc_library_objects out)
  cmake_parse_arguments(O "" "" "ORDER" ${ARGN})
  get_property(layers GLOBAL PROPERTY UCC_LIBRARY_LAYERS)
  set(ordered)
  foreach(l IN LISTS O_ORDER)
    if(ucc_${l} IN_LIST layers)
      list(APPEND ordered ucc_${l})
      list(REMOVE_ITEM layers ucc_${l})
    endif()
  endforeach()
  list(APPEND ordered ${layers})
  set(objs)
  foreach(l IN LISTS ordered)
    list(APPEND objs $<TARGET_OBJECTS:${l}>)
  endforeach()
  set(${out} ${objs} PARENT_SCOPE)
endfunction()
