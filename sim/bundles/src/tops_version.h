/* SIMULATOR: gcu.topsrider sim/bundles. Version macros come from the build
 * (-DTOPS_MAJOR=2 -DTOPS_MINOR=5 -DTOPS_PATCH=136). */
#ifndef TOPS_VERSION_H
#define TOPS_VERSION_H
#define TOPS_STR2(x) #x
#define TOPS_STR(x) TOPS_STR2(x)
#define TOPS_VERSION_CODE (TOPS_MAJOR * 1000000 + TOPS_MINOR * 1000 + TOPS_PATCH)
#define TOPS_VERSION_STRING TOPS_STR(TOPS_MAJOR) "." TOPS_STR(TOPS_MINOR) "." TOPS_STR(TOPS_PATCH)
#endif
