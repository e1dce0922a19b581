# Helpers shared by every folder's CMakeLists.txt.

# Warnings as errors on our own targets only (third-party headers come in as SYSTEM).
function(clustersim_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Werror -Wshadow
                                           -Wnon-virtual-dtor -Wconversion -Wno-sign-conversion
                                           -Wno-missing-field-initializers)
  if(CMAKE_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # In a unity batch every source is an included file, so GCC reports a class of a source that
    # holds a type of the source's anonymous namespace, which is only a problem in a header.
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
  if(CLUSTERSIM_SANITIZE)
    # -O1: clang's AddressSanitizer documentation: "To get a reasonable performance add -O1 or higher";
    # at -O0 the flow-network tests ran minutes each under the sanitizers and coverage counters.
    # Line tables only (after the Debug -g; GCC's -g1): the file and line of each frame in the
    # sanitizers' stack traces, without the type and variable information of every template
    # instantiation that full debug information writes into each object.
    target_compile_options(${target} PRIVATE -O1 -fsanitize=address,undefined -fno-omit-frame-pointer
                                             -fno-sanitize-recover=undefined
                                             $<IF:$<CXX_COMPILER_ID:Clang>,-gline-tables-only,-g1>)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

# In the sanitizer build, compiles `target` at -O0 instead of -O1 (the last -O wins): for code whose
# speed does not decide the tests' time there (the libraries of tools/cli, tools/validation and
# tools/calibration, and the clustersim program), while the libraries that simulate and the tests
# (some sample thousands of routings in their own code) stay at -O1. Measured on this 2-core machine
# (clang 14, ASan+UBSan+fuzzer-no-link, the 16-source unity batch of those sources when they were one
# library, clustersim_tools): 141 s at -O1, 72 s at -O0, of which 109 s at -O1 were LLVM's optimiser
# and code generation (-ftime-trace).
function(clustersim_sanitized_without_optimisation target)
  if(CLUSTERSIM_SANITIZE)
    target_compile_options(${target} PRIVATE -O0)
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
  if(CLUSTERSIM_FUZZ)
    # libFuzzer's coverage counters in the code the harnesses exercise: the libraries. The test
    # programs are not fuzzed and are built without them.
    target_compile_options(clustersim_${name} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
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
  # A test's own code (assertions, fixtures) is compiled at -O1 in an optimised build: it runs for
  # microseconds, and GCC's -O3 on GoogleTest's macros is slow to compile (tests/bad_input_test.cc:
  # 6.3 s at -O3, 4.7 s at -O1). The code under test comes from the libraries, built at the build
  # type's level.
  if(NOT CLUSTERSIM_SANITIZE)
    target_compile_options(${name} PRIVATE $<$<CONFIG:Release,RelWithDebInfo>:-O1>)
  endif()
  clustersim_warnings(${name})
  if(ARG_ONE_PROCESS)
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}")
  else()
    gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST PROPERTIES LABELS "${ARG_LABELS}")
  endif()
endfunction()
