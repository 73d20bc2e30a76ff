/* doca-emu: devices and representors of the emulated machine. */
#ifndef DOCA_EMU_DEV_H_
#define DOCA_EMU_DEV_H_

#include <stdint.h>

#include "doca_compat.h"
#include "doca_error.h"
#include "doca_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct doca_devinfo;
struct doca_devinfo_rep;
struct doca_dev;
struct doca_dev_rep;

#define DOCA_DEVINFO_PCI_ADDR_SIZE 13
#define DOCA_DEVINFO_PCI_BDF_SIZE 8
#define DOCA_DEVINFO_IFACE_NAME_SIZE 256
#define DOCA_DEVINFO_IBDEV_NAME_SIZE 64
#define DOCA_DEVINFO_VUID_SIZE 128
#define DOCA_DEVINFO_REP_VUID_SIZE 128
#define DOCA_DEVINFO_REP_PCI_ADDR_SIZE 13
#define DOCA_DEVINFO_REP_PCI_BDF_SIZE 8

enum doca_devinfo_rep_filter {
	DOCA_DEVINFO_REP_FILTER_ALL = 0,
	DOCA_DEVINFO_REP_FILTER_NET = 1 << 1,
	DOCA_DEVINFO_REP_FILTER_EMULATED = 1 << 2,
};

/* The devices of this process's side of the link (see the book: DOCA_EMU_SIDE). */
DOCA_STABLE doca_error_t doca_devinfo_create_list(struct doca_devinfo ***dev_list, uint32_t *nb_devs);
DOCA_STABLE doca_error_t doca_devinfo_destroy_list(struct doca_devinfo **dev_list);
DOCA_STABLE doca_error_t doca_devinfo_get_pci_addr_str(const struct doca_devinfo *devinfo, char *pci_addr_str);
DOCA_STABLE doca_error_t doca_devinfo_is_equal_pci_addr(const struct doca_devinfo *devinfo, const char *pci_addr_str,
							 uint8_t *is_equal);
DOCA_STABLE doca_error_t doca_devinfo_get_iface_name(const struct doca_devinfo *devinfo, char *iface_name,
						      uint32_t size);
DOCA_STABLE doca_error_t doca_devinfo_get_ibdev_name(const struct doca_devinfo *devinfo, char *ibdev_name,
						      uint32_t size);
DOCA_STABLE doca_error_t doca_devinfo_rep_cap_is_filter_all_supported(const struct doca_devinfo *devinfo,
								       uint8_t *filter_all_supported);

DOCA_STABLE doca_error_t doca_dev_open(struct doca_devinfo *devinfo, struct doca_dev **dev);
DOCA_STABLE doca_error_t doca_dev_close(struct doca_dev *dev);
DOCA_STABLE struct doca_devinfo *doca_dev_as_devinfo(const struct doca_dev *dev);

DOCA_STABLE doca_error_t doca_devinfo_rep_create_list(struct doca_dev *dev, int filter,
						       struct doca_devinfo_rep ***dev_list_rep, uint32_t *nb_devs_rep);
DOCA_STABLE doca_error_t doca_devinfo_rep_destroy_list(struct doca_devinfo_rep **dev_list_rep);
DOCA_STABLE doca_error_t doca_devinfo_rep_get_pci_addr_str(const struct doca_devinfo_rep *devinfo_rep,
							    char *pci_addr_str);
DOCA_STABLE doca_error_t doca_devinfo_rep_is_equal_pci_addr(const struct doca_devinfo_rep *devinfo_rep,
							     const char *pci_addr_str, uint8_t *is_equal);
DOCA_STABLE doca_error_t doca_dev_rep_open(struct doca_devinfo_rep *devinfo_rep, struct doca_dev_rep **dev_rep);
DOCA_STABLE doca_error_t doca_dev_rep_close(struct doca_dev_rep *dev_rep);
DOCA_STABLE struct doca_devinfo_rep *doca_dev_rep_as_devinfo(struct doca_dev_rep *dev_rep);

DOCA_STABLE doca_error_t doca_devinfo_cap_is_hotplug_manager_supported(const struct doca_devinfo *devinfo,
								     uint8_t *is_hotplug_manager);
DOCA_STABLE doca_error_t doca_devinfo_rep_cap_is_filter_net_supported(const struct doca_devinfo *devinfo,
								      uint8_t *filter_net_supported);
DOCA_STABLE doca_error_t doca_devinfo_rep_cap_is_filter_emulated_supported(const struct doca_devinfo *devinfo,
									   uint8_t *filter_emulated_supported);
DOCA_STABLE doca_error_t doca_devinfo_rep_get_vuid(const struct doca_devinfo_rep *devinfo_rep, char *rep_vuid,
						   uint32_t size);
DOCA_STABLE doca_error_t doca_devinfo_rep_get_pci_func_type(const struct doca_devinfo_rep *devinfo_rep,
							    enum doca_pci_func_type *pci_func_type);
DOCA_STABLE doca_error_t doca_devinfo_rep_get_is_hotplug(const struct doca_devinfo_rep *devinfo_rep,
							 uint8_t *is_hotplug);

/* 3.x: the device's PCI function type (the topology's func=, DOCA_PCI_FUNC_TYPE_PF by
 * default) and, for an SF (DOCA_PCI_FUNC_TYPE_SF), its SF index (the topology's sf=). A device
 * that is not an SF has no index: doca_devinfo_get_sf_index gives DOCA_ERROR_NOT_SUPPORTED. */
DOCA_STABLE doca_error_t doca_devinfo_get_pci_func_type(const struct doca_devinfo *devinfo,
							enum doca_pci_func_type *pci_func_type);
DOCA_STABLE doca_error_t doca_devinfo_get_sf_index(const struct doca_devinfo *devinfo, uint32_t *sf_index);

#ifdef __cplusplus
}
#endif

#endif
