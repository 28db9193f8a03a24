# The layers the build enforces (cmake/layers.cmake), shown: each probe
# compiles one #include with the include path of one layer. A forbidden
# one must fail for want of the file ("No such file or directory": not
# any other error), an allowed one, the control beside it, must compile.
# ctest -L layers.

function(ucc_layer_probe layer header expect)
  get_property(path GLOBAL PROPERTY UCC_LAYER_PATH_${layer})
  string(MAKE_C_IDENTIFIER "${layer}_${header}" id)
  set(src ${CMAKE_CURRENT_BINARY_DIR}/layer_probes/${id}.cc)
  file(WRITE ${src} "// ${layer} includes ${header}: ${expect}\n"
                    "#include \"${header}\"\n")
  set(flags)
  foreach(d IN LISTS path)
    list(APPEND flags -I${d})
  endforeach()
  set(name layers.${layer}.${expect}.${header})
  add_test(NAME ${name} COMMAND ${CMAKE_CXX_COMPILER} -std=c++17
    -fsyntax-only ${flags} ${src})
  set_tests_properties(${name} PROPERTIES LABELS layers)
  if(expect STREQUAL "refused")
    string(REPLACE "." "\\." re "${header}")
    set_tests_properties(${name} PROPERTIES
      PASS_REGULAR_EXPRESSION "${re}: No such file or directory")
  elseif(NOT expect STREQUAL "allowed")
    message(FATAL_ERROR "ucc_layer_probe: ${expect}: refused or allowed")
  endif()
endfunction()

# The host names no transport and no part of the engine; only its seam
# starts an engine.
ucc_layer_probe(host platform/tcp/tcp_net.h refused)
ucc_layer_probe(host platform/shm/shm_fabric.h refused)
ucc_layer_probe(host platform/wire/wire.h refused)
ucc_layer_probe(host device/engine/engine.h refused)
ucc_layer_probe(host platform/net/net.h allowed)
ucc_layer_probe(host_inline device/engine/engine.h allowed)
if(UCC_HAVE_VERBS)
  ucc_layer_probe(host platform/verbs/verbs_net.h refused)
  ucc_layer_probe(net platform/verbs/verbs_net.h allowed)
endif()
# Platform reaches nothing of offload; a transport no other transport.
ucc_layer_probe(mem offload/descriptor.h refused)
ucc_layer_probe(mem platform/base/buf_ref.h allowed)
ucc_layer_probe(fabric offload/types.h refused)
ucc_layer_probe(tcp platform/shm/shm_fabric.h refused)
ucc_layer_probe(tcp platform/fabric/fabric.h allowed)
ucc_layer_probe(shm platform/tcp/tcp_net.h refused)
ucc_layer_probe(base offload/types.h refused)
# The contract sits below the engine and the host.
ucc_layer_probe(offload device/run/coll_run.h refused)
ucc_layer_probe(offload host/link/link.h refused)
ucc_layer_probe(offload platform/mem/mem_access.h refused)
# The engine: no host, no public API, no TCP; its shared-memory fabric by
# name (a departure, docs/architecture.md).
ucc_layer_probe(device host/api/objects.h refused)
ucc_layer_probe(device ucc/api/ucc.h refused)
ucc_layer_probe(device platform/tcp/tcp_net.h refused)
ucc_layer_probe(device platform/shm/shm_fabric.h allowed)
# firmware_sim wires the engine to the platform, without the host.
ucc_layer_probe(fwsim host/link/link.h refused)
ucc_layer_probe(fwsim ucc/api/ucc.h refused)
ucc_layer_probe(fwsim device/engine/engine.h allowed)
