/* doca-emu: the environment configuration, as DOCA's doca_config.h: the build configuration
 * (doca_build_config.h: DOCA_ARCH_HOST or DOCA_ARCH_DPU, and DOCA_ARCH_X86 or DOCA_ARCH_ARM)
 * and the standard headers DOCA's headers bring with it.
 *
 * doca_build_config.h is not in this folder: it is in include/host, include/dpu or
 * include/any, one per side, and the include path names the one to use (pkg-config does:
 * doca.pc is the host's; see capi/install.sh). A program built for a side tells the library
 * at startup (doca_emu_set_build_side, from a constructor below), so it opens that side's
 * devices only; "any" leaves the side to DOCA_EMU_SIDE or the first device opened. */
#ifndef DOCA_EMU_CONFIG_H_
#define DOCA_EMU_CONFIG_H_

#ifdef __has_include
#if !__has_include(<doca_build_config.h>)
#error "doca-emu: no doca_build_config.h: add -I<include>/host, -I<include>/dpu or -I<include>/any (pkg-config --cflags doca does)"
#endif
#endif
#include <doca_build_config.h>

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __has_include
#if __has_include("doca_version.h")
#include "doca_version.h"
#endif
#endif

#if defined(DOCA_ARCH_HOST) && defined(DOCA_ARCH_DPU)
#error "doca-emu: doca_build_config.h defines both DOCA_ARCH_HOST and DOCA_ARCH_DPU"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define DOCA_EMU_SIDE_HOST 1
#define DOCA_EMU_SIDE_DPU 2

/* Records the side this program was built for (DOCA_EMU_SIDE_HOST or DOCA_EMU_SIDE_DPU):
 * the process then lists and opens that side's devices only. Called again with the same
 * side: nothing. With the other side: DOCA_ERROR_NOT_PERMITTED (2), logged, naming both.
 * Any other value: DOCA_ERROR_INVALID_VALUE (6). Returns a doca_error_t. */
int doca_emu_set_build_side(int side);

#if defined(DOCA_ARCH_HOST) || defined(DOCA_ARCH_DPU)
#ifdef DOCA_ARCH_DPU
#define DOCA_EMU_BUILD_SIDE DOCA_EMU_SIDE_DPU
#else
#define DOCA_EMU_BUILD_SIDE DOCA_EMU_SIDE_HOST
#endif
/* Runs before main in every program (and library) that includes a DOCA header. */
__attribute__((constructor, used)) static void doca_emu_register_build_side(void)
{
	(void)doca_emu_set_build_side(DOCA_EMU_BUILD_SIDE);
}
#endif

#ifdef __cplusplus
}
#endif

#endif
