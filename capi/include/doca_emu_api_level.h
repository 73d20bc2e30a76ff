/* doca-emu: the DOCA API level these headers declare: DOCA_EMU_API_LEVEL is 25 (DOCA 2.5),
 * 26 (DOCA 2.6) or 27 (DOCA 2.7 and later).
 *
 * One library serves every level, but a few functions have one name and two shapes: in DOCA
 * 2.5 ten doca_cc size getters write a size_t where 2.6 writes a uint32_t, four setters take a
 * size_t, and the receive and connection callbacks take a size_t length and a bool. One symbol
 * cannot serve both shapes (a getter writing 8 bytes overruns a 2.6 caller), so the library
 * exports the 2.5 shapes as symbols of their own (<name>_v25), and the headers of level 25
 * declare the 2.5 prototypes under DOCA's names, routed to those symbols with an asm label
 * (DOCA_EMU_V25). At level 26 and 27 the headers declare the 2.6 shapes under their own
 * symbols. Names that exist at one level only are declared at every level: they collide with
 * nothing.
 *
 * An install names its level (capi/install.sh --api-level 2.5|2.6|2.7) and installs this
 * header with that level fixed; a program that asks for another one is an error. In the
 * source tree the level is the claimed DOCA version's (core/DOCA_VERSION: 2.6.0, so 26),
 * unless the build defines DOCA_EMU_API_LEVEL. */
#ifndef DOCA_EMU_API_LEVEL_H_
#define DOCA_EMU_API_LEVEL_H_

/* As every header here: the build configuration and the standard headers DOCA's bring. */
#include "doca_config.h"

#ifndef DOCA_EMU_API_LEVEL
#define DOCA_EMU_API_LEVEL 26
#endif

#if DOCA_EMU_API_LEVEL != 25 && DOCA_EMU_API_LEVEL != 26 && DOCA_EMU_API_LEVEL != 27
#error "doca-emu: DOCA_EMU_API_LEVEL is 25, 26 or 27"
#endif

/* The 2.5 shape of a name that 2.6 reshaped: the export <name>_v25 (one string literal). */
#define DOCA_EMU_STRING_(x) #x
#define DOCA_EMU_V25(name) __asm__(DOCA_EMU_STRING_(name##_v25))
/* The 2.6 shape of a name that 2.7 reshaped (doca_rdma's export, connect and task
 * allocators gained a connection argument): the export <name>_v26, declared at level 26. */
#define DOCA_EMU_V26(name) __asm__(DOCA_EMU_STRING_(name##_v26))

#endif
