# Helpers shared by every folder's CMakeLists.txt.

# Warnings as errors on our own targets only (third-party headers come in as SYSTEM).
function(clustersim_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Werror -Wshadow
                                           -Wnon-virtual-dtor -Wconversion -Wno-sign-conversion
                                           -Wno-missing-field-initializers)
  if(CLUSTERSIM_SANITIZE)
    # -O1: clang's AddressSanitizer documentation: "To get a reasonable performance add -O1 or higher";
    # at -O0 the flow-network tests ran minutes each under the sanitizers and coverage counters.
    target_compile_options(${target} PRIVATE -O1 -fsanitize=address,undefined -fno-omit-frame-pointer
                                             -fno-sanitize-recover=undefined)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
  if(CLUSTERSIM_FUZZ)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
endfunction()

# clustersim_library(NAME SOURCES a.cc b.cc DEPS core engine PRIVATE_DEPS yaml-cpp)
# Declares the library target clustersim_<NAME> with the repository root as include root.
function(clustersim_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(clustersim_${name} STATIC ${ARG_SOURCES})
  target_include_directories(clustersim_${name} PUBLIC ${PROJECT_SOURCE_DIR})
  foreach(dep IN LISTS ARG_DEPS)
    target_link_libraries(clustersim_${name} PUBLIC clustersim_${dep})
  endforeach()
  target_link_libraries(clustersim_${name} PRIVATE ${ARG_PRIVATE_DEPS})
  clustersim_warnings(clustersim_${name})
endfunction()

# clustersim_test(NAME SOURCES x_test.cc DEPS topology [LABELS slow] [ONE_PROCESS])
# One GoogleTest executable per folder; every TEST becomes a ctest test. With ONE_PROCESS the
# executable is one ctest test that runs all its TESTs in one process, so that an expensive
# fixture (a function-local static, such as the published-run validation) is computed once.
function(clustersim_test name)
  cmake_parse_arguments(ARG "ONE_PROCESS" "" "SOURCES;DEPS;PRIVATE_DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  foreach(dep IN LISTS ARG_DEPS)
    target_link_libraries(${name} PRIVATE clustersim_${dep})
  endforeach()
  target_link_libraries(${name} PRIVATE ${ARG_PRIVATE_DEPS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    CLUSTERSIM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  clustersim_warnings(${name})
  if(ARG_ONE_PROCESS)
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}")
  else()
    gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST PROPERTIES LABELS "${ARG_LABELS}")
  endif()
endfunction()
