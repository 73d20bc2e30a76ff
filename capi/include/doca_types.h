/* doca-emu: common types. */
#ifndef DOCA_EMU_TYPES_H_
#define DOCA_EMU_TYPES_H_

#include <stdint.h>

#include "doca_compat.h"

#ifdef __cplusplus
extern "C" {
#endif

/* User data: a pointer or a 64-bit value. */
union doca_data {
	void *ptr;
	uint64_t u64;
};

/* An fd usable with epoll or poll; -1 is no handle. */
typedef int doca_event_handle_t;
typedef doca_event_handle_t doca_notification_handle_t;
#define doca_event_invalid_handle (-1)

/* Integers stored big-endian (network order), as DOCA names them (2.9's compress samples
 * hold a zlib trailer's Adler-32 in one). */
typedef uint16_t doca_be16_t;
typedef uint32_t doca_be32_t;
typedef uint64_t doca_be64_t;

enum doca_pci_func_type {
	DOCA_PCI_FUNC_TYPE_PF = 0,
	DOCA_PCI_FUNC_TYPE_VF = 1,
	DOCA_PCI_FUNC_TYPE_SF = 2,
};

/* Path MTU of an RDMA queue pair, by size class (doca_rdma_set_mtu). */
enum doca_mtu_size {
	DOCA_MTU_SIZE_256_BYTES = 0x0,
	DOCA_MTU_SIZE_512_BYTES = 0x1,
	DOCA_MTU_SIZE_1K_BYTES = 0x2,
	DOCA_MTU_SIZE_2K_BYTES = 0x3,
	DOCA_MTU_SIZE_4K_BYTES = 0x4,
	DOCA_MTU_SIZE_RAW_ETHERNET = 0x5, /* reserved: refused */
};

/* Bytes of a GID (struct doca_rdma_gid). */
#define DOCA_GID_BYTE_LENGTH 16

#ifdef __cplusplus
}
#endif

#endif
