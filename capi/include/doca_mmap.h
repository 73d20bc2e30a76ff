/* doca-emu: memory maps over the application's memory. */
#ifndef DOCA_EMU_MMAP_H_
#define DOCA_EMU_MMAP_H_

/* <stdbool.h>: DOCA 2.5's header brings it, and 2.5 samples use bool with no include of their own. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "doca_compat.h"
#include "doca_dev.h"
#include "doca_error.h"
#include "doca_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct doca_mmap;

enum doca_access_flag {
	DOCA_ACCESS_FLAG_LOCAL_READ_ONLY = 0,
	DOCA_ACCESS_FLAG_LOCAL_READ_WRITE = (1 << 0),
	DOCA_ACCESS_FLAG_RDMA_READ = (1 << 1),
	DOCA_ACCESS_FLAG_RDMA_WRITE = (1 << 2),
	DOCA_ACCESS_FLAG_RDMA_ATOMIC = (1 << 3),
	DOCA_ACCESS_FLAG_PCI_READ_ONLY = (1 << 4),
	DOCA_ACCESS_FLAG_PCI_READ_WRITE = (1 << 5),
	DOCA_ACCESS_FLAG_PCI_RELAXED_ORDERING = (1 << 6),
};

DOCA_STABLE doca_error_t doca_mmap_create(struct doca_mmap **mmap);
/* NOT_PERMITTED while buffers point into the map. */
DOCA_STABLE doca_error_t doca_mmap_destroy(struct doca_mmap *mmap);
/* The memory must stay valid until the map is destroyed. Once, before start. */
DOCA_STABLE doca_error_t doca_mmap_set_memrange(struct doca_mmap *mmap, void *addr, size_t len);
DOCA_STABLE doca_error_t doca_mmap_get_memrange(const struct doca_mmap *mmap, void **addr, size_t *len);
DOCA_STABLE doca_error_t doca_mmap_set_permissions(struct doca_mmap *mmap, uint32_t access_mask);
DOCA_STABLE doca_error_t doca_mmap_add_dev(struct doca_mmap *mmap, struct doca_dev *dev);
DOCA_STABLE doca_error_t doca_mmap_rm_dev(struct doca_mmap *mmap, struct doca_dev *dev);
DOCA_STABLE doca_error_t doca_mmap_start(struct doca_mmap *mmap);
DOCA_STABLE doca_error_t doca_mmap_stop(struct doca_mmap *mmap);
DOCA_STABLE doca_error_t doca_mmap_get_num_bufs(const struct doca_mmap *mmap, uint32_t *num_bufs);

/* Called with the memory range when a started map is destroyed. Before start. */
typedef void(doca_mmap_memrange_free_cb_t)(void *addr, size_t len, void *opaque);
DOCA_STABLE doca_error_t doca_mmap_set_free_cb(struct doca_mmap *mmap, doca_mmap_memrange_free_cb_t *free_cb,
					       void *opaque);
DOCA_STABLE doca_error_t doca_mmap_set_user_data(struct doca_mmap *mmap, union doca_data user_data);
DOCA_STABLE doca_error_t doca_mmap_get_user_data(const struct doca_mmap *mmap, union doca_data *user_data);
DOCA_STABLE doca_error_t doca_mmap_set_max_num_devices(struct doca_mmap *mmap, uint32_t max_num_devices);
DOCA_STABLE doca_error_t doca_mmap_get_max_num_devices(const struct doca_mmap *mmap, uint32_t *max_num_devices);
DOCA_STABLE doca_error_t doca_mmap_get_exported(const struct doca_mmap *mmap, uint8_t *exported);
DOCA_STABLE doca_error_t doca_mmap_get_from_export(const struct doca_mmap *mmap, uint8_t *from_export);
/* DOCA 3.x: use from several threads (every map here may be); destroy then succeeds while
 * buffers point into the map. Before start (a map from export: any time), with no buffer out. */
DOCA_EXPERIMENTAL doca_error_t doca_mmap_enable_thread_safety(struct doca_mmap *mmap);

/* Export: the map must be started, dev added, a PCI (or RDMA) permission set. Memory registered
 * by address (malloc, aligned_alloc, a static array) is served to importers by the library's own
 * threads: the application's threads may block meanwhile. The descriptor belongs to the map. */
DOCA_STABLE doca_error_t doca_mmap_export_pci(struct doca_mmap *mmap, const struct doca_dev *dev,
					      const void **export_desc, size_t *export_desc_len);
DOCA_STABLE doca_error_t doca_mmap_export_rdma(struct doca_mmap *mmap, const struct doca_dev *dev,
					       const void **export_desc, size_t *export_desc_len);
/* A started map over the exporter's memory; its addresses are the exporter's. */
DOCA_STABLE doca_error_t doca_mmap_create_from_export(const union doca_data *user_data, const void *export_desc,
						      size_t export_desc_len, struct doca_dev *dev,
						      struct doca_mmap **mmap);
DOCA_STABLE doca_error_t doca_mmap_cap_is_export_pci_supported(const struct doca_devinfo *devinfo,
							       uint8_t *export_pci_supported);
DOCA_STABLE doca_error_t doca_mmap_cap_is_create_from_export_pci_supported(const struct doca_devinfo *devinfo,
									   uint8_t *create_from_export_pci_supported);

#ifdef __cplusplus
}
#endif

#endif
