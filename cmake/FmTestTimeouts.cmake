# Every ctest test has a time limit, so that a hang fails one test in minutes
# instead of eating CI's budget: a test without a TIMEOUT of its own gets
# FM_TEST_TIMEOUT seconds, 300 (900 in sanitizer builds, where everything
# runs ~3-10x slower), through CTest's default (DART_TESTING_TIMEOUT, written
# to the build's DartConfiguration.tcl, which ctest reads). Tests that need
# longer set their own TIMEOUT where they are added (lit, corrupt.flips).
# The plain build's slowest test (lit) took 84 s at ctest -j2 here on
# 2026-12-07; most take seconds.
if(FM_SANITIZE)
  set(FM_TEST_TIMEOUT 900 CACHE STRING "default ctest TIMEOUT in seconds")
else()
  set(FM_TEST_TIMEOUT 300 CACHE STRING "default ctest TIMEOUT in seconds")
endif()
set(DART_TESTING_TIMEOUT ${FM_TEST_TIMEOUT} CACHE STRING
    "default ctest TIMEOUT in seconds (FM_TEST_TIMEOUT)" FORCE)
include(CTest)
