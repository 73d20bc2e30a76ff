/* doca-emu: visibility markers of the DOCA headers. Here they mark nothing: every function
 * of this library is exported, stable or experimental alike.
 *
 * As DOCA's, this header pulls in doca_config.h, and through it the build configuration of
 * the side the program is built for (doca_build_config.h) and the standard headers DOCA's
 * compatibility helpers bring (<string.h>, <stdint.h>, <stdlib.h>, <assert.h>), and
 * doca_version.h: code written against DOCA relies on them. It also brings the API level these
 * headers declare (doca_emu_api_level.h). */
#ifndef DOCA_EMU_COMPAT_H_
#define DOCA_EMU_COMPAT_H_

/* defined before the headers below, which use them */
#define DOCA_STABLE
#define DOCA_EXPERIMENTAL
#define DOCA_DEPRECATED

#include "doca_config.h"
#include "doca_emu_api_level.h"
#include "doca_version.h"

#endif
