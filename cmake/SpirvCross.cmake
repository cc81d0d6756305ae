# The SPIRV-Cross C API (libspirv-cross-c-shared-dev): FM_SPIRV_CROSS_FOUND,
# FM_SPIRV_CROSS_INCLUDE_DIR, FM_SPIRV_CROSS_LIBRARY. Used by the Metal
# target (targets/metal) and the lit configuration (test/). Included from
# several folders (the find results are cached).
find_path(FM_SPIRV_CROSS_INCLUDE_DIR spirv_cross_c.h PATH_SUFFIXES spirv_cross)
find_library(FM_SPIRV_CROSS_LIBRARY NAMES spirv-cross-c-shared spirv-cross-c)
if(FM_SPIRV_CROSS_INCLUDE_DIR AND FM_SPIRV_CROSS_LIBRARY)
  set(FM_SPIRV_CROSS_FOUND TRUE)
else()
  set(FM_SPIRV_CROSS_FOUND FALSE)
endif()
