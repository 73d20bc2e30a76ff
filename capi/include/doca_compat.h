/* doca-emu: visibility markers of the DOCA headers. Here they mark nothing: every function
 * of this library is exported, stable or experimental alike. */
#ifndef DOCA_EMU_COMPAT_H_
#define DOCA_EMU_COMPAT_H_

#define DOCA_STABLE
#define DOCA_EXPERIMENTAL
#define DOCA_DEPRECATED

#endif
