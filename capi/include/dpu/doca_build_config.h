/* doca-emu: the build configuration of a program built for the dpu side. The side macro
 * names the variant; the CPU macro is the compiler's target (a DPU program built on an x86
 * machine gets DOCA_ARCH_X86, not DOCA_ARCH_ARM). */
#pragma once

#define DOCA_ARCH_DPU
#undef DOCA_ARCH_HOST

#if defined(__x86_64__) || defined(__i386__)
#define DOCA_ARCH_X86
#elif defined(__aarch64__) || defined(__arm__)
#define DOCA_ARCH_ARM
#endif
