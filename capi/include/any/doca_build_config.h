/* doca-emu: the build configuration of a program built for neither side: it defines neither
 * DOCA_ARCH_HOST nor DOCA_ARCH_DPU, and the side is picked at run time (DOCA_EMU_SIDE, else
 * the first device the program opens). Code that tests `#ifdef DOCA_ARCH_DPU` takes its host
 * branch. The CPU macro is the compiler's target. */
#pragma once

#undef DOCA_ARCH_HOST
#undef DOCA_ARCH_DPU

#if defined(__x86_64__) || defined(__i386__)
#define DOCA_ARCH_X86
#elif defined(__aarch64__) || defined(__arm__)
#define DOCA_ARCH_ARM
#endif
