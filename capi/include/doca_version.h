/* doca-emu: the DOCA version this emulator claims (core/DOCA_VERSION, 2.6.0), under the
 * macro names of both generations: 2.5's DOCA_VER_* and DOCA_VERSION_NUM, 2.6+'s
 * DOCA_VERSION_MAJOR/MINOR/PATCH/STRING and DOCA_VERSION_CALC*. The numbers are checked
 * against core/DOCA_VERSION by the library's tests.
 *
 * DOCA_VERSION_EQ_CURRENT and DOCA_VERSION_LTE_CURRENT compare as 2.6+ does (the patch
 * scaled by 1000, DOCA_VERSION_CALC); with a patch of 0 2.5's DOCA_VERSION_NUM gives the
 * same answers.
 *
 * doca_version() is an exported function here (DOCA makes it inline): it returns the same
 * string as DOCA_VERSION_STRING, so a program built against NVIDIA's header, which calls no
 * symbol for it, and one built against this one agree. doca_version_runtime() returns the
 * version of the library running, the same string. Both are static strings. */
#ifndef DOCA_EMU_VERSION_H_
#define DOCA_EMU_VERSION_H_

#include <stddef.h>

#include "doca_compat.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DOCA 2.6+ names */
#define DOCA_VERSION_MAJOR 2
#define DOCA_VERSION_MINOR 6
#define DOCA_VERSION_PATCH 0
#define DOCA_VERSION_STRING "2.6.0"

/* (major, minor, patch) as one number, the patch as given */
#define DOCA_VERSION_CALC_EXACT(major, minor, patch) ((size_t)((major) << 24 | (minor) << 16 | (patch)))
#define DOCA_VERSION_EXACT DOCA_VERSION_CALC_EXACT(DOCA_VERSION_MAJOR, DOCA_VERSION_MINOR, DOCA_VERSION_PATCH)
/* (major, minor, patch) as one number, the patch scaled by 1000 */
#define DOCA_VERSION_CALC(major, minor, patch) ((size_t)((major) << 24 | (minor) << 16 | ((patch) * 1000)))
#define DOCA_VERSION_OFFICIAL DOCA_VERSION_CALC(DOCA_VERSION_MAJOR, DOCA_VERSION_MINOR, DOCA_VERSION_PATCH)
#define DOCA_VERSION_EQ_CURRENT(major, minor, patch) (DOCA_VERSION_CALC(major, minor, patch) == DOCA_VERSION_OFFICIAL)
#define DOCA_VERSION_LTE_CURRENT(major, minor, patch) (DOCA_VERSION_CALC(major, minor, patch) <= DOCA_VERSION_OFFICIAL)

/* DOCA 2.5 names, the same numbers */
#define DOCA_VER_MAJOR DOCA_VERSION_MAJOR
#define DOCA_VER_MINOR DOCA_VERSION_MINOR
#define DOCA_VER_PATCH DOCA_VERSION_PATCH
#define DOCA_VER_STRING DOCA_VERSION_STRING
#define DOCA_VERSION_NUM(major, minor, patch) DOCA_VERSION_CALC_EXACT(major, minor, patch)
#define DOCA_CURRENT_VERSION_NUM DOCA_VERSION_EXACT

/* The version a program was built against: DOCA_VERSION_STRING (a static string). */
DOCA_EXPERIMENTAL
const char *doca_version(void);

/* The version of the library the program runs on: the same string (a static string). */
DOCA_EXPERIMENTAL
const char *doca_version_runtime(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif
