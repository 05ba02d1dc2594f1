# Installs the build tree into BUILD_DIR/install-stage, then builds tests/install/consumer
# against it with find_package(onyx) and runs it, and builds a C program with the flags of
# the installed onyx.pc (pkg-config) and runs it. Run by ctest (install_consumer).
set(stage ${BUILD_DIR}/install-stage)
set(work ${BUILD_DIR}/install-consumer)
file(REMOVE_RECURSE ${stage} ${work})

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " line "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${line}")
  endif()
endfunction()

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${stage})

# Only the public headers are installed, and they include nothing but each other and the
# standard library.
file(GLOB_RECURSE headers RELATIVE ${stage}/include ${stage}/include/*)
foreach(h ${headers})
  if(NOT h MATCHES "^onyx/[a-z_]+\\.h$")
    message(FATAL_ERROR "unexpected installed header ${h}")
  endif()
  file(STRINGS ${stage}/include/${h} includes REGEX "^#include \"")
  foreach(inc ${includes})
    if(NOT inc MATCHES "^#include \"onyx/[a-z_]+\\.h\"$")
      message(FATAL_ERROR "${h}: ${inc} is not a public header")
    endif()
  endforeach()
endforeach()
foreach(want onyx/session.h onyx/onyx_c.h onyx/tensor.h onyx/error.h onyx/dtype.h)
  if(NOT EXISTS ${stage}/include/${want})
    message(FATAL_ERROR "${want} was not installed")
  endif()
endforeach()
if(NOT EXISTS ${stage}/bin/onyx)
  message(FATAL_ERROR "the onyx tool was not installed")
endif()

set(model ${SOURCE_DIR}/models/tiny-cnn/tiny-cnn-v1-opset17.onnx)
set(probs ${SOURCE_DIR}/models/tiny-cnn/probs.torch.npy)
set(image ${SOURCE_DIR}/models/tiny-cnn/image.npy)

run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/consumer -B ${work}/cmake -G ${CMAKE_GENERATOR}
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${stage})
run(${CMAKE_COMMAND} --build ${work}/cmake)
run(${work}/cmake/consumer ${model} ${image} ${probs})

# pkg-config: a C program compiled and linked with nothing but onyx.pc's flags.
find_program(PKG_CONFIG pkg-config REQUIRED)
set(ENV{PKG_CONFIG_PATH} ${stage}/lib/pkgconfig)
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs onyx OUTPUT_VARIABLE flags RESULT_VARIABLE rc
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config does not find onyx.pc in ${stage}/lib/pkgconfig")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
run(${C_COMPILER} -std=c11 -Wall -Werror -o ${work}/consumer_c ${SOURCE_DIR}/tests/install/consumer/consumer_c.c
    ${flags} -Wl,-rpath,${stage}/lib)
run(${work}/consumer_c ${model})
message(STATUS "installed onyx: find_package consumer and pkg-config consumer both ran")
