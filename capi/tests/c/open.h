/* How our C test programs open the emulator's devices, as DOCA's samples' common code does:
 * a device by PCI address from the device list, a representor by PCI address from the
 * device's representor list. */
#ifndef CAPI_TEST_OPEN_H_
#define CAPI_TEST_OPEN_H_

#include <doca_dev.h>
#include <doca_error.h>

/* The device at `pci` (of this process's side). */
static inline doca_error_t open_dev(const char *pci, struct doca_dev **dev)
{
	struct doca_devinfo **list;
	uint32_t n, i;
	uint8_t eq;
	doca_error_t res = doca_devinfo_create_list(&list, &n);

	if (res != DOCA_SUCCESS)
		return res;
	res = DOCA_ERROR_NOT_FOUND;
	for (i = 0; i < n && res != DOCA_SUCCESS; i++)
		if (doca_devinfo_is_equal_pci_addr(list[i], pci, &eq) == DOCA_SUCCESS && eq)
			res = doca_dev_open(list[i], dev);
	doca_devinfo_destroy_list(list);
	return res;
}

/* The DPU device 03:00.0 and its representor of the host function `host`. */
static inline doca_error_t open_dpu_for(const char *host, struct doca_dev **dev, struct doca_dev_rep **rep)
{
	struct doca_devinfo_rep **reps;
	uint32_t n, i;
	uint8_t eq;
	doca_error_t res = open_dev("03:00.0", dev);

	if (res != DOCA_SUCCESS)
		return res;
	res = doca_devinfo_rep_create_list(*dev, DOCA_DEVINFO_REP_FILTER_NET, &reps, &n);
	if (res != DOCA_SUCCESS)
		return res;
	res = DOCA_ERROR_NOT_FOUND;
	for (i = 0; i < n && res != DOCA_SUCCESS; i++)
		if (doca_devinfo_rep_is_equal_pci_addr(reps[i], host, &eq) == DOCA_SUCCESS && eq)
			res = doca_dev_rep_open(reps[i], rep);
	doca_devinfo_rep_destroy_list(reps);
	return res;
}

/* The DPU device 03:00.0 and its representor of the host function b1:00.0. */
static inline doca_error_t open_dpu(struct doca_dev **dev, struct doca_dev_rep **rep)
{
	return open_dpu_for("b1:00.0", dev, rep);
}

#endif
