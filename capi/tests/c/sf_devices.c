/* DOCA 3.x's device queries as every 3.3 sample's common.c uses them: find a device by SF
 * index, skipping devices that are not SFs by their function type, and the codes around it.
 * Run with a topology whose host side has an SF device b1:00.2 with sf=5 (the test writes
 * it). Exits 0 and prints "ok" when every check holds. */
#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include <doca_dev.h>
#include <doca_error.h>

/* The device whose SF index is `want`, as open_doca_device_with_sf_index does it. */
static doca_error_t open_sf(uint32_t want, struct doca_dev **dev)
{
	enum doca_pci_func_type type;
	struct doca_devinfo **list;
	uint32_t n, i, idx;
	doca_error_t res = doca_devinfo_create_list(&list, &n);

	if (res != DOCA_SUCCESS)
		return res;
	res = DOCA_ERROR_NOT_FOUND;
	for (i = 0; i < n; i++) {
		if (doca_devinfo_get_pci_func_type(list[i], &type) == DOCA_SUCCESS && type != DOCA_PCI_FUNC_TYPE_SF)
			continue;
		if (doca_devinfo_get_sf_index(list[i], &idx) == DOCA_SUCCESS && idx == want) {
			res = doca_dev_open(list[i], dev);
			break;
		}
	}
	doca_devinfo_destroy_list(list);
	return res;
}

int main(void)
{
	struct doca_dev *sf = NULL, *other = NULL;
	struct doca_devinfo **list;
	enum doca_pci_func_type type;
	uint32_t n, i, idx = 77, sfs = 0, pfs = 0;
	uint8_t eq = 0;

	CHECK_CODE(open_sf(5, &sf), DOCA_SUCCESS);
	if (sf != NULL) {
		CHECK_CODE(doca_devinfo_is_equal_pci_addr(doca_dev_as_devinfo(sf), "b1:00.2", &eq), DOCA_SUCCESS);
		CHECK(eq == 1);
		CHECK_CODE(doca_devinfo_get_pci_func_type(doca_dev_as_devinfo(sf), &type), DOCA_SUCCESS);
		CHECK(type == DOCA_PCI_FUNC_TYPE_SF);
		CHECK_CODE(doca_devinfo_get_sf_index(doca_dev_as_devinfo(sf), NULL), DOCA_ERROR_INVALID_VALUE);
		CHECK_CODE(doca_dev_close(sf), DOCA_SUCCESS);
	}
	CHECK_CODE(open_sf(6, &other), DOCA_ERROR_NOT_FOUND);

	CHECK_CODE(doca_devinfo_create_list(&list, &n), DOCA_SUCCESS);
	for (i = 0; i < n; i++) {
		CHECK_CODE(doca_devinfo_get_pci_func_type(list[i], &type), DOCA_SUCCESS);
		if (type == DOCA_PCI_FUNC_TYPE_SF) {
			sfs++;
			continue;
		}
		pfs += type == DOCA_PCI_FUNC_TYPE_PF;
		/* a device that is not an SF has no index, and the out-parameter is untouched */
		idx = 77;
		CHECK_CODE(doca_devinfo_get_sf_index(list[i], &idx), DOCA_ERROR_NOT_SUPPORTED);
		CHECK(idx == 77);
		CHECK_CODE(doca_devinfo_get_pci_func_type(list[i], NULL), DOCA_ERROR_INVALID_VALUE);
	}
	CHECK(sfs == 1);
	CHECK(pfs == 1);
	CHECK_CODE(doca_devinfo_destroy_list(list), DOCA_SUCCESS);
	CHECK_CODE(doca_devinfo_get_pci_func_type(NULL, &type), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_devinfo_get_sf_index(NULL, &idx), DOCA_ERROR_INVALID_VALUE);
	return checks_result();
}
